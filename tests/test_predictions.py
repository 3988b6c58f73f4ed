"""Each fix says which counter must move and by how much (`FindingEntry.predicts`), every kernel carries the counters
measured (`KernelEntry.counters`), and `diff` checks the predictions after the change (`KernelChange.counter_checks`):
on the before/after fixtures (pipeline_v0 -> v1 fixes the bank conflict, v2 -> v1 the strided reads, v0 -> its
rerun changes nothing), on the planted/twin pairs held in one report (the twin is the fixed code's measurement), and
on the TF32 twin whose library kernel changed its name (matched by role); and the program findings' predictions (the
launches of the kernels a fusion or a fused op removes: `DiffResult.program_counter_checks`)."""

import dataclasses
import lzma
from pathlib import Path

import pytest
from rich.console import Console

from ncuadvisor.comparison import compare
from ncuadvisor.comparison import match as match_module
from ncuadvisor.comparison.checks import counter_checks
from ncuadvisor.comparison.match import NO_PROCESS, assign, match_roles, same_place, same_problem
from ncuadvisor.comparison.types import FindingChange, FindingChanges
from ncuadvisor.render.diff_render import render_diff_terminal
from ncuadvisor.result.origin import TorchContext
from ncuadvisor.rulekit import engine
from ncuadvisor.saved.validate import load_saved
from tests.test_rules_torch_step import program, rerun


def render_diff(d):
    console = Console(record=True, width=240, color_system=None)
    render_diff_terminal(d, console)
    return console.export_text()


def rule_doc(code):
    return next(r for r in engine.discover() if r.code == code).__doc__


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
        ("diverge_lanes", "diverge_warps", "DIV001", 16.0183, 32.0),  # active threads per warp instruction
        ("scale_u8", "scale_u8x16", "MEM003", 0.9998, 16.0),  # sectors per global request: 1-byte -> 16-byte
        ("copy_scalar", "copy_vec4", "MEM003", 4.0, 16.0),  # 4-byte floats -> float4
        ("matmul_naive", "matmul_tiled", "TIL001", 2.5, 0.125),  # global load bytes per FMA FLOP
        ("chase_pointer", "chase_pointer_ilp", "LAT001", 98.1215, 38.9915),  # long-scoreboard stall per instruction
        ("stream_small_grid", "stream_full_grid", "LCH001", 0.1212, 8.0),  # blocks per SM
    ],
)
def test_the_flaws_twins_move_the_predicted_counter(typed, planted, twin, rule, before, after):
    (check,) = [c for c in _twin_check(typed("flaws"), planted, twin, rule) if c.rule == rule]
    assert check.met and (check.before, check.after) == (before, after)


@pytest.mark.parametrize(
    "report, planted, twin, rule, before, after",
    [
        # a partial wave (0.32 of a wave of 32x32 tiles) against its serial split-K twin (0.97): idle share of the wave
        ("wave", "gemm_big_tiles_long", "gemm_splitk_serial_long", "LCH001", 0.6768, 0.0303),
        # one pointer chain per thread against four interleaved: long-scoreboard stall cycles per instruction
        ("patterns", "chase_serial", "chase_interleaved", "LAT001", 387.3805, 236.7345),
    ],
)
def test_the_pattern_and_wave_twins_move_the_predicted_counter(typed, report, planted, twin, rule, before, after):
    (check,) = [c for c in _twin_check(typed(report), planted, twin, rule) if c.rule == rule]
    assert check.met and (check.before, check.after) == (before, after)


def test_the_new_predictions_say_what_the_fix_models(typed):
    flaws = typed("flaws")
    # DIV001: a 50/50 split on the lane index: 16 threads of 32 -> 32; the rule is silent from 24
    p = _prediction(_kernel(flaws, "diverge_lanes"), "DIV001", "threads_per_instruction")
    assert (p.predicted, p.bound, p.expect) == (32.0, 24.0, ">=")
    # MEM003: every access 1 byte per thread -> 16: sectors per request x16, at least halfway there
    p = _prediction(_kernel(flaws, "scale_u8"), "MEM003", "global_sectors_per_request")
    assert p.predicted == pytest.approx(16.0, abs=0.01) and p.bound == pytest.approx(8.5, abs=0.01)
    # LAT001: the wait per instruction divides by the gain in loads in flight (4)
    p = _prediction(_kernel(flaws, "chase_pointer"), "LAT001", "long_scoreboard_stall")
    assert p.predicted == pytest.approx(p.current / 4, abs=1e-3) and p.bound == pytest.approx(
        p.current * 5 / 8, abs=1e-3
    )
    # LCH001: 16 blocks on 132 SMs -> as many blocks as fit on every SM
    p = _prediction(_kernel(flaws, "stream_small_grid"), "LCH001", "blocks_per_sm")
    assert (p.current, p.bound, p.expect) == (0.1212, 1.0, ">=") and p.predicted > 1.0
    # TIL001: the global level's traffic per FLOP below the rule's threshold
    p = _prediction(_kernel(flaws, "matmul_naive"), "TIL001", "global_load_bytes_per_flop")
    assert (p.current, p.predicted, p.bound) == (2.5, None, 0.5)


def test_diff_matches_the_tf32_twin_by_role_and_checks_its_prediction(typed):
    """cuDNN picks another kernel once TF32 is allowed: the FFMA convolution (torch_gemm_conv, result 2) and the TF32
    one of the fixed program (tf32-twin-2026-12-01/torch_conv_fixes, its `tf32` variant) have different names and
    grids; they ran in the same NVTX range on the same layer (7.4116 GFLOP each), so diff pairs them by role."""
    d = compare(typed("torch_gemm_conv"), typed("tf32-twin-2026-12-01/torch_conv_fixes"))
    (conv,) = [k for k in d.kernels if k.match == "role"]
    assert conv.name.startswith("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw")
    assert conv.match_note.startswith(
        "matched by role: the name changed (sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_"
    )
    assert "NVTX range 'step > step_all_threads'" in conv.match_note and "7.412 → 7.412 GFLOP" in conv.match_note
    assert conv.status == "improved" and conv.change == pytest.approx(-0.762, abs=0.001)  # 255.6 -> 60.9 µs
    assert [f.rule for f in conv.findings.resolved] == ["TEN002"]
    (check,) = conv.counter_checks
    assert check.metric == "tensor_pipe_pct" and check.met and (check.before, check.after) == (0.0047, 37.7228)
    # predicted −83.7% until 2026-12-06, the product at 85% of the TF32 peak; now at the 81.5% library GEMMs reach
    assert check.text == (
        "TEN002 resolved: tensor pipe busy 0.0047% → 37.7% (predicted ≥ 5%), kernel −76.2% (predicted −83.4%)"
    )
    assert d.summary.role_matches == 1 and any("matched by role" in w for w in d.warnings)
    # nothing else is the same work: the GEMMs (137 GFLOP) and the FFT kernels stay removed and added; the fixed
    # program runs one convolution, nearer in FLOPs to the FFMA one (equal) than to the first report's TF32 one
    # (1.9e-5 apart), so that TF32 convolution stays removed: pairs are one to one
    by_status = {k.name[:30]: k.status for k in d.kernels if k.match is None}
    assert by_status == {
        "sm80_xmma_gemm_f32f32_f32f32_f": "removed",
        "sm90_xmma_gemm_f32f32_tf32f32_": "removed",
        "sm90_xmma_fprop_implicit_gemm_": "removed",
        "fft2d_r2c_64x64": "added",
        "nchwToNhwcKernel": "added",
        "nhwcToNchwKernel": "added",
        "flip_filter": "added",
    }
    assert d.to_dict()["kernels"][[k.match for k in d.kernels].index("role")]["match"] == "role"


def test_the_tf32_gemm_twin_is_matched_by_role_within_one_report(typed):
    """The GEMM's twins are one report's results 0 and 1 (cuBLAS FFMA, then TF32): each side of the diff holds one of
    each pair, so the names differ everywhere and only the work and the NVTX range pair them."""
    res = typed("torch_gemm_conv")
    planted, twins = [res.kernels[0], res.kernels[2]], [res.kernels[1], res.kernels[3]]
    d = compare(dataclasses.replace(res, kernels=planted), dataclasses.replace(res, kernels=twins))
    assert [k.match for k in d.kernels] == ["role", "role"]
    gemm = next(k for k in d.kernels if "gemm_f32f32_tf32f32" in k.name)
    assert "137.5 → 137.5 GFLOP" in gemm.match_note
    (check,) = gemm.counter_checks
    assert check.rule == "TEN002" and check.met and check.after == 88.3173
    assert check.kernel_change == pytest.approx(-0.872, abs=0.001)  # 2.68 ms -> 0.34 ms


def test_role_matching_needs_the_same_place_and_the_same_work(typed):
    res = typed("torch_gemm_conv")
    ffma, tf32, conv = res.kernels[0], res.kernels[1], res.kernels[2]
    assert same_place(ffma, tf32) and same_problem(ffma, tf32) == pytest.approx(1.1e-6, abs=1e-6)
    assert same_problem(ffma, conv) is None  # 137 against 7.4 GFLOP
    elsewhere = dataclasses.replace(tf32, nvtx="step > optimizer")
    assert not same_place(ffma, elsewhere)
    d = compare(dataclasses.replace(res, kernels=[ffma]), dataclasses.replace(res, kernels=[elsewhere]))
    assert [(k.status, k.match) for k in d.kernels] == [("removed", None), ("added", None)]


def test_role_matching_is_an_optimal_assignment(typed):
    """Two convolutions before (the FFMA one, 255.6 µs, and cuDNN's TF32 one, the same layer) and two after: the TF32
    twin's convolution, the same work as either, and a copy of it recorded under another ATen op, 1% more FLOPs, which
    only the FFMA convolution (no op recorded) can pair with. Taking the longest-running group's nearest first paired
    the FFMA convolution with the twin and left the TF32 one removed; the assignment pairs both."""
    gemm_conv, twin = typed("torch_gemm_conv"), typed("tf32-twin-2026-12-01/torch_conv_fixes")
    ffma, tf32 = gemm_conv.kernels[2], gemm_conv.kernels[3]
    tf32 = dataclasses.replace(tf32, torch=TorchContext(torch_op="aten::cudnn_convolution"))
    after = twin.kernels[0]
    other_op = dataclasses.replace(
        after,
        id="k9",
        torch=TorchContext(torch_op="aten::convolution_overrideable"),
        roofline=dataclasses.replace(after.roofline, flops=after.roofline.flops * 1.01),
    )
    assert same_problem(ffma, after) == 0.0 and same_problem(ffma, other_op) == pytest.approx(0.0099, abs=1e-4)
    assert same_place(tf32, after) and not same_place(tf32, other_op)
    pos_b, pos_a = {ffma.id: 0, tf32.id: 1}, {after.id: 0, other_op.id: 1}
    pairs = match_roles([[ffma], [tf32]], [[after], [other_op]], NO_PROCESS, NO_PROCESS, pos_b, pos_a)
    assert [(b[0].id, a[0].id) for b, a in pairs] == [(ffma.id, other_op.id), (tf32.id, after.id)]
    # with one candidate each way, the nearest work wins, whatever the order of the groups
    pairs = match_roles([[tf32], [ffma]], [[after]], NO_PROCESS, NO_PROCESS, pos_b, pos_a)
    assert [(b[0].id, a[0].id) for b, a in pairs] == [(ffma.id, after.id)]


def test_the_assignment_pairs_the_most_then_the_nearest():
    # a path b0 - a0 - b1 - a1: the cheap edge b1 - a0 gives way to two pairs; with equal counts the cheaper sum wins
    edges = {(0, 0): (0.0, 0), (1, 0): (0.0, 0), (1, 1): (0.015, 3)}
    assert assign(2, 2, edges) == [(0, 0), (1, 1)]
    assert assign(2, 2, {(0, 0): (0.01, 0), (0, 1): (0.0, 5), (1, 1): (0.01, 0), (1, 0): (0.0, 5)}) == [(0, 1), (1, 0)]
    # the work distance first, the launch order only between equal distances
    assert assign(1, 2, {(0, 0): (0.001, 0), (0, 1): (0.0, 40)}) == [(0, 1)]
    assert assign(1, 2, {(0, 0): (0.0, 2), (0, 1): (0.0, 1)}) == [(0, 1)]
    assert assign(3, 0, {}) == []


def test_a_large_part_is_matched_nearest_first_then_completed(monkeypatch):
    """Above EXACT_GROUPS a part of the candidate graph is matched cheapest edge first, then by augmenting paths: the
    path b0 - a0 - b1 - a1 whose cheapest edge (b1 - a0) would leave b0 alone still gets both pairs; two parts apart
    are solved each on its own."""
    monkeypatch.setattr(match_module, "EXACT_GROUPS", 1)
    edges = {(0, 0): (0.01, 0), (1, 0): (0.0, 0), (1, 1): (0.015, 3), (2, 2): (0.0, 0)}
    assert assign(3, 3, edges) == [(0, 0), (1, 1), (2, 2)]
    big = {(i, j): (0.0, abs(i - j)) for i in range(80) for j in range(80)}  # one shape, 80 renamed kernels
    monkeypatch.setattr(match_module, "EXACT_GROUPS", 64)
    assert assign(80, 80, big) == [(i, i) for i in range(80)]


def test_compiling_the_step_removes_the_launches_fusion_and_the_layout_copy_predicted(typed):
    """The transformer's eager forward step against the same step under torch.compile (the first 25 launches of
    each): PRG002's chain mul -> masked_fill (2 launches, twice) and PYT001's layout copy are gone after, folded into
    Inductor's kernels."""
    d = compare(typed("torch_eager"), typed("torch_compile"))
    (fusion,) = d.program_counter_checks
    assert fusion.rule == "PRG002" and fusion.finding == "resolved" and fusion.met
    assert (fusion.metric, fusion.before, fusion.predicted, fusion.bound, fusion.after) == (
        "kernel_launches",
        4.0,
        2.0,
        2.0,
        0.0,
    )
    assert fusion.text == "PRG002 resolved: launches of the kernels it names 4 → 0 (predicted ≤ 2)"
    (copy,) = [c for k in d.kernels for c in k.counter_checks or [] if c.rule == "PYT001"]
    assert copy.met and (copy.before, copy.after, copy.bound) == (4.0, 0.0, 2.0)
    assert copy.text == "PYT001 resolved: launches 4 → 0 (predicted ≤ 2)"
    rendered = render_diff(d)
    assert "✓ program: PRG002 resolved: launches of the kernels it names 4 → 0" in rendered


def test_the_cast_and_the_copy_twin_drop_their_kernels(typed):
    """torch_cast_copy holds the planted cast and layout copy before a bf16 GEMM (results 0-3) and the twin that
    needs neither (4-5: the GEMM on the transposed view); each side of the diff holds one. cuBLAS's GEMM changes its
    name (NNT -> NTT), matched by role; the cast (PYT002) and the copy (PYT001) are gone, as PRG002's chain."""
    res = typed("torch_cast_copy")
    by_id = {k.id: k for k in res.kernels}
    planted = [by_id[i] for i in ("k0", "k1", "k2", "k4")]
    twin = [by_id[i] for i in ("k3", "k4")]
    d = compare(dataclasses.replace(res, kernels=planted), dataclasses.replace(res, kernels=twin))
    checks = {c.rule: c for k in d.kernels for c in k.counter_checks or []}
    assert checks["PYT001"].met and checks["PYT002"].met
    assert (checks["PYT002"].before, checks["PYT002"].after) == (1.0, 0.0)
    assert [k.match for k in d.kernels if k.name.startswith("nvjet")] == ["role"]
    (chain,) = d.program_counter_checks
    assert chain.rule == "PRG002" and chain.met and (chain.before, chain.after) == (2.0, 0.0)


def test_program_findings_predict_the_launches_their_fix_removes(typed):
    # PYT004: the layout transforms alone (not the BatchNorm kernels the finding also names) go to 0
    conv = typed("tf32-twin-2026-12-01/torch_conv_fixes")
    f = next(f for f in conv.program_findings if f.rule == "PYT004")
    (p,) = f.predicts
    transforms = [k for k in conv.kernels if k.id in p.kernel_ids]
    assert {k.name for k in transforms} == {"nchwToNhwcKernel"}
    assert (p.metric, p.current, p.predicted, p.bound) == ("kernel_launches", 2.0, 0.0, 1.0)
    # PYT005 and PYT003 on the GPT step (its saved result, the program rules run again): the loss's seven eager
    # kernels and the foreach optimizer's kernels, each to none
    gpt = rerun("gpt")
    for rule in ("PYT005", "PYT003"):
        f = program(gpt, rule)
        (p,) = f["predicts"]
        launches = sum(k["launches"] for k in gpt["kernels"] if k["id"] in f["kernel_ids"])
        assert (p["metric"], p["current"], p["predicted"], p["bound"]) == (
            "kernel_launches",
            launches,
            0.0,
            launches / 2,
        )
    # the program rules whose fix moves nothing an ncu report holds say so, and predict nothing
    for code in ("PRG001", "PRG003", "PRG004", "PRG005", "PRG006"):
        assert "Predicts no counter" in rule_doc(code)
    assert all(f.predicts is None for f in conv.program_findings if f.rule == "PRG004")


def _part(result, ids):
    """The kernels `ids` of a report as a result of their own, with the program findings that name only them (what
    the report of that part alone holds: a rule that fires on kernels the part lacks does not fire)."""
    kernels = [k for k in result.kernels if k.id in ids]
    findings = [p for p in result.program_findings if set(p.kernel_ids) <= set(ids)]
    return dataclasses.replace(result, kernels=kernels, program_findings=findings)


def test_channels_last_removes_the_layout_transforms_predicted(typed):
    """The fixed convolution's report holds both single fixes of the NCHW layer: TF32 in NCHW (results 0-4: cuDNN's
    nchwToNhwcKernel x2 and nhwcToNchwKernel x2 around an NHWC implicit GEMM, where PYT004 fires) and channels_last in
    FP32 (results 5-7: the FFT path, no transform). Each side of the diff holds one: PYT004's transforms go 2 -> 0,
    as predicted."""
    conv = typed("tf32-twin-2026-12-01/torch_conv_fixes")
    nchw = {k.id for k in conv.kernels if min(k.result_ids) <= 4}
    nhwc = {k.id for k in conv.kernels if min(k.result_ids) >= 5}
    assert {conv.kernel(i).name for i in nhwc} == {"fft2d_r2c_64x64", "flip_filter"}
    d = compare(_part(conv, nchw), _part(conv, nhwc))
    (check,) = [c for c in d.program_counter_checks if c.rule == "PYT004"]
    assert check.finding == "resolved" and check.met
    assert (check.metric, check.before, check.after, check.bound) == ("kernel_launches", 2.0, 0.0, 1.0)
    assert check.text == "PYT004 resolved: launches of the kernels it names 2 → 0 (predicted ≤ 1)"
    assert "✓ program: PYT004 resolved: launches of the kernels it names 2 → 0" in render_diff(d)


def test_a_program_fix_that_was_not_made_is_said(typed):
    """The eager step against itself: PRG002's chain still launches 4 times, and diff says the fix was not made."""
    eager = typed("torch_eager")
    (check,) = compare(eager, eager).program_counter_checks
    assert check.rule == "PRG002" and check.finding == "persists" and check.met is False
    assert check.text == (
        "PRG002 persists: the change did not do what the fix was for: launches of the kernels it names unchanged (4)"
    )


def test_the_assignment_against_every_matching_of_small_graphs(monkeypatch):
    """200 random graphs of up to 6 groups a side: the exact path has as many pairs as the largest matching and its
    least cost (by trying every matching); the large-part path (EXACT_GROUPS 0) as many pairs."""
    import itertools
    import random

    rng = random.Random(20261206)
    for _ in range(200):
        nb, na = rng.randint(1, 6), rng.randint(1, 6)
        edges = {
            (i, j): (rng.choice([0.0, 0.001, 0.01]), rng.randrange(5))
            for i in range(nb)
            for j in range(na)
            if rng.random() < 0.35
        }
        cost = match_module._costs(nb, na, edges) if edges else {}
        best: tuple[int, int] = (0, 0)  # (-pairs, cost) of the best matching seen
        for size in range(min(nb, na), 0, -1):
            for bs in itertools.combinations(range(nb), size):
                for as_ in itertools.permutations(range(na), size):
                    if all(e in edges for e in zip(bs, as_)):
                        best = min(best, (-size, sum(cost[e] for e in zip(bs, as_))))
        exact = assign(nb, na, edges)
        assert (-len(exact), sum(cost[e] for e in exact)) == best
        monkeypatch.setattr(match_module, "EXACT_GROUPS", 0)
        assert len(assign(nb, na, edges)) == -best[0]
        monkeypatch.setattr(match_module, "EXACT_GROUPS", 64)


PYT_TWINS = Path(__file__).resolve().parent.parent / "fixtures" / "pyt-twins-2026-12-06"


def _saved(name, tmp_path):
    path = tmp_path / f"{name}.json"
    path.write_bytes(lzma.open(PYT_TWINS / f"{name}.json.xz").read())
    return load_saved(path)


@pytest.mark.parametrize(
    ("fix", "made", "not_made"),
    [
        ("fused", "PYT003 resolved: launches of the kernels it names 32 → 1 (predicted ≤ 16)", "PYT005"),
        ("compiled-loss", "PYT005 resolved: launches of the kernels it names 7 → 0 (predicted ≤ 3.5)", "PYT003"),
    ],
)
def test_the_optimizer_and_loss_fixes_move_their_launches_as_predicted(tmp_path, fix, made, not_made):
    """The GPT step profiled as written and with each fix alone (`benchmarks/device/pyt_twins.sh`, H100): AdamW(
    fused=True) leaves one of PYT003's 32 foreach launches (the fused optimizer's own kernel is new work, not matched
    to them), the compiled loss none of PYT005's 7 eager kernels; the fix not made persists and diff says so."""
    plain = _saved("gpt_plain", tmp_path)
    after = _saved(f"gpt_{fix}", tmp_path)
    checks = {c.rule: c for c in compare(plain, after).program_counter_checks}
    assert checks[made[:6]].text == made and checks[made[:6]].met
    other = checks[not_made]
    assert other.finding == "persists" and other.met is False
    assert other.text.startswith(f"{not_made} persists: the change did not do what the fix was for")
