"""A result's per-instruction data read straight from the report file (ncuadvisor/reportfile/instances.py) against
ncu_report, on every real report in fixtures/: for every result it answers for, the deep data of a result without
source lines (`load.deep.from_file`) is exactly what opening it through ncu_report gives (`deep.deep_and_sass`); what it
refuses is what the file reader of NCU's rule results refuses (a rule table), or a result ncu recorded nothing for
(the foreign sglang report's empty flash_fwd_kernel). The analysis is then the same."""

import json
import math
from pathlib import Path

import pytest

from ncuadvisor.analysis import needed
from ncuadvisor.load import deep
from ncuadvisor.load import reader as load
from ncuadvisor.load.native import import_ncu_report
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.reportfile import instances
from ncuadvisor.rulekit import engine

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ALL = sorted(
    str(p.relative_to(FIXTURES)).removesuffix(".ncu-rep.xz")
    for p in FIXTURES.rglob("*.ncu-rep.xz")
    if p.name != "model_step_1010.ncu-rep.xz"
)
# the default run: ATen, cuBLAS, Triton and CUDA kernels, fp16 and XU work, atomics, a report of rule tables (the
# training step, the largest, under -m slow with the rest: its analysis with the results not opened is compared below)
QUICK = ["torch_compile", "torch_scatter", "torch_eager", "flaws", "fp16", "patterns", "tiny_sections"]
PER_INSTRUCTION = list(dict.fromkeys(engine.per_instruction_metrics(engine.discover([])) + needed.PER_INSTRUCTION))


def _compare(path: Path, every: int = 1) -> tuple[int, int]:
    """Every `every`-th result of the report, with the analysis' per-instruction metrics and with none: the file's
    answer equals ncu_report's, or it refused a result with a rule table or with no measurement. (answered, refused)."""
    rng = import_ncu_report().load_report(str(path)).range_by_idx(0)
    ids = list(range(0, rng.num_actions(), every))
    answered = refused = 0
    for metrics in (PER_INSTRUCTION, []):
        got = instances.read_deep(path, dict.fromkeys(ids, metrics))
        assert got is not None and set(got) == set(ids)
        for rid in ids:
            ref = deep.deep_and_sass(rid, rng.action_by_idx(rid), metrics, None, False)
            if got[rid] is None:
                # refused: a result with a rule table, or one ncu recorded nothing for (its rules errored, no duration)
                duration = rng.action_by_idx(rid).metric_by_name("gpu__time_duration.sum")
                empty = duration is None or math.isnan(duration.value())
                assert empty or any("result_tables" in entry for entry in ref["ncu_rules"]), (path.name, rid)
                refused += 1
                continue
            assert deep.from_file(got[rid]) == ref, (path.name, rid)
            answered += 1
    return answered, refused


@pytest.mark.parametrize("name", [n if n in QUICK else pytest.param(n, marks=pytest.mark.slow) for n in ALL])
def test_per_instruction_data_equals_ncu_report(report_path, name):
    answered, refused = _compare(report_path(name))
    if name in QUICK and name != "tiny_sections":  # every result of tiny_sections has a rule table (as of cache's)
        assert answered > refused


@pytest.mark.slow
def test_per_instruction_data_of_the_big_report(report_path):
    answered, _ = _compare(report_path("model_step_1010"), every=25)
    assert answered


def test_refusals_and_unknown_layouts(report_path, tmp_path):
    path = report_path("probe")
    assert set(instances.read_deep(path, {1: [], 3: ["inst_executed"]}) or {}) == {1, 3}
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"NVR\0" + b"\xff" * 64)
    assert instances.read_deep(bad, {0: []}) is None
    assert instances.read_deep(path, {99: []}) is None  # a result the file does not hold


def scrubbed(result) -> str:
    return json.dumps(dict(result.to_dict(), created="X"), sort_keys=True, default=str)


@pytest.mark.parametrize("name", ["torch_train", "torch_scatter"])
def test_analysis_is_the_same_with_the_results_not_opened(monkeypatch, report_path, name):
    """The training step's 20 ATen kernels (no lines, none disassembled) and torch_scatter's: read from the file, not
    opened; the result is the one of opening them through ncu_report."""
    path = report_path(name)
    from_file: list[int] = []
    light = load.ReportReader._light_details
    monkeypatch.setattr(
        load.ReportReader, "_light_details", lambda self, w: (got := light(self, w)) and from_file.extend(got) or got
    )
    fast = scrubbed(analyze(path))
    assert from_file
    monkeypatch.setattr(load.ReportReader, "_light_details", lambda self, w: {})
    assert scrubbed(analyze(path)) == fast
