"""A result's sections and NCU's rule results decoded from the report file (ncuadvisor/reportfile/ncurules.py, read by
reportfile/instances.py) against ncu_report, on real reports: every result it answers for holds exactly what
ncu_report gives; the results whose instructions nobody reads are then never opened, and the analysis is the same."""

import json

import pytest

from ncuadvisor.load import reader as load
from ncuadvisor.load.native import import_ncu_report
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.reportfile import instances

# flaws: CUDA kernels, NCU messages of every kind and rule tables; torch_scatter: a "No Samples" warning (the
# file's kind 2); torch_compile and torch_eager: Triton, ATen and cuBLAS kernels
FIXTURES = ["flaws", "torch_scatter", "torch_compile", "torch_eager", "tiny_sections"]


def per_ncu_report(path) -> list[dict]:
    ctx = import_ncu_report().load_report(str(path))
    rng = ctx.range_by_idx(0)
    out = []
    for a in range(rng.num_actions()):
        action = rng.action_by_idx(a)
        out.append(
            {
                "sections": [s.identifier() for s in action.sections()],
                "ncu_rules": [dict(x) for x in action.rule_results_as_dicts()],
                "unreadable": not action.name(),
            }
        )
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_rule_results_equal_ncu_report(report_path, name):
    path = report_path(name)
    truth = per_ncu_report(path)
    got = instances.read_deep(path, dict.fromkeys(range(len(truth)), []))
    assert got is not None and set(got) == set(range(len(truth)))
    got = {rid: data and {k: v for k, v in data.items() if k != "per_instruction"} for rid, data in got.items()}
    answered = [rid for rid, data in got.items() if data is not None]
    for rid in answered:
        assert got[rid] == truth[rid], f"result {rid}"
    # what it leaves to ncu_report: the results with a rule table (12), which it does not read
    for rid in set(got) - set(answered):
        assert any("result_tables" in entry for entry in truth[rid]["ncu_rules"]), f"result {rid}"
    if name != "tiny_sections":  # every result of tiny_sections has a table
        assert answered


def test_only_the_asked_results_and_not_a_report(report_path, tmp_path):
    path = report_path("torch_eager")
    assert set(instances.read_deep(path, {3: [], 7: []}) or {}) == {3, 7}
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"NVR\0" + b"\xff" * 64)
    assert instances.read_deep(bad, {0: []}) is None


def scrubbed(result) -> str:
    return json.dumps(dict(result.to_dict(), created="X"), sort_keys=True, default=str)


def test_analysis_is_the_same_with_the_results_not_opened(monkeypatch, report_path):
    """torch_compile's cuBLAS and ATen kernels without lines whose instructions no rule reads: read from the file,
    not opened; the result is the one of opening them through ncu_report."""
    path = report_path("torch_compile")
    monkeypatch.setattr(load, "DETAIL_IN_PROCESS_MAX", 1000)  # every deep read in this process, where it is seen
    deep_read: list[int] = []
    deep_and_sass = load.deep.deep_and_sass
    monkeypatch.setattr(load.deep, "deep_and_sass", lambda rid, *a: deep_read.append(rid) or deep_and_sass(rid, *a))
    from_file: list[int] = []
    light = load.ReportReader._light_details
    monkeypatch.setattr(
        load.ReportReader,
        "_light_details",
        lambda self, ids: (got := light(self, ids)) and from_file.extend(got) or got,
    )
    fast = scrubbed(analyze(path))
    assert from_file and deep_read and not set(from_file) & set(deep_read)
    monkeypatch.setattr(load.ReportReader, "_light_details", lambda self, ids: {})
    assert scrubbed(analyze(path)) == fast
