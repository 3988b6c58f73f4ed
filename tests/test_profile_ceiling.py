"""Phase 1 of `ncuadvisor profile` collects each launch's DRAM bytes and tensor pipe share; kernels it places at their
tensor ceiling get the at-roofline verdict without phase 2 (`profile.ceiling`).

A full-section report stands in for the new phase 1 here: it holds, for every launch, the metrics phase 1 now
collects (`ncu.PHASE1_COLLECTED`), read by the same `analyze_phase1`; its own analysis is what phase 2 would have
found on the same launches (torch_eager: cuBLAS `nvjet_*` GEMMs at 71–74% and at 56–82% of their tensor pipe; torch_gemm_conv:
TF32 `xmma` kernels at 88% and 38%, FP32 SIMT GEMMs at under 0.01%).
"""

from __future__ import annotations

import pytest

from ncuadvisor import engine
from ncuadvisor.analysis.pipeline import analyze
from ncuadvisor.load import ReportReader
from ncuadvisor.profile import ceiling
from ncuadvisor.profile.merge import analyze_phase1, merge_results
from ncuadvisor.profile.ncu import PHASE1_COLLECTED, TENSOR_PIPE_PCT
from ncuadvisor.profile.selection import kernel_key, select_kernels

RULES = engine.discover([])


@pytest.fixture(scope="module")
def phase1(report_path):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = analyze_phase1(report_path(name), RULES)
        return cache[name]

    return get


def test_phase1_launches_carry_their_own_bytes_and_tensor_share(report_path, phase1):
    _res, launches, _kernels = phase1("torch_eager")
    rows = ReportReader(report_path("torch_eager")).results(PHASE1_COLLECTED).set_index("result_id")
    assert len(launches) == len(rows) > 0
    for x in launches:
        row = rows.loc[x["result_id"]]
        assert x["dram_read_bytes"] == pytest.approx(row["dram__bytes_read.sum"])
        assert x["dram_write_bytes"] == pytest.approx(row["dram__bytes_write.sum"])
        assert x["tensor_pct"] == pytest.approx(row[TENSOR_PIPE_PCT])
    assert any(x["dram_read_bytes"] > 0 for x in launches)


def test_a_duration_only_phase1_places_nothing(phase1):
    """An older phase-1 report (the duration only): no bytes, no tensor share, every chosen kernel goes to phase 2."""
    _res, launches, kernels = phase1("tiny_phase1")
    assert all(x["tensor_pct"] is None and x["dram_read_bytes"] is None for x in launches)
    assert ceiling.tensor_share(launches, kernels) == {}
    assert ceiling.at_tensor_ceiling(kernels, kernels, launches, RULES) == {}


@pytest.mark.parametrize("name", ["torch_eager", "torch_gemm_conv"])
def test_placed_kernels_are_those_at_roofline_in_depth(name, report_path, phase1, typed):
    """Every kernel placed from phase 1 is one the in-depth analysis of the same launch calls at its roofline
    (ROOF001 first), within the headroom the tensor share bounds; every kernel with tensor work below the threshold is
    left to phase 2."""
    _res, launches, kernels = phase1(name)
    placed = ceiling.at_tensor_ceiling(kernels, kernels, launches, RULES)
    full = {kernel_key(k): k for k in typed(name).kernels}
    assert placed, "a matrix kernel near its tensor ceiling"
    floor_pct = ceiling.min_tensor_pct(RULES)
    assert floor_pct == pytest.approx(62.5)
    for key, pct in placed.items():
        k = full[key]
        assert pct >= floor_pct
        assert k.findings and k.findings[0].rule == "ROOF001", k.name
        assert k.headroom <= 100.0 / pct * 1.05
    share = ceiling.tensor_share(launches, kernels)
    below = [key for key, pct in share.items() if 10.0 < pct < floor_pct]
    assert all(key not in placed for key in below)
    # the FP32 SIMT GEMMs (no tensor work) are never placed
    assert all(full[key].roofline.busy_pct.get("tensor", 0.0) > 1.0 for key in placed)


def test_the_merge_gives_placed_kernels_the_verdict_and_leaves_the_others(report_path, phase1):
    """`merge_results` without the placed kernels in phase 2: they get bound compute, the ROOF001 verdict with the
    phase-1 evidence, `profiled: false`; every other kernel keeps the findings it has when all are profiled."""
    path = report_path("torch_eager")
    p1, launches, kernels = phase1("torch_eager")
    deep = analyze(path, rules=RULES)
    placed = ceiling.at_tensor_ceiling(select_kernels(kernels), kernels, launches, RULES)
    assert placed
    everything = merge_results(p1, [(str(path), deep)], launches=[dict(x) for x in launches], rules=RULES)
    skipped = analyze(path, rules=RULES)
    skipped.kernels = [k for k in skipped.kernels if kernel_key(k) not in placed]
    merged = merge_results(
        p1, [(str(path), skipped)], launches=[dict(x) for x in launches], rules=RULES, at_ceiling=placed
    )
    before = {kernel_key(k): k for k in everything.kernels}
    for k in merged.kernels:
        key = kernel_key(k)
        if key in placed:
            assert k.profiled is False and k.bound == "compute"
            assert [f.rule for f in k.findings] == ["ROOF001"]
            assert k.findings[0].evidence[0].metric == TENSOR_PIPE_PCT
            assert "tensor" in k.bound_reason and "not profiled" in k.bound_reason
            assert k.headroom == pytest.approx(100.0 / placed[key])
            assert k.roofline.limiter == "tensor" and k.roofline.theoretical_ns == pytest.approx(
                k.roofline.duration_ns * placed[key] / 100
            )
            assert before[key].findings[0].rule == "ROOF001"
        else:
            assert [f.rule for f in k.findings] == [f.rule for f in before[key].findings], k.name
    assert [f.rule for f in merged.program_findings] == [f.rule for f in everything.program_findings]
    assert merged.to_dict()  # the result (and its schema) take the verdict


def test_timed_only_kernels_get_no_floor_from_phase_1s_few_metrics(phase1):
    """Phase 1's duration, bytes and tensor pipe place no floor: a kernel merged without a deep entry keeps its
    bytes but no limiter, floor or headroom (computed from those alone, every kernel would be latency-bound)."""
    p1, launches, _kernels = phase1("torch_eager")
    merged = merge_results(p1, [], launches=[dict(x) for x in launches], rules=RULES)
    for k in merged.kernels:
        assert k.profiled is False and k.bound == "unknown" and k.headroom is None
        assert k.roofline.limiter is None and k.roofline.theoretical_ns is None and not k.roofline.floors
        assert k.roofline.executed_floor_unit is None and not k.roofline.executed_reason
        assert k.roofline.dram_bytes is not None


def test_without_the_at_roofline_rule_nothing_is_placed(phase1):
    _res, launches, kernels = phase1("torch_eager")
    rules = [r for r in RULES if r.code != "ROOF001"]
    assert ceiling.at_tensor_ceiling(kernels, kernels, launches, rules) == {}
