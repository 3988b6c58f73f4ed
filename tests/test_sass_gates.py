"""The machine model's facts from the report's counts instead of the SASS, and the SASS read only for the kernels
whose rules can fire on them (`Rule.sass_when`): the same result, with fewer kernels disassembled."""

from __future__ import annotations

from functools import partial

import pytest

import ncuadvisor.load.reader as reader_module
from ncuadvisor.analysis import needed, roofline
from ncuadvisor.load import ReportReader, read_results
from ncuadvisor.model import group_kernels
from ncuadvisor.pipeline import analyze as pipeline
from ncuadvisor.rulekit import engine

LANGUAGES = frozenset({"cuda", "triton", "pytorch", "library"})


# fp16: HFMA2 whose kinds count (the SASS is needed) and kinds that do not, XU opcodes that ran equally often (the
# order is the SASS's only by chance; the roofline the same but on XU-bound kernels, whose SASS is then read);
# torch_scatter: atomics (ATOMG) and reductions (REDG) beside loads and stores; torch_train: ATen and cuBLAS kernels
@pytest.mark.parametrize(
    "fixture", ["fp16", "torch_scatter", pytest.param("torch_train", marks=pytest.mark.slow)]
)  # the training step (3.8 s) with the slow tests: fp16 and the scatters hold every kind of fact
def test_facts_from_the_counts_are_the_facts_from_the_sass(report_path, fixture):
    rules = engine.discover(())
    metrics = list(dict.fromkeys(roofline.METRICS + pipeline.CARD_METRICS + engine.required_metrics(rules)))
    reader = ReportReader(report_path(fixture), metrics)
    profile = read_results(reader, metrics)
    kernels = group_kernels(profile.results)
    names = {rid: (k.name, k.demangled) for rid, k in pipeline._analysed_launches(kernels)}
    # every analysed result disassembled, whatever its language
    details = profile.details = reader.details(
        list(names), needed.PER_INSTRUCTION, partial(pipeline._wants_sass, names, LANGUAGES)
    )
    machine = pipeline._machine(profile)
    # the facts the pipeline takes from the counts (every kernel as if in a language whose rules read SASS), None
    # where it reads the SASS for them
    counted_all = pipeline.instruction_facts(
        profile, machine, kernels, dict.fromkeys(names, "cuda"), frozenset({"cuda"}), frozenset()
    )
    compared = from_sass = tied = 0
    for rid, detail in details.items():
        if not detail.per_instruction:
            continue
        row = profile.results.row(rid)
        sass = needed.instruction_facts(detail.per_instruction)
        counted = counted_all[rid]
        ran_hfma = any(op.startswith("HFMA2") and v for op, v in (detail.opcodes or {}).items())
        if counted is None:  # what HFMA2 computed counts (in its operands), or an XU-bound kernel's tied opcodes
            raw = needed.counted_facts(detail.per_instruction, detail.opcodes, detail.access_types, False)
            assert (ran_hfma and roofline.hfma_kinds_matter(row)) or (raw and not raw.xu_order_known), rid
            from_sass += 1
            continue
        compared += 1
        # as the JSON writes them (0.0, not 0)
        assert repr((counted.ideal_split, counted.xu_needed_share)) == repr((sass.ideal_split, sass.xu_needed_share))
        if counted.xu_order_known:
            assert counted.xu_opcodes == sass.xu_opcodes, rid
        else:  # XU opcodes that ran equally often: the same ones
            tied += 1
            assert sorted(counted.xu_opcodes) == sorted(sass.xu_opcodes), rid
        assert counted.hfma_kinds == sass.hfma_kinds or (counted.hfma_kinds is None and ran_hfma), rid
        assert roofline.compute(row, *machine[:1], counted, *machine[1:]) == roofline.compute(
            row, *machine[:1], sass, *machine[1:]
        ), rid
    assert compared >= 4
    # fp16: HFMA2 whose kinds count, and its XU-bound kernel of three bit operations run equally often
    assert from_sass >= 2 if fixture == "fp16" else from_sass == 0 and tied > 0


# torch_train: 20 ATen kernels, none that ISU001 or ATM002 can fire on; torch_scatter: ATM002 fires on its scatters
@pytest.mark.parametrize(
    "fixture, disassembled", [pytest.param("torch_train", 0, marks=pytest.mark.slow), ("torch_scatter", 2)]
)
def test_gated_rules_give_the_same_result_with_fewer_kernels_disassembled(
    report_path, monkeypatch, fixture, disassembled
):
    asked: list[list[int]] = []
    add_sass = reader_module.ReportReader.add_sass

    def spy(self, details, result_ids):
        asked.append(list(result_ids))
        return add_sass(self, details, asked[-1])

    monkeypatch.setattr(reader_module.ReportReader, "add_sass", spy)
    gated = pipeline.analyze(report_path(fixture)).to_dict()
    assert [len(ids) for ids in asked] == [disassembled]
    assert engine.gated_sass_languages(engine.discover(())) == {"pytorch"}

    # every kernel of a language whose rules read instructions disassembled with its deep data, as without gates
    monkeypatch.setattr(engine, "gated_sass_languages", lambda rules: set())
    asked.clear()
    ungated = pipeline.analyze(report_path(fixture)).to_dict()
    assert asked == [[]]
    gated.pop("created"), ungated.pop("created")
    assert gated == ungated
    if fixture == "torch_scatter":
        assert any(f["rule"] == "ATM002" for k in gated["kernels"] for f in k["findings"])
