"""Grouping of results into kernels: by name and launch shape, with launches of another size set apart as variants."""

from __future__ import annotations

import pandas as pd

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
