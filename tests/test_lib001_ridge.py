"""LIB001 at the ridge, on a real capture: cuBLASLt's `nvjet_sm90_tst_64x80_64x11_2x4_h_bz_NNT` in llm.c's GPT-2
training step (H100, full set, its 15 launches of the step: fixtures/profile-cost-2026-12-06/), two bf16 products
at 280 FLOP per compulsory byte against a ridge of ~300, 4.6x their floor with DRAM 22% busy. Fusing would move the
floor from the bytes to the work, a few percent here; the 4.6x is latency and a partial wave, which fusion keeps.
The estimate was 80% (the FLOPs at 85% of the tensor peak credited fusion with the whole headroom)."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, report_json


def test_lib001_near_the_ridge_claims_only_what_the_bytes_cost():
    (k,) = report_json(FIXTURES / "profile-cost-2026-12-06" / "llmc_nvjet_64x80_full.ncu-rep.xz")["kernels"]
    assert k["launches"] == 15 and k["roofline"]["headroom"] > 4
    lib = next(f for f in k["findings"] if f["rule"] == "LIB001")
    r = k["roofline"]
    ratio = r["compute_floor_ns"] / r["memory_floor_ns"]
    assert 0.85 < ratio < 1.0  # at the ridge: the two floors within 15%
    # the fused time keeps the distance from the floor: time x compute floor / memory floor
    assert lib["estimated_speedup"] == pytest.approx(1 - ratio, abs=0.01)
    assert lib["estimated_speedup"] < 0.15
    assert "what holds it above its floor stays" in lib["speedup_model"]
