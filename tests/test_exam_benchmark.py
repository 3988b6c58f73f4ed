"""benchmarks/exam.py, the exam corpus's scorer, on a real report (fixtures/flaws.ncu-rep.xz) read by the real
library through the command line, with a small labels file: right, wrong, not found and absent reports are told
apart, a regex label picks the longest matching kernel, and the misses show the tool's finding beside the label."""

import json

import exam  # benchmarks/ is on sys.path (tests/conftest.py)

from tests.conftest import FIXTURES, ROOT

LABELS = """
[[kernel]]
corpus = "planted"
report = "flaws"
kernel = "transpose_naive"
expected = ["MEM001"]
mechanism = "column reads across the warp"

[[kernel]]
corpus = "planted"
report = "flaws"
kernel = "hist_global_atomic"
expected = ["LCH001"]
mechanism = "a deliberately wrong label"

[[kernel]]
corpus = "planted"
report = "flaws"
kernel = "^matmul_(naive|tiled)$"
match = "regex"
expected = ["TIL001"]
mechanism = "one output per thread, operands from global memory"

[[kernel]]
corpus = "planted"
report = "flaws"
kernel = "no_such_kernel"
expected = ["ROOF001"]
mechanism = "not in the report"

[[kernel]]
corpus = "other"
report = "absent_report"
kernel = "k"
expected = ["ROOF001"]
mechanism = "no file"
"""


def test_base_name_drops_return_type_templates_and_parameters():
    assert exam.base_name("void matmul_backward_bias_kernel9<float, true>(float *, const int *)") == (
        "matmul_backward_bias_kernel9"
    )
    assert exam.base_name("void ns::f<a<b>, 3>(int)") == "ns::f"
    assert exam.base_name("add_kernel") == "add_kernel"


def test_exam_scores_every_labelled_kernel_of_a_real_report(tmp_path, capsys):
    labels = tmp_path / "labels.toml"
    labels.write_text(LABELS)
    out_json = tmp_path / "scores.json"
    assert exam.main([str(FIXTURES), "--labels", str(labels), "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    scores = {(s["report"], s["kernel"]): s for s in json.loads(out_json.read_text())}
    assert scores[("flaws", "transpose_naive")]["verdict"] == "right"
    assert scores[("flaws", "transpose_naive")]["first"] == "MEM001"
    assert scores[("flaws", "hist_global_atomic")]["verdict"] == "wrong"
    assert scores[("flaws", "hist_global_atomic")]["first"] == "ATM001"
    assert scores[("flaws", "^matmul_(naive|tiled)$")]["verdict"] == "right"  # matmul_naive, the longer, says TIL001
    assert scores[("flaws", "no_such_kernel")]["verdict"] == "not found"
    assert scores[("absent_report", "k")]["verdict"] == "no report"
    assert all(s["rc"] == 0 for s in scores.values() if s["report"] == "flaws")
    # the per-corpus table, and the wrong label's line with the tool's finding beside it
    row = next(line.split() for line in text.splitlines() if line.startswith("planted "))
    assert row[1:9] == ["4", "4", "2", "1", "0", "1", "0", "50%"]
    miss = next(line for line in text.splitlines() if "hist_global_atomic" in line)
    assert "LCH001" in miss and "ATM001:" in miss
    assert "reports not in the folder (1): absent_report" in text


def test_exam_refuses_a_missing_folder_with_one_line(tmp_path, capsys):
    assert exam.main([str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a folder" in err


def test_committed_labels_name_rule_codes_that_exist():
    codes = {p.stem for p in (ROOT / "docs" / "rules").glob("*.md")} | {"NONE"}
    labels = exam.load_labels()
    assert len(labels) >= 30
    for lab in labels:
        assert lab["expected"] and set(lab["expected"]) <= codes, lab
        assert lab["corpus"] in ("llm.c", "triton") and lab["mechanism"], lab
