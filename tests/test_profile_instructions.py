"""Per-instruction data only where a rule needs it (`profile.instructions`): phase 2 leaves SourceCounters out for
ATen's and the libraries' kernels, and the analysis says which launches a rule deciding on per-instruction data may
fire on (`Analysis.wants_instructions`), for a later round to collect it.

Real reports read by the real library, their per-instruction data hidden the way a collection without SourceCounters
leaves it out (`ReportReader.details` asked for no per-instruction metric): torch_eager holds ATen kernels ISU001
fires on (issue-bound, 3.5× their floor), torch_scatter the atomics ATM002 finds (from its counters; the
per-instruction data gives it source lines only, which ATen kernels have not), torch_train kernels near their floor.
"""

from __future__ import annotations

import pytest

from ncuadvisor.load import ReportReader
from ncuadvisor.pipeline.analyze import kernel_analysis
from ncuadvisor.rulekit import engine
from tests.conftest import in_child

RULES = engine.discover([])


def analysed(path, hidden: bool):
    """(kernel entries by id, the launches wanting per-instruction data) of the report, with or without its
    per-instruction data."""

    def run():
        if hidden:
            orig = ReportReader.details

            def details(self, ids, per_instruction, sass_for=None, unread=(), only=None):
                return orig(self, ids, [], sass_for, unread, {r: [] for r in (only or {})})

            ReportReader.details = details  # in the forked child only
        res = kernel_analysis(path, rules=RULES)
        return {e.id: e for e in res.kernels}, res.wants_instructions

    return in_child(run)


def first(entry) -> str | None:
    return entry.findings[0].rule if entry.findings else None


@pytest.mark.parametrize("name", ["torch_eager", "torch_scatter", "torch_train"])
def test_only_the_kernels_a_deciding_rule_may_fire_on_want_instructions(name, report_path):
    """With the data: nothing wanted. Without it: every ATen kernel whose first finding needed it (ISU001) is wanted,
    and every kernel not wanted keeps its first finding; ATM002's atomics are found without it and not wanted."""
    whole, none_wanted = analysed(report_path(name), hidden=False)
    assert none_wanted == []
    lean, wanted = analysed(report_path(name), hidden=True)
    wanted_ids = {e.id for e in lean.values() if set(e.result_ids) & set(wanted)}
    needed = {i for i, e in whole.items() if any(f.rule == "ISU001" for f in e.findings)}
    assert needed <= wanted_ids
    for i, e in whole.items():
        if i not in wanted_ids:
            assert first(lean[i]) == first(e), e.name
    assert all(lean[i].language in engine.LINELESS_LANGUAGES for i in wanted_ids)
    if name == "torch_eager":
        assert needed and {first(lean[i]) for i in needed} != {"ISU001"}  # without the data ISU001 cannot fire
    if name == "torch_scatter":
        atm = {i for i, e in whole.items() if first(e) == "ATM002"}
        assert atm and all(first(lean[i]) == "ATM002" for i in atm) and not atm & wanted_ids
    if name == "torch_train":
        assert not wanted_ids  # near their floor: no round needed


def test_a_lines_only_reader_defers_and_an_ungated_one_does_not():
    """ATen kernels wait (ISU001 gated, ATM002 lines only); a kernel that may be CUDA code does not; a user rule of
    the pytorch language reading instructions without a gate makes ATen kernels take SourceCounters at once."""
    assert engine.deferred_instructions(RULES, {"pytorch", "library"})
    assert not engine.deferred_instructions(RULES, {"pytorch", "cuda"})
    assert not engine.deferred_instructions(RULES, set())

    class Ungated(engine.Rule):
        code = "USR901"
        languages = ("pytorch",)
        per_instruction = ("inst_executed",)

        def check(self, k):  # pragma: no cover - never run here
            return None

    assert not engine.deferred_instructions([*RULES, Ungated()], {"pytorch"})


EAGER_NO_SC = "profile-instructions-2026-12-06/eager_profile"


def test_a_report_without_source_counters_wants_them_for_the_issue_bound_aten_kernels(report_path):
    """The real phase-2 report of the eager transformer step without SourceCounters (H100): it holds the ideal
    sectors per instruction (collected by name) but no executed counts; masked_fill and the layout copy, ATen
    TensorIterator loops issue-bound at 2.7-2.9x their floor, are wanted (ISU001's gate); the cuBLAS GEMMs and
    the kernels near their floor are not."""
    lean, wanted = analysed(report_path(EAGER_NO_SC), hidden=False)
    names = {e.name for e in lean.values() if set(e.result_ids) & set(wanted)}
    assert names == {"elementwise_kernel"}, names
    assert len(wanted) == 2
    for e in lean.values():
        assert not any(f.rule == "ISU001" for f in e.findings)  # no executed counts: it cannot fire
        if e.name.startswith("nvjet") or (e.findings and e.findings[0].rule == "ROOF001"):
            assert not set(e.result_ids) & set(wanted)


@pytest.mark.slow
def test_profile_collects_them_in_one_more_round(report_path, tmp_path, monkeypatch, capsys):
    """`profile` on the fake ncu: phase 1 the eager step's H200 capture (torch_eager), phase 2 the H100 report
    without SourceCounters, then one more round with SourceCounters (torch_eager again, which has them) for the
    kernels a gate admitted: their entries come from it, ISU001 included; the round is said in report.profile."""
    import json

    from tests.test_profile import TARGET, fake_ncu_cli

    cli = fake_ncu_cli(tmp_path, monkeypatch, capsys)
    r = cli(
        "profile",
        str(TARGET),
        "-o",
        "step.json",
        FAKE_NCU_PHASE1="torch_eager",
        FAKE_NCU_PHASE2=str(report_path(EAGER_NO_SC)),
        FAKE_NCU_PHASE2_SC="torch_eager",
    )
    assert r.code == 0, r.err
    calls = r.phase_calls()
    sections = [[c[i + 1] for i, a in enumerate(c) if a == "--section"] for c in calls[1:]]
    assert sections[0] == ["LaunchStats", "Occupancy"] and sections[-1][-1] == "SourceCounters"
    prof = json.loads((tmp_path / "step.json").read_text())
    last = prof["report"]["profile"]["selection"]["rounds"][-1]
    assert last["purpose"] == "per-instruction data" and last["found"] >= 1
    assert any(f["rule"] == "ISU001" for k in prof["kernels"] for f in k.get("findings") or [])
