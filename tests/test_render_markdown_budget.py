"""The markdown comment on every fixture: within GitHub's 65,536 characters, filled by value (the details left out are
those worth least, and only when the comment is full), each top action with its fix, short names in a narrow table,
and no note that sends the reader to a file nobody wrote."""

from __future__ import annotations

import re

import pytest

from ncuadvisor.render.markdown import by_value, render_markdown
from ncuadvisor.render.mdtext import GITHUB_LIMIT, md
from ncuadvisor.render.view import report_view
from ncuadvisor.units import LABEL_MAX
from tests.conftest import FIXTURES

# the 1,010-result capture with the slow tests (pyproject's `slow` marker): its analysis alone is seconds
EVERY = [
    pytest.param(n, marks=pytest.mark.slow) if n == "model_step_1010" else n
    for n in sorted(p.name.removesuffix(".ncu-rep.xz") for p in FIXTURES.glob("*.ncu-rep.xz"))
]
DETAIL = re.compile(r"<details><summary><b>#(\d+) ")


@pytest.mark.parametrize("name", EVERY)
def test_the_comment_fills_githubs_budget_by_value(typed, name):
    result = typed(name)
    text = render_markdown(result)
    view = report_view(result)
    assert len(text) <= GITHUB_LIMIT < 65536
    shown = {int(n) for n in DETAIL.findall(text)}
    left = [k.index for k in view.kernels if k.index not in shown]
    if left:
        # full: it stops only near the limit (the old comment stopped at 32,000 with half of GitHub's room unused)
        assert len(text) > GITHUB_LIMIT // 2, f"{name}: {len(left)} cards left out at {len(text)} characters"
        assert "left out to keep the comment under GitHub's limit" in text
        # by value: the kernels "where to start" names keep their cards
        named = {
            k.index for k in view.kernels for a in view.top_actions[:3] if a.scope != "program" and a.kernel_id == k.id
        }
        assert named <= shown, f"{name}: cards of where-to-start kernels left out: {sorted(named - shown)}"
    assert "result.json" not in text  # no file the run did not write
    assert "ncuadvisor render" not in text


@pytest.mark.parametrize("name", ["torch_train", "flaws", "model_step_315"])
def test_where_to_start_gives_each_actions_fix_and_the_table_is_narrow(typed, name):
    result = typed(name)
    text = render_markdown(result)
    view = report_view(result)
    start = text.split("### Where to start", 1)[1].split("\n**Across the program**", 1)[0].split("\n### ", 1)[0]
    for a in view.top_actions:
        assert a.fix, f"{name}: no fix for {a.rule}"
        assert md(a.fix) in start
    header = next(line for line in text.splitlines() if line.startswith("| # |"))
    assert header.count("|") == 7  # six columns
    for k in view.kernels:
        assert all(len(w) <= LABEL_MAX for w in k.label.split()), k.label
        assert f"<code>{md(k.label)}</code>" in text


def test_cards_are_tried_most_valuable_first(typed):
    view = report_view(typed("flaws"))
    order = by_value(view)
    assert sorted(order) == list(range(len(view.kernels)))
    firsts = [view.kernels[i].id for i in order[:3]]
    named = [a.kernel_id for a in view.top_actions if a.scope != "program"][:3]
    assert firsts == named
