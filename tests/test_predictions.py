"""Each fix says which counter must move and by how much (`FindingEntry.predicts`), every kernel carries the counters
measured (`KernelEntry.counters`), and `diff` checks the predictions after the change (`KernelChange.counter_checks`):
on the before/after fixtures (pipeline_v0 -> v1 fixes the bank conflict, v2 -> v1 the strided reads, v0 -> its
rerun changes nothing) and on the planted/twin pairs held in one report (the twin is the fixed code's measurement)."""

import pytest

from ncuadvisor.comparison import compare
from ncuadvisor.comparison.checks import counter_checks
from ncuadvisor.comparison.types import FindingChange, FindingChanges


def _kernel(result, name):
    return next(k for k in result.kernels if k.name == name)


def _prediction(kernel, rule, metric):
    f = next(f for f in kernel.findings if f.rule == rule)
    return next(p for p in f.predicts if p.metric == metric)


def _checks(diff, name):
    return next(k for k in diff.kernels if k.name == name).counter_checks


def test_findings_predict_the_counters_they_move(typed):
    flaws = typed("flaws")
    # MEM001: the transpose's stores move 4.5 sectors per sector needed; coalesced, 1 (the rule is silent below 1/0.7)
    p = _prediction(_kernel(flaws, "transpose_naive"), "MEM001", "l2_sectors_per_needed_sector")
    assert (p.current, p.predicted, p.bound, p.expect) == (4.5, 1.0, pytest.approx(1 / 0.7, abs=1e-4), "<=")
    # loads: sectors per request 32 -> 32 x (1 - 0.778) = 7.1
    p = _prediction(_kernel(flaws, "copy_strided"), "MEM001", "global_load_sectors_per_request")
    assert p.current == 32.0 and p.predicted == pytest.approx(7.11, abs=0.01) and p.label.startswith("sectors/request")
    # MEM002: the 32-way conflicting transpose, 16.5 shared wavefronts per one needed -> 1
    p = _prediction(_kernel(flaws, "transpose_smem_conflict"), "MEM002", "shared_wavefronts_per_needed")
    assert (p.current, p.predicted) == (16.5, 1.0)
    # OCC001: achieved occupancy up by the resident warps' gain; TEN001: the tensor pipe from idle to busy
    p = _prediction(_kernel(flaws, "stream_smem_hog"), "OCC001", "achieved_occupancy_pct")
    assert p.expect == ">=" and p.current < p.bound < p.predicted
    p = _prediction(_kernel(flaws, "matmul_half_fma"), "TEN001", "tensor_pipe_pct")
    assert (p.current, p.bound, p.expect) == (0.0, 5.0, ">=")
    # every kernel carries the counters it measured, whether a rule fired or not
    assert all(k.counters for k in flaws.kernels)
    assert "predicts" not in _kernel(flaws, "fma_peak").findings[0].to_dict()  # an at-roofline verdict predicts nothing


def test_diff_checks_the_bank_conflict_fix(typed):
    d = compare(typed("pipeline_v0"), typed("pipeline_v1"))
    (check,) = _checks(d, "transpose_tile")
    assert check.finding == "resolved" and check.met
    assert (check.before, check.after) == (16.5, 1.0)
    assert check.kernel_change == pytest.approx(-0.565, abs=0.001)  # measured: 328.2 -> 142.8 µs
    assert check.predicted_change == pytest.approx(-0.600, abs=0.001)
    assert check.text == (
        "MEM002 resolved: shared wavefronts per wavefront needed 16.5 → 1 (predicted ≤ 1.25), "
        "kernel −56.5% (predicted −60.0%)"
    )
    assert d.to_dict()["kernels"][0]["counter_checks"][0]["met"] is True


def test_diff_checks_the_coalescing_fix(typed):
    d = compare(typed("pipeline_v2"), typed("pipeline_v1"))  # v2 reads with a stride of 32; v1 does not
    checks = {c.metric: c for c in _checks(d, "scale_add")}
    sectors = checks["l2_sectors_per_needed_sector"]
    assert sectors.met and (sectors.before, sectors.after) == (3.3333, 1.0)
    per_request = checks["global_load_sectors_per_request"]
    assert per_request.met and (per_request.before, per_request.after) == (18.0, 4.0)
    assert (
        per_request.predicted == pytest.approx(5.4, abs=0.01) and per_request.after <= per_request.bound
    )  # 18 x (1 - 0.7)
    assert per_request.text.startswith("MEM001 resolved: sectors/request (global loads) 18 → 4 (predicted ≤ ")


def test_a_change_that_did_not_move_the_counter_is_said(typed):
    d = compare(typed("pipeline_v0"), typed("pipeline_v0_rerun"))  # the same binary again
    (check,) = _checks(d, "transpose_tile")
    assert check.finding == "persists" and check.met is False
    assert check.text == (
        "MEM002 persists: the change did not do what the fix was for: shared wavefronts per wavefront needed "
        "unchanged (16.5)"
    )
    assert all(not k.counter_checks for k in d.kernels if k.name != "transpose_tile")


def _twin_check(result, planted, twin, rule):
    """The planted kernel's predictions checked against its fixed twin's counters (both in one report)."""
    b, a = _kernel(result, planted), _kernel(result, twin)
    f = next(f for f in b.findings if f.rule == rule)
    fc = FindingChange(
        rule=f.rule,
        category=f.category,
        title=f.title,
        estimated_speedup=f.estimated_speedup,
        estimated_saving_ns=0.0,
        fix="",
    )
    return counter_checks([b], [a], FindingChanges(resolved=[fc]), a.duration_ns / b.duration_ns - 1)


def test_planted_and_twin_kernels_show_the_measured_movement(typed):
    # TF32: cuBLAS's FFMA gemm (tensor pipe idle) and the TF32 twin, 88% busy; 2.68 ms -> 0.34 ms
    gemm = typed("torch_gemm_conv")
    names = [k.name for k in gemm.kernels]
    (check,) = _twin_check(gemm, names[0], names[1], "TEN002")
    assert check.metric == "tensor_pipe_pct" and check.met and check.before < 0.01 and check.after > 80
    assert check.kernel_change == pytest.approx(-0.872, abs=0.001)
    # coalescing and bank conflicts in the flaws report: the naive transpose and its padded shared-memory twin
    flaws = typed("flaws")
    (check,) = _twin_check(flaws, "transpose_naive", "transpose_smem_padded", "MEM001")
    assert check.met and (check.before, check.after) == (4.5, 1.0)
    (check,) = _twin_check(flaws, "transpose_smem_conflict", "transpose_smem_padded", "MEM002")
    assert check.met and (check.before, check.after) == (16.5, 1.0)


@pytest.mark.parametrize(
    "planted, twin, rule, before, after",
    [
        ("hist_global_atomic", "hist_shared_atomic", "ATM001", 1.0, 0.0005),  # global atomics per load
        ("local_array_dynamic", "local_array_shared", "LOC001", 0.9442, 0.0),  # local share of L1 sectors
        ("poly_double_literal", "poly_float_literal", "PRC001", 11.7207, 0.0),  # FP64 pipe busy, %
    ],
)
def test_the_flaws_twins_move_the_predicted_counter(typed, planted, twin, rule, before, after):
    (check,) = _twin_check(typed("flaws"), planted, twin, rule)
    assert check.met and (check.before, check.after) == (before, after)
