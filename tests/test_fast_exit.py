"""The entry point ends the process as soon as the command is done (`cli.run`): the output is whole, to a file and
to a pipe, the exit code is the command's, and the decompressed copy of the report is removed as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _run(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    scratch = tmp / "scratch"
    scratch.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args], capture_output=True, text=True, env=env, cwd=tmp, timeout=120
    )


def test_output_whole_and_the_copy_removed(tmp_path):
    out = tmp_path / "r.json"
    p = _run(tmp_path, "report", str(FIXTURES / "probe.ncu-rep.xz"), "-o", str(out), "-q")
    assert p.returncode == 0, p.stderr
    assert len(json.loads(out.read_text())["kernels"]) == 4
    piped = _run(tmp_path, "report", str(FIXTURES / "probe.ncu-rep.xz"), "-f", "json")
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == {**json.loads(out.read_text()), "created": json.loads(piped.stdout)["created"]}
    assert list((tmp_path / "scratch").iterdir()) == []  # the decompressed copies, removed at exit


def test_exit_codes_are_the_commands(tmp_path):
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"not a report")
    p = _run(tmp_path, "report", str(bad), "-f", "json")
    assert p.returncode == 2 and p.stderr.startswith("ncuadvisor: error: "), (p.returncode, p.stderr)
    assert _run(tmp_path, "report", "--top", "x", str(bad)).returncode == 2
    assert _run(tmp_path, "--version").stdout.startswith("ncuadvisor ")
