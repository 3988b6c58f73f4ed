"""The time of a tiled matrix product (`rulekit.models.tiled_product_ns`), which TIL001 uses for the fixed kernel of a
matrix product tiled at both levels: its FMAs at the FP32 peak plus its shared-memory wavefronts at one per cycle per
SM, added rather than overlapped. Nothing in it is fitted: the peak, the clock and the SMs are the report's. Checked
here on the project's own tiled kernels, each at the shared wavefronts it executes (flaws.cu's `matmul_tiled`, wave.cu's
split-K GEMM and conv9.cu's shared tile, captured on the H200 and the H100): where L1/shared memory is the busiest
unit, at least 70% busy, the model is within -5% and +11% of the measured time; where the issue slots are busier or
the grid fills less than that, the kernel is slower than the model (limits the model leaves out)."""

import pytest

from ncuadvisor.rulekit import FLOPS_PER_WARP_FMA, register_tile_wavefronts, tiled_product_ns

CAPTURES = (
    "flaws",
    "wave",
    "h100-planted-2026-12-06/flaws_h100",
    "h100-planted-2026-12-06/wave_h100",
    "conv9-2026-12-06/conv9",
)


def _model_over_measured(result) -> dict[str, tuple[float, bool]]:
    """kernel (and GPU) -> (the model's time ÷ the measured duration, whether L1/shared memory limits it), for the
    kernels of at least 1 GFLOP of FP32 work that read shared memory."""
    out = {}
    sm_count = result.report.device.sm_count
    for k in result.kernels:
        r, c = k.roofline, k.counters or {}
        per_flop, flops = c.get("shared_wavefronts_per_flop"), r.flops_by_precision.get("fp32", 0.0)
        if not per_flop or flops < 1e9 or not r.duration_ns:
            continue
        model = tiled_product_ns(
            flops, r.peak_flops_per_s["fp32"], sm_count, r.sm_clock_hz, per_flop * FLOPS_PER_WARP_FMA
        )
        onchip = max(r.busy_pct.get("l1") or 0.0, r.busy_pct.get("shared") or 0.0)
        others = max(v or 0.0 for u, v in r.busy_pct.items() if u not in ("l1", "shared", "lsu"))
        out[f"{k.name} ({r.peak_flops_per_s['fp32'] / 1e12:.1f} TFLOP/s)"] = (
            model / r.duration_ns,
            onchip >= 70.0 and onchip >= others,
        )
    return out


def test_the_model_gives_the_time_of_the_tiled_products_shared_memory_limits(typed):
    found: dict[str, tuple[float, bool]] = {}
    for name in CAPTURES:
        found.update(_model_over_measured(typed(name)))
    limited = {k: ratio for k, (ratio, by_shared) in found.items() if by_shared}
    # matmul_tiled (32×32 tiles, 4 outputs a thread: 0.81 wavefronts per warp FMA) and gemm_splitk_serial_long on
    # both GPUs, conv9_smem on the H100
    assert len(limited) == 5, found
    assert all(0.94 <= ratio <= 1.12 for ratio in limited.values()), limited
    # the others are held by the issue slots (conv9_smem_reg, conv5_smem_reg, matmul_half_fma's conversions) or by a
    # grid under a wave (gemm_big_tiles_long): each slower than its shared wavefronts and FMAs alone
    others = {k: ratio for k, (ratio, by_shared) in found.items() if not by_shared}
    assert len(others) >= 6, found
    assert all(ratio <= 0.9 for ratio in others.values()), others


def test_an_8x8_register_tile_is_half_the_fp32_peak_on_128_lanes():
    """0.25 wavefronts per warp FMA; four warp FMAs per cycle per SM (128 lanes): the wavefronts take as long as the
    FMAs. On 64 lanes per SM (sm_80: two warp FMAs a cycle), half as long."""
    wavefronts = register_tile_wavefronts(8)
    assert wavefronts == 0.25
    sms, clock = 132, 1.98e9
    peak_128 = sms * 128 * 2 * clock
    flops = 38.65e9
    assert tiled_product_ns(flops, peak_128, sms, clock, wavefronts) == pytest.approx(2 * flops / peak_128 * 1e9)
    peak_64 = sms * 64 * 2 * clock
    assert tiled_product_ns(flops, peak_64, sms, clock, wavefronts) == pytest.approx(1.5 * flops / peak_64 * 1e9)
    assert register_tile_wavefronts(4, operands=1) == 0.25
    assert tiled_product_ns(0.0, peak_128, sms, clock, wavefronts) is None
    assert tiled_product_ns(flops, 0.0, sms, clock, wavefronts) is None
