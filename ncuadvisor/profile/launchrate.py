"""The host's launch interval, measured where the program runs: how long the host (CPU and driver) takes to issue one
kernel launch when nothing makes it wait. No ncu report holds it (ncu serialises launches), and it decides what fusing
a run of tiny launches saves (PRG004): where the host issues launches faster than the GPU runs them each launch costs
its kernel's time, elsewhere the interval.

Measured through the CUDA driver API with `ctypes` (no compiler, no torch): the primary context of device 0, a module
JIT-compiled from a tiny PTX text (an empty kernel, `.target sm_50`, so any GPU takes it), `LAUNCHES` launches enqueued
without a synchronisation (well under the launch queue's depth, so none waits for a free slot), the enqueue loop timed
with `time.perf_counter_ns`, less the same loop's cost around a trivial driver call (`cuCtxGetCurrent`): the median of
`REPEATS` repeats after a warm-up. Takes tens of milliseconds.

`python -m ncuadvisor.profile.launchrate` prints one JSON line; `measure_in_subprocess` runs that in a child process
(a CUDA context never lives in ncuadvisor's own process, which forks workers), and never raises.
"""

from __future__ import annotations

import ctypes
import json
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the child process that measures imports nothing of ncuadvisor's result
    from ncuadvisor.result.types import LaunchInterval

LAUNCHES = 200
REPEATS = 5
SUBPROCESS_TIMEOUT_S = 60.0
MEASURED = "measured by ncuadvisor profile where the program ran"

PTX = b"""
.version 6.0
.target sm_50
.address_size 64
.visible .entry ncuadvisor_empty() { ret; }
"""


@dataclass
class LaunchRate:
    """The measured interval (ns per launch, None when it could not be measured, with `why`) and what it rests on."""

    interval_ns: float | None
    why: str | None = None
    samples_ns: list[float] = field(default_factory=list)  # per launch, each repeat, the call overhead removed
    call_overhead_ns: float | None = None  # the loop's own ctypes cost per call (cuCtxGetCurrent)
    launches: int = LAUNCHES
    device: str | None = None


class _DriverError(Exception):
    pass


def _check(cuda: Any, rc: int, what: str) -> None:
    if rc != 0:
        text = ctypes.c_char_p()
        cuda.cuGetErrorString(rc, ctypes.byref(text))
        raise _DriverError(f"{what} failed: CUDA error {rc} ({(text.value or b'?').decode(errors='replace')})")


def _per_call_ns(call: Any, args: tuple[Any, ...], n: int) -> float:
    """Nanoseconds per call of `call(*args)` in a plain loop of `n`."""
    t0 = time.perf_counter_ns()
    for _ in range(n):
        call(*args)
    return (time.perf_counter_ns() - t0) / n


def _timed(cuda: Any, fn: ctypes.c_void_p, launches: int, repeats: int) -> tuple[list[float], float]:
    """(interval per launch of each repeat, the loop's call overhead): a warm-up, then `repeats` timed loops of
    `launches` launches, each followed by a synchronisation, and as many loops of cuCtxGetCurrent."""
    launch = cuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    args = (fn, 1, 1, 1, 1, 1, 1, 0, None, None, None)
    current = cuda.cuCtxGetCurrent
    ctx = ctypes.c_void_p()
    _check(cuda, launch(*args), "cuLaunchKernel")
    _per_call_ns(launch, args, launches)  # warm-up: the first launches pay for lazy loading
    _check(cuda, cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    samples, overheads = [], []
    for _ in range(repeats):
        overheads.append(_per_call_ns(current, (ctypes.byref(ctx),), launches))
        samples.append(_per_call_ns(launch, args, launches))
        _check(cuda, cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    overhead = statistics.median(overheads)
    return [max(s - overhead, 0.0) for s in samples], overhead


def _measure(cuda: Any, launches: int, repeats: int) -> LaunchRate:
    """The measurement on device 0's primary context, released at the end."""
    _check(cuda, cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    _check(cuda, cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, dev)
    ctx = ctypes.c_void_p()
    _check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    try:
        _check(cuda, cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        _check(cuda, cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)), "cuModuleLoadData")
        try:
            _check(cuda, cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"ncuadvisor_empty"), "cuModuleGetFunction")
            samples, overhead = _timed(cuda, fn, launches, repeats)
        finally:
            cuda.cuCtxSynchronize()
            cuda.cuModuleUnload(mod)
    finally:
        cuda.cuDevicePrimaryCtxRelease_v2(dev)
    return LaunchRate(
        interval_ns=round(statistics.median(samples), 1),
        samples_ns=[round(s, 1) for s in samples],
        call_overhead_ns=round(overhead, 1),
        launches=launches,
        device=name.value.decode(errors="replace") or None,
    )


def measure(launches: int = LAUNCHES, repeats: int = REPEATS) -> LaunchRate:
    """The host's launch interval on GPU 0 of this machine, in this process; `interval_ns` None (and `why`) where
    libcuda or a GPU is missing or the driver refuses. Never raises."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return LaunchRate(None, why=f"no CUDA driver (libcuda.so.1: {exc})")
    try:
        return _measure(cuda, launches, repeats)
    except (_DriverError, AttributeError, OSError) as exc:
        return LaunchRate(None, why=str(exc))


def measure_in_subprocess(env: dict[str, str] | None = None, timeout_s: float = SUBPROCESS_TIMEOUT_S) -> LaunchRate:
    """`measure` in a child Python (`python -m ncuadvisor.profile.launchrate`), with `env` (the program's: its
    CUDA_VISIBLE_DEVICES); never raises."""
    cmd = [sys.executable, "-m", "ncuadvisor.profile.launchrate"]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return LaunchRate(None, why=f"the measurement did not run ({exc})")
    lines = done.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if lines else None
        return LaunchRate(**data) if isinstance(data, dict) else LaunchRate(None, why="the measurement printed nothing")
    except (ValueError, TypeError):
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return LaunchRate(None, why=f"the measurement failed (exit {done.returncode}: {tail[:200]})")


def for_rules(rate: LaunchRate | None) -> LaunchInterval | None:
    """The interval the program rules use, from a measurement (None when it failed)."""
    from ncuadvisor.result.types import LaunchInterval

    if rate is None or rate.interval_ns is None:
        return None
    return LaunchInterval(interval_ns=rate.interval_ns, source=MEASURED)


def measure_before(session: Any) -> LaunchRate:
    """The measurement `ncuadvisor profile` makes before phase 1, in the program's environment, said in a line."""
    rate = measure_in_subprocess(env=session.env)
    if rate.interval_ns is not None:
        session.ui.note(f"  host launch interval: {rate.interval_ns / 1000:.2f} µs per launch ({rate.device})")
    else:
        session.ui.note(f"  host launch interval not measured: {rate.why}")
    return rate


def main() -> int:
    print(json.dumps(asdict(measure())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
