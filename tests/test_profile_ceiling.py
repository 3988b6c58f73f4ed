"""Phase 1 of `ncuadvisor profile` collects each launch's DRAM bytes and tensor pipe share; kernels it places at their
tensor ceiling get the at-roofline verdict without phase 2 (`profile.ceiling`).

A full-section report stands in for the new phase 1 here: it holds, for every launch, the metrics phase 1 now
collects (`ncu.PHASE1_COLLECTED`), read by the same `analyze_phase1`; its own analysis is what phase 2 would have
found on the same launches (torch_eager: cuBLAS `nvjet_*` GEMMs at 71–74% and at 56–82% of their tensor pipe; torch_gemm_conv:
TF32 `xmma` kernels at 88% and 38%, FP32 SIMT GEMMs at under 0.01%).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.load import ReportReader
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.profile import ceiling, collection
from ncuadvisor.profile.merge import analyze_phase1, merge_results
from ncuadvisor.profile.ncu import PHASE1_COLLECTED, TENSOR_PIPE_PCT
from ncuadvisor.profile.selection import kernel_key, select_kernels
from ncuadvisor.rulekit import engine
from tests.conftest import _shared_folder, _write_once, in_child

RULES = engine.discover([])


@pytest.fixture(scope="module")
def phase1(report_path, tmp_path_factory):
    """phase1(name) -> analyze_phase1 of that fixture, once per test run: kept pickled under the run's base temp
    folder (a test runs in a forked child, whose memory goes with it)."""
    folder = _shared_folder(tmp_path_factory, "phase1")

    def get(name):
        def write(tmp: Path) -> None:
            path = report_path(name)
            tmp.write_bytes(pickle.dumps(in_child(lambda: analyze_phase1(path, RULES))))

        return pickle.loads(_write_once(folder / f"{name}.pickle", write).read_bytes())

    return get


def test_phase1_launches_carry_their_own_bytes_and_tensor_share(report_path, phase1):
    _res, launches, _kernels = phase1("torch_eager")
    rows = ReportReader(report_path("torch_eager")).results(PHASE1_COLLECTED)
    assert len(launches) == len(rows) > 0
    for x in launches:
        row = rows.row(x["result_id"])
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


# -- phase 2 without the tensor FLOP counts when phase 1 saw the tensor pipe idle -------------------------------------

TENSOR_COUNTS = [p + ".sum" for p in roofline.TENSOR_PATHS.values()]
TENSOR_PEAKS = [p + ".sum.peak_sustained" for p in roofline.TENSOR_PATHS.values()]


def read_without(monkeypatch, hidden):
    """Every report then reads as if ncu had not collected the `hidden` metrics."""
    orig = ReportReader.results

    def results(self, metrics):
        frame = orig(self, metrics)
        for m in hidden:
            if m in frame.columns:
                frame.set_column(m, [None] * len(frame))
        return frame

    monkeypatch.setattr(ReportReader, "results", results)


def test_tensor_idle_only_when_every_launch_measured_zero(phase1):
    """patterns: every launch 0%; torch_train: its FP32 cuBLAS GEMMs 0% but elementwise kernels up to 2.4% of
    immediate-only HFMA2.MMA moves (no tensor FLOPs, but phase 1 cannot tell); a duration-only phase 1: unknown."""
    _res, launches, kernels = phase1("patterns")
    assert ceiling.tensor_idle(kernels, kernels, launches)
    assert not ceiling.tensor_idle([], kernels, launches)  # no launch of the chosen: nothing measured
    _res, launches, kernels = phase1("torch_train")
    assert not ceiling.tensor_idle(kernels, kernels, launches)
    idle = [k for k in kernels if ceiling.tensor_idle([k], kernels, launches)]
    assert any(k.name.startswith("sm80_xmma_gemm") for k in idle) and len(idle) < len(kernels)
    _res, launches, kernels = phase1("ceilings")
    index_math = [k for k in kernels if k.name == "index_math"]
    assert index_math and not ceiling.tensor_idle(index_math, kernels, launches)  # 0.04% busy: kept
    _res, launches, kernels = phase1("tiny_phase1")
    assert not ceiling.tensor_idle(kernels, kernels, launches)


def test_the_collection_leaves_out_the_tensor_counts_and_keeps_their_peaks():
    kernels = [("elementwise_kernel", "at::native::elementwise_kernel"), ("nvjet_a", "nvjet_a")]
    sections, full = collection.declared_collection(RULES, kernels)
    same_sections, lean = collection.declared_collection(RULES, kernels, tensor_counts=False)
    assert same_sections == sections
    assert set(TENSOR_COUNTS) <= set(full) and not set(TENSOR_COUNTS) & set(lean)
    assert set(TENSOR_PEAKS) <= set(lean)
    assert [m for m in full if m not in TENSOR_COUNTS] == lean


@pytest.mark.parametrize(
    "name",
    [
        "torch_train",
        "torch_eager",
        "patterns",
        "ceilings",
        pytest.param("flaws", marks=pytest.mark.slow),
        pytest.param("torch_norm_chain", marks=pytest.mark.slow),
    ],
)
def test_idle_kernels_analyse_the_same_without_the_tensor_counts(name, report_path, typed, monkeypatch):
    """Every kernel whose tensor pipe ran 0% gets the same analysis, to the last JSON key, from the report without
    the six tensor FLOP counts (the roofline reads an idle pipe's missing counts as 0); the matrix kernels do lose
    their tensor FLOPs (the hiding is real). torch_train holds the FP32 cuBLAS GEMMs of a training step (TEN002)."""
    whole = typed(name)
    read_without(monkeypatch, TENSOR_COUNTS)
    without = {k.id: k for k in analyze(report_path(name), rules=RULES).kernels}
    idle = [k for k in whole.kernels if k.roofline.busy_pct.get("tensor") == 0.0]
    assert idle
    for k in idle:
        assert without[k.id].to_dict() == k.to_dict(), k.name
    for k in whole.kernels:
        if sum(v for p, v in k.roofline.flops_by_precision.items() if p.startswith("tensor")) > 0:
            assert not any(v for p, v in without[k.id].roofline.flops_by_precision.items() if p.startswith("tensor"))
    if name == "torch_train":
        assert any(k.findings and k.findings[0].rule == "TEN002" for k in idle)


def test_the_tensor_peaks_stay_because_ten002_prices_tf32_with_one(report_path, typed, monkeypatch):
    """Without the peaks too, the FP32 GEMMs of torch_train (tensor pipe idle) lose TEN002, their first finding."""
    ten002 = {k.id for k in typed("torch_train").kernels if k.findings and k.findings[0].rule == "TEN002"}
    read_without(monkeypatch, TENSOR_COUNTS + TENSOR_PEAKS)
    without = {k.id: k for k in analyze(report_path("torch_train"), rules=RULES).kernels}
    assert ten002 and all("TEN002" not in {f.rule for f in without[i].findings} for i in ten002)
