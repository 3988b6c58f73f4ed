"""Wall time from a measured host timeline: the trace's kernels matched to the report's kernel groups, and what the
program's wall time becomes when some of them get faster (`replay`).

Matching. ncu groups launches by demangled name, grid and block (`model.group_kernels`); the trace names a kernel by
its demangled name too, but demangled by another demangler (CUPTI's: `vectorized_elementwise_kernel<4, ...>`, where
ncu writes `<(int)4, ...>`). A report kernel's mangled name, demangled here as the trace's were (the C++ runtime's
`__cxa_demangle`), gives the trace's name exactly: on the planted training step all 31 groups of
`fixtures/torch_train.ncu-rep.xz` matched the 520 kernels of its 10-step trace. Where that demangler is missing, or a
name does not match, the names are compared by their words (identifiers and numbers, without ncu's casts and
`(anonymous namespace)`), among the trace's kernels of the same grid and block, the closest if it is close enough.

Units. A report is one window of the program (one step, an NVTX range); a trace may hold several (10 steps). The
windows are found in the trace by an anchor: a kernel group the report launches once, launched in the trace as many
times as most groups are (their launches ÷ the report's, a whole number: `windows`); each of its launches opens a
window. The estimates are per window, in the steady state: the mean of the steady windows' lengths (anchor to anchor),
in the replay at hand. Left out as not steady: the first window and any longer than 1.5 × the median one, which are
the first steps of a script (its first step took 121 ms against 2.8 ms after it on the planted training step: cuBLAS's
start, the allocator), the profiler's start (the first launch under CUPTI took 400-600 µs on the H200 host, against
5-15 µs after it), and the script's setup before the first window and teardown after the last, whose kernels may share
a group with the step's (a fill, a copy) and so cannot be told apart by counting. Without such an anchor (fewer than
three windows, or no group launched once per window), from the end of the trace's first `1/windows` of matched
launches to the end of its last, ÷ (windows − 1); a trace of less than two windows is taken whole.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Protocol

from ncuadvisor.analysis.hosttrace import GpuOp, Timeline
from ncuadvisor.analysis.replay import Plan, Replayed, plan, replay, union_ns
from ncuadvisor.units import dim3_of

# words in common (Jaccard) for two names to be one kernel without the demangler: the same words. On the fixtures
# every right pair scored 1.0 and the best wrong one 0.82 (`FillFunctor` for `CUDAFunctor_add`, the rest alike)
MIN_WORD_MATCH = 0.95
# a step the host bounds now: its GPU is idle this share of the window or more, over at least this many launches
HOST_BOUND_IDLE = 0.5
# windows (anchor launches) a trace needs for the windows to be found by their anchor (`HostModel.anchors`)
MIN_ANCHORED_WINDOWS = 3
# a window longer than this many times the median one is not steady (a first step, a pause): left out of the shares
STEADY_SPREAD = 1.5


@lru_cache(maxsize=1)
def _cxa_demangle() -> Any:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("stdc++") or "libstdc++.so.6")
        fn = lib.__cxa_demangle
        libc = ctypes.CDLL(None)
        free = libc.free
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_int)]
    free.argtypes = [ctypes.c_void_p]
    return fn, free


@lru_cache(maxsize=4096)
def demangle(mangled: str) -> str | None:
    """A mangled C++ name as the C++ runtime demangles it (as CUPTI names kernels in a trace); None when it is not
    mangled or no demangler is at hand."""
    found = _cxa_demangle()
    if found is None or not mangled.startswith("_Z"):
        return None
    fn, free = found
    status = ctypes.c_int(0)
    ptr = fn(mangled.encode(), None, None, ctypes.byref(status))
    if not ptr or status.value != 0:
        return None
    try:
        return ctypes.string_at(ptr).decode(errors="replace")
    finally:
        free(ptr)


_NOISE = re.compile(
    r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool)\)|\(anonymous namespace\)|<unnamed>"
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_TEMPLATE_PARAM = re.compile(r"T\d+")
_SKIP_WORDS = frozenset({"void", "const", "int", "unsigned", "long", "char", "bool", "ul", "u", "l", "instance"})


def name_words(name: str) -> frozenset[str]:
    """The words of a demangled name, whichever demangler wrote it: identifiers and numbers (a number's unsigned
    suffix, ncu's casts and its template parameters in parameter lists, `T1`, dropped; `false`/`true` as 0/1)."""
    text = _NOISE.sub(" ", name)
    text = re.sub(r"(\d+)(?:ul|u|l)\b", r"\1", text)
    words = {w for w in _WORD.findall(text) if w not in _SKIP_WORDS and not _TEMPLATE_PARAM.fullmatch(w)}
    return frozenset({"0" if w == "false" else "1" if w == "true" else w for w in words})


class ReportKernel(Protocol):
    """What the host timeline's model reads of a result's kernel entry (`result.types.KernelEntry`)."""

    id: str
    name: str
    mangled: str
    demangled: str
    grid: str
    block: str
    launches: int


def match_kernels(ops: Sequence[GpuOp], kernels: Sequence[ReportKernel]) -> list[str | None]:
    """The report kernel id (`k3`) of each GPU operation of the trace, None where none matches. `kernels`: the
    result's kernel entries."""
    exact: dict[tuple[str, Any, Any], str] = {}
    by_shape: dict[tuple[Any, Any], list[tuple[frozenset[str], str]]] = {}
    for k in kernels:
        grid, block = dim3_of(k.grid), dim3_of(k.block)
        for name in (demangle(k.mangled or ""), k.name or ""):
            if name:
                exact.setdefault((name, grid, block), k.id)
        by_shape.setdefault((grid, block), []).append((name_words(k.demangled or k.name), k.id))
    out: list[str | None] = []
    cache: dict[tuple[str, Any, Any], str | None] = {}
    for o in ops:
        if o.kind != "kernel":
            out.append(None)
            continue
        key = (o.name, o.grid, o.block)
        if key not in cache:
            cache[key] = exact.get(key) or _closest(o.name, by_shape.get((o.grid, o.block), []))
        out.append(cache[key])
    return out


def _closest(name: str, candidates: list[tuple[frozenset[str], str]]) -> str | None:
    words = name_words(name)
    scored = sorted(((len(words & w) / max(1, len(words | w)), kid) for w, kid in candidates), reverse=True)
    if not scored or scored[0][0] < MIN_WORD_MATCH or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return str(scored[0][1])


# a kernel's saving, in parts: (the report's per-launch ns of the part, or None for every launch; fraction saved)
Parts = Sequence[tuple[float | None, float]]


@dataclass
class HostModel:
    """A host timeline matched to a report's kernels: the facts measured, and the wall time after a fix."""

    timeline: Timeline
    plan: Plan
    kernel_of: list[str | None]  # per GPU operation: the report kernel id it matched
    report_launches: dict[str, int]  # kernel id -> the report's launches of it
    windows: float  # report windows the trace holds (its launches of the matched kernels ÷ the report's)
    base: Replayed  # the trace replayed as measured, the profiler's buffer requests taken out
    notes: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, timeline: Timeline, kernels: Sequence[ReportKernel]) -> HostModel:
        kernel_of = match_kernels(timeline.ops, kernels)
        launches = {k.id: int(k.launches or 0) for k in kernels}
        traced: dict[str, int] = {}
        for kid in kernel_of:
            if kid is not None:
                traced[kid] = traced.get(kid, 0) + 1
        in_report = sum(launches[k] for k in traced)
        windows = sum(traced.values()) / in_report if in_report else 0.0
        whole = _whole_windows(traced, launches)
        if whole is not None:
            windows = float(whole)
        p = plan(timeline)
        return cls(timeline, p, kernel_of, launches, windows, replay(p, hide_profiler=True))

    # -- what was measured ------------------------------------------------------------------------------------------
    @property
    def matched(self) -> bool:
        return self.windows > 0

    @property
    def launches(self) -> int:
        """GPU operations in the trace (kernels, memsets, copies)."""
        return len(self.timeline.ops)

    @property
    def matched_launches(self) -> int:
        return sum(1 for k in self.kernel_of if k is not None)

    @property
    def unmatched_kernels(self) -> list[str]:
        """The report's kernel ids the trace does not hold."""
        seen = set(self.kernel_of)
        return [k for k in self.report_launches if k not in seen]

    @cached_property
    def anchors(self) -> list[int] | None:
        """The indices of the GPU operations that open the trace's windows: the launches of a kernel group the
        report launches once and the trace `windows` times (of those, the one launched first); None without one."""
        if self.windows < MIN_ANCHORED_WINDOWS or self.windows != int(self.windows):
            return None
        traced = Counter(k for k in self.kernel_of if k is not None)
        once = {k for k, n in traced.items() if n == self.windows and self.report_launches.get(k) == 1}
        anchor = next((k for k in self.kernel_of if k in once), None)
        if anchor is None:
            return None
        return [i for i, k in enumerate(self.kernel_of) if k == anchor]

    def _periods(self, r: Replayed) -> list[tuple[float, float, int]]:
        """(start, end, operations) of each window of a replay, anchor to anchor."""
        a = self.anchors or []
        return [(r.op_start_ns[i], r.op_start_ns[j], j - i) for i, j in zip(a, a[1:])]

    def _steady_periods(self, r: Replayed) -> list[tuple[float, float, int]]:
        """The steady windows of a replay: all but the first, and none longer than STEADY_SPREAD × the median."""
        periods = self._periods(r)
        if len(periods) < 2:
            return periods
        middle = statistics.median(e - s for s, e, _ in periods)
        return [p for p in periods[1:] if p[1] - p[0] <= STEADY_SPREAD * middle]

    def _steady(self, r: Replayed) -> tuple[float, float, int]:
        """(start, end, operations) of the steady state of a replay: from the end of the trace's first window (its
        first `1/windows` of matched kernel launches, and whatever ran before them: setup) to the end of its last
        matched launch (what runs after the last window, teardown, is left out); the whole replay when the trace
        holds less than two windows."""
        matched = [i for i, k in enumerate(self.kernel_of) if k is not None]
        if self.windows < 1.5 or len(matched) < 2:
            return 0.0, r.wall_ns, len(r.op_end_ns)
        first = matched[min(len(matched) - 1, max(0, round(len(matched) / self.windows) - 1))]
        last = matched[-1]
        return max(r.op_end_ns[: first + 1]), max(r.op_end_ns[: last + 1]), last - first

    def _spans(self, r: Replayed) -> tuple[list[tuple[float, float, int]], float]:
        """The steady state of a replay as (start, end, operations) spans, and the windows they hold: the steady
        windows where the trace has anchors (one each), else the one span of `_steady` (its windows less the first,
        or all of them when it is the whole replay)."""
        periods = self._steady_periods(r)
        if periods:
            return periods, float(len(periods))
        steady = self.windows - 1 if self.windows >= 1.5 and self.matched_launches >= 2 else self.windows
        return [self._steady(r)], steady

    def wall_per_window_ns(self, r: Replayed | None = None) -> float:
        """The wall time of one report window in a replay (the base when None), in the steady state (`_spans`): the
        mean of the steady windows, anchor to anchor, where the trace has anchors. The mean, not the median: where
        the host sets the pace its time per window varies (3.5 ms, then 2.3 ms), and the step takes its sum."""
        spans, windows = self._spans(r or self.base)
        return sum(e - s for s, e, _ in spans) / windows if windows > 0 else math.nan

    @cached_property
    def gpu_busy_share(self) -> float:
        """The share of the steady state's wall time the GPU had an operation running."""
        r = self.base
        spans, _ = self._spans(r)
        busy = sum(
            union_ns([(max(s, a), min(e, b)) for s, e in zip(r.op_start_ns, r.op_end_ns) if e > a and s < b])
            for a, b, _ in spans
        )
        wall = sum(b - a for a, b, _ in spans)
        return busy / wall if wall > 0 else 0.0

    @cached_property
    def host_ns_per_launch(self) -> float:
        """The host's time per GPU operation: the steady state replayed with every operation taking no time, ÷ its
        operations (what the host needs to issue them: the floor under the step's wall time)."""
        spans, _ = self._spans(replay(self.plan, [0.0] * self.launches, hide_profiler=True))
        ops = sum(n for _, _, n in spans)
        return sum(e - s for s, e, _ in spans) / ops if ops else 0.0

    @property
    def launches_per_window(self) -> float:
        """GPU operations per window: the median window's where the trace has anchors."""
        periods = self._periods(self.base)
        if periods:
            return float(statistics.median(n for _, _, n in periods))
        return self.launches / self.windows if self.windows else 0.0

    @property
    def profiler_stall_ns(self) -> float:
        """The host's stall in the profiler's own buffer requests, taken out of the replays."""
        return sum(s for _, s in self.plan.overhead_idle)

    @property
    def host_bound(self) -> bool:
        """The GPU idles HOST_BOUND_IDLE of the steady state or more: the host sets the pace."""
        return 1.0 - self.gpu_busy_share >= HOST_BOUND_IDLE

    # -- what a fix would do ----------------------------------------------------------------------------------------
    def durations(self, parts: Mapping[str, Parts]) -> list[float]:
        """Each GPU operation's duration after the fix: a matched kernel's `parts` (kernel id -> parts, each with
        the fraction of the time it saves) applied to its measured duration; a kernel of several parts (sizes, the
        report's variants) takes the part whose per-launch time is nearest its own."""
        out = []
        for o, kid in zip(self.timeline.ops, self.kernel_of):
            ps = parts.get(kid) if kid is not None else None
            f = _part_fraction(ps, o.dur_ns) if ps else 0.0
            out.append(o.dur_ns * (1.0 - min(1.0, max(0.0, f))))
        return out

    def wall_saving_ns(self, parts: Mapping[str, Parts]) -> float | None:
        """The wall time a fix saves per report window (`parts`: kernel id -> its parts and fractions), None when
        none of those kernels is in the trace."""
        if not self.matched or not any(k in parts for k in self.kernel_of if k is not None):
            return None
        after = replay(self.plan, self.durations(parts), hide_profiler=True)
        return self.wall_per_window_ns() - self.wall_per_window_ns(after)

    def graphs_saving_ns(self) -> float:
        """The wall time per report window that issuing the window as CUDA graphs would save (`replay(graphs=True)`:
        between blocking calls every launch issued at once)."""
        after = replay(self.plan, hide_profiler=True, graphs=True)
        return max(0.0, self.wall_per_window_ns() - self.wall_per_window_ns(after))


def _whole_windows(traced: Mapping[str, int], report: Mapping[str, int]) -> int | None:
    """The windows a trace holds when most of its matched groups agree: the commonest whole ratio of a group's traced
    launches to its report launches, held by at least half the groups (a group also launched in setup or teardown
    has more); None otherwise."""
    ratios = Counter(n // report[k] for k, n in traced.items() if report.get(k) and n % report[k] == 0)
    if not ratios:
        return None
    n, votes = ratios.most_common(1)[0]
    return n if n >= 1 and 2 * votes >= len(traced) else None


def _part_fraction(parts: Parts, launch_ns: float) -> float:
    """The fraction of the part a launch of this duration belongs to: the only one, or the nearest in log time."""
    if len(parts) == 1 or launch_ns <= 0:
        return parts[0][1]
    sized = [(ns, f) for ns, f in parts if ns and ns > 0]
    if not sized:
        return parts[0][1]
    return min(sized, key=lambda p: abs(math.log(p[0] / launch_ns)))[1]
