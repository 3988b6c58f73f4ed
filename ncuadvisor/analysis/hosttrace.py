"""A program's host timeline: its CUDA runtime and driver calls and the GPU work they issued, read from a
torch.profiler Chrome trace recorded with CUDA activities.

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace("trace.json")

What is read (times in ns from the trace's first event):

- host calls: the events of category `cuda_runtime` and `cuda_driver` (name, thread, start, duration and the
  correlation id joining a call to the GPU work it issued);
- GPU operations: `kernel`, `gpu_memset` and `gpu_memcpy` events (name: the demangled kernel name; start, duration,
  device and stream, correlation id; a kernel's grid and block);
- the profiler's own buffer requests (category `overhead`, "Activity Buffer Request"): the host stalls in them, and
  `replay` can take that stall out;
- the profiler's own cost per CUDA call on the host that recorded it, where `profile --host-time` measured it (the
  top-level key `ncuadvisorProfilerCost`: `profile.host_runner`); `replay` can take it out of every call.

The file may be plain JSON or compressed (xz, gzip, by its first bytes, whatever its name). Anything else is one
clear `InputError`: not JSON, not a Chrome trace, no CUDA runtime call or no GPU operation (a trace recorded without
`ProfilerActivity.CUDA`).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncuadvisor.errors import InputError
from ncuadvisor.reportfile.sniff import DECOMPRESS_ERRORS, open_decompressed

HOST_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memset": "memset", "gpu_memcpy": "memcpy"}
OVERHEAD_CATEGORY = "overhead"  # the profiler's own work (CUPTI buffer requests): pid -1
CPU_CATEGORIES = frozenset({"cpu_op", "python_function", "user_annotation"})  # recorded with ProfilerActivity.CPU
# decompressed: a Chrome trace is read whole and parsed into Python objects (about 5 times its size), so the cap keeps
# a run under 2 GB; the traces `profile --host-time` records are a few MB
MAX_TRACE_BYTES = 256 << 20
READ_CHUNK = 1 << 20
COST_KEY = "ncuadvisorProfilerCost"  # {"plain_ns_per_call", "traced_ns_per_call", ...}: profile.host_runner


@dataclass(frozen=True)
class HostCall:
    """One CUDA runtime or driver call on a host thread."""

    name: str
    thread: int
    start_ns: float
    dur_ns: float
    correlation: int | None

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.dur_ns


@dataclass(frozen=True)
class GpuOp:
    """One kernel, memset or memcpy on the GPU, with the host call that issued it (`call`, an index into
    `Timeline.calls`; None when the trace lacks it)."""

    kind: str  # kernel | memset | memcpy
    name: str
    start_ns: float
    dur_ns: float
    stream: tuple[int, int]  # (device, stream)
    correlation: int | None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    call: int | None = None

    @property
    def end_ns(self) -> float:
        return self.start_ns + self.dur_ns


@dataclass
class Timeline:
    """The host calls and GPU operations of a trace, each list by start time; `overhead`: the (start, end) ns of the
    profiler's buffer requests inside the window."""

    path: str
    calls: list[HostCall]
    ops: list[GpuOp]
    overhead: list[tuple[float, float]] = field(default_factory=list)
    cpu_ops: int = 0  # ATen ops and Python functions recorded too (ProfilerActivity.CPU): the host slowed by them
    call_cost_ns: float | None = None  # the profiler's own host time per CUDA call, measured (None: not measured)

    @property
    def window_ns(self) -> float:
        """From the first host call or GPU operation to the end of the last: the measured wall time."""
        start = min([c.start_ns for c in self.calls[:1]] + [o.start_ns for o in self.ops[:1]])
        end = max([c.end_ns for c in self.calls] + [o.end_ns for o in self.ops])
        return end - start

    @property
    def kernels(self) -> list[GpuOp]:
        return [o for o in self.ops if o.kind == "kernel"]


def read_trace(path: str | os.PathLike[str]) -> Timeline:
    """The timeline of a torch.profiler Chrome trace (plain, .xz or .gz); an InputError naming the file when it is
    not one, or holds no CUDA activity."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file" if not p.exists() else f"{p}: not a file")
    data = _load_json(p)
    events = data.get("traceEvents") if isinstance(data, dict) else data if isinstance(data, list) else None
    if not isinstance(events, list):
        raise InputError(f"{p}: not a Chrome trace (no traceEvents): export one with prof.export_chrome_trace(path)")
    timeline = timeline_of(events, str(p))
    timeline.call_cost_ns = call_cost(data.get(COST_KEY) if isinstance(data, dict) else None)
    return timeline


def call_cost(cost: Any) -> float | None:
    """The profiler's cost per call from a `COST_KEY` entry: traced minus plain ns per call (0 where the traced loop
    was not slower); None when the entry is absent or not two finite numbers."""
    if not isinstance(cost, dict):
        return None
    plain, traced = _num(cost.get("plain_ns_per_call")), _num(cost.get("traced_ns_per_call"))
    if plain is None or traced is None or plain <= 0 or traced <= 0:
        return None
    return max(0.0, traced - plain)


def _load_json(p: Path) -> Any:
    raw = bytearray()
    try:
        with open_decompressed(p, by_magic=True) as f:
            while len(raw) <= MAX_TRACE_BYTES:  # in chunks: a bomb is refused at the cap, never expanded whole
                chunk = f.read(READ_CHUNK)
                if not chunk:
                    break
                raw += chunk
    except DECOMPRESS_ERRORS as exc:
        raise InputError(f"{p}: cannot read the trace ({exc})") from exc
    if len(raw) > MAX_TRACE_BYTES:
        raise InputError(f"{p}: the trace is larger than {MAX_TRACE_BYTES >> 20} MiB decompressed")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a JSON trace ({str(exc).splitlines()[0][:80]})") from exc
    except RecursionError as exc:
        raise InputError(f"{p}: not a Chrome trace (nested too deeply)") from exc


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _dims(v: Any) -> tuple[int, int, int] | None:
    if not isinstance(v, list) or not v or len(v) > 3 or any(_num(x) is None for x in v):
        return None
    d = [int(x) for x in v] + [1] * (3 - len(v))
    return (d[0], d[1], d[2])


def _correlation(args: dict[str, Any]) -> int | None:
    c = _num(args.get("correlation"))
    return int(c) if c is not None else None


def timeline_of(events: list[Any], path: str = "<trace>") -> Timeline:
    """The timeline of a Chrome trace's events (`read_trace` without the file)."""
    raw_calls: list[tuple[str, int, float, float, int | None]] = []
    raw_ops: list[tuple[str, str, float, float, tuple[int, int], int | None, Any, Any]] = []
    overhead: list[tuple[float, float]] = []
    cpu_ops = 0
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat, ts, dur = e.get("cat"), _num(e.get("ts")), _num(e.get("dur"))
        if ts is None or dur is None or dur < 0:
            continue
        args: dict[str, Any] = e["args"] if isinstance(e.get("args"), dict) else {}
        if cat in HOST_CATEGORIES:
            tid = _num(e.get("tid"))
            raw_calls.append((str(e.get("name", "")), int(tid) if tid is not None else 0, ts, dur, _correlation(args)))
        elif cat in GPU_CATEGORIES:
            device, stream = _num(args.get("device")), _num(args.get("stream"))
            where = (int(device or 0), int(stream if stream is not None else -1))
            raw_ops.append(
                (GPU_CATEGORIES[cat], str(e.get("name", "")), ts, dur, where, _correlation(args), args, None)
            )
        elif cat == OVERHEAD_CATEGORY:
            overhead.append((ts, ts + dur))
        elif cat in CPU_CATEGORIES:
            cpu_ops += 1
    if not raw_calls:
        raise InputError(
            f"{path}: no CUDA runtime or driver call in the trace: record it with "
            "torch.profiler.profile(activities=[ProfilerActivity.CUDA])"
        )
    if not raw_ops:
        raise InputError(f"{path}: no kernel, memset or memcpy in the trace: record it with ProfilerActivity.CUDA")
    t0 = min(min(c[2] for c in raw_calls), min(o[2] for o in raw_ops))  # µs
    raw_calls.sort(key=lambda c: (c[2], c[1]))
    calls = [HostCall(n, tid, (ts - t0) * 1e3, dur * 1e3, corr) for n, tid, ts, dur, corr in raw_calls]
    by_corr: dict[int, int] = {}
    for i, c in enumerate(calls):
        if c.correlation is not None:
            by_corr.setdefault(c.correlation, i)
    raw_ops.sort(key=lambda o: o[2])
    ops = [
        GpuOp(
            kind=kind,
            name=name,
            start_ns=(ts - t0) * 1e3,
            dur_ns=dur * 1e3,
            stream=where,
            correlation=corr,
            grid=_dims(args.get("grid")) if kind == "kernel" else None,
            block=_dims(args.get("block")) if kind == "kernel" else None,
            call=by_corr.get(corr) if corr is not None else None,
        )
        for kind, name, ts, dur, where, corr, args, _ in raw_ops
    ]
    window_end = max(max(c.end_ns for c in calls), max(o.end_ns for o in ops))
    inside = [((a - t0) * 1e3, (b - t0) * 1e3) for a, b in overhead]
    inside = [(max(a, 0.0), min(b, window_end)) for a, b in inside if b > 0 and a < window_end]
    return Timeline(path=path, calls=calls, ops=ops, overhead=sorted(inside), cpu_ops=cpu_ops)
