"""The data model: what a report holds, free of `ncu_report` (plain dataclasses and one pandas frame).

`Profile.results` has one row per result (kernel launch) and one column per metric the analysis asked for, plus
the identity columns below. Non-scalar data (per-instruction source metrics, NCU's own rule results) lives in
`ResultDetail`, read only for the results the analysis looks at closely.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ncuadvisor.units import finite, fmt_ns

# Identity columns of Profile.results (metrics are the other columns, named as ncu names them).
ID_COLUMNS = [
    "result_id",  # running index over the whole report
    "range_idx",
    "action_idx",
    "name",  # function name, e.g. "copy_strided"
    "demangled",  # full demangled signature, e.g. "copy_strided(const float *, float *, int, int)"
    "mangled",
    "grid",  # "(x, y, z)"
    "block",
    "nvtx",  # innermost NVTX ranges, " > "-joined, "" when none
    "process",  # process id or "" (multi-process reports)
    "device_id",
]


class SourceLine:
    """One instruction's share of a per-instruction metric. Its file, line and SASS text are looked up on first use
    (`resolve(pc)` -> (file, line, sass), or None while not known yet): a kernel has thousands of instructions, a
    finding shows three."""

    __slots__ = ("pc", "value", "_location", "_resolve")

    def __init__(
        self,
        pc: int,
        value: float,
        file: str | None = None,
        line: int | None = None,
        sass: str | None = None,
        resolve: Callable[[int], tuple] | None = None,
    ):
        self.pc = pc
        self.value = value
        self._resolve = resolve
        self._location = None if resolve is not None else (file, line, sass)

    def _loc(self) -> tuple:
        if self._location is None:
            location = self._resolve(self.pc) if self._resolve else (None, None, None)
            if location is None:  # not known yet (read later, in a worker process): unknown for now, asked again
                return (None, None, None)
            self._location = location
        return self._location

    @property
    def file(self) -> str | None:
        return self._loc()[0]

    @property
    def line(self) -> int | None:
        return self._loc()[1]

    @property
    def sass(self) -> str | None:
        return self._loc()[2]

    def __repr__(self) -> str:
        return f"SourceLine(pc={self.pc:#x}, value={self.value})"


@dataclass
class ResultDetail:
    """Non-scalar data of one result: per-instruction metrics and NCU's own rule results."""

    result_id: int
    # metric name -> one SourceLine per instruction (pc) with a non-zero value
    per_instruction: dict[str, list[SourceLine]] = field(default_factory=dict)
    ncu_rules: list[dict[str, Any]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)


@dataclass
class Profile:
    """One loaded report."""

    path: str
    results: pd.DataFrame
    device: dict[str, Any]
    ncu_version: str | None = None
    command_line: str | None = None
    reader_version: str | None = None
    details: dict[int, ResultDetail] = field(default_factory=dict)
    source_files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # file -> its text, looked up in the report on first use (reading every embedded file costs ~25 ms a result)
    source_lookup: Callable[[str], str | None] | None = None
    # one entry per process when the report holds several (pid, host, executable, rank when known), else empty
    processes: list[dict[str, Any]] = field(default_factory=list)
    # when deep data was read in worker processes: fetches the source lines and files the analysis asked for but
    # did not get yet; True when it fetched something (run the analysis again), False when nothing was missing
    fetch_pending: Callable[[], bool] | None = None

    def source_code(self, file: str | None, line: int | None) -> str | None:
        """The text of `file`:`line` when the report embeds the source (ncu --import-source yes)."""
        if not file or not line:
            return None
        if file not in self.source_files and self.source_lookup is not None:
            text = self.source_lookup(file)
            if text is not None:
                self.source_files[file] = text
        text = self.source_files.get(file)
        if text is None:
            return None
        lines = text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else None


@dataclass
class Variant:
    """Launches of a kernel group whose duration sets them apart from the launch the group is analysed on: another
    problem size or call site of the same kernel and launch shape (an ATen copy that transposes at one call site
    and not at another, one cuBLAS kernel at two K's), analysed on a launch of its own."""

    result_ids: list[int]
    representative: int  # the launch of median duration among these
    launches: int
    duration_ns: float
    launch_min_ns: float
    launch_max_ns: float


@dataclass
class Kernel:
    """Results of the same kernel with the same launch shape, grouped: the unit the analysis talks about."""

    key: str
    name: str
    demangled: str
    mangled: str
    grid: str
    block: str
    result_ids: list[int]
    representative: int  # result whose deep metrics stand for the group (median duration)
    launches: int
    duration_ns: float  # total over launches
    nvtx: str = ""
    process: str = ""
    launch_min_ns: float = 0.0  # the shortest and the longest launch: far apart when one name and launch shape
    launch_max_ns: float = 0.0  # holds several problem sizes or call sites, while the analysis looks at one launch
    variants: list[Variant] = field(default_factory=list)  # launches of another duration, analysed on their own

    @property
    def analysed_launches(self) -> int:
        """The launches the group's own analysis stands for: all of them but its variants'."""
        return self.launches - sum(v.launches for v in self.variants)

    @property
    def analysed_ns(self) -> float:
        return self.duration_ns - sum(v.duration_ns for v in self.variants)

    @property
    def per_launch_ns(self) -> float:
        return self.duration_ns / self.launches if self.launches else 0.0

    @property
    def launch_note(self) -> str | None:
        """Said when the launches of this group differ by more than LAUNCH_SPREAD in duration: one name and launch
        shape then holds several problem sizes or call sites (a cuBLAS kernel at two K's, an ATen copy that transposes
        at one call site and not at another), and the deep metrics and findings come from one of its launches."""
        if self.variants:
            return spread_note(
                self.launch_min_ns,
                self.launch_max_ns,
                f"{self.analysed_launches} of the {self.launches} launches are analysed here, the other "
                "sizes as variants of their own",
            )
        if self.launches < 2 or self.launch_min_ns <= 0 or self.launch_max_ns <= LAUNCH_SPREAD * self.launch_min_ns:
            return None
        return spread_note(self.launch_min_ns, self.launch_max_ns, "the analysis looks at one launch")


def spread_note(shortest_ns: Any, longest_ns: Any, what: str) -> str:
    """The note of a kernel group whose launches differ in duration (`Kernel.launch_note`), ending in what was
    analysed of them."""
    return (
        f"launches take {fmt_ns(shortest_ns)} to {fmt_ns(longest_ns)}: several problem sizes or call sites share "
        f"this name and launch shape; {what}"
    )


LAUNCH_SPREAD = 1.5  # longest ÷ shortest launch of a kernel group above which its launches are not alike
VARIANT_GAP = 1.25  # launches sorted by duration split into sizes where one is this much longer than the one before
VARIANT_MIN_SHARE = 0.1  # a size of launches is analysed on its own (a Variant) from this share of its group's time
VARIANT_MIN_STEP_NS = (
    1000.0  # ... and the step between sizes is at least this long: the jitter of 2 µs launches is not a size
)


def launch_clusters(durations: list[float], gap: float = VARIANT_GAP) -> list[list[int]]:
    """Indices of launches grouped by duration (ns): sorted, and split wherever a launch takes more than `gap` times
    the one before it and at least VARIANT_MIN_STEP_NS longer. Launch-to-launch noise (a few %, or a few hundred ns
    on a short kernel) never splits; two problem sizes (14 and 28 µs) always do."""
    order = sorted(range(len(durations)), key=lambda i: durations[i])
    clusters: list[list[int]] = []
    for i in order:
        prev = durations[clusters[-1][-1]] if clusters else 0.0
        if clusters and not (prev > 0 and durations[i] > gap * prev and durations[i] - prev >= VARIANT_MIN_STEP_NS):
            clusters[-1].append(i)
        else:
            clusters.append([i])
    return clusters


def split_variants(
    ids: list[int], durations: list[float], representative: int, min_share: float = VARIANT_MIN_SHARE
) -> list[Variant]:
    """The sizes of launches (launch_clusters) other than the representative's that hold `min_share` of the time,
    largest first; smaller ones stay with the group."""
    total = sum(durations)
    if len(ids) < 2 or total <= 0:
        return []
    out = []
    for c in launch_clusters(durations):
        if representative in (ids[i] for i in c) or sum(durations[i] for i in c) < min_share * total:
            continue
        by_time = sorted(c, key=lambda i: durations[i])
        out.append(
            Variant(
                result_ids=[int(ids[i]) for i in sorted(c)],
                representative=int(ids[by_time[(len(by_time) - 1) // 2]]),
                launches=len(c),
                duration_ns=float(sum(durations[i] for i in c)),
                launch_min_ns=float(durations[by_time[0]]),
                launch_max_ns=float(durations[by_time[-1]]),
            )
        )
    out.sort(key=lambda v: -v.duration_ns)
    return out


def num(value: Any) -> float | None:
    """A metric value as a finite float, or None when it is missing or not a number."""
    return finite(value)


LAUNCH_PICKS = ("median", "first", "each")


def group_kernels(
    results: pd.DataFrame, duration_metric: str = "gpu__time_duration.sum", pick: str = "median"
) -> list[Kernel]:
    """Group results by (process, demangled name, grid, block), ordered by total time, largest first.

    `pick` is the launch whose deep metrics stand for a group: "median" (the launch of median duration, the default),
    "first" (the first launch, the one `ncuadvisor profile` profiles in depth), or "each" (no grouping: every launch
    is a kernel of its own, to see how the analysis varies from launch to launch)."""
    if pick not in LAUNCH_PICKS:
        raise ValueError(f"pick must be one of {LAUNCH_PICKS}, not {pick!r}")
    if results.empty:
        return []
    frame = results.copy()
    if duration_metric not in frame.columns:
        frame[duration_metric] = float("nan")
    frame["_dur"] = pd.to_numeric(frame[duration_metric], errors="coerce").fillna(0.0)
    columns = ["process", "demangled", "grid", "block"] + (["result_id"] if pick == "each" else [])
    kernels: list[Kernel] = []
    for keys, g in frame.groupby(columns, sort=False, dropna=False):
        process, demangled, grid, block = keys[:4]
        g_sorted = g.sort_values("_dur", kind="stable")
        rep = int((g if pick == "first" else g_sorted).iloc[0 if pick == "first" else (len(g) - 1) // 2]["result_id"])
        first = g.iloc[0]
        key = f"{process}|{demangled}|{grid}|{block}" + (f"|{keys[4]}" if pick == "each" else "")
        kernels.append(
            Kernel(
                key=key,
                name=str(first["name"]),
                demangled=str(demangled),
                mangled=str(first["mangled"]),
                grid=str(grid),
                block=str(block),
                result_ids=[int(x) for x in g["result_id"]],
                representative=rep,
                launches=len(g),
                duration_ns=float(g["_dur"].sum()),
                nvtx=str(first["nvtx"]),
                process=str(process),
                launch_min_ns=float(g_sorted["_dur"].iloc[0]),
                launch_max_ns=float(g_sorted["_dur"].iloc[-1]),
                variants=[]
                if pick == "each"
                else split_variants([int(x) for x in g["result_id"]], [float(x) for x in g["_dur"]], rep),
            )
        )
    kernels.sort(key=lambda k: -k.duration_ns)
    return kernels
