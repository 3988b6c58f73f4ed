"""Bytes in flight against DRAM's latency × bandwidth (`rulekit.dram_in_flight`) on the planted kernels captured on an
H100 (fixtures/h100-planted-2026-12-06): a DRAM-limited kernel short of bytes in flight far enough below DRAM's peak
is not left alone, and the streams that reach DRAM's peak keep their "leave it"."""

from __future__ import annotations

import functools

from tests.conftest import FIXTURES, report_json

H100 = FIXTURES / "h100-planted-2026-12-06"


@functools.cache
def kernels(name: str) -> dict[str, dict]:
    return {k["name"]: k for k in report_json(H100 / name)["kernels"]}


def first(k: dict) -> str:
    return k["findings"][0]["rule"] if k["findings"] else "-"


def test_the_streams_at_dram_peak_keep_leave_it():
    """16-byte copies and the padded transpose (4 loads in flight per warp) keep 3.8-4.7× the bytes DRAM's latency ×
    bandwidth needs; the full-grid stream 2.4× at DRAM 83%; the scalar copy is short but DRAM moves 70.5% of its peak,
    above the 70% under which ROOF001 gives way."""
    flaws = kernels("flaws_h100.ncu-rep.xz")
    for name in ("copy_vec4", "scale_u8x16", "transpose_smem_padded", "stream_full_grid", "copy_scalar"):
        assert first(flaws[name]) == "ROOF001", name
    assert first(kernels("patterns_h100.ncu-rep.xz")["aos16_vec4"]) == "ROOF001"


def test_a_scalar_stream_short_of_bytes_in_flight_gets_wider_loads():
    """soa_field_x (out[i] = x[i] * 2 + 1, one 4-byte load per thread): 46 warps × 128 B in flight per SM where DRAM's
    latency × bandwidth needs 6.6 KB, DRAM at 64% of peak, 85% of the stalls on global loads, 1.38× its floor. No
    loop of loads, so MEM003 (16-byte accesses) names the fix, not LAT001; the same kernel on the H200 gets MEM003
    too. On this H100, float4 made the scalar copy of the same shape 19.5% faster (226.4 -> 182.2 µs)."""
    k = kernels("patterns_h100.ncu-rep.xz")["soa_field_x"]
    assert first(k) == "MEM003"
    assert not any(f["rule"] == "ROOF001" for f in k["findings"])
    assert 0.10 <= k["findings"][0]["estimated_speedup"] <= 0.25
