"""Numbers and words as a reader meets them on the project's reports: every estimate a sentence with its numbers
(no formula fragments, no "load(s)"), the bound named by its unit with that unit's own percentage, limiters and
floors in words (no metric keys), small percentages as "<1%", and the source tables' shares said of what."""

from __future__ import annotations

import re

import pytest

from ncuadvisor.analysis.roofline import MEMORY_UNITS
from ncuadvisor.render.html import render_html
from ncuadvisor.units import fmt_pct100

FIXTURES = ["flaws", "torch_eager", "torch_compile", "patterns"]
SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")  # a metric or result key, never a word


def _findings(result: dict) -> list[dict]:
    out = []
    for k in result["kernels"]:
        out += k.get("findings") or []
        for v in k.get("variants") or []:
            out += v.get("findings") or []
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_every_estimate_reads_as_a_sentence_with_its_numbers(analyzed, name):
    findings = _findings(analyzed(name))
    assert findings
    for f in findings:
        model = f["speedup_model"]
        assert model and (model[0].isupper() or model[0].isdigit()) and model.endswith("."), (f["rule"], model)
        assert re.search(r"\d", model), (f["rule"], model)  # its numbers, not only its shape
        assert not re.search(r"×\s*\(1\s*[-−]", model) and "(s)" not in model, (f["rule"], model)
        assert not SNAKE.search(model), (f["rule"], model)
        assert "(s)" not in f["message"], (f["rule"], f["message"])


@pytest.mark.parametrize("name", FIXTURES)
def test_the_bound_names_its_unit_and_the_limiter_is_in_words(analyzed, name):
    for k in analyzed(name)["kernels"]:
        rl = k["roofline"]
        reason, sol = rl["bound_reason"], rl.get("sol") or {}
        if rl["bound"] == "memory" and sol:
            # "L2 throughput 88% of peak (L1/shared 54%, DRAM 13%, compute 7%)": the busiest unit and its own share
            top_key, top_name = max(((k_, n) for k_, n in MEMORY_UNITS if k_ in sol), key=lambda t: sol[t[0]])
            assert reason.startswith(f"{top_name} throughput {fmt_pct100(sol[top_key])} of peak"), reason
            assert "memory throughput" not in reason
        texts = (reason, rl.get("limiter_reason") or "", rl.get("floor_reason") or "", rl.get("executed_reason") or "")
        for text in texts:
            assert not SNAKE.search(text) and "e+0" not in text, text
            assert not re.search(r"\b(l1|l2|fma|sfu|fp64|fp32)-bound", text), text


def test_small_percentages_on_the_hundred_scale_read_less_than_one():
    assert fmt_pct100(0.4) == "<1%" and fmt_pct100(0.0) == "0%" and fmt_pct100(86.46) == "86%"
    assert fmt_pct100(86.46, 1) == "86.5%"


def test_the_source_share_says_of_what_in_words(typed):
    page = render_html(typed("flaws"))
    assert "of executed instructions</span>" in page and 'title="inst_executed"' in page
    assert "of long-scoreboard stall samples</span>" in page
    assert not re.search(r">\s*inst_executed\s*<", page)


def test_a_log_axis_tick_is_never_in_exponent_notation():
    """A chart spanning 10⁻⁴ FLOP/byte (a Julia report from another GPU) once read "1e-4" on its axis."""
    from ncuadvisor.render.chart import _x_tick

    assert [_x_tick(v, d) for v, d in ((1e-4, True), (2e-5, False), (0.001, True), (0.5, False), (1e4, True))] == [
        "10⁻⁴",
        "2×10⁻⁵",
        "0.001",
        "0.5",
        "10000",
    ]
    assert _x_tick(1e5, True) == "10⁵" and _x_tick(2e5, False) == "2×10⁵"
