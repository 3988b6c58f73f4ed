"""Grouping of results into kernels: by name and launch shape, with launches of another size set apart as variants."""

from __future__ import annotations

from typing import Any

from ncuadvisor.model.table import Table
from ncuadvisor.model.types import Kernel, Variant

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


LAUNCH_PICKS = ("median", "first", "each")


def group_kernels(
    results: Table, duration_metric: str = "gpu__time_duration.sum", pick: str = "median"
) -> list[Kernel]:
    """Group results by (process, demangled name, grid, block), ordered by total time, largest first.

    `pick` is the launch whose deep metrics stand for a group: "median" (the launch of median duration, the default),
    "first" (the first launch, the one `ncuadvisor profile` profiles in depth), or "each" (no grouping: every launch
    is a kernel of its own, to see how the analysis varies from launch to launch)."""
    if pick not in LAUNCH_PICKS:
        raise ValueError(f"pick must be one of {LAUNCH_PICKS}, not {pick!r}")
    columns = ["process", "demangled", "grid", "block"] + (["result_id"] if pick == "each" else [])
    # the groups in the order of their first launch; a launch is (row, duration: 0 where not a number)
    groups: dict[tuple[Any, ...], list[tuple[dict[str, Any], float]]] = {}
    for row in results:
        group = tuple(_group_key(row.get(c)) for c in columns)
        groups.setdefault(group, []).append((row, _duration(row.get(duration_metric))))
    kernels: list[Kernel] = []
    for launches in groups.values():
        first = launches[0][0]
        process, demangled, grid, block = (first.get(c) for c in columns[:4])
        ids = [int(row["result_id"]) for row, _ in launches]
        durations = [d for _, d in launches]
        by_time = sorted(launches, key=lambda launch: launch[1])  # stable: equal durations keep launch order
        rep = ids[0] if pick == "first" else int(by_time[(len(launches) - 1) // 2][0]["result_id"])
        key = f"{process}|{demangled}|{grid}|{block}" + (f"|{first['result_id']}" if pick == "each" else "")
        kernels.append(
            Kernel(
                key=key,
                name=str(first["name"]),
                demangled=str(demangled),
                mangled=str(first["mangled"]),
                grid=str(grid),
                block=str(block),
                result_ids=ids,
                representative=rep,
                launches=len(launches),
                duration_ns=float(sum(durations)),  # whole nanoseconds: the same total in any order of summing
                nvtx=str(first["nvtx"]),
                process=str(process),
                launch_min_ns=float(by_time[0][1]),
                launch_max_ns=float(by_time[-1][1]),
                variants=[] if pick == "each" else split_variants(ids, durations, rep),
            )
        )
    kernels.sort(key=lambda k: -k.duration_ns)
    return kernels


_GAP = object()  # the group key of a missing value: every gap of a column falls into one group


def _group_key(value: Any) -> Any:
    return _GAP if value is None or (isinstance(value, float) and value != value) else value


def _duration(value: Any) -> float:
    """A launch's duration in ns; 0 where it is not a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return 0.0 if value != value else float(value)
    return 0.0
