"""The view of a result's host timeline (`result.host_timeline`): the measured facts the program view shows, and the
words every renderer uses for a "where to start" entry's wall-time saving."""

from __future__ import annotations

from dataclasses import dataclass

from ncuadvisor.result.host_info import HostTimeline
from ncuadvisor.units import basename, fmt_ns, fmt_pct, number


@dataclass(frozen=True)
class HostView:
    """The host timeline's facts, as the program view shows them."""

    name: str  # the trace's file name
    path: str
    used: bool
    note: str | None
    windows: float | None
    wall_per_window_ns: float | None
    gpu_busy_share: float | None
    host_ns_per_launch: float | None
    host_bound: bool
    launches: int
    matched_launches: int
    unmatched_kernels: list[str]
    profiler_stall_ns: float | None
    profiler_call_cost_ns: float | None

    @property
    def summary(self) -> str:
        """One line: 'one window takes 3.19 ms of wall time, the GPU busy 86% of it, 52.3 µs of host time per
        launch (10.0 windows in the trace)', or why the timeline was not used."""
        if not self.used:
            return str(self.note or "timeline not used")
        windows = number(self.windows)
        return (
            f"one report window takes {fmt_ns(self.wall_per_window_ns)} of wall time, the GPU busy "
            f"{fmt_pct(self.gpu_busy_share)} of it; the host needs {fmt_ns(self.host_ns_per_launch)} per launch"
            + (" (the host sets the pace)" if self.host_bound else "")
            + (f"; {windows:g} windows in the trace" if windows is not None else "")
            + self.profiler_words
            + (f" (note: {self.note})" if self.note else "")
        )

    @property
    def profiler_words(self) -> str:
        """What became of the profiler's own cost per CUDA call: taken out (measured by `profile --host-time`) or
        left in (a trace that does not say it)."""
        cost = number(self.profiler_call_cost_ns)
        if cost is None:
            return "; the profiler's own cost per CUDA call is in these times (the trace does not say it)"
        return f"; the profiler's own {fmt_ns(cost)} per CUDA call, measured on this host, taken out"


def host_view(h: HostTimeline | None) -> HostView | None:
    if h is None:
        return None
    return HostView(
        name=basename(h.path),
        path=h.path,
        used=h.used,
        note=h.note,
        windows=h.windows,
        wall_per_window_ns=h.wall_per_window_ns,
        gpu_busy_share=h.gpu_busy_share,
        host_ns_per_launch=h.host_ns_per_launch,
        host_bound=h.host_bound,
        launches=h.launches,
        matched_launches=h.matched_launches,
        unmatched_kernels=list(h.unmatched_kernels),
        profiler_stall_ns=h.profiler_stall_ns,
        profiler_call_cost_ns=h.profiler_call_cost_ns,
    )


def wall_words(host: HostTimeline | None, saving_ns: float | None, wall_only: bool = False) -> str:
    """A "where to start" entry's wall saving in words, '' without a host timeline in use: 'wall time: ~158.7 µs
    (measured host timeline)', per report window as the GPU saving is; an entry whose saving is wall time already
    (CUDA graphs) says only where it comes from."""
    if host is None or not host.used:
        return ""
    if wall_only:
        return "wall time, from the measured host timeline"
    value = number(saving_ns)
    if value is None:
        return "wall time: its kernels are not in the host timeline"
    return f"wall time: ~{fmt_ns(value)} (measured host timeline)"
