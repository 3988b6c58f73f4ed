"""Per-unit ceilings and the limiter on the planted `ceilings` kernels (one per machine unit, H200), whose bound is
known by construction and whose measured rates are 77-88% of the unit's nominal peak (benchmarks/RESULTS.md)."""

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.analysis.ceilings import LAUNCH_FLOOR_NS
from ncuadvisor.load import ReportReader


@pytest.fixture(scope="module")
def rl(report_path):
    frame = ReportReader(report_path("ceilings")).results(roofline.METRICS)
    return {r["name"]: roofline.compute(r, 132) for r in frame.to_dict("records")}


@pytest.mark.parametrize(
    ("kernel", "limiters"),
    [
        ("sfu_loop", {"sfu"}),  # MUFU: 16 lanes per clock per SM
        ("fadd_loop", {"issue", "fma"}),  # one FLOP per lane: the FP32 pipe (and issue) full at half the FFMA rate
        ("ffma_loop", {"issue", "fma"}),
        ("hfma2_loop", {"issue", "fp16"}),
        ("dfma_loop", {"fp64"}),
        ("index_math", {"l1", "issue", "alu"}),  # 558 MB of L1-hit table sectors: 80% of L1 data return; issue at 53%
        ("dram_out", {"dram"}),
        ("l2_resident_out", {"dram"}),
        ("empty_kernel", {"launch"}),
        ("tiny_chain_step", {"launch"}),
    ],
)
def test_limiter_names_the_planted_unit(rl, kernel, limiters):
    assert rl[kernel].limiter in limiters
    assert rl[kernel].limiter_reason.startswith(f"{rl[kernel].limiter}-bound")


def test_latency_when_no_unit_is_half_busy(report_path):
    frame = ReportReader(report_path("patterns")).results(roofline.METRICS)
    r = {row["name"]: roofline.compute(row, 132) for row in frame.to_dict("records")}
    # a serial pointer chase: one dependent load at a time, every unit idle most of the time
    assert r["chase_serial"].limiter == "latency" and r["chase_serial"].limiter_share < 0.5
    assert r["chase_serial"].limiter_reason.startswith("latency-bound: the busiest unit")
    # the same chase interleaved: L2 busy, not latency
    assert r["chase_interleaved"].limiter == "l2"


@pytest.mark.parametrize("kernel", ["sfu_loop", "fadd_loop", "ffma_loop", "hfma2_loop", "dfma_loop", "dram_out"])
def test_headroom_of_a_saturated_unit_is_small(rl, kernel):
    # each runs its unit at 77-88% of nominal: the floor of the unit it saturates must say so (before: SFU 7.35x,
    # FADD 2.23x, HFMA2 162.6x)
    assert 1.0 <= rl[kernel].headroom < 1.3


def test_fadd_floor_counts_lanes_not_flops(rl):
    fadd, ffma = rl["fadd_loop"], rl["ffma_loop"]
    # the same number of FP32 instructions; FADD does half the FLOPs in the same lane time
    assert fadd.flops == pytest.approx(ffma.flops / 2, rel=0.01)
    assert fadd.ceilings["fma"] == pytest.approx(ffma.ceilings["fma"], rel=0.02)
    # FLOPs / the FFMA FLOP peak would be half the lane floor: the old, wrong floor
    assert fadd.compute_floor_ns > 1.9 * fadd.flops / fadd.peak_flops_per_s["fp32"] * 1e9


def test_sfu_ceiling_is_the_xu_pipe_busy_time(rl):
    r = rl["sfu_loop"]
    assert r.ceilings["sfu"] == pytest.approx(r.duration_ns * r.busy_pct["sfu"] / 100)
    assert r.ceilings["sfu"] > 2 * r.ceilings["fma"]


def test_hfma2_on_the_tensor_pipe_is_fp16_work(rl):
    r = rl["hfma2_loop"]
    # half the HFMA2s issue as HFMA2.MMA to the tensor pipe; no matrix instruction ran, so no tensor ceiling
    assert "tensor" not in r.ceilings and r.ceilings["fp16"] > 0.85 * r.duration_ns


def test_output_left_in_l2_still_counts(rl):
    r = rl["l2_resident_out"]
    # 16 MB in + 16 MB out; DRAM saw almost none of the writes before the kernel ended
    assert r.dram_bytes < 0.55 * 32 * 2**20
    assert r.compulsory_bytes == 32 * 2**20
    assert rl["dram_out"].compulsory_bytes == 512 * 2**20


def test_launch_floor(rl):
    assert rl["empty_kernel"].theoretical_ns == LAUNCH_FLOOR_NS
    assert rl["empty_kernel"].headroom == pytest.approx(1.0, abs=0.01)
    assert rl["tiny_chain_step"].headroom < 1.5  # was 2,212x against a 0.9 ns memory floor


def test_hierarchy_has_every_level_with_its_roof(rl):
    levels = {h["level"]: h for h in rl["dram_out"].hierarchy}
    assert set(levels) == {"l1", "l2", "dram"}
    for h in levels.values():
        assert h["peak_bytes_per_s"] and h["intensity"] is not None
    # roofs ordered as the hierarchy: L1 > L2 > DRAM bandwidth
    assert levels["l1"]["peak_bytes_per_s"] > levels["l2"]["peak_bytes_per_s"] > levels["dram"]["peak_bytes_per_s"]


def test_no_fp16_flops_without_fp16_pipe_work():
    row = {
        "gpu__time_duration.sum": 100_000.0,
        "sm__cycles_elapsed.avg.per_second": 1.9e9,
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed": 50.0,
        roofline.FP16_PIPE: 0.0,
    }
    assert roofline.compute(row).flops_by_precision["fp16"] == 0.0
    row[roofline.FP16_PIPE] = 10.0
    assert roofline.compute(row).flops_by_precision["fp16"] == pytest.approx(50.0 * 1.9e9 * 1e-4 * 4)


@pytest.mark.parametrize("fixture", ["ceilings", "patterns"])
def test_no_estimate_promises_a_time_below_the_floor(report_path, fixture):
    from ncuadvisor.analysis.pipeline import analyze
    from ncuadvisor.analysis.roofline import PRACTICAL_FRACTION

    checked = 0
    for k in analyze(report_path(fixture)).to_dict()["kernels"]:
        rl = k["roofline"]
        for f in k["findings"]:
            if f["category"] == "at-roofline" or f["changes_floor"] or not rl["duration_ns"]:
                continue
            after_ns = rl["duration_ns"] * (1 - f["estimated_speedup"])
            assert after_ns >= rl["theoretical_ns"] / PRACTICAL_FRACTION * (1 - 1e-6), (k["name"], f["rule"])
            checked += 1
    assert checked > 0


def test_the_floor_in_words_names_its_unit(rl):
    assert rl["sfu_loop"].floor_reason.startswith("the SFU (XU, 16 lanes/clk/SM) busy time")
    assert "fp32 lane operations (4.45 GFLOP executed)" in rl["fadd_loop"].floor_reason
    assert rl["dram_out"].floor_reason.startswith("moving 536.9 MB")
    assert rl["empty_kernel"].floor_reason.startswith("an empty kernel takes")


def test_a_duration_only_report_has_no_floor(report_path):
    frame = ReportReader(report_path("ceilings_chain")).results(roofline.METRICS)
    r = roofline.compute(frame.to_dict("records")[1], 132)
    assert r.duration_ns and r.theoretical_ns is None and r.headroom is None and r.limiter is None
