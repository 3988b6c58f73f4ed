"""Golden files of the report's JSON and HTML outputs on real fixtures (tests/golden: scrubbed of times, versions and
paths; `python3 -m tests.golden` regenerates them). Two small fixtures: pipeline_v1 (every kernel at its roofline)
and pipeline_v2 (a finding with evidence, source lines and a fix)."""

from __future__ import annotations

import json
import re

import pytest

from ncuadvisor.render import to_json
from tests.golden import check_golden, run_cli, scrub_result

FIXTURES = ["pipeline_v1", "pipeline_v2"]
JSON_BLOCK = re.compile(r'(<script type="application/json" id="ncuadvisor-result">)(.*?)(</script>)', re.S)


@pytest.mark.parametrize("name", FIXTURES)
def test_report_json_golden(analyzed, name):
    """What `ncuadvisor report REPORT -f json` writes."""
    check_golden(f"{name}.json", to_json(scrub_result(analyzed(name))) + "\n")


@pytest.mark.parametrize("name", FIXTURES)
def test_report_html_golden(tmp_path, analyzed, name):
    """The page `ncuadvisor render` makes of the saved result; its embedded JSON is the JSON golden's, so the golden
    page holds a note in its place."""
    result = scrub_result(analyzed(name))
    saved = tmp_path / f"{name}.json"
    saved.write_text(to_json(result))
    p = run_cli("render", saved, "--format", "html")
    assert p.returncode == 0, p.stderr
    block = JSON_BLOCK.search(p.stdout)
    assert block and json.loads(block.group(2)) == json.loads(to_json(result))
    check_golden(f"{name}.html", JSON_BLOCK.sub(rf"\1(the result: tests/golden/{name}.json)\3", p.stdout))


@pytest.mark.parametrize("name", FIXTURES)
def test_report_csv_golden(tmp_path, analyzed, name):
    """The table `ncuadvisor render RESULT --format csv` makes of the saved result: one row per kernel."""
    saved = tmp_path / f"{name}.json"
    saved.write_text(to_json(scrub_result(analyzed(name))))
    p = run_cli("render", saved, "--format", "csv")
    assert p.returncode == 0, p.stderr
    check_golden(f"{name}.csv", p.stdout)
