"""The counters a fix must move: each a measured ratio or percentage of a kernel's representative launch, named once
here, measured for every kernel (the result's `KernelEntry.counters`) and named by the findings' predictions
(`FindingEntry.predicts`), so that `ncuadvisor diff` can tell whether a change did what its fix was for.

A counter is None (left out) when the report lacks a metric it needs. A few counters read what the analysis derived
from the metrics (the roofline's FLOPs on the FMA pipes): `measure` is given them under the `derived:` keys
(`derived(roofline)`).
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ncuadvisor.analysis.roofline import Roofline
from ncuadvisor.metrics import (
    ComputeWorkloadAnalysis,
    Device,
    LaunchStats,
    MemoryTables,
    Occupancy,
    SourceCounters,
    WarpStateStats,
)
from ncuadvisor.model import num
from ncuadvisor.result.types import PredictionEntry
from ncuadvisor.rulekit.models import fma_and_tensor_flops

TENSOR_PIPE_PCT = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
TENSOR_BUSY_PCT = 5.0  # the tensor pipe's busy share above which work has moved onto it ("from idle to busy")

# what the analysis derived, given to `measure` beside the metrics (the keys are no ncu metric's name)
FMA_FLOPS = "derived:fma_flops"  # FLOPs on the FMA pipes: FP32 and packed FP16 (`models.fma_and_tensor_flops`)


@dataclass(frozen=True)
class Counter:
    name: str
    label: str
    unit: str
    value: Callable[[Mapping[str, Any]], float | None]


def _ratio(num_metric: str, den_metric: str) -> Callable[[Mapping[str, Any]], float | None]:
    def value(row: Mapping[str, Any]) -> float | None:
        a, b = num(row.get(num_metric)), num(row.get(den_metric))
        return a / b if a is not None and b else None

    return value


def _per_needed(total_metric: str, excess_metric: str) -> Callable[[Mapping[str, Any]], float | None]:
    """Units moved per unit needed: total ÷ (total − excess), 1.0 when nothing is wasted."""

    def value(row: Mapping[str, Any]) -> float | None:
        total, excess = num(row.get(total_metric)), num(row.get(excess_metric))
        if total is None or excess is None or total <= 0 or total - excess <= 0:
            return None
        return total / (total - excess)

    return value


def _share(part: tuple[str, ...], rest: tuple[str, ...]) -> Callable[[Mapping[str, Any]], float | None]:
    """sum(part) ÷ (sum(part) + sum(rest)): a share of a traffic."""

    def value(row: Mapping[str, Any]) -> float | None:
        a = [num(row.get(m)) for m in part]
        b = [num(row.get(m)) for m in rest]
        if any(v is None for v in a + b):
            return None
        whole = sum(v or 0.0 for v in a + b)
        return sum(v or 0.0 for v in a) / whole if whole > 0 else None

    return value


def _per(
    part: tuple[str, ...], den: str | tuple[str, ...], scale: float = 1.0
) -> Callable[[Mapping[str, Any]], float | None]:
    """scale × sum(part) ÷ sum(den)."""
    dens = (den,) if isinstance(den, str) else den

    def value(row: Mapping[str, Any]) -> float | None:
        a, d = [num(row.get(m)) for m in part], [num(row.get(m)) for m in dens]
        if any(v is None for v in a + d) or not sum(v or 0.0 for v in d):
            return None
        return scale * sum(v or 0.0 for v in a) / sum(v or 0.0 for v in d)

    return value


def _wave_idle_share(row: Mapping[str, Any]) -> float | None:
    """The share of the SMs' block slots left empty over the kernel's waves: 1 − waves ÷ ⌈waves⌉ (0 for whole waves;
    a grid of a tenth of a wave leaves 0.9)."""
    waves = num(row.get(LaunchStats.WAVES_PER_SM))
    return 1.0 - waves / math.ceil(waves) if waves is not None and waves > 0 else None


def _entry(row: Mapping[str, Any]) -> float | None:
    return None  # counted from the kernel entries by `diff`, not from a launch's metrics


def _metric(name: str) -> Callable[[Mapping[str, Any]], float | None]:
    return lambda row: num(row.get(name))


COUNTERS: dict[str, Counter] = {
    c.name: c
    for c in (
        Counter(
            "l2_sectors_per_needed_sector",
            "global sectors moved per sector needed",
            "",
            _per_needed(SourceCounters.L2_SECTORS_GLOBAL, SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE),
        ),
        Counter(
            "global_load_sectors_per_request",
            "sectors/request (global loads)",
            "",
            _ratio(MemoryTables.GLOBAL_LOAD_SECTORS, MemoryTables.GLOBAL_LOAD_REQUESTS),
        ),
        Counter(
            "shared_wavefronts_per_needed",
            "shared wavefronts per wavefront needed",
            "",
            _per_needed(SourceCounters.SHARED_WAVEFRONTS, SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE),
        ),
        Counter(
            "local_sector_share",
            "local-memory share of L1 sectors",
            "",
            _share(
                (MemoryTables.LOCAL_LOAD_SECTORS, MemoryTables.LOCAL_STORE_SECTORS),
                (MemoryTables.GLOBAL_LOAD_SECTORS, MemoryTables.GLOBAL_STORE_SECTORS),
            ),
        ),
        Counter(
            "global_atomics_per_load",
            "global atomic requests per load request",
            "",
            _per(
                (MemoryTables.GLOBAL_ATOMIC_REQUESTS, MemoryTables.GLOBAL_REDUCTION_REQUESTS),
                MemoryTables.GLOBAL_LOAD_REQUESTS,
            ),
        ),
        Counter(
            "global_sectors_per_request",
            "sectors/request (global loads and stores)",
            "",
            _per(
                (MemoryTables.GLOBAL_LOAD_SECTORS, MemoryTables.GLOBAL_STORE_SECTORS),
                (MemoryTables.GLOBAL_LOAD_REQUESTS, MemoryTables.GLOBAL_STORE_REQUESTS),
            ),
        ),
        Counter(
            "global_load_bytes_per_flop",
            "bytes of global loads per FMA-pipe FLOP",
            "",
            _per((MemoryTables.GLOBAL_LOAD_SECTORS,), FMA_FLOPS, scale=32.0),
        ),
        Counter(
            "shared_wavefronts_per_flop",
            "shared-memory wavefronts per FMA-pipe FLOP",
            "",
            _per((SourceCounters.SHARED_WAVEFRONTS,), FMA_FLOPS),
        ),
        Counter(
            "threads_per_instruction",
            "active threads per warp instruction",
            "",
            _metric(WarpStateStats.THREADS_PER_INST),
        ),
        Counter(
            "long_scoreboard_stall",
            "long-scoreboard stall cycles per instruction",
            "",
            _metric(WarpStateStats.stall("long_scoreboard")),
        ),
        Counter(
            "blocks_per_sm",
            "blocks per SM",
            "",
            _ratio(LaunchStats.GRID_SIZE, Device.SM_COUNT),
        ),
        Counter("wave_idle_share", "idle share of the last wave's SM slots", "", _wave_idle_share),
        Counter("achieved_occupancy_pct", "achieved occupancy", "%", _metric(Occupancy.ACHIEVED_PCT)),
        Counter("tensor_pipe_pct", "tensor pipe busy", "%", _metric(TENSOR_PIPE_PCT)),
        Counter("fma_pipe_pct", "FMA pipe busy", "%", _metric(ComputeWorkloadAnalysis.FMA_PIPE_PCT)),
        Counter("fp64_pipe_pct", "FP64 pipe busy", "%", _metric(ComputeWorkloadAnalysis.FP64_PIPE_PCT)),
    )
}


# What a fix removes rather than speeds up (a copy, a cast, the kernels a fusion replaces), counted by `diff` from the
# kernel entries after the change: the launches of a kernel (0 when it is gone), and of the kernels a program finding
# names (those matched after the change, by identity, name or role).
ENTRY_COUNTERS: dict[str, Counter] = {
    c.name: c
    for c in (
        Counter("launches", "launches", "", _entry),
        Counter("kernel_launches", "launches of the kernels it names", "", _entry),
    )
}


def derived(rl: Roofline) -> dict[str, float | None]:
    """What the counters read of a kernel's roofline, under the `derived:` keys."""
    fma, _ = fma_and_tensor_flops(rl)
    return {FMA_FLOPS: fma}


def measure(row: Mapping[str, Any], extra: Mapping[str, float | None] | None = None) -> dict[str, float]:
    """The counters a report measured for a kernel (its representative launch's metrics, and what the analysis derived
    from them: `extra`, under the `derived:` keys), rounded to 4 digits."""
    out = {}
    values: Mapping[str, Any] = ChainMap(dict(extra or {}), row)  # type: ignore[arg-type]
    for name, c in COUNTERS.items():
        v = c.value(values)
        if v is not None:
            out[name] = round(v, 4)
    return out


def predict(
    name: str,
    current: float | None,
    predicted: float | None,
    bound: float,
    expect: Literal["<=", ">="] = "<=",
    kernel_ids: list[str] | None = None,
) -> PredictionEntry:
    """A finding's prediction for counter `name` (one of COUNTERS or ENTRY_COUNTERS): its value now, the value the fix's model expects,
    the bound a measurement after the change must reach; `kernel_ids`, for `kernel_launches`, the kernels counted when
    not all those the program finding names."""
    c = COUNTERS[name] if name in COUNTERS else ENTRY_COUNTERS[name]
    r = lambda v: None if v is None else round(float(v), 4)  # noqa: E731
    return PredictionEntry(name, c.label, r(current), r(predicted), round(float(bound), 4), expect, c.unit, kernel_ids)
