"""`ncuadvisor diff` on real report pairs of the workloads (pipeline_v0 → v1 fixes a kernel, v1 → v2 regresses one,
v0 → v0_rerun is the same program twice), the noise threshold, matching, the renderers and the CI gate."""

from __future__ import annotations

import copy
import json
import re
import shutil
from html.parser import HTMLParser

import pytest
from rich.console import Console

from ncuadvisor.comparison import (
    DEFAULT_THRESHOLD,
    MIN_CHANGE_NS,
    classify,
    diff_results,
    gate,
    parse_threshold,
)
from ncuadvisor.errors import InputError
from ncuadvisor.load.processes import write_sidecar
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.render import diff_render
from ncuadvisor.render.markdown import GITHUB_LIMIT
from tests.conftest import FIXTURES
from tests.golden import check_golden, run_cli, scrub_diff
from tests.synthetic import typed_diff


# the renderers take the typed diff; the tests build and change its dict (the JSON contract), read back as `render`
# reads a saved diff
def render_diff_html(diff, *args, **kw):
    return diff_render.render_diff_html(typed_diff(diff), *args, **kw)


def render_diff_json(diff, *args, **kw):
    return diff_render.render_diff_json(typed_diff(diff), *args, **kw)


def render_diff_markdown(diff, *args, **kw):
    return diff_render.render_diff_markdown(typed_diff(diff), *args, **kw)


def render_diff_terminal(diff, *args, **kw):
    return diff_render.render_diff_terminal(typed_diff(diff), *args, **kw)


V0, V0R, V1, V2 = "pipeline_v0", "pipeline_v0_rerun", "pipeline_v1", "pipeline_v2"


def xz(name: str) -> str:
    return str(FIXTURES / f"{name}.ncu-rep.xz")


@pytest.fixture(scope="module")
def diff_of(analyzed):
    cache: dict = {}

    def get(before: str, after: str, **kw) -> dict:
        key = (before, after, tuple(sorted(kw.items())))
        if key not in cache:
            cache[key] = diff_results(analyzed(before), analyzed(after), **kw)
        return cache[key]

    return get


def entry(diff: dict, name: str) -> dict:
    found = [k for k in diff["kernels"] if k["name"] == name]
    assert len(found) == 1, [k["name"] for k in diff["kernels"]]
    return found[0]


def rules(findings: list[dict]) -> list[str]:
    return [f["rule"] for f in findings]


# -- the real pairs ----------------------------------------------------------------------------------------------


def test_fix_shows_transpose_faster_and_its_bank_conflicts_resolved(diff_of):
    d = diff_of(V0, V1)
    k = entry(d, "transpose_tile")
    assert k["status"] == "improved" and k["match"] == "identity" and k["match_note"] is None
    assert k["before"]["duration_ns"] == pytest.approx(328192) and k["after"]["duration_ns"] == pytest.approx(142848)
    assert k["change"] == pytest.approx(142848 / 328192 - 1)
    assert rules(k["findings"]["resolved"]) == ["MEM002"] and k["findings"]["new"] == []
    assert k["before"]["headroom"] > 2.5 and k["after"]["headroom"] < 1.5 and k["after"]["at_roofline"]
    assert k["before"]["bound"] == k["after"]["bound"] == "memory"
    # the other two kernels did not change: within the noise threshold
    assert entry(d, "scale_add")["status"] == entry(d, "normalize_rows")["status"] == "unchanged"
    assert d["verdict"] == "improved" and d["total"]["status"] == "improved"
    assert d["summary"]["resolved_findings"] == 1 and d["summary"]["new_findings"] == 0
    assert gate(d, "regression") == [] and gate(d, "findings") == []
    assert d["kernels"][0]["name"] == "transpose_tile"  # the largest change first


def test_regression_is_found_and_fails_the_gate(diff_of):
    d = diff_of(V1, V2)
    k = entry(d, "scale_add")
    assert k["status"] == "regressed" and k["change"] > 4
    assert rules(k["findings"]["new"]) == ["MEM001"]
    assert k["findings"]["new"][0]["location"].endswith("pipeline.cu:68")
    assert d["verdict"] == "regressed" and d["total"]["status"] == "regressed"
    reasons = gate(d, "regression")
    assert any(r.startswith("scale_add +430") for r in reasons), reasons
    assert gate(d, "findings") == ["new MEM001 in scale_add: " + k["findings"]["new"][0]["title"]]
    assert d["first_fix"]["rule"] == "MEM001" and d["first_fix"]["kernel"] == "scale_add"


def test_rerun_of_the_same_program_is_noise(diff_of):
    d = diff_of(V0, V0R)
    assert [k["status"] for k in d["kernels"]] == ["unchanged"] * 3
    assert d["verdict"] == "unchanged" and gate(d, "regression") == [] and gate(d, "findings") == []
    assert rules(entry(d, "transpose_tile")["findings"]["unchanged"]) == ["MEM002"]
    # the measured run-to-run spread the default threshold is derived from (module docstring, docs/ci.md)
    spreads = {k["name"]: abs(k["change"]) for k in d["kernels"]}
    assert spreads == pytest.approx({"transpose_tile": 0.0026, "scale_add": 0.0035, "normalize_rows": 0.0020}, abs=5e-4)
    assert DEFAULT_THRESHOLD >= 10 * max(spreads.values())


def test_unchanged_kernels_across_versions_stay_within_the_documented_spread(diff_of):
    spread = [
        abs(k["change"])
        for pair in ((V0, V1), (V1, V2), (V0, V0R))
        for k in diff_of(*pair)["kernels"]
        if k["status"] == "unchanged"
    ]
    assert len(spread) == 7 and max(spread) < 0.0065 < DEFAULT_THRESHOLD / 5


def test_a_tiny_threshold_turns_noise_into_a_regression(diff_of):
    d = diff_of(V0, V0R, threshold=0.001, min_change_ns=0.0)
    assert entry(d, "scale_add")["status"] == "regressed"  # +0.35%
    assert d["noise"] == {"threshold": 0.001, "min_change_ns": 0.0, "threshold_source": "option"}
    assert gate(d, "regression")


@pytest.mark.slow  # ~10 s: many results rendered; `.ci/run` runs the slow tests too
def test_different_programs_are_all_added_and_removed(diff_of, analyzed):
    d = diff_of("flaws", V0)
    statuses = {k["status"] for k in d["kernels"]}
    assert statuses == {"added", "removed"}
    assert d["summary"]["removed"] == len(analyzed("flaws")["kernels"]) and d["summary"]["added"] == 3
    for k in d["kernels"]:
        assert k["match"] is None and k["change"] is None
        assert (k["before"] is None) == (k["status"] == "added") and (k["after"] is None) == (k["status"] == "removed")
    # an added kernel's findings are new, a removed kernel's resolved
    assert rules(entry(d, "transpose_tile")["findings"]["new"]) == ["MEM002"]
    assert rules(entry(d, "copy_strided")["findings"]["resolved"]) == ["MEM001"]
    assert any("same program" in w for w in d["warnings"])


# -- matching --------------------------------------------------------------------------------------------------


def test_launch_shape_change_is_matched_by_name_and_said_so(analyzed):
    before, after = analyzed(V1), copy.deepcopy(analyzed(V2))
    k = next(k for k in after["kernels"] if k["name"] == "scale_add")
    k["grid"] = "(131072, 1, 1)"
    k["block"] = "(512, 1, 1)"
    d = diff_results(before, after)
    e = entry(d, "scale_add")
    assert e["match"] == "name" and e["status"] == "regressed"
    assert "(262144, 1, 1)" in e["match_note"] and "(131072, 1, 1)" in e["match_note"]
    assert "by name" in e["match_note"] and d["summary"]["name_matches"] == 1
    assert any("matched by name alone" in w for w in d["warnings"])
    assert "*(by name)*" in render_diff_markdown(d)


def test_several_shapes_of_one_name_are_compared_as_one(analyzed):
    before, after = analyzed(V1), copy.deepcopy(analyzed(V1))
    k = next(k for k in after["kernels"] if k["name"] == "scale_add")
    twin = copy.deepcopy(k)
    k["grid"], twin["grid"] = "(1, 1, 1)", "(2, 1, 1)"
    twin["id"] = "k99"
    after["kernels"].append(twin)
    e = entry(diff_results(before, after), "scale_add")
    assert e["match"] == "name" and e["after"]["launches"] == 2
    assert e["after"]["duration_ns"] == pytest.approx(2 * k["duration_ns"]) and len(e["after"]["shapes"]) == 2


def test_never_matched_by_position(analyzed):
    before = analyzed(V1)
    after = copy.deepcopy(before)
    after["kernels"].reverse()  # order means nothing
    d = diff_results(before, after)
    assert all(k["status"] == "unchanged" and k["match"] == "identity" for k in d["kernels"])
    other = copy.deepcopy(before)
    k0 = other["kernels"][0]
    k0["demangled"] = k0["name"] = "something_else(int)"
    k0["grid"], k0["roofline"]["flops"] = "(1, 1, 1)", 3 * k0["roofline"]["flops"] + 1e9
    k0["roofline"]["compulsory_bytes"] *= 3
    d = diff_results(before, other)  # same place in the list, other kernel (other work): removed + added, not matched
    assert sorted(k["status"] for k in d["kernels"]) == ["added", "removed", "unchanged", "unchanged"]
    renamed = copy.deepcopy(before)
    renamed["kernels"][0]["demangled"] = renamed["kernels"][0]["name"] = "something_else(int)"
    d = diff_results(before, renamed)  # the same work in the same place under a new name: matched by role
    assert sorted(str(k["match"]) for k in d["kernels"]) == ["identity", "identity", "role"]


# -- several processes ------------------------------------------------------------------------------------------
# fixtures/multiproc.ncu-rep.xz (one H200: pid 18918 = rank 0, pid 18919 = rank 1) and multigpu.ncu-rep.xz (the same
# program on two H200s: pid 786 = rank 0 on GPU 0, pid 787 = rank 1 on GPU 1; fixtures/README.md). Each rank runs
# scale_add ×4, rank 0 copy_strided_rank, rank 1 copy_vec4_rank.
MP, MG = "multiproc", "multigpu"


def rows(diff: dict) -> dict[tuple[str, str], dict]:
    """(process label, kernel name) -> entry; fails when two entries share one."""
    out = {(k["process"]["label"], k["name"]): k for k in diff["kernels"]}
    assert len(out) == len(diff["kernels"])
    return out


def with_ranks(report_path, path, name: str, rank_of_pid: dict[int, int]) -> dict:
    """The analysis of a copy (at path) of a fixture with ranks recorded beside it, as `ncuadvisor profile` does."""
    shutil.copyfile(report_path(name), path)
    write_sidecar(path, {pid: {"rank": r, "local_rank": r, "world_size": 2} for pid, r in rank_of_pid.items()})
    return analyze(path).to_dict()


def test_multiprocess_report_against_itself_has_one_unchanged_row_per_process_and_kernel(diff_of):
    d = diff_of(MP, MP)
    assert d["process_match"] == "per-process"
    r = rows(d)
    assert sorted(r) == [
        ("process 0", "copy_strided_rank"),
        ("process 0", "scale_add"),
        ("process 1", "copy_vec4_rank"),
        ("process 1", "scale_add"),
    ]
    for k in r.values():
        assert k["status"] == "unchanged" and k["change_ns"] == 0 and k["match"] == "identity"
        assert k["match_note"] is None  # one result group per side: nothing summed
        assert k["process"]["before"] == k["process"]["after"]
    # each process's own scale_add time, not the sum over both (471488 ns)
    assert r[("process 0", "scale_add")]["before"]["duration_ns"] == pytest.approx(234816)
    assert r[("process 1", "scale_add")]["before"]["duration_ns"] == pytest.approx(236672)
    assert r[("process 0", "scale_add")]["before"]["launches"] == 4
    assert r[("process 0", "copy_strided_rank")]["process"]["before"] == {"pid": 18918}
    assert r[("process 1", "copy_vec4_rank")]["process"]["before"] == {"pid": 18919}
    assert d["summary"]["unchanged"] == 4 and d["verdict"] == "unchanged"
    assert [w for w in d["warnings"] if "process" in w] == [
        "ranks not recorded for before and after (`ncuadvisor profile` records them): processes matched by start "
        "order, lowest pid first (process 0, 1, …)"
    ]


def test_one_gpu_against_two_gpus_matches_each_rank(diff_of, analyzed):
    # rank 1 (pid 787) profiled first on the 2-GPU machine: the order of first results is not the rank order
    assert [p["pid"] for p in analyzed(MG)["report"]["processes"]] == [787, 786]
    d = diff_of(MP, MG)
    r = rows(d)
    assert d["summary"]["added"] == d["summary"]["removed"] == 0 and len(r) == 4
    strided = r[("process 0", "copy_strided_rank")]
    assert strided["process"]["before"] == {"pid": 18918} and strided["process"]["after"] == {"pid": 786}
    assert strided["before"]["duration_ns"] == pytest.approx(290464)
    assert strided["after"]["duration_ns"] == pytest.approx(290656)
    assert rules(strided["findings"]["unchanged"]) == ["MEM001"]
    vec4 = r[("process 1", "copy_vec4_rank")]
    assert vec4["process"]["after"] == {"pid": 787} and vec4["change_ns"] == pytest.approx(30720 - 31168)
    scale1 = r[("process 1", "scale_add")]
    assert (scale1["process"]["before"]["pid"], scale1["process"]["after"]["pid"]) == (18919, 787)
    assert scale1["change_ns"] == pytest.approx(234784 - 236672)
    assert all(k["status"] == "unchanged" for k in r.values()) and d["verdict"] == "unchanged"
    # a threshold below the spread: the gate names each kernel with its process
    tight = diff_of(MP, MG, threshold=0.0001, min_change_ns=0.0)
    assert gate(tight, "regression") == [
        "copy_strided_rank (process 0) +0.1% (290.5 µs → 290.7 µs)",
        "scale_add (process 0) +0.1% (234.8 µs → 234.9 µs)",
    ]


def test_recorded_ranks_are_the_key_and_the_label(report_path, tmp_path):
    before = with_ranks(report_path, tmp_path / "mp.ncu-rep", MP, {18918: 0, 18919: 1})
    after = with_ranks(report_path, tmp_path / "mg.ncu-rep", MG, {786: 0, 787: 1})
    d = diff_results(before, after)
    r = rows(d)
    assert sorted(r) == [
        ("rank 0", "copy_strided_rank"),
        ("rank 0", "scale_add"),
        ("rank 1", "copy_vec4_rank"),
        ("rank 1", "scale_add"),
    ]
    assert r[("rank 0", "copy_strided_rank")]["process"] == {
        "key": 0,
        "label": "rank 0",
        "before": {"pid": 18918, "rank": 0},
        "after": {"pid": 786, "rank": 0},
    }
    assert not any("process" in w for w in d["warnings"])
    # ranks win over the start order: recorded the other way round, pid 786's strided copy is rank 1's
    swapped = with_ranks(report_path, tmp_path / "mg_swapped.ncu-rep", MG, {786: 1, 787: 0})
    r = rows(diff_results(before, swapped))
    assert r[("rank 0", "copy_strided_rank")]["status"] == "removed"
    assert r[("rank 1", "copy_strided_rank")]["status"] == "added"
    assert r[("rank 0", "scale_add")]["after"]["duration_ns"] == pytest.approx(234784)  # pid 787's


def test_one_process_against_several_sums_each_kernel_and_says_so(analyzed):
    # the same program seen as one process: what an older report, or one without per-process data, gives
    single = copy.deepcopy(analyzed(MP))
    single["report"]["processes"] = []
    for k in single["kernels"]:
        k.pop("process")
        k.pop("process_label")
    for before, after, counts in (
        (single, analyzed(MG), "1 process before, 2 after"),
        (analyzed(MG), single, "2 processes before, 1 after"),
    ):
        d = diff_results(before, after)
        assert d["process_match"] == "summed" and len(d["kernels"]) == 3
        assert all("process" not in k for k in d["kernels"])
        scale = entry(d, "scale_add")
        mp_ns, mg_ns = 234816 + 236672, 234944 + 234784
        assert {scale["before"]["duration_ns"], scale["after"]["duration_ns"]} == {mp_ns, mg_ns}
        assert scale["before"]["launches"] == scale["after"]["launches"] == 8
        said = [w for w in d["warnings"] if "process" in w]
        assert said == [f"{counts}: each kernel's time is summed over all processes, not compared per rank"]
        assert render_diff_markdown(d).count("summed over all processes") == 1


def test_single_process_diffs_have_no_process_fields(diff_of):
    d = diff_of(V0, V1)
    assert d["process_match"] is None and all("process" not in k for k in d["kernels"])


def test_process_labels_are_rendered(diff_of):
    d = diff_of(MP, MG)
    md_text = render_diff_markdown(diff_of(MP, MG, threshold=0.0001, min_change_ns=0.0))  # changes get details
    assert "| <code>copy\\_strided\\_rank</code> · process 0 | 290.5 µs | 290.7 µs |" in md_text
    assert "| Process | pid 18918 | pid 786 |" in md_text
    assert "<summary><b>scale_add</b> · process 1 · faster −0.8%" in md_text
    page = render_diff_html(d)
    assert "copy_strided_rank</code> · process 0</td>" in page
    assert (
        '<tr><td class="row-head">Process</td><td class="num" data-label="Before">pid 18919</td><td class="num" data-label="After">pid 787</td></tr>'
        in page
    )
    console = Console(record=True, width=160)
    render_diff_terminal(d, console=console)
    out = console.export_text()
    assert "copy_vec4_rank · process 1" in out and "scale_add · process 0" in out


@pytest.mark.slow
def test_cli_diff_of_two_multiprocess_reports():
    p = run_cli("diff", xz(MP), xz(MG), "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["process_match"] == "per-process"
    assert sorted((k["process"]["label"], k["name"], k["status"]) for k in d["kernels"]) == [
        ("process 0", "copy_strided_rank", "unchanged"),
        ("process 0", "scale_add", "unchanged"),
        ("process 1", "copy_vec4_rank", "unchanged"),
        ("process 1", "scale_add", "unchanged"),
    ]


# -- threshold ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [("5%", 0.05), ("2.5%", 0.025), ("0.05", 0.05), (" 10 % ", 0.10), ("0", 0.0), (None, DEFAULT_THRESHOLD)],
)
def test_parse_threshold(text, value):
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "-1%", "5%%", "2000%"])
def test_parse_threshold_refuses(text):
    with pytest.raises(InputError):
        parse_threshold(text)


def test_classify_uses_the_larger_of_threshold_and_absolute_floor():
    assert classify(100_000, 104_000, 0.05, MIN_CHANGE_NS) == "unchanged"
    assert classify(100_000, 106_000, 0.05, MIN_CHANGE_NS) == "regressed"
    assert classify(100_000, 94_000, 0.05, MIN_CHANGE_NS) == "improved"
    assert classify(2_300, 2_750, 0.05, MIN_CHANGE_NS) == "unchanged"  # a 2.3 µs launch jitters by ±0.45 µs
    assert classify(None, 5, 0.05, 0) == "added" and classify(5, None, 0.05, 0) == "removed"


# -- the diff dict and its renderers -----------------------------------------------------------------------------


def test_diff_is_versioned_json(diff_of):
    d = diff_of(V1, V2)
    text = render_diff_json(d)
    back = json.loads(text)
    assert back["schema_version"] == 1 and back["kind"] == "diff"
    assert back["noise"]["threshold"] == DEFAULT_THRESHOLD and back["noise"]["threshold_source"] == "default"
    assert set(back) >= {"before", "after", "total", "kernels", "summary", "verdict", "program_findings", "warnings"}
    json.dumps(d, allow_nan=False)


@pytest.mark.parametrize("pair, golden", [((V0, V1), "diff_v0_v1.md"), ((V1, V2), "diff_v1_v2.md")])
def test_diff_markdown_golden(diff_of, pair, golden):
    check_golden(golden, render_diff_markdown(scrub_diff(diff_of(*pair))))


def test_diff_markdown_headline_and_tables(diff_of):
    text = render_diff_markdown(diff_of(V1, V2))
    assert text.startswith("## ncuadvisor diff · pipeline\\_v1.ncu-rep → pipeline\\_v2.ncu-rep")
    assert "**❌ Regression**" in text and "<code>scale\\_add</code> +430.7%" in text
    assert "| Kernel | Before | After | Change | Status | Bound | Headroom | Findings |" in text
    assert "First fix now" in text and text.count("<details>") == text.count("</details>") == 1


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.bad: list[str] = []
        self.script = False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.script = True
        if tag not in ("meta", "br", "hr", "img", "input", "link"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.bad.append(tag)
        else:
            self.stack.pop()


def hostile(diff: dict) -> dict:
    d = copy.deepcopy(diff)
    evil = "evil|kernel`<script>alert(1)</script>` **x** _y_ [z](http://a) &amp; ::"
    for k in d["kernels"]:
        k["name"] = k["demangled"] = evil
        for fs in k["findings"].values():
            for f in fs:
                f["title"] = f["fix"] = evil
    d["before"]["name"] = d["after"]["name"] = evil
    d["warnings"] = [evil]
    return d


def test_diff_markdown_escapes_hostile_names(diff_of):
    text = render_diff_markdown(hostile(diff_of(V1, V2)))
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "evil\\|kernel\\`" in text
    for line in text.splitlines():
        if line.startswith("| ") and "Kernel" not in line and not line.startswith("|:"):
            assert len(re.findall(r"(?<!\\)\|", line)) in (9, 4), line  # 8 or 3 columns: no stray pipes


@pytest.mark.slow  # ~10 s: many results rendered; `.ci/run` runs the slow tests too
def test_diff_markdown_stays_under_githubs_limit(diff_of):
    d = copy.deepcopy(diff_of("flaws", V0))
    many = []
    for i in range(60):
        for k in d["kernels"]:
            k2 = copy.deepcopy(k)
            params = "const float *, " * 20
            k2["name"] = k2["demangled"] = f"void ns{i}::kernel_{k['name']}<float, {i}>({params}int)"
            many.append(k2)
    d["kernels"] = many  # 2040 kernels
    text = render_diff_markdown(d)
    assert len(text) <= GITHUB_LIMIT < 65536
    assert "left out" in text and text.count("<details>") == text.count("</details>")
    small = render_diff_markdown(d, max_chars=3000)
    assert len(small) <= 3000 and "left out" in small


def test_diff_html_is_self_contained_and_escaped(diff_of):
    page = render_diff_html(hostile(diff_of(V1, V2)))
    assert page.lstrip().lower().startswith("<!doctype html") and "<script>" not in page
    assert "http" not in page.replace("http://a", "")  # no external resources
    parser = _Tags()
    parser.feed(page)
    assert not parser.bad and parser.stack == [] and not parser.script
    page = render_diff_html(diff_of(V0, V1))
    assert "transpose_tile" in page and "resolved" in page and "MEM002" in page


def test_diff_terminal(diff_of):
    console = Console(record=True, width=160)
    render_diff_terminal(diff_of(V1, V2), console=console)
    out = console.export_text()
    assert "Regression" in out and "scale_add" in out and "new MEM001" in out and "+430.7%" in out


def test_renderers_survive_an_empty_diff(analyzed):
    empty = {"kernels": [], "report": {"name": "x", "total_duration_ns": 0}}
    d = diff_results(empty, empty)
    assert d["verdict"] == "unchanged" and d["kernels"] == []
    assert "No significant change" in render_diff_markdown(d)
    render_diff_html(d)
    render_diff_terminal(d, console=Console(record=True))


# -- the command line --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_regression_fails_the_gate_with_exit_1():
    p = run_cli("diff", xz(V1), xz(V2), "--fail-on", "regression")
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--fail-on regression failed" in lines[0] and "scale_add" in lines[0]
    assert "Regression" in p.stdout  # the terminal summary still printed (no -o)


@pytest.mark.slow
def test_cli_noise_passes_the_gate():
    p = run_cli("diff", xz(V0), xz(V0R), "--fail-on", "regression")
    assert p.returncode == 0, p.stderr
    assert "No significant change" in p.stdout and p.stderr == ""


@pytest.mark.slow
def test_cli_fix_passes_both_gates_and_new_findings_fail():
    assert run_cli("diff", xz(V0), xz(V1), "--fail-on", "findings", "-q").returncode == 0
    p = run_cli("diff", xz(V1), xz(V2), "--fail-on", "findings", "--threshold", "1000%", "-q")
    assert p.returncode == 1 and "new MEM001 in scale_add" in p.stderr
    p = run_cli("diff", xz(V1), xz(V2), "--fail-on", "regression", "--threshold", "1000%", "-q")
    assert p.returncode == 0, p.stderr  # a 5.3× kernel is 'unchanged' under a 1000% threshold


@pytest.mark.slow
@pytest.mark.parametrize("ext", ["md", "html", "json"])
def test_cli_writes_the_format_of_the_extension(tmp_path, ext):
    out = tmp_path / f"diff.{ext}"
    p = run_cli("diff", xz(V0), xz(V1), "-o", out, "-q")
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    if ext == "json":
        assert json.loads(text)["kind"] == "diff"
    elif ext == "html":
        assert text.lstrip().lower().startswith("<!doctype html")
    else:
        assert text.startswith("## ncuadvisor diff")
    p = run_cli("diff", xz(V0), xz(V1), "-o", out)
    assert p.returncode == 2 and "already exists" in p.stderr


@pytest.mark.slow
def test_cli_json_to_stdout_and_saved_results_as_inputs(tmp_path):
    p = run_cli("diff", xz(V1), xz(V2), "--format", "json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["verdict"] == "regressed"
    for name in (V1, V2):
        q = run_cli("report", xz(name), "-o", tmp_path / f"{name}.json", "-q")
        assert q.returncode == 0, q.stderr
    p = run_cli("diff", tmp_path / f"{V1}.json", tmp_path / f"{V2}.json", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert [k["status"] for k in json.loads(p.stdout)["kernels"]] == [k["status"] for k in d["kernels"]]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (("missing.ncu-rep", xz(V0)), "no such file"),
        ((str(FIXTURES / "README.md"), xz(V0)), "not an Nsight Compute report"),
        ((xz(V0), str(FIXTURES)), "is a directory"),
        ((xz(V0), xz(V1), "--threshold", "five"), "--threshold"),
        ((xz(V0), xz(V1), "-o", "diff.sarif"), "no SARIF form"),
        ((xz(V0), xz(V1), "-o", "diff.txt"), "cannot tell the format"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path, args, message):
    p = run_cli("diff", *args, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuadvisor: error: ") and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr


# -- captures of different lengths ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_captures_of_different_lengths_are_compared_per_launch(analyzed):
    """The same binary captured for 314 launches (2026-11-29) and for 1,010 (2026-11-30): every kernel runs ~3.2× as
    often in the longer capture. Compared on totals, all 13 kernels 'regressed' by +215..+353%; per launch they are
    within 0.6-2.7% (the run-to-run spread over two captures, under the 5% threshold)."""
    before, after = analyzed("model_step_315"), analyzed("model_step_1010")
    d = diff_results(before, after)
    assert d["comparison"]["mode"] == "per-launch"
    assert d["comparison"]["launch_scale"] == pytest.approx(1010 / 314)
    assert [k["status"] for k in d["kernels"]] == ["unchanged"] * 13
    assert all(abs(k["change"]) < 0.03 and "compared per launch" in k["launches_note"] for k in d["kernels"])
    assert d["total"]["status"] == "unchanged" and abs(d["total"]["change"]) < 0.03
    assert d["verdict"] == "unchanged" and gate(d, "regression") == []
    assert any("different lengths of the same program" in w for w in d["warnings"])
    gemm = [k for k in d["kernels"] if k["name"] == "gemm_tiled"]
    assert len(gemm) == 6 and len({k["after"]["grid"] for k in gemm}) == 6
    out_md = render_diff_markdown(d)
    assert "per result: 3.22× the results" in out_md
    assert "<code>gemm\\_tiled</code> · grid (8, 8, 1)" in out_md  # six groups of one name, told apart
    console = Console(record=True, width=200)
    render_diff_terminal(d, console=console)
    out = console.export_text()
    assert "gemm_tiled · grid (8, 8, 1)" in out
    assert d["first_fix"]["kernel"] == "gemm_tiled" and d["first_fix"]["kernel_shape"] == "grid (8, 8, 1)"
    assert "First fix now: gemm_tiled · grid (8, 8, 1): " in out


def test_a_kernel_launched_more_often_is_still_a_regression(analyzed):
    """Per-launch comparison is only for captures whose every kernel scales alike: in a capture twice as long where
    one kernel runs four times as often (a change that launches it twice per step), that kernel is compared on its
    total time and regresses, and so do the rest of the comparisons on totals."""
    before = analyzed("model_step_315")
    after = copy.deepcopy(before)
    for k in after["kernels"]:
        k["launches"] *= 2
        k["duration_ns"] *= 2
    k = after["kernels"][4]  # layernorm_fwd, 46 launches before
    k["launches"] *= 2
    k["duration_ns"] *= 2
    after["report"]["results"] = 2 * before["report"]["results"] + k["launches"] // 2
    after["report"]["total_duration_ns"] = sum(x["duration_ns"] for x in after["kernels"])
    d = diff_results(before, after)
    assert d["comparison"]["mode"] == "total"
    e = next(e for e in d["kernels"] if e["name"] == k["name"] and e["after"]["grid"] == k["grid"])
    assert e["status"] == "regressed" and e["change"] == pytest.approx(3.0)
    assert "totals over each side's launches" in e["launches_note"] and "(+0.0%)" in e["launches_note"]
    assert gate(d, "regression")
    assert any("compared on their total time" in w for w in d["warnings"])


def test_small_captures_are_compared_on_totals(analyzed):
    """Three results against four: one launch more cannot tell a longer capture from a changed program."""
    before = analyzed(V1)
    after = copy.deepcopy(before)
    k = next(k for k in after["kernels"] if k["name"] == "scale_add")
    k["launches"] *= 2
    k["duration_ns"] *= 2
    after["report"]["results"] = before["report"]["results"] + 1
    d = diff_results(before, after)
    assert d["comparison"]["mode"] == "total"
    assert next(e for e in d["kernels"] if e["name"] == "scale_add")["status"] == "regressed"
