"""Per-unit ceilings and the limiter on the planted `ceilings` kernels (one per machine unit, H200), whose bound is
known by construction and whose measured rates are 77-88% of the unit's nominal peak (benchmarks/RESULTS.md)."""

import pytest

from ncuadvisor.analysis import roofline, roofline_words
from ncuadvisor.analysis.ceilings import LAUNCH_FLOOR_NS
from ncuadvisor.load import ReportReader
from ncuadvisor.load.deep import every_result
from tests.conftest import in_child


@pytest.fixture(scope="module")
def rl(report_path):
    def read():
        frame = ReportReader(report_path("ceilings")).results(roofline.METRICS)
        return {r["name"]: roofline.compute(r, 132) for r in frame.rows()}

    return in_child(read)


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
    assert rl[kernel].limiter_reason.startswith(f"{roofline_words.unit_words(rl[kernel].limiter)}-bound")


def test_latency_when_no_unit_is_half_busy(report_path):
    frame = ReportReader(report_path("patterns")).results(roofline.METRICS)
    r = {row["name"]: roofline.compute(row, 132) for row in frame.rows()}
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
def test_no_estimate_promises_a_time_below_the_floor(analyzed, fixture):
    from ncuadvisor.analysis.roofline import PRACTICAL_FRACTION

    checked = 0
    for k in analyzed(fixture)["kernels"]:
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
    assert "FP32 lane operations (4.45 GFLOP executed)" in rl["fadd_loop"].floor_reason
    assert rl["dram_out"].floor_reason.startswith("moving 536.9 MB")
    assert rl["empty_kernel"].floor_reason.startswith("an empty kernel takes")


def test_a_duration_only_report_has_no_floor(report_path):
    frame = ReportReader(report_path("ceilings_chain")).results(roofline.METRICS)
    r = roofline.compute(frame.rows()[1], 132)
    assert r.duration_ns and r.theoretical_ns is None and r.headroom is None and r.limiter is None


def test_rules_decide_by_the_limiter_not_the_word(report_path):
    from ncuadvisor.rulekit.models import limiter_phrase, limiter_side

    frame = ReportReader(report_path("patterns")).results(roofline.METRICS)
    p = {row["name"]: roofline.compute(row, 132) for row in frame.rows()}
    # Speed Of Light says "compute" (its SM throughput is a maximum over sub-units), but the bytes its shared-memory
    # tree moves through L1 need more time at L1's peak than any pipe: the memory side
    assert p["reduce_shfl"].bound == "compute" and p["reduce_shfl"].limiter == "l1"
    assert limiter_side(p["reduce_shfl"]) == "memory"
    # the modulo tree: "compute" and limited by instruction issue, not by a FLOP pipe
    assert p["reduce_mod"].limiter == "issue" and limiter_side(p["reduce_mod"]) == "compute"
    assert limiter_phrase(p["reduce_mod"]) == "limited by instruction issue"
    # no unit half busy: latency, as before
    assert limiter_side(p["chase_serial"]) == "latency"
    # a grid that cannot fill the GPU stays launch-bound whatever its busiest unit
    assert p["small_update"].bound == "launch" and limiter_side(p["small_update"]) == "launch"


def test_needed_bytes_split_into_loads_and_stores(report_path):
    from ncuadvisor.analysis import needed

    reader = ReportReader(report_path("ceilings"))
    frame = reader.results(roofline.METRICS)
    rows = {r["name"]: r for r in frame.rows()}
    ids = [rows[n]["result_id"] for n in ("l2_resident_out", "dram_out", "index_math")]
    details = reader.details(ids, needed.PER_INSTRUCTION, sass_for=every_result)
    r = {
        n: roofline.compute(rows[n], 132, needed.instruction_facts(details[rows[n]["result_id"]].per_instruction))
        for n in ("l2_resident_out", "dram_out", "index_math")
    }
    out = r["l2_resident_out"]
    # 16 MiB in, 16 MiB out; the output is still dirty in L2 when the kernel ends: DRAM wrote 0.7 MB of it
    assert out.load_bytes == pytest.approx(16 * 2**20, rel=0.001)
    assert out.store_bytes == pytest.approx(16 * 2**20, rel=0.001)
    assert rows["l2_resident_out"]["dram__bytes_write.sum"] < 0.05 * out.store_bytes
    assert out.compulsory_bytes == out.load_bytes + out.store_bytes
    assert r["dram_out"].load_bytes == pytest.approx(256 * 2**20, rel=0.001)
    # the 16 KB table is read from L1 over and over: its loads count once, at DRAM's reads (not the 558 MB of sectors)
    assert r["index_math"].load_bytes < 0.1e6 and r["index_math"].store_bytes == pytest.approx(THREADS * 4, rel=0.001)
    # without per-instruction data only the total is known
    plain = roofline.compute(rows["l2_resident_out"], 132)
    assert plain.load_bytes is None and plain.compulsory_bytes == pytest.approx(out.compulsory_bytes, rel=0.01)


THREADS = 132 * 8 * 4 * 256


def test_launch_floor_per_device(report_path):
    from ncuadvisor.analysis.ceilings import LAUNCH_FLOOR_NS, launch_floor

    frame = ReportReader(report_path("ceilings")).results(roofline.METRICS)
    rows = frame.rows()
    # the report holds an empty kernel: its own duration is the floor, and the source says so
    ns, source = launch_floor("NVIDIA H200", rows)
    empty = next(r for r in rows if r["name"] == "empty_kernel")
    assert ns == empty["gpu__time_duration.sum"] and "empty_kernel" in source
    # without one: the measured value of the device, else the H200's with a warning in the source
    busy = [r for r in rows if r["name"] != "empty_kernel"]
    assert launch_floor("NVIDIA H200", busy)[0] == LAUNCH_FLOOR_NS
    ns, source = launch_floor("NVIDIA B200", busy)
    assert ns == LAUNCH_FLOOR_NS and source.startswith("not measured on NVIDIA B200")
    r = roofline.compute(empty, 132, launch_floor=(1200.0, "test"))
    assert r.floors["launch"] == 1200.0 and r.launch_floor_source == "test"


def test_xu_work_by_opcode(report_path):
    from ncuadvisor.analysis import needed

    def facts(report, names):
        reader = ReportReader(report_path(report))
        rows = {r["name"]: r for r in reader.results(roofline.METRICS).rows() if r["name"] in names}
        ids = [r["result_id"] for r in rows.values()]
        details = reader.details(ids, needed.PER_INSTRUCTION, sass_for=every_result)
        return {
            n: (row, needed.instruction_facts(details[row["result_id"]].per_instruction)) for n, row in rows.items()
        }

    f = facts("ceilings", {"sfu_loop", "dfma_loop"})
    # MUFU.SIN/COS/EX2 only: all of the XU pipe's work is needed; the floor is the pipe's busy time
    assert f["sfu_loop"][1].xu_needed_share == 1.0
    assert roofline.compute(f["sfu_loop"][0], 132, f["sfu_loop"][1]).limiter == "sfu"
    # F2F.F64.F32 / F2F.F32.F64 run on XU too, but are conversions: no SFU floor
    assert f["dfma_loop"][1].xu_needed_share == 0.0
    assert "sfu" not in roofline.compute(f["dfma_loop"][0], 132, f["dfma_loop"][1]).floors
    g = facts("flaws", {"copy_strided", "local_array_dynamic", "diverge_lanes"})
    # integer division by a run-time divisor: I2F.U32.RP, MUFU.RCP, F2I (all XU, none needed)
    assert g["copy_strided"][1].xu_needed_share == 0.0
    # a float -> int conversion per element (F2I.TRUNC): XU busy, nothing needed
    r = roofline.compute(g["local_array_dynamic"][0], 132, g["local_array_dynamic"][1])
    assert r.busy_pct["sfu"] > 0.5 and "sfu" not in r.floors
    assert g["diverge_lanes"][1].xu_needed_share == 1.0  # MUFU.SIN, MUFU.COS


@pytest.mark.parametrize(
    ("sass", "kind"),
    [
        # nvcc 13.0 -arch=sm_90 on workloads/cuda/fp16.cu: __hadd2 and __hmul2 are issued half as HFMA2.MMA
        ("HFMA2.MMA R3, -RZ, RZ, 0, 0 ;", "move"),
        ("@P0 HFMA2.MMA R5, -RZ, RZ, 1.75, 0 ;", "move"),
        ("HFMA2.MMA R2, R2, 1, 1, R12.reuse ;", "add"),
        ("HFMA2.MMA R2, R2, R12.reuse, -RZ ;", "mul"),
        ("HFMA2.MMA R6, R6, R4.reuse, R5.reuse ;", "fma"),
        ("HFMA2 R7, R14, UR4.H0_H0, R9.reuse.H0_H0 ;", "fma"),
        ("HADD2 R0, R0, R12.reuse ;", None),
    ],
)
def test_hfma_kinds_by_operands(sass, kind):
    from ncuadvisor.analysis.needed import hfma_kinds
    from ncuadvisor.model import Instruction

    kinds = hfma_kinds({"inst_executed": [Instruction(pc=0x10, value=64.0, sass=sass)]})
    assert kinds is not None
    assert {k for k, v in kinds.items() if v} == ({kind} if kind else set())


def test_issue_and_alu_from_an_older_report_name():
    """ncu before 2025 records the issue slots and the ALU as cycles active: their busy share is read from those
    names where a report lacks the instructions-issued ones, and the instructions-issued names win where a report has
    both (equal on every exam kernel of ncu 2025.3)."""
    from ncuadvisor.analysis.ceilings import PIPE_PCT, PIPE_PCT_FALLBACK, pipe_ceilings

    old = {PIPE_PCT_FALLBACK["issue"]: 69.82, PIPE_PCT_FALLBACK["alu"]: 53.4, PIPE_PCT["fma"]: 38.12}
    floors, busy = pipe_ceilings(old.get, 33504.0)
    assert busy["issue"] == 69.82 and busy["alu"] == 53.4
    assert floors["issue"] == pytest.approx(0.6982 * 33504.0)
    both = {**old, PIPE_PCT["issue"]: 61.0, PIPE_PCT["alu"]: 40.0}
    _, busy = pipe_ceilings(both.get, 33504.0)
    assert busy["issue"] == 61.0 and busy["alu"] == 40.0
    _, busy = pipe_ceilings({PIPE_PCT["fma"]: 38.12}.get, 33504.0)
    assert "issue" not in busy and "alu" not in busy
