"""The counters a fix must move: each a measured ratio or percentage of a kernel's representative launch, named once
here, measured for every kernel (the result's `KernelEntry.counters`) and named by the findings' predictions
(`FindingEntry.predicts`), so that `ncuadvisor diff` can tell whether a change did what its fix was for.

A counter is None (left out) when the report lacks a metric it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ncuadvisor.metrics import ComputeWorkloadAnalysis, MemoryTables, Occupancy, SourceCounters
from ncuadvisor.model import num
from ncuadvisor.result.types import PredictionEntry

TENSOR_PIPE_PCT = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
TENSOR_BUSY_PCT = 5.0  # the tensor pipe's busy share above which work has moved onto it ("from idle to busy")


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


def _per(part: tuple[str, ...], den: str) -> Callable[[Mapping[str, Any]], float | None]:
    """sum(part) ÷ den."""

    def value(row: Mapping[str, Any]) -> float | None:
        a, d = [num(row.get(m)) for m in part], num(row.get(den))
        if any(v is None for v in a) or not d:
            return None
        return sum(v or 0.0 for v in a) / d

    return value


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
        Counter("achieved_occupancy_pct", "achieved occupancy", "%", _metric(Occupancy.ACHIEVED_PCT)),
        Counter("tensor_pipe_pct", "tensor pipe busy", "%", _metric(TENSOR_PIPE_PCT)),
        Counter("fma_pipe_pct", "FMA pipe busy", "%", _metric(ComputeWorkloadAnalysis.FMA_PIPE_PCT)),
        Counter("fp64_pipe_pct", "FP64 pipe busy", "%", _metric(ComputeWorkloadAnalysis.FP64_PIPE_PCT)),
    )
}


def measure(row: Mapping[str, Any]) -> dict[str, float]:
    """The counters a report measured for a kernel (its representative launch's metrics), rounded to 4 digits."""
    out = {}
    for name, c in COUNTERS.items():
        v = c.value(row)
        if v is not None:
            out[name] = round(v, 4)
    return out


def predict(
    name: str,
    current: float | None,
    predicted: float | None,
    bound: float,
    expect: Literal["<=", ">="] = "<=",
) -> PredictionEntry:
    """A finding's prediction for counter `name` (one of COUNTERS): its value now, the value the fix's model expects,
    the bound a measurement after the change must reach."""
    c = COUNTERS[name]
    r = lambda v: None if v is None else round(v, 4)  # noqa: E731
    return PredictionEntry(name, c.label, r(current), r(predicted), round(bound, 4), expect, c.unit)
