"""LIB001 at the ridge, on a real capture: cuBLASLt's `nvjet_sm90_tst_64x80_64x11_2x4_h_bz_NNT` in llm.c's GPT-2
training step (H100, full set, its 15 launches of the step: fixtures/profile-cost-2026-12-06/), two bf16 products
that share the kernel and its grid. The larger (10 launches) sits at 280 FLOP per compulsory byte against a ridge of
~300, 4.6x its floor with DRAM 22% busy: fusing would move the floor from the bytes to the work, 6% here; the 4.6x
is latency and a partial wave (96 tiles on 132 SMs), which fusion keeps. LIB001 claims nothing there (under its
`min_saving`) and GEN001 names the wave, as `ncuadvisor profile` did from one launch of the same kernel. The smaller
product (5 launches, 200 FLOP/byte) is far enough below the ridge for fusion to pay: LIB001 keeps it."""

from __future__ import annotations

from tests.conftest import FIXTURES, report_json


def test_a_product_at_the_ridge_is_left_to_what_holds_its_time():
    (k,) = report_json(FIXTURES / "profile-cost-2026-12-06" / "llmc_nvjet_64x80_full.ncu-rep.xz")["kernels"]
    assert k["launches"] == 15 and k["roofline"]["headroom"] > 4
    r = k["roofline"]
    ratio = r["compute_floor_ns"] / r["memory_floor_ns"]
    assert 0.9 < ratio < 1.0  # at the ridge: fusion would save 1 - ratio of the time, under LIB001's 10%
    assert "LIB001" not in [f["rule"] for f in k["findings"]]
    first = k["findings"][0]
    assert first["rule"] == "GEN001" and "the last wave is partial" in first["title"]
    assert 0.2 < first["estimated_speedup"] < 0.35  # 96 tiles in 0.73 wave: the idle share of the SM slots


def test_the_thinner_product_of_the_same_kernel_keeps_its_fusion_finding():
    (k,) = report_json(FIXTURES / "profile-cost-2026-12-06" / "llmc_nvjet_64x80_full.ncu-rep.xz")["kernels"]
    (other,) = k["variants"]
    lib = other["findings"][0]
    assert lib["rule"] == "LIB001" and 0.1 <= lib["estimated_speedup"] < 0.5
    assert "what holds it above its floor stays" in lib["speedup_model"]
