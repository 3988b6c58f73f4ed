"""The view layer between a result and the renderers: defaults filled once, templates that fail on a misspelt field,
renderers that read views and share no private helpers, HTML pages on one base template."""

from __future__ import annotations

import ast
import copy
import io
import re
import shutil
from pathlib import Path

import jinja2
import pytest
from rich.console import Console

import ncuadvisor.render as render_pkg
from ncuadvisor.comparison import compare
from ncuadvisor.comparison.types import DiffResult
from ncuadvisor.errors import InputError
from ncuadvisor.render import environment
from ncuadvisor.render.diff_render import render_diff_html, render_diff_markdown, render_diff_terminal
from ncuadvisor.render.diff_view import diff_view
from ncuadvisor.render.html import render_html
from ncuadvisor.render.markdown import render_markdown
from ncuadvisor.render.sarif import build_sarif
from ncuadvisor.render.terminal import render_terminal
from ncuadvisor.render.view import Generator, report_view
from ncuadvisor.result import Result

RENDER = Path(render_pkg.__file__).resolve().parent
RENDERERS = ("html", "markdown", "terminal", "sarif", "diff_render")
SHARED = {"ncuadvisor.render", "ncuadvisor.render.view", "ncuadvisor.render.diff_view"}
SHARED |= {"ncuadvisor.render.chart", "ncuadvisor.render.chart_zoom", "ncuadvisor.render.mdtext"}
SHARED |= {"ncuadvisor.render.fit"}  # terminal tables fitted to the width without cutting a word

# a result as a hand-edited or truncated JSON may hold it: nulls, wrong types, a kernel that is not an object
ODD_RESULT = {
    "schema_version": 1,
    "report": None,
    "generator": "x",
    "top_actions": [{"kernel": None, "scope": "kernel"}, "not an action"],
    "program_findings": [{"rule": "PRG001", "kernels": ["a", "b"], "kernel_ids": ["k0"]}],
    "kernels": [
        "not a kernel",
        {
            "id": "k1",
            "name": "k",
            "findings": [{"rule": "MEM001", "evidence": None, "source": [None, {"file": "a.cu", "line": 3}]}],
            "roofline": "none",
            "launch": None,
            "variants": [{"launch_range_ns": None, "findings": None}],
            "source_anchor": [],
            "ncu_rules": None,
        },
    ],
}

# a result of the right types with most of it left out (a test's, a hand-made one): read with every default
PARTIAL_RESULT = {
    "schema_version": 1,
    "top_actions": [{"kernel": "k", "scope": "kernel"}],
    "program_findings": [{"rule": "PRG001", "kernels": ["a", "b"], "kernel_ids": ["k0"]}],
    "kernels": [
        {},
        {
            "id": "k1",
            "name": "k",
            "findings": [{"rule": "MEM001", "source": [{"file": None, "line": None}, {"file": "a.cu", "line": 3}]}],
            "variants": [{}],
        },
    ],
}


@pytest.fixture(scope="module")
def result(typed) -> Result:
    return typed("pipeline_v2")


def test_the_typed_reader_refuses_what_the_view_no_longer_guards():
    """Wrong shapes stop at the reader (`Result.from_dict`, `load_saved`), one line naming the place; the view
    takes the typed result only."""
    with pytest.raises(InputError, match="generator: expected an object"):
        Result.from_dict(ODD_RESULT)


def test_the_view_fills_every_default_once():
    view = report_view(Result.from_dict(PARTIAL_RESULT))
    assert view.generator == Generator("ncuadvisor", "")
    assert view.report.warnings == [] and view.report.processes == [] and view.report.device.peak_flops_per_s == {}
    first, k = view.kernels
    assert (
        first.index == 1
        and first.anchor == "k0"
        and first.findings == []
        and first.first_finding is None
        and first.name == ""
    )
    assert k.anchor == "k1" and k.roofline.sol.memory_pct is None and k.launch.waves_per_sm is None
    assert [s.file for s in k.findings[0].source] == [None, "a.cu"] and k.findings[0].evidence == []
    assert k.variants[0].launch_range_ns == (None, None) and k.variants[0].findings == []
    assert k.source_anchor.file is None and k.ncu_rules == []
    assert [a.kernel for a in view.top_actions] == ["k"]
    (p,) = view.program_findings
    assert p.kernel_links == [("a", None), ("b", None)]  # ids that do not line up with the names link nothing
    d = diff_view(DiffResult.from_dict({"kernels": [{"name": "k", "after": {"duration_ns": 5}}]}))
    (e,) = d.kernels
    assert not e.before.present and e.after.present and e.findings.cell == "–" and e.process is None
    assert d.summary.regressed == 0 and d.first_fix is None and d.by_status["added"] == []


def test_every_renderer_takes_a_partial_result():
    partial = Result.from_dict(PARTIAL_RESULT)
    page = render_html(partial)
    assert page.count("<details") == page.count("</details>") and 'id="k1"' in page
    assert "<details>" in render_markdown(partial)
    buf = io.StringIO()
    render_terminal(partial, Console(file=buf, width=160))
    assert "unknown GPU" in buf.getvalue()
    log = build_sarif(partial, "/src", {"a.cu": "a.cu"})
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["MEM001"]
    partial_diff = DiffResult.from_dict({"kernels": [{"name": "k", "process": {"label": "rank 0", "before": {}}}]})
    assert "rank 0" in render_diff_html(partial_diff) and "rank 0" in render_diff_markdown(partial_diff)
    render_diff_terminal(partial_diff, Console(file=io.StringIO()))


def test_a_misspelt_field_is_an_error_not_an_empty_string(result):
    env = environment(autoescape=True)
    view = report_view(result)
    assert env.from_string("{{ r.kernels[0].shown_name }}").render(r=view) == view.kernels[0].shown_name
    with pytest.raises(jinja2.UndefinedError, match="shown_nmae"):
        env.from_string("{{ r.kernels[0].shown_nmae }}").render(r=view)
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ r.report.device.nmae or 'unknown' }}").render(r=view)  # no default hides it either


@pytest.mark.parametrize(
    "template, field",
    [
        ("report.html.j2", "k.shown_name"),
        ("report.md.j2", "k.shape_tag"),
        ("_base.html.j2", "generator.version"),
        ("_macros.md.j2", "w|md"),
        ("diff.html.j2", "k.full_name"),
        ("diff.md.j2", "k.process_label"),
    ],
)
def test_a_misspelt_field_in_a_template_fails_the_render(tmp_path, monkeypatch, typed, result, template, field):
    """Each template, copied with one field misspelt, makes its renderer raise instead of printing nothing."""
    folder = tmp_path / "templates"
    shutil.copytree(render_pkg.templates_dir(), folder)
    text = (folder / template).read_text()
    assert field in text
    name, _, rest = field.partition(".")
    typo = f"{name}.{rest}_typo" if rest else field.replace("w|", "w_typo|")
    (folder / template).write_text(text.replace(field, typo))
    monkeypatch.setattr(render_pkg, "templates_dir", lambda: folder)
    diff = compare(typed("pipeline_v1"), result)
    warned = copy.deepcopy(result)
    warned.report.warnings = ["w"]
    render = {
        "report.html.j2": lambda: render_html(result),
        "_base.html.j2": lambda: render_html(result),
        "report.md.j2": lambda: render_markdown(result),
        "_macros.md.j2": lambda: render_markdown(warned),
        "diff.html.j2": lambda: render_diff_html(diff),
        "diff.md.j2": lambda: render_diff_markdown(diff),
    }[template]
    with pytest.raises(jinja2.UndefinedError):
        render()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ncuadvisor.render"):
            out.add(node.module)
            assert not any(a.name.startswith("_") for a in node.names), (path.name, node.module)  # no private helper
    return out


@pytest.mark.parametrize("name", RENDERERS)
def test_renderers_read_views_and_share_no_helpers(name):
    """A renderer imports the package, the views and the shared chart, markdown-text and table-fitting modules, never
    another renderer."""
    assert _imports(RENDER / f"{name}.py") <= SHARED


def test_the_html_pages_share_one_base(result, typed):
    for template in ("report.html.j2", "diff.html.j2"):
        assert '{% extends "_base.html.j2" %}' in (render_pkg.templates_dir() / template).read_text()
    page = render_html(result)
    diff_page = render_diff_html(compare(typed("pipeline_v1"), result))
    base = (render_pkg.templates_dir() / "_base.html.j2").read_text()
    rule = next(line for line in base.splitlines() if line.startswith(".badge {"))
    assert page.count(rule) == diff_page.count(rule) == 1  # one stylesheet, in both
    assert page.count("<style>") == diff_page.count("<style>") == 1


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("name", ["torch_eager", "flaws"])
def test_terminal_table_fits_the_width_with_its_core_columns(typed, name, width):
    """At 80, 100 and 120 columns no line of the table is wider than the terminal and it keeps its index, name, time,
    bound and headroom (only the optional columns go). At 80 the name once took the width the dropped first-finding
    column never had, and the table overflowed: the index column shrank to nothing."""
    import io

    from rich.console import Console

    from ncuadvisor.render.terminal import render_terminal

    buf = io.StringIO()
    render_terminal(typed(name), Console(file=buf, width=width, highlight=False, color_system=None))
    lines = buf.getvalue().splitlines()
    at = next(n for n, ln in enumerate(lines) if " kernel " in ln and "headroom" in ln)
    # the table: from its header to the notes under it (piped, the prose around it does not wrap)
    end = next((n for n in range(at, len(lines)) if re.match(r"(\s*#\d|…|$)", lines[n])), len(lines))
    assert max(len(ln) for ln in lines[at - 1 : end]) <= width
    for col in ("#", "kernel", "time", "bound", "headroom"):
        assert col in lines[at], (col, lines[at])
    first_row = next(ln for ln in lines[at + 1 :] if any(c.isalnum() for c in ln))  # past the rule under the header
    assert first_row.replace("│", " ").split()[0] == "1"


def _conforms(value: object, hint: object) -> bool:
    """Whether a value is of a type hint (unions, lists, tuples, mappings, classes; an int is a float, a bool is not a
    number)."""
    import collections.abc
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is tuple:
        return isinstance(value, tuple) and len(value) == len(args) and all(map(_conforms, value, args))
    if origin in (dict, collections.abc.Mapping):
        return isinstance(value, collections.abc.Mapping) and all(
            _conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items()
        )
    if hint in (int, float):
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    return isinstance(value, origin or hint)  # type: ignore[arg-type]


def _mistyped(obj: object, where: str = "view") -> list[str]:
    """Every field of a view object (and of the view objects it holds) whose value is not of its annotated type."""
    import dataclasses
    import typing

    out: list[str] = []
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += _mistyped(v, f"{where}[{i}]")
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return out
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if not _conforms(value, hints[f.name]):
            out.append(f"{where}.{f.name}: {value!r} is not {hints[f.name]}")
        out += _mistyped(value, f"{where}.{f.name}")
    return out


@pytest.mark.parametrize("name", ["flaws", "torch_train", "pipeline_v2"])
def test_the_view_holds_the_types_it_declares(typed, name):
    # `take` fills the view from the result's records untyped: the annotations are checked against what it holds,
    # for a fresh analysis and for the same result read back from its JSON
    result = typed(name)
    for res in (result, Result.from_dict(result.to_dict())):
        assert _mistyped(report_view(res)) == []


def test_a_kernel_with_room_and_no_finding_reads_as_a_gap_in_its_table_cell():
    """No rule's finding on a kernel at 1.6× its floor or more is a gap in the rule set, never a verdict: its table cell
    says so ("gap in the rule set"), as its card's verdict does; nearer its floor, "no rule applies"; a program
    finding that speaks to it is named either way."""
    from ncuadvisor.render.view import _no_rule_label
    from ncuadvisor.result.types import NoRuleVerdict

    gap = NoRuleVerdict(message="Gap in the rule set: no rule names a cause (96% of GPU time): …", headroom=5.44)
    near = NoRuleVerdict(message="No rule applies (40% of GPU time): …", headroom=1.3)
    unknown = NoRuleVerdict(message="No rule applies (40% of GPU time): …", headroom=None)
    covered = NoRuleVerdict(message="No kernel rule applies; …", headroom=5.44, program_rule="ATM004")
    assert gap.is_gap and not near.is_gap and not unknown.is_gap
    assert _no_rule_label(gap) == "gap in the rule set"
    assert _no_rule_label(near) == _no_rule_label(unknown) == "no rule applies"
    assert _no_rule_label(covered) == "see ATM004 (program)"
