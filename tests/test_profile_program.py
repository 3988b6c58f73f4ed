"""`ncuadvisor profile` keeps the program view: the program rules of the merged result see the DRAM bytes of every
launch of the kernels phase 2 profiled (profile.launchbytes), so that its program findings are a full capture's.

Real reports of one run of the eager training step (workloads/torch/transformer_step.py --train, NVTX range
step_all_threads, fixtures/profile-cost-2026-11-30): `train_profile.phase1` (phase 1: 229 launches timed),
`train_profile` (phase 2: the kernels covering 90% of the time, in depth) and `train_naive_full` (ncu's full set on
every one of the same 229 launches).
"""

from __future__ import annotations

import lzma
import shutil
from pathlib import Path

import pytest

from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.profile.launchbytes import fill_launch_bytes, profiled_bytes
from ncuadvisor.profile.merge import Phase1Time, analyze_phase1, merge_results
from ncuadvisor.profile.selection import kernel_key
from ncuadvisor.rulekit import engine
from tests.conftest import in_child

pytestmark = pytest.mark.slow  # ~35 s: two reports of 100 MB analysed

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "profile-cost-2026-11-30"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("train_step")

    def get(name: str) -> Path:
        dst = out / f"{name}.ncu-rep"
        if not dst.exists():
            with lzma.open(FOLDER / f"{name}.ncu-rep.xz", "rb") as fin, dst.open("wb") as fout:
                shutil.copyfileobj(fin, fout)
        return dst

    return get


@pytest.fixture(scope="module")
def two_phases(reports):
    """What `Session.two_phase` has before the merge: the phase-1 result and launches, the deep result (read in a
    forked child: the test process opens no report)."""
    rules = engine.discover([])
    deep_path = reports("train_profile")

    def read():
        p1, launches, _ = analyze_phase1(reports("train_profile.phase1"), rules)
        return p1, launches, analyze(deep_path, rules=rules, group_time=Phase1Time(p1, launches))

    p1, launches, deep = in_child(read)
    return rules, p1, launches, deep_path, deep


def test_phase_1_launches_get_the_bytes_phase_2_measured(two_phases):
    _rules, p1, launches, deep_path, deep = two_phases
    launches = [dict(x) for x in launches]
    assert all(x["dram_read_bytes"] is None for x in launches)  # phase 1 timed them only
    measured = profiled_bytes([str(deep_path)])
    assert len(measured) == len({kernel_key(k) for k in deep.kernels})
    filled = fill_launch_bytes(launches, p1.kernels, measured)
    key_of = {k.id: kernel_key(k) for k in p1.kernels}
    profiled = [x for x in launches if key_of[x["kernel_id"]] in measured]
    assert filled == len(profiled) and 0 < filled < len(launches)
    for x in profiled:
        read, write, dur = measured[key_of[x["kernel_id"]]]
        assert x["dram_read_bytes"] == pytest.approx(read * x["duration_ns"] / dur)
        assert x["dram_write_bytes"] == pytest.approx(write * x["duration_ns"] / dur)
    assert all(x["dram_read_bytes"] is None for x in launches if key_of[x["kernel_id"]] not in measured)
    # phase 1 that measured bytes itself keeps its own
    x = dict(launches[0], dram_read_bytes=1.0, dram_write_bytes=2.0)
    assert fill_launch_bytes([x], p1.kernels, measured) == 0 and x["dram_read_bytes"] == 1.0


def test_without_the_bytes_profile_had_no_program_finding(two_phases):
    """The defect this fixes: the phase-1 launches alone give the fusion rule nothing to weigh."""
    rules, p1, launches, deep_path, deep = two_phases
    m = merge_results(p1, [(str(deep_path), deep)], launches=[dict(x) for x in launches], rules=rules)
    assert [f for f in m.program_findings if f.rule == "PRG002"] == []


@pytest.mark.slow
def test_profile_program_findings_match_the_full_capture(two_phases, reports):
    """Through the real merge: the merged result's program findings are the full capture's (same rules, same chains
    of kernels, savings within 5%), and its "where to start" opens with the same three actions."""
    rules, p1, launches, deep_path, deep = two_phases
    launches = [dict(x) for x in launches]
    fill_launch_bytes(launches, p1.kernels, profiled_bytes([str(deep_path)]))
    merged = merge_results(p1, [(str(deep_path), deep)], launches=launches, rules=rules).to_dict()
    full = analyze(reports("train_naive_full"), rules=rules).to_dict()

    def program(res: dict) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(f["rule"], f["title"], tuple(f["kernels"])) for f in res["program_findings"]]

    assert program(full), "the full capture has a program finding to match"
    assert program(merged) == program(full)
    for got, want in zip(merged["program_findings"], full["program_findings"]):
        assert got["estimated_saving_ns"] == pytest.approx(want["estimated_saving_ns"], rel=0.05)

    def actions(res: dict) -> list[tuple[str, str]]:
        return [(a["scope"], a["rule"]) for a in res["top_actions"][:3]]

    assert actions(merged) == actions(full)
    # the optimizer's foreach step (PYT003) heads it; the model's fusion chains (PRG002) follow the kernels' fixes
    assert actions(merged)[0] == ("program", "PYT003")
    assert ("program", "PRG002") in [(a["scope"], a["rule"]) for a in merged["top_actions"][:4]]


@pytest.mark.slow
def test_a_phase1_with_its_own_bytes_gives_the_full_captures_program_findings(two_phases, reports):
    """Phase 1 now collects every launch's DRAM bytes (ncu.PHASE1_COLLECTED). The full capture holds them for the
    same 229 launches, so read as a phase-1 report it is what the new phase 1 measures: every launch has bytes of
    its own, nothing is scaled from a profiled launch, and the merged program findings are the full capture's."""
    rules, _p1, _launches, deep_path, deep = two_phases
    full_path = reports("train_naive_full")
    p1, launches, _ = analyze_phase1(full_path, rules)
    assert all(x["dram_read_bytes"] is not None and x["dram_write_bytes"] is not None for x in launches)
    assert fill_launch_bytes(launches, p1.kernels, profiled_bytes([str(deep_path)])) == 0  # nothing to fill
    merged = merge_results(p1, [(str(deep_path), deep)], launches=launches, rules=rules).to_dict()
    full = analyze(full_path, rules=rules).to_dict()
    got = [(f["rule"], tuple(f["kernels"])) for f in merged["program_findings"]]
    assert got and got == [(f["rule"], tuple(f["kernels"])) for f in full["program_findings"]]
    for a, b in zip(merged["program_findings"], full["program_findings"]):
        assert a["estimated_saving_ns"] == pytest.approx(b["estimated_saving_ns"], rel=0.05)


@pytest.mark.slow
def test_a_chain_of_aten_pointwise_kernels_phase_2_did_not_profile_is_still_fused(two_phases, reports):
    """A fusion chain's ATen pointwise kernels may hold too little time for phase 2 (GPT-2 small's GELU backward on
    the H100, 2026-12-06: eleven `vectorized_elementwise_kernel` launches a layer outside the 90%, so `profile` lost
    the full capture's PRG002). Phase 1 measured their bytes, and what they run (one functor per element) makes them
    memory-class: with every pointwise kernel of the chains left out of phase 2, the same chains are found."""
    rules, _p1, _launches, deep_path, deep = two_phases
    full_path = reports("train_naive_full")
    p1, launches, _ = analyze_phase1(full_path, rules)
    full = analyze(full_path, rules=rules).to_dict()
    chains = [f for f in full["program_findings"] if f["rule"] == "PRG002"]
    assert chains
    by_id = {k["id"]: k for k in full["kernels"]}
    pointwise = {
        kernel_key(k)
        for f in chains
        for kid in f["kernel_ids"]
        for k in p1.kernels
        if k.id == kid and "elementwise_kernel<" in by_id[kid]["demangled"]
    }
    assert pointwise
    deep.kernels = [k for k in deep.kernels if kernel_key(k) not in pointwise]
    merged = merge_results(p1, [(str(deep_path), deep)], launches=launches, rules=rules).to_dict()
    timed_only = {k["id"] for k in merged["kernels"] if k["profiled"] is False}
    got = [f for f in merged["program_findings"] if f["rule"] == "PRG002"]
    assert {kid for f in got for kid in f["kernel_ids"]} & timed_only  # the chains hold kernels timed only
    assert [tuple(f["kernels"]) for f in got] == [tuple(f["kernels"]) for f in chains]
    for a, b in zip(got, chains):
        assert a["estimated_saving_ns"] == pytest.approx(b["estimated_saving_ns"], rel=0.1)
