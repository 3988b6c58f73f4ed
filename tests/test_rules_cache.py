"""CAC001 (reuse served by L2) on real reports: the vertical-stencil pair of workloads/cuda/cache.cu
(fixtures/cache.ncu-rep.xz, captured on an H200 on 2026-11-30), and silence on every other real kernel we have."""

import pytest


def by_name(res):
    return {k["name"]: k for k in res["kernels"]}


def evidence(finding, metric):
    return next(e["value"] for e in finding["evidence"] if e["metric"] == metric)


def test_row_blocks_on_a_vertical_stencil_are_a_cache_problem_first(analyzed):
    k = by_name(analyzed("cache"))["vstencil_rows"]
    first = k["findings"][0]
    assert first["rule"] == "CAC001" and first["category"] == "cache"
    assert evidence(first, "l1_hit_pct") < 10  # ncu: L1 hits 7% of sectors
    assert 15 < evidence(first, "l2_to_dram_read_ratio") < 30  # 5.9 GB from L2 for 268 MB from DRAM
    # the launch was 256x1 blocks: the fix names the 2-D block that keeps vertical neighbours together
    assert "256×1" in first["fix"] and "block(32, 8)" in first["fix_code"] and "dim3(32, 32)" in first["fix"]
    # measured: 644.0 -> 495.5 us with 32x32 blocks (23% less time); the model says 40%, within +-30% of 1.30x
    assert 0.2 < first["estimated_speedup"] < 0.45
    assert any(s["file"] and s["file"].endswith("cache.cu") and "p[" in (s["code"] or "") for s in first["source"])


def test_the_fixed_twin_and_the_blurs_are_not_cache_findings(analyzed):
    kernels = by_name(analyzed("cache"))
    for name in ("vstencil_tiles", "blur_global", "blur_smem", "blur_global_hoisted"):
        assert all(f["rule"] != "CAC001" for f in kernels[name]["findings"]), name


@pytest.mark.parametrize("fixture", ["flaws", "torch_eager", "torch_compile", "pipeline_v0", "probe", "multiproc"])
def test_silent_where_l2_is_not_the_limit(analyzed, fixture):
    """No kernel of the other real reports re-reads L2-resident data across blocks this way: the 31 planted flaws
    (their uncoalesced kernels waste sectors, which is MEM001's), PyTorch eager and compiled kernels, the pipeline."""
    res = analyzed(fixture)
    assert not [k["name"] for k in res["kernels"] for f in k["findings"] if f["rule"] == "CAC001"]


def test_the_twin_next_fix_is_a_register_window_not_matrix_tiles(analyzed):
    """vstencil_tiles (L1 now serves the reuse; 33 loads per output remain) gets TIL001, and since its arithmetic is
    adds, the fix shown is a sliding register window, not the matrix-product tiles shown for matmul_naive (a product of
    two loaded values: both levels, the operands' tiles in shared memory and 8×8 outputs a thread in registers)."""
    f = by_name(analyzed("cache"))["vstencil_tiles"]["findings"][0]
    assert f["rule"] == "TIL001"
    assert "neighbouring outputs" in f["fix"] and "w[2 * R]" in f["fix_code"] and "As[" not in f["fix_code"]
    g = by_name(analyzed("flaws"))["matmul_naive"]["findings"][0]
    assert g["rule"] == "TIL001" and "As[8][128 + 4]" in g["fix_code"] and "acc[8][8]" in g["fix_code"]
