"""How benchmarks/foreign.py scores a report, by the goal "the first finding of each report's top kernel": the labelled
kernel's own first finding (a program finding is the program's, not the kernel's), and, for a kernel the report's first
warning names as a debug build, that warning; the scoring used until 2026-12-06 (the first program finding for a kernel
without its own) is kept beside it."""

from __future__ import annotations

import json
import subprocess
import sys

from foreign import LABELS, debug_named, judge, score  # benchmarks/ is on sys.path (tests/conftest.py)

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BY_FILE = {r["file"]: r for r in tomllib.loads(LABELS.read_text())["report"]}


def tool_json(name: str) -> dict:
    """`python -m ncuadvisor report fixtures/foreign/NAME.xz --format json`, as foreign.py runs it."""
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(ROOT / "fixtures" / "foreign" / (name + ".xz")), "--format"]
        + ["json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=True,
    )
    return dict(json.loads(p.stdout), _rc=p.returncode, _stderr="")


def test_judge():
    assert judge("MEM001", ["MEM001", "MEM003"]) == "right"
    assert judge("PRG004", ["MEM002", "LCH001"]) == "wrong"
    assert judge("", ["LCH001", "NONE"]) == "right"
    assert judge("", ["MEM002"]) == "missing"


def test_a_debug_build_named_by_the_first_warning_is_said_first():
    """yzwang2000/cudaCode's report (RTX 2080 Ti, ncu 2022.3, basic set) was built with -G: the first warning names
    kernel_A and kernel_C, and kernel_A's own first finding is scored beside the debug-build verdict."""
    name = "yzwang2000+cudaCode__profile.ncu-rep"
    doc = tool_json(name)
    warnings = doc["report"]["warnings"]
    assert warnings[0].startswith("this is a debug build")
    assert debug_named(warnings, "kernel_A") and debug_named(warnings, "kernel_C")
    assert not debug_named(warnings, "kernel") and not debug_named(warnings[1:], "kernel_A")
    out = score(BY_FILE[name], {name: doc})
    assert out.debug_build and out.verdict == "right"
    assert out.first == "PRC001" and out.verdict_kernel == "right" == out.verdict_old


def test_a_program_finding_is_not_the_kernel_s_first_finding():
    """A kernel with no finding of its own, named by a program finding (PRG004's tiny launches in a row): it has no
    first finding (right only where the label allows NONE); the old scoring took the program finding."""
    name = "josiahls+cuda_learning_mojo__profile.ncu-rep"  # a committed report: score() needs its file
    kernel = {"name": "setColReadCol", "findings": [], "duration_ns": 2600.0}
    doc = {
        "report": {"warnings": []},
        "kernels": [kernel],
        "program_findings": [{"rule": "PRG004", "kernels": ["setColReadCol"]}],
        "_rc": 0,
    }
    for expected, kernel_verdict in ((["MEM002", "LCH001"], "missing"), (["LCH001", "NONE"], "right")):
        label = dict(BY_FILE[name], kernel="setColReadCol", expected=expected)
        out = score(label, {name: doc})
        assert out.first == "" and out.program_first == "PRG004" and not out.debug_build
        assert out.verdict == out.verdict_kernel == kernel_verdict
        assert out.verdict_old == "wrong"
