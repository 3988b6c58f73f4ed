"""Kernels of at least 5% of the time with room end with a named mechanism, or say what would settle their headroom
(benchmarks/gaps.py scans every corpus): the pipes' busy shares read over the active cycles where a report records
no elapsed ones, and a capture that counts DRAM's bytes alone (phase 1 of `profile`, a DRAM-only `--metrics` run)
says its headroom is unknown and which sections settle it, never "a gap in the rule set"."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, FOREIGN_CACHE, report_json, report_output


def by_name(doc: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for k in doc["kernels"]:
        out.setdefault(k["name"], []).append(k)
    return out


def test_active_shares_scaled_by_the_active_cycles_where_the_elapsed_ones_are_missing():
    """eschnett/IndexSpaces.jl (A40, ncu 2022.4.0, full set): the report records the FP16 pipe's busy share over the
    SM's active cycles only (28.65%). The active ÷ elapsed cycles come from the instructions executed per elapsed
    (1.9906) and per active (2.0686) cycle: 27.57% of the elapsed time. Checked on the same kernel where both forms
    exist: the issue slots, 51.72% of the active cycles × 0.9623 = 49.77%, the recorded elapsed share (49.77%). The
    Julia beamformer's half-precision work then sets its floor (the FP16 pipe, needed work: 3.2× instead of 13.6×
    its byte floor), and LOC001 stays first."""
    doc = report_json(FIXTURES / "foreign" / "eschnett+IndexSpaces.jl__profile.ncu-rep.xz")
    frb = by_name(doc)["julia_frb_5885"][0]
    rl = frb["roofline"]
    assert rl["busy_pct"]["fp16"] == pytest.approx(28.6527185 * 1.990634106 / 2.068580828, rel=1e-4)
    assert rl["busy_pct"]["issue"] == pytest.approx(51.7204062 * 1.990634106 / 2.068580828, rel=1e-3)
    assert rl["sources"]["pipe_shares"].startswith("report: busy over the active cycles × active ÷ elapsed")
    # the packed-half work sets the floor (with the HFMA2.MMA the tensor pipe ran: the FMA pipe ran FP16 too)
    assert rl["floors"]["fp16"] == max(rl["floors"].values()) >= rl["duration_ns"] * rl["busy_pct"]["fp16"] / 100
    assert frb["findings"][0]["rule"] == "LOC001"
    # a kernel of the same report whose FP16 pipe ran nothing gets no FP16 floor from it
    other = by_name(doc)["julia__5_11155"][0]["roofline"]
    assert not other["floors"].get("fp16")


@pytest.mark.skipif(not FOREIGN_CACHE.is_dir(), reason=f"the foreign cache {FOREIGN_CACHE} is absent")
def test_a_custom_set_of_compute_workload_analysis_names_the_rng_issue_bound():
    """AlpriElse/cs599k silu v2 (GH200, ncu 2025.1.0, ComputeWorkloadAnalysis and MemoryWorkloadAnalysis only): every
    pipe share is over the active cycles. Read through them, ATen's normal-distribution generator (32% of the time,
    2.4× its byte floor) is issue-bound (69.1% × 0.981 = 67.8% of the elapsed cycles), and the fallback names the
    generator's own instructions instead of "a gap in the rule set"."""
    path = FOREIGN_CACHE / "AlpriElse+cs599k__silu_silu-2025-04-19-v2.ncu-rep"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in the foreign cache")
    rng = by_name(report_json(path))["distribution_elementwise_grid_stride_kernel"][0]
    assert rng["roofline"]["limiter"] == "issue"
    assert rng["roofline"]["busy_pct"]["issue"] == pytest.approx(69.1148305 * 2.710830884 / 2.763805814, rel=1e-3)
    first = rng["findings"][0]
    assert first["rule"] == "GEN001" and "instruction overhead" in first["title"] and first["confidence"] == "low"
    assert "random-number generator" in first["fix"] and 0 < first["estimated_speedup"] < 0.5
    assert rng.get("no_rule") is None


def test_a_phase1_capture_says_what_settles_the_headroom():
    """`ncuadvisor profile`'s phase 1 of code under torch.compile (H200): the duration, DRAM's bytes and the tensor
    pipe. Two FP32 SIMT GEMMs and a Triton kernel keep DRAM 3-4% busy: 27-37× their DRAM floor is an upper bound of
    the headroom (the FLOPs are not counted), so each says "Headroom unknown", the bound, and the sections that would
    settle it; none is "a gap in the rule set", in the JSON or in the kernel table."""
    path = FIXTURES / "compiled-lines-2026-12-01" / "compiled.phase1.ncu-rep.xz"
    doc = report_json(path)
    big = [k for k in doc["kernels"] if k["time_share"] >= 0.05 and k["no_rule"] is not None]
    assert len(big) >= 3
    for k in big:
        verdict = k["no_rule"]
        if verdict.get("program_rule"):
            continue
        assert verdict["message"].startswith("Headroom unknown ("), verdict["message"]
        assert f"at most {k['headroom']:.1f}× its DRAM floor" in verdict["message"]
        assert "would settle it" in verdict["message"] and "WarpStateStats" in verdict["message"]
        assert verdict["headroom"] is None and "Gap in the rule set" not in verdict["message"]
    # the kernel table's cell reads the same (the markdown as a user gets it)
    md = report_output(path, "md")
    table = [line for line in md.splitlines() if line.startswith("| ")]
    rows = [line for line in table if "Kernel2" in line]
    assert rows and rows[0].rstrip().endswith("| headroom unknown |")
    assert not [line for line in table if line.rstrip().endswith("| gap in the rule set |")]


def test_a_dram_only_capture_says_what_settles_the_headroom_and_a_full_one_keeps_its_verdict():
    """scatter_ops (H200: the duration, the global atomic/load requests and DRAM's bytes): the ATen gather kernel
    (7% of the time, DRAM 20% busy) says its headroom is unknown; the ATM findings of the same capture stay. A full
    report keeps its measured headroom in the verdict (torch_norm_chain's layer norm, 1.9× its floor, covered by the
    fusion finding)."""
    doc = report_json(FIXTURES / "scatter-ops-2026-12-01" / "scatter_ops.ncu-rep.xz")
    ks = by_name(doc)
    gather = ks["vectorized_gather_kernel"][0]
    assert gather["no_rule"]["message"].startswith("Headroom unknown (")
    assert "counts the bytes DRAM moved (DRAM busy 20%" in gather["no_rule"]["message"]
    assert any(f["rule"] == "ATM003" for k in ks["kernelHistogram1D"] for f in k["findings"])
    full = report_json(FIXTURES / "torch_norm_chain.ncu-rep.xz")
    ln = by_name(full)["vectorized_layer_norm_kernel"][0]
    assert ln["no_rule"]["headroom"] == pytest.approx(ln["headroom"])
    assert "headroom unknown" not in ln["no_rule"]["message"].lower()
    assert f"{ln['headroom']:.1f}× its floor" in ln["no_rule"]["message"]


def test_the_scan_classifies_a_report_the_way_its_verdicts_read():
    """benchmarks/gaps.py on the phase-1 capture: its large kernels are unknown-said or covered by a program
    finding, none a gap; on the eager training step every kernel with room has a finding or a program finding."""
    import gaps  # benchmarks/ is on sys.path (tests/conftest.py)

    for path in (
        FIXTURES / "compiled-lines-2026-12-01" / "compiled.phase1.ncu-rep.xz",
        FIXTURES / "torch_train.ncu-rep.xz",
    ):
        rows = gaps.rows_of(report_json(path), path.name, gaps.MIN_SHARE)
        assert rows and not [r.line() for r in rows if r.cls in ("gap", "unknown-silent")]
        if "phase1" in path.name:
            assert {r.cls for r in rows} <= {"unknown-said", "program"}
