"""Packed-half FLOPs and the XU opcodes on a real capture: fixtures/fp16.ncu-rep.xz (workloads/cuda/fp16.cu on an H200,
2026-12-01), whose program printed its own operation counts (fixtures/fp16-2026-12-01/counts.jsonl)."""

import json
from pathlib import Path

import pytest

from ncuadvisor.analysis import needed, roofline
from ncuadvisor.load import ReportReader
from ncuadvisor.load.deep import every_result
from tests.conftest import in_child

COUNTS = Path(__file__).resolve().parent.parent / "fixtures" / "fp16-2026-12-01" / "counts.jsonl"
HFMA = "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"
XU = "sm__inst_executed_pipe_xu.sum"


@pytest.fixture(scope="module")
def fp16(report_path):
    """{kernel: (row, instruction facts, {opcode: warp instructions})} of every kernel of the capture, read in a
    forked child."""

    def read():
        reader = ReportReader(report_path("fp16"))
        rows = reader.results([*roofline.METRICS, HFMA, XU]).rows()
        details = reader.details([r["result_id"] for r in rows], needed.PER_INSTRUCTION, sass_for=every_result)
        out = {}
        for row in rows:
            per_instruction = details[row["result_id"]].per_instruction
            ops: dict[str, float] = {}
            for e in per_instruction[needed.INST_EXECUTED]:
                op = needed._opcode(e.sass)
                ops[op] = ops.get(op, 0.0) + e.value
            out[row["name"]] = (row, needed.instruction_facts(per_instruction), ops)
        return out

    return in_child(read)


@pytest.fixture(scope="module")
def program():
    return {d["kernel"]: d for d in map(json.loads, COUNTS.read_text().splitlines())}


@pytest.mark.parametrize("kernel", ["hfma2_loop", "hadd2_loop", "hmul2_loop", "hfma_scalar"])
def test_fp16_flops_match_the_program(fp16, program, kernel):
    row, facts, _ = fp16[kernel]
    r = roofline.compute(row, 132, facts)
    # the program's count (threads × iterations × 8 chains × FLOPs per operation); the report adds one zero move per
    # thread, which counts no FLOP
    assert r.flops_by_precision["fp16"] == pytest.approx(program[kernel]["flop"], rel=1e-3)


def test_counters_alone_count_issued_adds_and_multiplies_as_fmas(fp16, program):
    # nvcc issues half of the __hadd2 / __hmul2 as HFMA2.MMA (a × 1 + c, a × b + -0): the packed-half FMA counter
    # counts them, so counters alone (NCU's own half roofline: hfma × 4 + hadd × 2 + hmul × 2) give 1.5× the FLOPs
    for kernel in ("hadd2_loop", "hmul2_loop"):
        row, facts, ops = fp16[kernel]
        assert ops["HFMA2.MMA"] == pytest.approx(ops.get("HADD2", 0) + ops.get("HMUL2", 0), rel=1e-3)
        blind = roofline.compute(row, 132).flops_by_precision["fp16"]
        assert blind == pytest.approx(1.5 * program[kernel]["flop"], rel=2e-3)
        assert facts.hfma_kinds is not None and facts.hfma_kinds["fma"] == 0


def test_the_hfma_counter_counts_thread_instructions_and_constant_moves(fp16, program):
    row, facts, _ = fp16["hfma2_loop"]
    threads = program["hfma2_loop"]["threads"]
    # every HFMA2 and HFMA2.MMA thread instruction, plus the `HFMA2.MMA R3, -RZ, RZ, 0, 0` each thread runs once
    assert row[HFMA] == program["hfma2_loop"]["thread_ops"] + threads
    assert facts.hfma_kinds is not None and facts.hfma_kinds["move"] * 32 == threads
    # its peak: 128 HFMA2 thread instructions per clock per SM (× 4 FLOP: twice the FP32 FMA rate)
    r = roofline.compute(row, 132, facts)
    assert r.peak_flops_per_s["fp16"] == pytest.approx(2 * r.peak_flops_per_s["fp32"], rel=1e-6)


@pytest.mark.parametrize(
    ("kernel", "opcodes", "share"),
    [
        ("mufu_loop", {"MUFU.EX2", "MUFU.SIN"}, 1.0),
        ("cvt_loop", {"F2I.TRUNC.NTZ"}, 0.0),  # its I2FP.F32.S32 is not XU
        ("f2f_loop", {"F2F.F64.F32", "F2F.F32.F64"}, 0.0),
        ("bits_loop", {"POPC", "FLO.U32", "BREV"}, 0.0),
    ],
)
def test_xu_runs_these_opcodes(fp16, kernel, opcodes, share):
    row, facts, ops = fp16[kernel]
    xu_ops = {op for op in ops if op.split(".")[0] in needed.XU_OPCODES}
    assert xu_ops == opcodes
    # the pipe's own count is exactly these opcodes' warp instructions
    assert row[XU] == sum(ops[op] for op in opcodes)
    assert facts.xu_needed_share == share
    r = roofline.compute(row, 132, facts)
    # each keeps the XU pipe busy (cvt_loop 77%, with issue at 78%; the others XU-limited)
    assert r.busy_pct["sfu"] > 70.0
    assert ("sfu" in r.floors) == (share > 0)  # but only the transcendentals are needed work
