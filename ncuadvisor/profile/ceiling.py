"""Kernels phase 1 already places at their tensor ceiling: `ncuadvisor profile` gives them the at-roofline verdict
from phase 1 and does not profile them in phase 2.

Phase 1 collects the tensor pipe's busy share of every launch (`ncu.TENSOR_PIPE_PCT`, no replay pass beyond the
duration's). A launch that keeps the tensor pipe busy p% of its time needs at least p% of that time at the tensor
pipe's peak, so its floor is at least that and its headroom (measured ÷ floor) at most 100 ÷ p; a kernel is placed
when every launch of it is. At or above
100 ÷ ROOF001's `max_headroom` (62.5% for 1.6) it is within ROOF001's reach whatever phase 2 would measure: the
verdict "near its roofline bound: leave it" is known without phase 2.

Chosen with the full-section reports at hand (fixtures `profile-cost-2026-11-30/train_naive_full`, `torch_eager`,
`torch_gemm_conv`, `torch_train`): every matrix kernel at 71.9–88.3% of its tensor pipe had ROOF001 as its first and
only finding, with a headroom of 1.13–1.40 (100 ÷ p within 0.02); the nearest below the threshold, a cuBLAS kernel at
62.0% (headroom 1.61) and one at 54.9% (1.82), had no finding; the FP32 SIMT GEMMs (`sm80_xmma_*_f32f32`, TEN002)
run the tensor pipe under 0.01% and are profiled as before.

The same share also says when phase 2 needs no tensor FLOP counts (`tensor_idle`): only a pipe measured idle, 0% on
every launch. Any busy share may hold matrix work: in the full-section fixtures kernels with no tensor FLOPs ran the
pipe up to 12.6% (immediate-only `HFMA2.MMA` constant moves: a Triton GELU, `poly_float_literal` 5.2%, `index_math`
0.04%) while a WMMA kernel with 17 GFLOP of them ran it 7.2% (`matmul_half_wmma`): no threshold above 0 separates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ncuadvisor.profile.ncu import TENSOR_PIPE_PCT
from ncuadvisor.profile.selection import kernel_key
from ncuadvisor.result.types import KernelEntry

AT_ROOFLINE_RULE = "ROOF001"


def tensor_share(launches: Sequence[dict[str, Any]], kernels: Sequence[Any]) -> dict[tuple[str, str, str], float]:
    """Kernel key -> the lowest tensor pipe busy % among its phase-1 launches (each launch then runs within 100 ÷ that
    of its floor); only kernels every launch of which has the metric (a duration-only phase-1 report gives none).
    The lowest, not the time-weighted mean: in torch_eager one cuBLAS kernel and launch shape ran at 82% and at 56%
    (two problem sizes), and phase 2 would analyse the 56% launch, which no rule calls at its roofline."""
    index = {f"k{i}": kernel_key(k) for i, k in enumerate(kernels)}
    lowest: dict[tuple[str, str, str], float] = {}
    missing: set[tuple[str, str, str]] = set()
    for x in launches:
        key = index.get(str(x.get("kernel_id")))
        if key is None:
            continue
        pct = x.get("tensor_pct")
        if pct is None:
            missing.add(key)
            continue
        lowest[key] = min(lowest.get(key, float(pct)), float(pct))
    return {k: v for k, v in lowest.items() if k not in missing and v > 0}


def tensor_idle(chosen: Sequence[Any], kernels: Sequence[Any], launches: Sequence[dict[str, Any]]) -> bool:
    """Whether phase 1 measured the tensor pipe idle (0%) on every launch of every `chosen` kernel: then they ran no
    tensor instruction, and phase 2 may leave the tensor paths' FLOP counts out. False when a launch lacks the metric
    (a duration-only phase-1 report) or none of them launched."""
    index = {f"k{i}": kernel_key(k) for i, k in enumerate(kernels)}
    wanted = {kernel_key(k) for k in chosen}
    pcts = [x.get("tensor_pct") for x in launches if index.get(str(x.get("kernel_id"))) in wanted]
    return bool(pcts) and all(p is not None and float(p) == 0.0 for p in pcts)


def min_tensor_pct(rules: Sequence[Any]) -> float | None:
    """The tensor pipe share that places a kernel within the at-roofline rule's headroom; None without that rule."""
    rule = next((r for r in rules if getattr(r, "code", None) == AT_ROOFLINE_RULE), None)
    if rule is None:
        return None
    return 100.0 / float(rule.thresholds["max_headroom"])


def at_tensor_ceiling(
    chosen: Sequence[Any], kernels: Sequence[Any], launches: Sequence[dict[str, Any]], rules: Sequence[Any]
) -> dict[tuple[str, str, str], float]:
    """The chosen kernels phase 1 places at their tensor ceiling: kernel key -> the lowest tensor pipe busy % of
    its launches."""
    floor_pct = min_tensor_pct(rules)
    if floor_pct is None:
        return {}
    share = tensor_share(launches, kernels)
    wanted = {kernel_key(k) for k in chosen}
    return {key: pct for key, pct in share.items() if key in wanted and pct >= floor_pct}


def placed_entry(entry: KernelEntry, pct: float, rules: Sequence[Any]) -> KernelEntry:
    """The merged entry of a kernel placed at its tensor ceiling in phase 1 (`entry`: its timed-only entry): bound
    compute, the headroom's upper bound, and the at-roofline rule's verdict with the phase-1 evidence
    (`AtRoofline.at_tensor_ceiling`, in rules/ROOF001_at_roofline.py)."""
    headroom = 100.0 / pct
    reason = (
        f"near its tensor-core ceiling: phase 1 measured the tensor pipe busy {pct:.0f}% or more of each launch's time, so "
        f"it runs within {headroom:.2f}× of its floor; not profiled in depth (phase 2 skipped it)"
    )
    rule = next(r for r in rules if getattr(r, "code", None) == AT_ROOFLINE_RULE)
    finding = rule.at_tensor_ceiling(pct, entry.language, TENSOR_PIPE_PCT)  # the verdict is the rule's own words
    rl = entry.roofline
    floor = rl.duration_ns / headroom if rl.duration_ns else None  # at least: the tensor pipe's busy time
    roofline = replace(
        rl,
        theoretical_ns=floor,
        compute_floor_ns=floor,
        headroom=headroom,
        bound="compute",
        bound_reason=reason,
        limiter="tensor",
        limiter_share=pct / 100.0,
        limiter_reason=f"tensor-core-bound (the tensor pipe busy {pct:.0f}% or more of each launch's time, phase 1)",
        floor_reason="at least the tensor pipe's busy time, measured in phase 1",
    )
    return replace(
        entry, roofline=roofline, bound="compute", bound_reason=reason, headroom=headroom, findings=[finding.entry()]
    )
