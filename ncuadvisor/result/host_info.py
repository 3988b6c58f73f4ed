"""The `host_timeline` part of a result: the host timeline measured beside the report (`report --host-trace`,
`profile --host-time`), what it shows of the program's wall time, and why it was not used when it was not. Part of
the result's types (`result.types` names it too)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ncuadvisor.result.record import Record, optional

Number = float | None


@dataclass(kw_only=True)
class HostTimeline(Record):
    """A torch.profiler trace of the same program (CUDA activities), matched to the report's kernels and replayed
    (`analysis.walltime`): the wall time of one report window and how busy the GPU kept in it, measured on the
    user's host. Times are per report window (one step), in the trace's steady windows (`analysis.walltime`)."""

    path: str
    used: bool  # false: the trace was read but none of its kernels is one of the report's (`note` says why)
    note: str | None = optional()
    windows: Number = (
        None  # report windows (steps) the trace holds: its launches of the report's kernels ÷ the report's
    )
    wall_per_window_ns: Number = None  # the wall time of one report window, the profiler's buffer requests left out
    gpu_busy_share: Number = None  # of that wall time, the share the GPU had work running
    host_ns_per_launch: Number = None  # the host's time per GPU operation, with the GPU taking none
    host_bound: bool = False  # the GPU idles half the window or more: the host sets the pace
    launches: int = 0  # GPU operations in the trace (kernels, memsets, copies)
    matched_launches: int = 0  # of its kernels, those of a kernel group of the report
    unmatched_kernels: list[str] = field(default_factory=list)  # report kernel ids the trace does not hold
    trace_wall_ns: Number = None  # the whole trace as measured, first call to last event
    profiler_stall_ns: Number = None  # host time stalled in the profiler's buffer requests, left out of the replays
    # the profiler's own host time per CUDA call, measured where the trace was recorded (`profile --host-time`) and
    # taken out of every call in the replays; None: the trace does not say, and the host times include it
    profiler_call_cost_ns: Number = None
