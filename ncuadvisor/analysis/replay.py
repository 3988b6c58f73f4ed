"""Replay a host timeline (`hosttrace.Timeline`) with other GPU durations: what the program's wall time becomes when
its kernels get faster, while the host issues the same calls.

The replay walks the host calls in the order they started (every thread together) and places the GPU work again:

- the host's own work between CUDA calls stays as measured: every call starts where it started, moved by the shift
  the blocking calls before it accumulated (one shift for every thread: a thread that waits on another, as PyTorch's
  main thread waits for its autograd thread in `.backward()`, moves with it);
- each GPU operation starts at the later of its launch call's start plus its launch-to-start latency and the end of
  the operation before it on its stream plus the gap between them. The one of the two that held in the trace keeps
  its measured value (so that the measured durations give back the measured timeline); the other takes the median
  of the trace (latency of launches onto an idle stream, gap between queued operations);
- a blocking call (`SYNC_CALLS`: device, stream and event synchronisation, synchronous copies and memsets, cudaFree;
  and any call that returned after its own memcpy or memset finished, such as a copy to pageable memory) ends when
  the GPU work it waited for ends, plus its measured return latency, or after its own cost, whichever is later; the
  host calls that start after it move by as much as it moved. The work it waited for is read from the trace: on each
  stream, the last operation launched before the call that ended before it returned;
- with `hide_profiler`, the host's stall in the profiler's own buffer requests (`Timeline.overhead`, the part of each
  that no host call overlaps) is taken out of the host's time, and so is the profiler's cost per call where the trace
  says what it was on its host (`Timeline.call_cost_ns`, measured by `profile --host-time`): every host call ends
  that much earlier, and the calls after it start that much earlier.

Assumptions: the host's work is the same whatever the kernels' durations (a fix that changes the host's work, such
as a library choosing another algorithm with more calls, is not seen); streams are independent (a cross-stream wait,
`cudaStreamWaitEvent`, is not modelled: an operation waits only for its own stream); a synchronisation whose target
the trace does not name (`cudaStreamSynchronize`, `cudaEventSynchronize`) waits for what it was measured waiting for;
where the trace does not say the profiler's per-call cost (CUPTI's callbacks), it stays in the host's time, so a
traced host is slower than an untraced one (measured: 3.5 against 2.8 ms a call on the planted training step,
`fixtures/host-trace-2026-12-02`); where it does, that cost, measured on a loop of one kind of call, is taken to be
every call's.

`replay(..., graphs=True)` is the step issued as CUDA graphs: between two blocking calls, every launch is issued at
once (one graph launch, costing the host the median launch call), the host's gaps between them gone.
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ncuadvisor.analysis.hosttrace import Timeline

SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaThreadSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "cudaMemcpy",
        "cudaMemcpy2D",
        "cudaMemcpy3D",
        "cudaMemcpyPeer",
        "cudaMemcpyToSymbol",
        "cudaMemcpyFromSymbol",
        "cudaMemset",
        "cudaMemset2D",
        "cudaMemset3D",
        "cuMemcpy",
        "cuMemcpyDtoH",
        "cuMemcpyHtoD",
        "cuMemcpyDtoD",
        "cuMemcpyDtoH_v2",
        "cuMemcpyHtoD_v2",
        "cuMemcpyDtoD_v2",
        "cudaFree",
        "cuMemFree",
        "cuMemFree_v2",
    }
)
LAUNCH_WORDS = ("Launch", "Memset", "Memcpy")  # the calls whose median cost a graph launch is taken to have

# launch to start on an idle stream where the trace has fewer than MIN_SAMPLES such launches (the median of the
# H200 host's traces, fixtures/host-trace-2026-12-02: 10-13 µs; a stream's first launch in a trace is left out: the
# profiler's start delays it by hundreds of µs)
DEFAULT_LATENCY_NS = 10000.0
MIN_SAMPLES = 3
DEFAULT_GAP_NS = 1000.0  # between two queued operations of a stream, where the trace has none
DEFAULT_RETURN_NS = 2000.0  # from the end of the awaited GPU work to the return of a blocking call
# an operation ending this close after a synchronising call returned was still awaited by it (host and GPU clocks)
WAIT_EPS_NS = 500.0


@dataclass(frozen=True)
class Block:
    """A blocking call: the operations it waits for (the last one per stream), its own cost and return latency."""

    waited: tuple[int, ...]
    cost_ns: float  # the call's own time where the GPU work is already done
    return_ns: float  # from the end of the awaited work to the call's return


@dataclass
class Plan:
    """What the replay needs of a timeline, computed once: the events in order, each operation's latency and gap,
    the blocking calls."""

    timeline: Timeline
    order: list[tuple[float, int, int]]  # (measured time, 0 = host call | 1 = operation without a call, index)
    call_ops: dict[int, list[int]]
    latency: list[float]
    gap: list[float]
    blocks: dict[int, Block]
    overhead_idle: list[tuple[float, float]]  # (end of a profiler buffer request, host time it stalled)
    latency_ns: float
    gap_ns: float
    graph_launch_ns: float


@dataclass(frozen=True)
class Replayed:
    """A replay's outcome (ns from the window's start)."""

    wall_ns: float  # the window's wall time: to the end of the last host call or GPU operation
    host_end_ns: float
    gpu_end_ns: float
    gpu_busy_ns: float  # time the GPU had an operation running (their union)
    op_start_ns: tuple[float, ...] = ()  # each GPU operation's start and end, in the timeline's order of operations
    op_end_ns: tuple[float, ...] = ()


def _median(values: list[float], default: float) -> float:
    return statistics.median(values) if len(values) >= MIN_SAMPLES else default


def plan(t: Timeline, typical: bool = False) -> Plan:
    """The replay plan of a timeline (`replay` takes it). `typical`: every operation takes the trace's median latency
    and gap, none its own (what the model gives without the trace's per-launch detail)."""
    calls, ops = t.calls, t.ops
    call_ops: dict[int, list[int]] = {}
    for i, o in enumerate(ops):
        if o.call is not None:
            call_ops.setdefault(o.call, []).append(i)
    # the stream predecessor of each operation (GPU order), and which bound held: the launch or the stream
    prev: list[int | None] = [None] * len(ops)
    last: dict[tuple[int, int], int] = {}
    for i, o in enumerate(ops):
        prev[i] = last.get(o.stream)
        last[o.stream] = i
    idle_lat, queued_gap = [], []
    queued = [False] * len(ops)
    for i, o in enumerate(ops):
        p = prev[i]
        launch = calls[o.call].start_ns if o.call is not None else None
        if p is not None and (launch is None or launch < ops[p].end_ns):
            queued[i] = True
            queued_gap.append(max(0.0, o.start_ns - ops[p].end_ns))
        elif launch is not None and p is not None:
            idle_lat.append(max(0.0, o.start_ns - launch))
    lat_ns, gap_ns = _median(idle_lat, DEFAULT_LATENCY_NS), _median(queued_gap, DEFAULT_GAP_NS)
    latency, gap = [0.0] * len(ops), [0.0] * len(ops)
    for i, o in enumerate(ops):
        p = prev[i]
        launch = calls[o.call].start_ns if o.call is not None else o.start_ns - lat_ns
        since_launch = max(0.0, o.start_ns - launch)
        since_prev = max(0.0, o.start_ns - ops[p].end_ns) if p is not None else math.inf
        if typical:
            latency[i], gap[i] = lat_ns, gap_ns
        elif queued[i]:
            gap[i], latency[i] = since_prev, min(lat_ns, since_launch)
        else:
            latency[i], gap[i] = since_launch, min(gap_ns, since_prev)
    order = [(c.start_ns, 0, i) for i, c in enumerate(calls)]
    order += [(o.start_ns - lat_ns, 1, i) for i, o in enumerate(ops) if o.call is None]
    order.sort()
    blocks = _blocks(t, order, call_ops)
    launch_costs = [c.dur_ns for c in calls if any(w in c.name for w in LAUNCH_WORDS)]
    return Plan(
        timeline=t,
        order=order,
        call_ops=call_ops,
        latency=latency,
        gap=gap,
        blocks=blocks,
        overhead_idle=_overhead_idle(t),
        latency_ns=lat_ns,
        gap_ns=gap_ns,
        graph_launch_ns=_median(launch_costs, DEFAULT_LATENCY_NS),
    )


def _blocks(t: Timeline, order: list[tuple[float, int, int]], call_ops: dict[int, list[int]]) -> dict[int, Block]:
    """The blocking calls, with the operations each waited for: on every stream, the last operation launched before
    the call (or by it) that ended before the call returned."""
    calls, ops = t.calls, t.ops
    launched: dict[tuple[int, int], list[int]] = {}
    found: dict[int, tuple[tuple[int, ...], float, bool]] = {}  # call -> (waited, awaited end, waited at all)
    for _, kind, idx in order:
        own = call_ops.get(idx, []) if kind == 0 else [idx]
        for i in own:
            launched.setdefault(ops[i].stream, []).append(i)
        if kind != 0:
            continue
        c = calls[idx]
        syncs_own = any(ops[i].kind != "kernel" and ops[i].end_ns <= c.end_ns for i in own)
        if c.name not in SYNC_CALLS and not syncs_own:
            continue
        waited = []
        for stream_ops in launched.values():
            for i in reversed(stream_ops):
                if ops[i].end_ns <= c.end_ns + WAIT_EPS_NS:
                    waited.append(i)
                    break
        awaited = max((ops[i].end_ns for i in waited), default=-math.inf)
        found[idx] = (tuple(waited), awaited, awaited > c.start_ns)
    returns = [calls[i].end_ns - awaited for i, (_, awaited, did) in found.items() if did]
    typical = _median([max(0.0, r) for r in returns], DEFAULT_RETURN_NS)
    out = {}
    for i, (waited_ops, awaited, did) in found.items():
        c = calls[i]
        if did:
            r = c.end_ns - awaited  # may be below 0 by up to WAIT_EPS_NS: the clocks of host and GPU
            out[i] = Block(waited_ops, min(max(0.0, r), c.dur_ns), r)
        else:
            out[i] = Block(waited_ops, c.dur_ns, typical)
    return out


def _overhead_idle(t: Timeline) -> list[tuple[float, float]]:
    """(end, stalled ns) of each profiler buffer request: the part of it during which no host call ran."""
    if not t.overhead:
        return []
    busy: list[tuple[float, float]] = []
    for c in sorted(t.calls, key=lambda c: c.start_ns):
        if busy and c.start_ns <= busy[-1][1]:
            busy[-1] = (busy[-1][0], max(busy[-1][1], c.end_ns))
        else:
            busy.append((c.start_ns, c.end_ns))
    first, last = busy[0][0], busy[-1][1]
    out = []
    for a, b in t.overhead:
        a, b = max(a, first), min(b, last)  # before the first call or after the last, it stalls nothing we replay
        if b <= a:
            continue
        covered = sum(max(0.0, min(b, e) - max(a, s)) for s, e in busy)
        if b - a - covered > 0:
            out.append((b, b - a - covered))
    return out


def union_ns(intervals: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, -math.inf, -math.inf
    for s, e in sorted(intervals):
        if s > cur_e:
            total += max(0.0, cur_e - cur_s) if cur_e > -math.inf else 0.0
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e > -math.inf:
        total += cur_e - cur_s
    return total


def replay(
    p: Plan, durations: Sequence[float] | None = None, *, hide_profiler: bool = False, graphs: bool = False
) -> Replayed:
    """The timeline replayed with these GPU durations (ns, one per `Timeline.ops`; None: as measured)."""
    t = p.timeline
    calls, ops = t.calls, t.ops
    dur = list(durations) if durations is not None else [o.dur_ns for o in ops]
    if len(dur) != len(ops):
        raise ValueError(f"{len(dur)} durations for {len(ops)} GPU operations")
    start = [0.0] * len(ops)
    end = [0.0] * len(ops)
    stream_end: dict[tuple[int, int], float] = {}

    def place(i: int, launch: float) -> None:
        o = ops[i]
        before = stream_end.get(o.stream)
        s = launch + p.latency[i]
        if before is not None:
            s = max(s, before + p.gap[i])
        start[i], end[i] = s, s + max(0.0, dur[i])
        stream_end[o.stream] = end[i]

    # shift changes: (measured time from which they hold, sequence, "set" value or None, "add" value)
    changes: list[tuple[float, int, float | None, float]] = []
    if hide_profiler:
        changes = [(b, n, None, -stalled) for n, (b, stalled) in enumerate(p.overhead_idle)]
        heapq.heapify(changes)
    seq = len(changes)
    cost = (t.call_cost_ns or 0.0) if hide_profiler else 0.0  # the profiler's own time in every host call
    graph_launch_ns = max(0.0, p.graph_launch_ns - cost)
    shift, host_end = 0.0, 0.0
    segment = 0.0  # graphs: where the current graph is issued
    for at, kind, idx in p.order:
        while changes and changes[0][0] <= at:
            _, _, value, add = heapq.heappop(changes)
            shift = value if value is not None else shift + add
        if kind == 1:
            place(idx, (segment + graph_launch_ns) if graphs else at + shift)
            continue
        c = calls[idx]
        s = (segment + graph_launch_ns) if graphs else c.start_ns + shift
        shift -= cost
        for i in p.call_ops.get(idx, ()):
            place(i, s)
        b = p.blocks.get(idx)
        if b is None:
            host_end = max(host_end, s if graphs else s + max(0.0, c.dur_ns - cost))
            continue
        awaited = max((end[i] for i in b.waited), default=-math.inf)
        e = max(s + b.cost_ns, awaited + b.return_ns)
        host_end = max(host_end, e)
        if graphs:
            segment = e
        else:
            heapq.heappush(changes, (c.end_ns, seq, e - c.end_ns, 0.0))
            seq += 1
    gpu_end = max(end, default=0.0)
    return Replayed(
        wall_ns=max(host_end, gpu_end),
        host_end_ns=host_end,
        gpu_end_ns=gpu_end,
        gpu_busy_ns=union_ns(list(zip(start, end))),
        op_start_ns=tuple(start),
        op_end_ns=tuple(end),
    )
