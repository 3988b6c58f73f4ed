"""`ncuadvisor render`: a saved result (report or diff JSON) back into html, md, sarif, json or terminal output,
without the report; golden markdown of real fixtures; one clear line (exit 2) for anything unusable."""

from __future__ import annotations

import copy
import json

import pytest

from ncuadvisor.comparison import diff_results
from ncuadvisor.errors import InputError
from ncuadvisor.render import markdown as markdown_renderer
from ncuadvisor.render.markdown import GITHUB_LIMIT
from ncuadvisor.saved.validate import load_saved
from tests.conftest import FIXTURES
from tests.golden import check_golden, run_cli, scrub_diff, scrub_result
from tests.synthetic import typed_result


def render_markdown(result, *args, **kw):
    return markdown_renderer.render_markdown(typed_result(result), *args, **kw)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, analyzed):
    """saved(name) -> a JSON file of the scrubbed result of that fixture (written once)."""
    folder = tmp_path_factory.mktemp("saved")
    cache: dict = {}

    def get(name: str):
        if name not in cache:
            path = folder / f"{name}.json"
            path.write_text(json.dumps(scrub_result(analyzed(name)), indent=1))
            cache[name] = path
        return cache[name]

    return get


@pytest.fixture(scope="module")
def saved_diff(tmp_path_factory, analyzed):
    path = tmp_path_factory.mktemp("saved_diff") / "diff.json"
    path.write_text(json.dumps(scrub_diff(diff_results(analyzed("pipeline_v1"), analyzed("pipeline_v2")))))
    return path


# -- golden markdown of real fixtures, through the command ---------------------------------------------------------


@pytest.mark.parametrize("name", ["pipeline_v1", "flaws"])
def test_report_markdown_golden(saved, name):
    p = run_cli("render", saved(name), "--format", "md")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout) <= GITHUB_LIMIT
    check_golden(f"{name}.md", p.stdout)


def test_diff_markdown_golden_through_render(saved_diff):
    p = run_cli("render", saved_diff, "--format", "md")
    assert p.returncode == 0, p.stderr
    check_golden("diff_v1_v2.md", p.stdout)  # the same text as diff's own -o diff.md


# -- every format ------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("ext", ["html", "md", "json", "sarif"])
def test_render_report_to_each_format(tmp_path, saved, ext):
    out = tmp_path / f"r.{ext}"
    p = run_cli("render", saved("pipeline_v2"), "-o", out)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"wrote {out}"
    text = out.read_text()
    if ext == "html":
        assert text.lstrip().lower().startswith("<!doctype html") and "scale_add" in text
    elif ext == "md":
        assert text.startswith("## ncuadvisor · pipeline\\_v2")
    elif ext == "json":
        assert json.loads(text) == json.loads(saved("pipeline_v2").read_text())
    else:
        assert json.loads(text)["version"] == "2.1.0"


@pytest.mark.slow
def test_render_report_terminal(saved):
    p = run_cli("render", saved("pipeline_v2"))
    assert p.returncode == 0, p.stderr
    assert "Where to start" in p.stdout and "scale_add" in p.stdout and "MEM001" in p.stdout


@pytest.mark.slow
@pytest.mark.parametrize("ext", ["html", "md", "json"])
def test_render_diff_to_each_format(tmp_path, saved_diff, ext):
    out = tmp_path / f"d.{ext}"
    p = run_cli("render", saved_diff, "-o", out, "-q")
    assert p.returncode == 0 and p.stdout == "", p.stderr
    text = out.read_text()
    assert "scale_add" in text
    if ext == "json":
        assert json.loads(text)["kind"] == "diff"


@pytest.mark.slow
def test_render_diff_terminal(saved_diff):
    p = run_cli("render", saved_diff)
    assert p.returncode == 0, p.stderr
    assert "Regression" in p.stdout and "scale_add" in p.stdout


@pytest.mark.slow
def test_render_never_overwrites_without_force(tmp_path, saved):
    out = tmp_path / "r.md"
    out.write_text("mine")
    p = run_cli("render", saved("pipeline_v1"), "-o", out)
    assert p.returncode == 2 and "already exists" in p.stderr and out.read_text() == "mine"
    assert run_cli("render", saved("pipeline_v1"), "-o", out, "--force", "-q").returncode == 0
    assert out.read_text().startswith("## ncuadvisor")
    p = run_cli("render", saved("pipeline_v1"), "-o", saved("pipeline_v1"), "--force")
    assert p.returncode == 2 and "input" in p.stderr


@pytest.mark.slow
def test_markdown_of_a_large_saved_report_stays_under_the_limit(tmp_path, analyzed):
    big = copy.deepcopy(analyzed("flaws"))
    kernels = []
    for i in range(100):
        for k in big["kernels"]:
            k2 = copy.deepcopy(k)
            k2["name"] = f"{k['name']}_{i}|`<x>`"
            k2["demangled"] = f"void ns::{k2['name']}<float, {i}>(" + "const float *, " * 30 + "int)"
            kernels.append(k2)
    big["kernels"] = kernels  # 3100 kernels
    path = tmp_path / "big.json"
    path.write_text(json.dumps(big))
    p = run_cli("render", path, "--format", "md")
    assert p.returncode == 0, p.stderr
    assert len(p.stdout) <= GITHUB_LIMIT < 65536 and "left out" in p.stdout
    assert "<x>" not in p.stdout and p.stdout.count("<details>") == p.stdout.count("</details>")
    assert p.stdout == render_markdown(big)


# -- unusable input: one line, exit 2 ----------------------------------------------------------------------------


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "content, message",
    [
        ('{"schema_version": 2, "report": {}, "kernels": []}', "schema_version 2 is not supported"),
        ('{"schema_version": 99, "kind": "diff"}', "diff schema_version 99 is not supported"),
        ('{"schema_version": true, "report": {}, "kernels": []}', "schema_version True is not supported"),
        ('{"schema_version": 1, "kind": "profile"}', "unknown result kind 'profile'"),
        ('{"kernels": []}', "not an ncuadvisor result (no schema_version)"),
        ("[1, 2]", "not an ncuadvisor result"),
        ('{"schema_version": 1, "kernels": []}', "`report` is missing"),
        ('{"schema_version": 1, "kind": "diff", "before": {}, "after": {}}', "`total` is missing"),
        ('{"schema_version": 1, ', "not valid JSON (Expecting property name"),
        ("", "empty file"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"NVR\x00rest", "is an Nsight Compute report"),
    ],
)
def test_unusable_saved_result(tmp_path, content, message):
    path = _write(tmp_path, "x.json", content)
    p = run_cli("render", path, "--format", "md")
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuadvisor: error: ") and message in lines[0], p.stderr
    with pytest.raises(InputError, match="x.json"):
        load_saved(path)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (("missing.json",), "missing.json: no such file"),
        ((str(FIXTURES),), "is a directory"),
        ((str(FIXTURES / "pipeline_v0.ncu-rep.xz"),), "is an Nsight Compute report, not a saved result"),
    ],
)
def test_unusable_paths(tmp_path, args, message):
    p = run_cli("render", *args, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], p.stderr


@pytest.mark.slow
def test_unusable_outputs(tmp_path, saved, saved_diff):
    p = run_cli("render", saved_diff, "--format", "sarif")
    assert p.returncode == 2 and "a diff has no SARIF form" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = run_cli("render", saved("pipeline_v1"), "-o", tmp_path / "r.txt")
    assert p.returncode == 2 and "cannot tell the format" in p.stderr and ".sarif" in p.stderr
    p = run_cli("render", saved("pipeline_v1"), "-o", tmp_path / "r.md", "--format", "terminal")
    assert p.returncode == 2 and "terminal" in p.stderr
    p = run_cli("render", saved("pipeline_v1"), "-o", tmp_path / "nowhere" / "r.md")
    assert p.returncode == 2 and "does not exist" in p.stderr


@pytest.mark.slow
def test_diff_rejects_a_saved_diff_as_input(saved_diff, saved):
    p = run_cli("diff", saved_diff, saved("pipeline_v1"))
    assert p.returncode == 2 and "is a saved diff; expected a saved report" in p.stderr


# -- the commands ----------------------------------------------------------------------------------------------


def test_the_app_has_each_command_once():
    from typer.testing import CliRunner

    from ncuadvisor.cli import app

    names = [c.name for c in app.registered_commands]
    assert names == ["report", "rules", "diff", "render", "profile", "mcp"]
    result = CliRunner().invoke(app, ["diff", "--help"])
    assert result.exit_code == 0 and "--fail-on" in result.output and "--threshold" in result.output
