"""Golden files of the outputs of real fixtures (the report's JSON, HTML and markdown, SARIF, diffs) and the helpers
their tests share.

Regenerate every golden file after an intended change of a rule, a template or a renderer (then review the diff):

    python3 -m tests.golden
    # or: NCUADVISOR_REGEN_GOLDEN=1 python3 -m pytest -q -k golden tests/test_render_golden.py tests/test_diff.py ...

Volatile fields are scrubbed before rendering: the creation time, the ncuadvisor and ncu_report versions, and the
report's path (kept as its file name), so no golden file names the checkout it was made in. The source paths the
fixtures hold are data, the same in every checkout: /work/main/..., where the fixtures were captured. SARIF is
rendered with that folder, FIXTURE_SOURCE_ROOT, as its source root, so that its paths come out relative.
"""

from __future__ import annotations

import copy
import difflib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).resolve().parent
ROOT = GOLDEN.parent.parent
REGEN_ENV = "NCUADVISOR_REGEN_GOLDEN"
FIXTURE_SOURCE_ROOT = "/work/main"
SCRUBBED_TIME = "2000-01-01T00:00:00Z"
SCRUBBED_VERSION = "0.0.0"

# The CLI as a user runs it.
_CLI = "from ncuadvisor.cli import main; main()"


def run_cli(*args: str, cwd: str | os.PathLike[str] | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NCUADVISOR_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", _CLI, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=env,
    )


def scrub_result(result: dict[str, Any]) -> dict[str, Any]:
    r = copy.deepcopy(result)
    r["created"] = SCRUBBED_TIME
    r.setdefault("generator", {})["version"] = SCRUBBED_VERSION
    rep = r.get("report") or {}
    if rep:
        rep["path"] = rep.get("name")
        rep["reader_version"] = SCRUBBED_VERSION
    return r


def scrub_diff(diff: dict[str, Any]) -> dict[str, Any]:
    d = copy.deepcopy(diff)
    d["created"] = SCRUBBED_TIME
    d.setdefault("generator", {})["version"] = SCRUBBED_VERSION
    for side in ("before", "after"):
        meta = d.get(side) or {}
        meta["path"] = meta.get("name")
        meta["created"] = SCRUBBED_TIME
    return d


def check_golden(name: str, text: str) -> None:
    """Compare text with tests/golden/NAME (or write it when NCUADVISOR_REGEN_GOLDEN is set)."""
    path = GOLDEN / name
    if str(ROOT) != FIXTURE_SOURCE_ROOT:  # the fixtures' own paths start with FIXTURE_SOURCE_ROOT: those are data
        assert str(ROOT) not in text, f"{name} names this checkout ({ROOT}): scrub it before comparing"
    if os.environ.get(REGEN_ENV):
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"golden file {path} is missing: create it with `python3 -m tests.golden`")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        delta = "".join(
            list(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), f"golden/{name}", "now", n=1))[
                :80
            ]
        )
        pytest.fail(
            f"{name} differs from its golden file; if the change is intended, regenerate with "
            f"`python3 -m tests.golden` and review:\n{delta}"
        )
