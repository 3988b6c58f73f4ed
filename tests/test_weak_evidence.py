"""Rules on their weakest evidence (`Rule.weak_evidence`): on a real basic-set report (fixtures/flaws_basic: ncu's
default set on the H200) the weak paths run and stay silent where the mechanism is absent, and every skip note names
the section that would settle it; on the full-section report of the same kernels the main paths are unchanged. The
cases where each weak path fires, with numbers from other people's reports, are in tests/rule_cases/ (ATM001, LAT001,
LOC001, MEM001, TEN001, TIL001)."""

from ncuadvisor.rulekit import engine
from tests.conftest import kernel


def test_basic_set_weak_paths_run_silent_and_skip_notes_name_sections(analyzed):
    r = analyzed("flaws_basic")
    for k in r["kernels"]:
        notes = {s["rule"]: s["reason"] for s in k["skipped_rules"]}
        # the L2 atomic units, the FMA pipe's utilisation and the launch's stack limit (1024 bytes: CUDA's default)
        # are in the basic set: ATM001, TEN001, TIL001 and LOC001 ran on them (TIL001 silent on the shared-memory
        # transpose at 88% of L1 whose FMA pipe is idle, and on the L2-bound strided copy); LAT001 ran on Speed Of
        # Light, the launch's waves and the occupancy section, silent where a unit is at 60% or more (every kernel here)
        for code in ("ATM001", "TEN001", "TIL001", "LOC001", "LAT001"):
            assert notes[code].endswith(engine.WEAK_SILENT), (k["name"], notes[code])
        # the basic set has no bytes-per-sector: MEM001 runs on the L2's tag lookups against its sectors (Speed Of
        # Light's breakdown), fires on the strided copy (1.2 sectors per L2 request at most) and is silent on the
        # float4 copy (3.1) and the shared-memory transpose (3.1), saying which section would settle it
        if k["name"] == "copy_strided":
            mem = next(f for f in k["findings"] if f["rule"] == "MEM001")
            assert mem["confidence"] == "low" and "L2 requests carry at most 1.2 sectors" in mem["title"]
            assert "section SourceCounters would confirm it" in mem["message"]
            assert not any("Weaker evidence" in f["message"] for f in k["findings"] if f["rule"] != "MEM001")
            continue
        assert notes["MEM001"].startswith("report lacks memory_l2_theoretical_sectors_global")
        assert "; section SourceCounters would settle it" in notes["MEM001"]
        assert notes["MEM001"].endswith(engine.WEAK_SILENT)
        assert not any("Weaker evidence" in f["message"] for f in k["findings"])


def test_full_set_keeps_the_main_paths(analyzed):
    """With every section, the rules run on their main evidence: no weaker-evidence finding, no low confidence from
    the engine, and the atomics and coalescing findings of the planted kernels as before."""
    r = analyzed("flaws")
    for k in r["kernels"]:
        assert not any("Weaker evidence" in f["message"] for f in k["findings"]), k["name"]
    atomics = next(f for f in kernel(r, "hist_global_atomic")["findings"] if f["rule"] == "ATM001")
    assert atomics["confidence"] != "low" and atomics["title"].startswith("Contended global atomics")
    strided = next(f for f in kernel(r, "copy_strided")["findings"] if f["rule"] == "MEM001")
    assert strided["source"], "the main path places the uncoalesced access in the source"


def test_skip_note_names_the_sections():
    assert engine.lacks(["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"]) == (
        "report lacks l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
        "; section MemoryWorkloadAnalysis_Tables would settle it"
    )
    assert engine.lacks(["a_metric_nobody_declares"]) == "report lacks a_metric_nobody_declares"


def test_stack_limit_before_each_launch_is_its_process_s_previous_one(report_path):
    """The stack limit before a launch (`STACK_SIZE_BEFORE`, LOC001's weakest evidence) is that of the launch just
    before it in its own process: none for each process's first launch. fixtures/multiproc holds two processes whose
    launches interleave in the file."""
    from ncuadvisor import metrics
    from ncuadvisor.load import ReportReader, read_results
    from ncuadvisor.pipeline import analyze

    wanted = [metrics.LaunchStats.STACK_SIZE, metrics.SpeedOfLight.DURATION]
    profile = read_results(ReportReader(report_path("multiproc"), wanted), wanted)
    before = analyze._stack_before(profile)
    rows = sorted(profile.results, key=lambda r: r["result_id"])
    processes = [str(r.get("process") or "") for r in rows]
    assert len(set(processes)) == 2 and len(before) == len(rows)
    for i, row in enumerate(rows):
        earlier = [r for r in rows[:i] if str(r.get("process") or "") == processes[i]]
        assert before[row["result_id"]] == (earlier[-1][metrics.LaunchStats.STACK_SIZE] if earlier else None)
    assert {v for v in before.values() if v is not None} == {1024.0}
