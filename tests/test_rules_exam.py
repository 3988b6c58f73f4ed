"""Rules on the exam corpus's real H100 reports (fixtures/exam-h100-2026-12-06/exam_reports.tar.xz: public llm.c and
Triton tutorial kernels, profiled with the full set): a mechanism a label named and the rules first missed."""

import tarfile

import pytest

from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.rulekit.models import walks_along
from tests.conftest import ROOT, kernel

EXAM = ROOT / "fixtures" / "exam-h100-2026-12-06" / "exam_reports.tar.xz"


def _result(name: str, tmp_path) -> dict:
    with tarfile.open(EXAM) as tar:
        tar.extract(f"{name}.ncu-rep", tmp_path, filter="data")
    return analyze(tmp_path / f"{name}.ncu-rep").to_dict()


def test_shared_memory_tree_is_named_first_not_index_math(tmp_path):
    """llm.c layernorm_forward_v2: mean_kernel and rstd_kernel end in an 8-round shared-memory tree whose barriers are
    6% of the stalls but whose instructions are half of those executed; normalization_kernel has no tree."""
    result = _result("layernorm_forward_v2", tmp_path)
    for name in ("mean_kernel", "rstd_kernel"):
        rules = [f["rule"] for f in kernel(result, name)["findings"]]
        assert rules and rules[0] == "WRP001", (name, rules)
        assert "ISU001" not in rules, (name, rules)
        first = kernel(result, name)["findings"][0]
        assert "Shared-memory tree reduction" in first["title"]
    assert "WRP001" not in [f["rule"] for f in kernel(result, "normalization_kernel")["findings"]]


def test_tiled_loop_through_shared_memory_is_no_tree(analyzed):
    """flaws' matmul_tiled waits at a barrier and loads and stores shared memory in its k-loop, but stages global
    loads there and halves no stride: a tile cache, which WRP001 leaves alone."""
    assert "WRP001" not in [f["rule"] for f in kernel(analyzed("flaws"), "matmul_tiled")["findings"]]


def _speedup(finding: dict) -> float:
    return 1.0 / (1.0 - finding["estimated_speedup"])


def test_thread_per_row_coalescing_counts_the_new_warps(tmp_path):
    """llm.c layernorm_forward_kernel1: a thread per row of 768 floats in 32 blocks of 256 (the warp's loads 20
    sectors per request, 3,840 loads per warp). The fix MEM001 advises, a warp per row, also gives the grid 32× the
    warps: the estimate is the fixed kernel with 1,024 blocks (62 warps on each of 132 SMs), at its compulsory bytes
    at the 76% of DRAM's peak coalesced 4-byte loads reach, 26.2×; llm.c's warp-per-row version measured 28.9× between
    the profiled durations (21.5× plainly, the twin's 20 µs kernel timed with the events around one launch). Before:
    29.4× at 85% of the peak (earlier on 2026-12-06), the memory-waits bound, 7.2×."""
    first = kernel(_result("layernorm_forward_v1", tmp_path), "layernorm_forward_kernel1")["findings"][0]
    assert first["rule"] == "MEM001"
    assert "assumes the warp-per-row mapping" in first["speedup_model"]
    assert "1,024 blocks, 62 warps on each of 132 SMs" in first["speedup_model"]
    assert "a warp per row" in first["fix"] and "__shfl_xor_sync" in first["fix_code"]
    assert 28.9 * 0.7 <= _speedup(first) <= 28.9 * 1.3
    assert "at the 76% of DRAM's peak that coalesced 4-byte loads reach" in first["speedup_model"]
    assert _speedup(first) == pytest.approx(26.2, abs=0.1)


def test_each_pass_over_the_row_keeps_its_own_loads_in_flight(tmp_path):
    """llm.c softmax_forward_online_kernel1: a thread per row of 50,257 floats, an online max-and-sum pass unrolled 4
    loads deep, then an output pass whose every load feeds an exp, a division and a store (1 in flight). The fixed
    kernel streams each pass with its own loads in flight: 1.6 loads a warp weighted by the bytes (205 bytes, not the
    512 of the first pass), 2.13 ms, 16.0×; llm.c's warp-per-row version measured 15.4× plainly (14.9× between the
    profiled durations). Before (the first pass's 4 loads for the whole stream, at 85% of DRAM's peak): 19.6×."""
    first = kernel(_result("softmax_forward_v5", tmp_path), "softmax_forward_online_kernel1")["findings"][0]
    assert first["rule"] == "MEM001"
    assert "assumes the warp-per-row mapping" in first["speedup_model"]
    assert (
        "each pass over the row with the loads in flight it has now (2 coalesced loads a warp" in first["speedup_model"]
    )
    assert _speedup(first) == pytest.approx(16.0, abs=0.1)
    assert 15.42 * 0.7 <= _speedup(first) <= 15.42 * 1.3


def test_tuned_sgemm_gets_a_library_call_and_its_estimate(tmp_path):
    """llm.c matmul_forward_kernel4: 128×128 shared tiles, 8×8 outputs per thread (16 FMAs per shared load), 53% of
    the FMA peak. TEN001 advises cuBLAS/cuBLASLt with TF32, not WMMA by hand, and estimates the library's kernel:
    38.7 GFLOP at 81.5% of the TF32 peak, no less than its bytes: 12.0×, against 9.68× measured plainly for llm.c's
    cuBLASLt version (10.0× between the profiled durations). The WMMA model (2.3×) is in the text."""
    first = kernel(_result("matmul_forward_v4", tmp_path), "matmul_forward_kernel4")["findings"][0]
    assert first["rule"] == "TEN001"
    assert "cuBLAS/cuBLASLt" in first["fix"] and "Hand-written WMMA from these tiles gains little" in first["fix"]
    assert "CUBLAS_COMPUTE_32F_FAST_TF32" in first["fix_code"]
    assert (
        "Hand-written WMMA from these tiles" in first["speedup_model"] and "would give 2.3×" in first["speedup_model"]
    )
    assert 9.68 * 0.7 <= _speedup(first) <= 9.68 * 1.3


def test_unblocked_products_keep_the_wmma_advice_and_strided_kernels_the_old_model(analyzed):
    """flaws' matmul_half_fma (2 FMAs per shared load, 24% of the FMA peak) keeps WMMA by hand and its estimate
    (2.49×, 2.97× measured); copy_strided and transpose_naive (one access per thread, full grids) are no rows walked
    by threads: their MEM001 model is unchanged."""
    flaws = analyzed("flaws")
    ten = next(f for f in kernel(flaws, "matmul_half_fma")["findings"] if f["rule"] == "TEN001")
    assert "wmma::mma_sync" in ten["fix_code"] and "cuBLAS/cuBLASLt" not in ten["fix"]
    assert _speedup(ten) == pytest.approx(2.49, abs=0.01)
    for name in ("copy_strided", "transpose_naive"):
        mem = next(f for f in kernel(flaws, name)["findings"] if f["rule"] == "MEM001")
        assert "warp-per-row" not in mem["speedup_model"], name


def test_a_column_walk_is_not_a_row_walked_by_a_thread(tmp_path):
    """llm.c matmul_backward_bias_kernel2: a warp per column, its lanes 32 rows apart and the loop 32 rows a step
    (32 sectors per request, 257 loads per warp, 0.36 waves): the loads' addresses come from a run-time stride, so
    lanes along the row would not add warps, and MEM001 keeps its model (no warp-per-row assumption)."""
    result = _result("matmul_backward_bias_v2", tmp_path)
    mem = next(f for f in kernel(result, "matmul_backward_bias_kernel2")["findings"] if f["rule"] == "MEM001")
    assert "warp-per-row" not in mem["speedup_model"] and "a warp per row" not in mem["fix"]


def test_walks_along_reads_the_loop_from_the_sass():
    """`walks_along` on the loops of the exam's SASS: layernorm_forward_kernel1 (one base, offsets one float apart),
    one load a step with its base advanced by an immediate, and matmul_backward_bias_kernel2 (bases from a run-time
    stride)."""
    unrolled = [(0x440 + 16 * i, 12288, f"LDG.E R{20 + i}, desc[UR4][R4.64+{hex(4 * i - 8)}]") for i in range(4)]
    assert walks_along(unrolled + [(0x5C0, 12288, "IADD3 R4, P3, R4, 0x40, RZ")])
    stepped = [(0x100, 4096, "LDG.E R7, desc[UR4][R2.64]"), (0x120, 4096, "IADD3 R2, P0, R2, 0x4, RZ")]
    assert walks_along(stepped)
    column = [
        (0xE90, 196608, "LEA R14, R5, R13, 0x5"),
        (0xEA0, 196608, "IMAD.WIDE R12, R13, 0x2, R6"),
        (0xEC0, 196608, "IMAD.WIDE R14, R14, 0x2, R6"),
        (0xED0, 196608, "LDG.E.U16 R12, desc[UR6][R12.64]"),
        (0xF00, 196608, "LDG.E.U16 R14, desc[UR6][R14.64]"),
        (0xF40, 196608, "VIADD R4, R4, 0x80"),
    ]
    assert not walks_along(column)


def test_naive_matrix_product_is_tiled_at_both_levels(tmp_path):
    """llm.c matmul_forward_kernel1: one output per thread, every FMA multiplying two values it loaded from global
    memory (uncoalesced along bt, 9 bytes of global loads per FLOP, L1 97% busy). Its fix is a matrix product's two
    levels of tiles, not a filter's window with its halo (the re-read model's words before, 27.0×), and its estimate the
    time of that kernel: its 38.7 GFLOP at the FP32 peak, 577.7 µs, plus the 0.25 shared wavefronts per warp FMA an
    8×8 register tile leaves at one per cycle per SM, 577.7 µs: 37.0×. llm.c's kernel4 (128×128 tiles, 8×8 outputs a
    thread, 16-byte accesses) measured 39.4× plainly."""
    first = kernel(_result("matmul_forward_v1", tmp_path), "matmul_forward_kernel1")["findings"][0]
    assert first["rule"] == "TIL001"
    assert "tile it at both levels" in first["fix"] and "acc[8][8]" in first["fix_code"]
    assert "halo" not in first["fix"] and "halo" not in first["fix_code"]
    assert "0.25 shared wavefronts per warp FMA" in first["speedup_model"]
    assert _speedup(first) == pytest.approx(37.0, abs=0.1)
    assert 39.36 * 0.7 <= _speedup(first) <= 39.36 * 1.3
