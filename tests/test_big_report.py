"""The big-report whole-model capture (fixtures/model_step_1010.ncu-rep.xz: 1,010 results with the 13 analysis sections,
833 MB raw) through the command a user runs: every result is counted, every kernel group analysed, the first findings
are the ones the rules give this program, and the page stays small. Timing and memory goals are benchmarks
(benchmarks/scale.py, RESULTS.md, the 1,010-result capture), not asserted here."""

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES
from tests.synthetic import PAGE_SCRIPT, page_scripts

pytestmark = pytest.mark.slow


def test_the_1010_result_capture_end_to_end(tmp_path):
    out_json, out_html = tmp_path / "ms.json", tmp_path / "ms.html"
    for out in (out_json, out_html):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "ncuadvisor",
                "report",
                str(FIXTURES / "model_step_1010.ncu-rep.xz"),
                "-o",
                str(out),
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        assert p.stderr.strip() == ""
    res = json.loads(out_json.read_text())
    kernels = res["kernels"]
    assert sum(k["launches"] for k in kernels) == 1010
    assert len(kernels) == 13 and len({k["name"] for k in kernels}) == 8
    first = {(k["name"], k["grid"]): (k["findings"][0]["rule"] if k["findings"] else None) for k in kernels}
    assert first[("gemm_tiled", "(8, 8, 1)")] == "LCH001"  # 64 blocks on 132 SMs: split-K
    assert first[("softmax_causal", "(1024, 1, 1)")] == "WRP001"  # shared-memory tree reduction
    assert first[("split_heads", "(256, 4, 1)")] == "MEM001"  # strided stores
    assert first[("cross_entropy", "(256, 1, 1)")] == "LAT001"
    assert {f["rule"] for f in res["program_findings"]} >= {"PRG001"}  # 473 launches under 5 µs
    html = out_html.read_text()
    assert len(html.encode()) < 5_000_000
    import re

    scripts = re.findall(r"<script[^>]*>", html, re.I)
    assert scripts == ["<script>", '<script type="application/json" id="ncuadvisor-result">']  # the page's own
    assert page_scripts(html) == [PAGE_SCRIPT]  # and the data for tools, never run
    for name in {k["name"] for k in kernels}:
        assert name in html
