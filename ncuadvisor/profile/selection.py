"""Choosing what phase 2 profiles: the kernels worth a deep pass (by phase 1's time), and how each round of phase 2
asks ncu for one launch of each (the strategy, the kernel-name base, the launch count)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_ROUNDS = 4
DEFAULT_COVERAGE = 0.9


def select_kernels(kernels: Sequence[Any], top: int | None = None, coverage: float | None = None) -> list[Any]:
    """The kernels worth the deep pass, by total time: the first `top`, or the fewest covering `coverage` of the
    GPU time (0.9 by default); with both, the coverage set capped at `top`. Always at least one."""
    ordered = sorted(kernels, key=lambda k: -k.duration_ns)
    if not ordered:
        return []
    if top is not None and coverage is None:
        return ordered[: max(1, top)]
    cov = DEFAULT_COVERAGE if coverage is None else coverage
    total = sum(k.duration_ns for k in ordered)
    if total <= 0:
        chosen = ordered
    else:
        chosen, acc = [], 0.0
        for k in ordered:
            if chosen and acc / total >= cov - 1e-12:
                break
            chosen.append(k)
            acc += k.duration_ns
    return chosen[: max(1, top)] if top is not None else chosen


def window_launch_count(
    launches: Sequence[dict[str, Any]], kernels: Sequence[Any], chosen: Sequence[Any]
) -> int | None:
    """How many launches of the chosen kernels' names (in phase 1's launch order) must be profiled so that every
    chosen kernel (name and launch shape) is among them; None when a chosen kernel never appears."""
    index = {f"k{i}": k for i, k in enumerate(kernels)}
    wanted = {kernel_key(k) for k in chosen}
    names = {k.name for k in chosen}  # the window filters by function name (see two_phase)
    seen: set[tuple[str, str, str]] = set()
    count = 0
    for x in launches:
        k = index.get(str(x.get("kernel_id")))
        if k is None or k.name not in names:
            continue  # the name filter never lets these through, so they do not count
        count += 1
        if kernel_key(k) in wanted:
            seen.add(kernel_key(k))
            if len(seen) == len(wanted):
                return count
    return None


def config_launch_count(kernels: Sequence[Any], chosen: Sequence[Any]) -> int | None:
    """How many launches the "config" strategy profiles: one per launch shape of every kernel (in phase 1) whose
    mangled name is a chosen kernel's; None when a chosen kernel has no mangled name."""
    names = {k.mangled for k in chosen}
    if not names or not all(names):
        return None
    return sum(1 for k in kernels if k.mangled in names)


def kernel_key(k: Any) -> tuple[str, str, str]:
    """The identity of a kernel across reports: demangled name and launch shape (as group_kernels groups)."""
    if isinstance(k, dict):
        return (str(k.get("demangled")), str(k.get("grid")), str(k.get("block")))
    return (str(k.demangled), str(k.grid), str(k.block))


# -- the rounds of phase 2 ------------------------------------------------------------------------------------------


def first_strategy(kernel_filter: bool, window: int | None, configs: int | None) -> str:
    """The strategy of round 1 (see ncu.phase2_command), which catches every chosen kernel in one run of the program,
    profiling as few launches as it can: the first launch of each launch configuration of the chosen mangled names
    ("config"), or a window of the first N launches of the chosen function names ("window", N from phase 1's launch
    order), whichever profiles fewer launches; "kernel-id" when the user filters names (ncu takes one name filter)."""
    if kernel_filter:
        return "kernel-id"
    if window is not None and (configs is None or window <= configs):
        return "window"
    if configs is not None:
        return "config"
    return "kernel-id"


def round_strategy(rnd: int, first: str) -> str:
    """Round 1 `first`, round 2 "kernel-id" (unless that was round 1's), then "per-launch-config"."""
    if rnd == 1:
        return first
    if rnd == 2 and first != "kernel-id":
        return "kernel-id"
    return "per-launch-config"


def round_name_base(strategy: str, name_base: str) -> str:
    """ncu's --kernel-name-base for a round: "window" matches plain function names (measured on an H200, a
    demangled-name regex missed every cuBLAS nvjet_* kernel: their demangled form in ncu's filter is not the name the
    report stores), "config" the mangled names, the other strategies `name_base`."""
    return {"window": "function", "config": "mangled"}.get(strategy, name_base)


def kernel_names(kernels: Sequence[Any], name_base: str) -> list[str]:
    """The kernels' names as ncu matches them under `--kernel-name-base name_base`."""
    return [
        k.mangled if name_base == "mangled" else k.demangled if name_base == "demangled" else k.name for k in kernels
    ]
