"""The share of DRAM's peak coalesced kernels reach, by load width (`ACHIEVABLE_DRAM_FRACTION`), which MEM001 uses
for the floor of the fixed kernel: recomputed from the project's own captures of flaws.cu and patterns.cu on the H200
(fixtures/) and the H100 (fixtures/h100-planted-2026-12-06/): the kernels whose limiter is DRAM, with no more than 10%
of their global sectors wasted and at least 40 µs long, each its compulsory bytes at the peak ÷ its duration, split
by the bytes a lane loads (global load sectors per request: 4 for 4-byte loads, 16 for 16-byte ones)."""

import statistics

import pytest

from ncuadvisor.rulekit import ACHIEVABLE_DRAM_FRACTION, achievable_dram_fraction

CAPTURES = (
    "flaws",
    "patterns",
    "h100-planted-2026-12-06/flaws_h100",
    "h100-planted-2026-12-06/patterns_h100",
)


def _fractions(result) -> dict[int, dict[str, float]]:
    """load width -> {kernel name and GPU: compulsory bytes at DRAM's peak ÷ duration}."""
    out: dict[int, dict[str, float]] = {4: {}, 16: {}}
    for k in result.kernels:
        r, c = k.roofline, k.counters or {}
        per_request, moved = c.get("global_load_sectors_per_request"), c.get("l2_sectors_per_needed_sector")
        if r.limiter != "dram" or not r.theoretical_ns or not r.duration_ns or r.duration_ns < 40e3:
            continue
        if per_request is None or moved is None or moved > 1.1:
            continue
        for width in out:
            if abs(per_request - width) <= 0.1 * width:
                out[width][f"{k.name} ({r.peak_dram_bytes_per_s / 1e12:.2f} TB/s)"] = r.theoretical_ns / r.duration_ns
    return out


def test_achievable_dram_fraction_is_the_median_of_the_coalesced_streams(typed):
    found: dict[int, dict[str, float]] = {4: {}, 16: {}}
    for name in CAPTURES:
        for width, fractions in _fractions(typed(name)).items():
            found[width].update(fractions)
    # 4-byte: stream_full_grid and transpose_smem_padded on both GPUs; stream_smem_fit, copy_scalar,
    # hist_shared_atomic, local_array_shared, chase_pointer_ilp, soa_field_x on the H100 (on the H200 those are
    # latency-bound or shorter). 16-byte: copy_vec4, scale_u8x16 and aos16_vec4 on both.
    assert len(found[4]) == 10, found[4]
    assert len(found[16]) == 6, found[16]
    assert 0.65 <= min(found[4].values()) and max(found[4].values()) <= 0.87
    assert 0.87 <= min(found[16].values()) and max(found[16].values()) <= 0.95
    for width in (4, 16):
        assert statistics.median(found[width].values()) == pytest.approx(ACHIEVABLE_DRAM_FRACTION[width], abs=0.005)


def test_achievable_dram_fraction_by_width():
    """The 4-byte share at or below 4 bytes, the 16-byte one at or above, between them by log2 of the width."""
    lo, hi = ACHIEVABLE_DRAM_FRACTION[4], ACHIEVABLE_DRAM_FRACTION[16]
    assert achievable_dram_fraction(1) == achievable_dram_fraction(4) == lo
    assert achievable_dram_fraction(16) == achievable_dram_fraction(32) == hi
    assert achievable_dram_fraction(8) == pytest.approx((lo + hi) / 2)
    assert lo < hi < 1.0
