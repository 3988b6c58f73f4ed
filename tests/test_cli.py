"""The command line, run as a user runs it (a subprocess), on real fixtures and on unusable input."""

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES

PROBE_XZ = str(FIXTURES / "probe.ncu-rep.xz")


def run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_version():
    p = run("--version")
    assert p.returncode == 0 and p.stdout.startswith("ncuadvisor ")


@pytest.mark.slow
def test_report_terminal_summary():
    p = run("report", PROBE_XZ)
    assert p.returncode == 0, p.stderr
    assert "copy_strided" in p.stdout and "MEM001" in p.stdout and "Where to start" in p.stdout


@pytest.mark.slow
@pytest.mark.parametrize("ext", ["json", "html", "md"])
def test_report_writes_the_format_of_the_extension(tmp_path, ext):
    out = tmp_path / f"r.{ext}"
    p = run("report", PROBE_XZ, "-o", str(out), "-q")
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    if ext == "json":
        assert json.loads(text)["schema_version"] == 1
    elif ext == "html":
        assert text.lstrip().lower().startswith("<!doctype html")
    else:
        assert "copy_strided" in text


def test_json_to_stdout():
    p = run("report", PROBE_XZ, "--format", "json")
    assert p.returncode == 0
    assert len(json.loads(p.stdout)["kernels"]) == 4


@pytest.mark.slow
def test_never_overwrites_without_force(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("mine")
    p = run("report", PROBE_XZ, "-o", str(out))
    assert p.returncode == 2 and "already exists" in p.stderr and out.read_text() == "mine"
    p = run("report", PROBE_XZ, "-o", str(out), "--force", "-q")
    assert p.returncode == 0 and json.loads(out.read_text())["schema_version"] == 1


@pytest.mark.slow
def test_refuses_to_overwrite_the_input(tmp_path, report_path):
    rep = tmp_path / "x.html"
    rep.write_bytes(report_path("probe").read_bytes())
    p = run("report", str(rep), "-o", str(rep), "--force")
    assert p.returncode == 2 and "input report" in p.stderr
    assert rep.read_bytes()[:4] == b"NVR\x00"


def _bad_inputs(tmp_path, report_path):
    empty = tmp_path / "empty.ncu-rep"
    empty.write_bytes(b"")
    text = tmp_path / "text.ncu-rep"
    text.write_text("not a report\n")
    rand = tmp_path / "rand.ncu-rep"
    rand.write_bytes(bytes((i * 97 + 13) % 256 for i in range(5000)))
    trunc = tmp_path / "trunc.ncu-rep"
    trunc.write_bytes(report_path("probe").read_bytes()[:50_000])
    badxz = tmp_path / "bad.ncu-rep.xz"
    badxz.write_bytes(b"garbage")
    return {
        "missing": tmp_path / "missing.ncu-rep",
        "directory": tmp_path,
        "empty": empty,
        "text": text,
        "random": rand,
        "truncated": trunc,
        "bad-xz": badxz,
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", ["missing", "directory", "empty", "text", "random", "truncated", "bad-xz"])
def test_unusable_input_one_line_exit_2(tmp_path, report_path, case):
    path = _bad_inputs(tmp_path, report_path)[case]
    p = run("report", str(path))
    assert p.returncode == 2, (case, p.stdout, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ncuadvisor: error:"), p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_unknown_extension_is_an_error(tmp_path):
    p = run("report", PROBE_XZ, "-o", str(tmp_path / "r.txt"))
    assert p.returncode == 2 and "extension" in p.stderr


@pytest.mark.slow
def test_rules_catalogue_and_one_rule():
    p = run("rules")
    assert p.returncode == 0 and "MEM001" in p.stdout and "ROOF001" in p.stdout
    p = run("rules", "MEM002")
    assert p.returncode == 0 and "Why it costs time" in p.stdout and "tile[32][33]" in p.stdout
    p = run("rules", "NOPE999")
    assert p.returncode != 0 and "no rule" in p.stderr


@pytest.mark.slow
def test_output_file_gets_the_usual_permissions(tmp_path):
    import os
    import stat

    out = tmp_path / "r.json"
    assert run("report", PROBE_XZ, "-o", str(out), "-q").returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_rules_takes_a_prefix_as_select_does_and_gives_json():
    p = run("rules", "MEM")
    assert p.returncode == 0, p.stderr
    assert all(c in p.stdout for c in ("MEM001", "MEM002", "MEM003")) and "LCH001" not in p.stdout
    assert "uncoalesced-global" in p.stdout  # the slug column
    p = run("rules", "mem", "--format", "json")
    listed = json.loads(p.stdout)
    from ncuadvisor.rulekit import engine

    # every MEM rule there is (read from the rules, so that adding one touches no test here)
    mem = sorted(r.code for r in engine.discover() if r.code.startswith("MEM"))
    assert len(mem) >= 3 and [r["code"] for r in listed] == mem
    assert listed[0]["slug"] == "uncoalesced-global" and listed[0]["docs"] == "docs/rules/MEM001.md"
    assert all((FIXTURES.parent / r["docs"]).is_file() for r in listed)  # the page exists
    assert listed[0]["thresholds"] and listed[0]["languages"]
    one = json.loads(run("rules", "MEM001", "-f", "json").stdout)
    assert one["code"] == "MEM001" and "What it detects" in one["help"]
    p = run("rules", "MEM001")
    assert p.stdout.rstrip().endswith("Documentation: docs/rules/MEM001.md")
    p = run("rules", "XYZ")
    assert p.returncode == 2 and "no rule code starts with it" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("command", [[], ["report"], ["diff"], ["render"], ["rules"], ["profile"]])
def test_help_shows_no_value_type_for_a_flag(command):
    import os

    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert p.returncode == 0, p.stderr
    assert "--help" in p.stdout
    assert "<bool>" not in p.stdout and "BOOLEAN" not in p.stdout, p.stdout
