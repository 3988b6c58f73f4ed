"""Rules on other people's committed reports (fixtures/foreign), read through the real library as a user runs the
command: the weaker-evidence and re-read paths fire where the report's counters show their mechanism."""

from __future__ import annotations

import pytest

from tests.conftest import FIXTURES, report_json


def kernels(name: str) -> dict[str, dict]:
    return {k["name"]: k for k in report_json(FIXTURES / "foreign" / name)["kernels"]}


def test_til001_weak_path_on_a_custom_set_sgemm():
    """AveryClapp/ESMM-Research profile_output (A10G, ncu 2023.1.1, Speed Of Light and roofline sections only): the
    1-D blocktiling SGEMM's load/store pipe is its busiest unit (65%) feeding an FMA pipe at 19%, 4 KiB of shared
    tiles per block; the 2-D and warp-tiled kernels of the same report (FMA 28-36%, L1 32-44%) are not flagged."""
    ks = kernels("AveryClapp+ESMM-Research__profile_output.ncu-rep.xz")
    first = ks["one_blocktiling"]["findings"][0]
    assert first["rule"] == "TIL001" and first["confidence"] == "low"
    assert "Weaker evidence" in first["message"] and "register tile" in first["fix"]
    for name in ("two_blocktiling", "vectorized_blocktiling", "warptiling"):
        assert not any(f["rule"] == "TIL001" for f in ks[name]["findings"]), name


def test_til001_reread_where_l2_refetches_cost_nothing():
    """panjd123/cutlass report-s4 (A100 80GB PCIe, ncu 2024.1.1, full set): CUTLASS's reference GEMM computes one
    output per thread, each input loaded ~250 times through L1 (99% hits) while L2, 1% busy, sends L1 12x the bytes
    DRAM reads (the operands fit in L2). Those refetches cost nothing, so the reuse is TIL001's, not CAC001's. Its
    loads of A (a row a lane, walked 16 bytes at a time by an unrolled loop, `LDG.E.U8` at +0x0..+0xf of one register)
    touch 16 lines a request where 32 abutting 16-byte records would touch 4: uncoalesced (MEM001). Its products are
    integer dot products (`IDP.4A.S8.S8` of bytes packed by PRMT, four a loop step on one accumulator): read as a
    matrix product since 2026-12-06, its fix is the product's tiles at both levels, ranked on its own saving (new code
    that loads both tiles in coalesced rows) at -95% ahead of coalescing's -89%; until then it was counted after
    MEM001 as a filter's tile would be (-53%), and MEM001 came first. Its label, written before, expects TIL001 or
    nothing."""
    ks = kernels("panjd123+cutlass__report-s4.ncu-rep.xz")
    findings = ks["ReferenceGemm_kernel"]["findings"]
    rules = [f["rule"] for f in findings]
    assert rules[:2] == ["TIL001", "MEM001"] and "CAC001" not in rules
    til, mem = findings[0], findings[1]
    assert "through L1 (99% hits)" in til["title"] and "tile it at both levels" in til["fix"]
    assert "113 M integer operations of dot products" in til["speedup_model"]
    assert 0.9 < til["estimated_speedup"] < 0.97 and til["estimated_speedup"] > mem["estimated_speedup"]
    assert not any(f["rule"] == "TIL001" for f in ks["Kernel"]["findings"])  # the B2b GEMM under study


def test_lat001_weak_path_on_the_default_set():
    """MgMap/Hyper-Spec-M (RTX 2060 Max-Q, ncu 2024.3.2, ncu's default set): a CuPy kernel whose `#pragma unroll 1`
    loop loads a feature index, then the bit word it addresses, keeps memory and compute at 22-23% of peak on 178-333
    waves at full occupancy (two launches): LAT001 on Speed Of Light alone, low confidence, its estimate said to be an
    upper bound. On a full-set report (thedavidchu/speedy_scan: stall counters, SASS and memory tables) LAT001 keeps
    its main path."""
    ks = kernels("MgMap+Hyper-Spec-M__profile.ncu-rep.xz")
    first = ks["hd_enc_lvid_packed_cuda"]["findings"][0]
    assert first["rule"] == "LAT001" and first["confidence"] == "low"
    assert first["title"].startswith("Latency: memory 2") and first["title"].endswith(
        "of peak (both under 60%) on a full GPU"
    )
    assert "Weaker evidence" in first["message"] and "section WarpStateStats" in first["message"]
    assert "An upper bound" in first["speedup_model"]
    full = kernels("thedavidchu+speedy_scan__profile.ncu-rep.xz")["kernel"]["findings"]
    lat = next(f for f in full if f["rule"] == "LAT001")
    assert lat["confidence"] != "low" and "Weaker evidence" not in lat["message"]


def test_issue_slots_of_an_older_report_name_the_rng_issue_bound():
    """flyinglandlord/sglang profile (H800, ncu 2023.3.0, full set): ncu before 2025 records the issue slots and the
    ALU as cycles active (`sm__issue_active`, `sm__pipe_alu_cycles_active`), not as instructions issued. Read from
    them, ATen's normal-distribution generator (96% of the time) is issue-bound at 70%, not latency-bound at "FMA
    38%". It reads no global memory (its global loads touch no sector), so every instruction it issues is the
    library's algorithm (Philox rounds, Box-Muller) and its floor is their issue time: 1.43x it, "leave it" (until
    2026-12-06: 5.4x its byte floor and GEN001's "instruction overhead"). Its first launch (16.4 us, 1.61x) is named
    by what idles the issue slots there: 1,056 blocks in 1.33 waves."""
    doc = report_json(FIXTURES / "foreign" / "flyinglandlord+sglang__profile.ncu-rep.xz")
    rng = max(doc["kernels"], key=lambda k: k["time_share"])  # two launch shapes share its name
    assert rng["name"] == "distribution_elementwise_grid_stride_kernel"
    assert rng["roofline"]["limiter"] == "issue"
    assert rng["roofline"]["ceilings"]["issue"] == pytest.approx(0.6982 * 33504, rel=0.01)
    assert rng["roofline"]["floors"]["issue"] == rng["roofline"]["ceilings"]["issue"]
    assert rng["headroom"] == pytest.approx(1.43, abs=0.01)
    assert "its own algorithm's work" in rng["roofline"]["floor_reason"]
    first = rng["findings"][0]
    assert first["rule"] == "ROOF001" and "Leave it" in first["fix"]
    first_launch = next(v for v in rng["variants"] if v["duration_ns"] == 16448.0)
    tail = first_launch["findings"][0]
    assert tail["rule"] == "GEN001" and "a partial last wave" in tail["title"]
    assert "1.33 waves" in tail["message"] and "library sized this grid" in tail["fix"]


def test_a_scans_look_back_is_a_serial_section():
    """thedavidchu/speedy_scan (RTX 3070, ncu 2020.3.1, full set): a decoupled look-back scan with one element per
    thread. 58% of the stalls are at barriers, 64% of those sampled after the barrier that closes warp 0's look-back
    loop (a strong global load polled 23,687 times for 19,532 blocks): LAT001's serial section, with the lever (more
    elements per thread), not GEN001's "barrier stalls"."""
    first = kernels("thedavidchu+speedy_scan__profile.ncu-rep.xz")["kernel"]["findings"][0]
    assert first["rule"] == "LAT001" and first["title"].startswith("Serial section: one warp per block")
    assert "8 or more elements" in first["fix"]


def test_div001_before_lat001_where_the_waiting_warps_run_half_empty():
    """bwd29/self-join-MiSTIC profileHiggs (A100-PCIE-40GB, ncu 2022.4, full set): nodeByPoint5's distance loop breaks
    once a candidate is farther than epsilon, so lanes leave it at different dimensions: 15.2 of 32 threads per
    instruction, and the warps wait on the loop's loads (53% of the samples at their use, issue slots 36% busy). Packing
    the lanes cuts the waits with the issue (DIV001, the idle lanes' share of the sampled cycles), more than more
    loads in flight cut the waiting alone (LAT001): DIV001 first, LAT001 after it with a smaller estimate, and LAT001's
    not a dependent-load chain: the loop's loads are addressed by a base that five index loads compute once per
    candidate (cell, range, list, point), each run at most a fifth as often as the loop's own. On the
    same loop profiled with the warp-state sections only (prof1), DIV001 stays first."""
    first, *rest = kernels("bwd29+self-join-MiSTIC__profileHiggs.out.ncu-rep.xz")["nodeByPoint5"]["findings"]
    assert first["rule"] == "DIV001" and "of the sampled warp cycles belong to idle lanes" in first["message"]
    assert first["fix"].startswith("Lanes leave a loop at different iterations")  # 31 lanes enter it, 9 loop back
    lat = next(f for f in rest if f["rule"] == "LAT001")
    assert 0.5 < first["estimated_speedup"] < 0.6 and lat["estimated_speedup"] < first["estimated_speedup"]
    # the loop's loads take their base from a row of index loads paid once per candidate, not from each other: no chain
    assert lat["title"].startswith("Latency-bound: ") and "unroll" in lat["fix"]
    idle = next(e for e in first["evidence"] if e["metric"] == "idle_lane_sampled_share")
    assert 0.5 < idle["value"] < 0.6
    other = kernels("bwd29+self-join-MiSTIC__prof1.ncu-rep.xz")["distanceCalculationsKernel"]["findings"]
    assert other[0]["rule"] == "DIV001"
