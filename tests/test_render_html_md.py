"""The HTML and markdown renderers, on the result of a real report: content, self-containment, escaping, limits."""

from __future__ import annotations

import copy
import html
import json
import re

import pytest

from ncuadvisor.render import html as html_renderer
from ncuadvisor.render import markdown as markdown_renderer
from ncuadvisor.render import to_json
from ncuadvisor.render.html import CHART_POINTS, FULL_CARDS, OPEN_CARDS, PROGRAM_KERNELS_SHOWN
from ncuadvisor.render.markdown import md
from ncuadvisor.result import Result, shape_tags
from ncuadvisor.units import compact_name, short_name
from tests.synthetic import PAGE_SCRIPT, many_kernels, page_scripts, typed_result


def render_html(result, **kw) -> str:
    return html_renderer.render_html(typed_result(result), **kw)


def render_markdown(result, **kw) -> str:
    return markdown_renderer.render_markdown(typed_result(result), **kw)


EVIL_NAME = '<script>alert(1)</script>"><img src=x onerror=alert(1)>{{ 7*7 }}</details>|'
EVIL_CODE = "</script><script>alert(2)</script>"
JSON_BLOCK = re.compile(r'<script type="application/json" id="ncuadvisor-result">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def result(analyzed) -> dict:
    return analyzed("probe")


@pytest.fixture()
def evil(result) -> dict:
    """The result with hostile strings where a report's own text goes."""
    r = copy.deepcopy(result)
    k = r["kernels"][0]
    k["name"] = k["demangled"] = EVIL_NAME
    src = next((f for kk in r["kernels"] for f in kk["findings"] if f["source"]), None)
    if src is None:  # the probe has source lines; keep the test meaningful if a rule change drops them
        k["findings"].append(copy.deepcopy(r["kernels"][0]["findings"][0]) if k["findings"] else {})
        src = k["findings"][-1]
        src["source"] = [{"file": "x.cu", "line": 1, "code": "", "sass": "", "share": 1.0}]
    src["source"][0]["code"] = EVIL_CODE
    if r["top_actions"]:
        r["top_actions"][0]["kernel"] = EVIL_NAME
    return r


def _json_block(page: str) -> str:
    blocks = JSON_BLOCK.findall(page)
    assert len(blocks) == 1, "exactly one embedded result"
    return blocks[0]


def _many(result: dict, copies: int) -> dict:
    r = copy.deepcopy(result)
    kernels = []
    for c in range(copies):
        for k in result["kernels"]:
            kk = copy.deepcopy(k)
            kk["id"] = f"k{len(kernels)}"
            kk["name"] = f"{k['name']}_{c}"
            kk["demangled"] = f"{k['demangled']} /* copy {c} */"
            kernels.append(kk)
    r["kernels"] = kernels
    return r


# ----------------------------------------------------------------------------------------------- HTML


def test_html_has_every_kernel_card_and_escaped_name(result):
    page = render_html(result)
    assert page.startswith("<!DOCTYPE html>")
    for k in result["kernels"]:
        assert f'<section class="card" id="{k["id"]}">' in page
        assert f'href="#{k["id"]}"' in page
        assert html.escape(k["demangled"], quote=False) in page
        assert html.escape(short_name(k.get("display_name") or k["name"])) in page
    for a in result["top_actions"]:
        assert html.escape(a["title"], quote=False) in page
    assert result["report"]["device"]["name"] in page
    assert "Where to start" in page and "Where the time goes" in page and "NCU's own guidance" in page


def test_html_embeds_the_result_as_parseable_json(result):
    page = render_html(result)
    assert json.loads(_json_block(page)) == json.loads(to_json(result))


def test_html_is_self_contained(result):
    page = render_html(result)
    low = page.lower()
    assert "<link" not in low and "@import" not in low and "url(" not in low
    assert not re.search(r'(src|href)\s*=\s*["\']?\s*(https?:)?//', low)
    # two <script> elements: the page's own script, the same text for every report (nothing of the result in it),
    # and the JSON data block
    assert low.count("<script") == 2 and '<script type="application/json"' in low
    assert page_scripts(page) == [PAGE_SCRIPT]
    assert "http://" not in JSON_BLOCK.sub("", page) and "https://" not in JSON_BLOCK.sub("", page)


def test_html_roofline_chart_places_every_kernel(result):
    page = render_html(result)
    svg = page[page.index("<svg") : page.index("</svg>")]
    for i, k in enumerate(result["kernels"]):
        assert re.search(f'<a href="#{k["id"]}"[^>]*><circle', svg), f"kernel #{i} missing from the chart"
    for label in ("FP32", "FP64", "tensor", "DRAM"):
        assert label in svg
    if any(not k["roofline"]["flops"] for k in result["kernels"]):
        assert "no FLOPs" in svg


def test_html_details_balanced_and_large_reports_collapse(result):
    big = _many(result, 7)  # 28 kernels: the first OPEN_CARDS cards open, the rest closed
    page = render_html(big)
    assert page.count("<details") == page.count("</details>")
    assert len(re.findall(r'<section class="card" id="k\d+">\n<details open>', page)) == OPEN_CARDS
    assert len(re.findall(r'<section class="card" id="k\d+">\n<details>', page)) == len(big["kernels"]) - OPEN_CARDS


def test_html_escapes_hostile_strings(evil):
    page = render_html(evil)
    assert "<script>alert" not in page
    assert "<img" not in page
    assert "{{ 7*7 }}" in html.unescape(page) and ">49<" not in page
    assert page.count("<details") == page.count("</details>")
    assert page.lower().count("<script") == 2 and page_scripts(page) == [PAGE_SCRIPT]
    assert json.loads(_json_block(page)) == json.loads(to_json(evil))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&gt;&lt;img" in page


def test_html_handles_nulls_and_empty_lists(result):
    # what the types allow to be empty: parts left out read as their defaults (None, "", [], {})
    r = copy.deepcopy(result)
    r["report"]["device"] = {}
    r["report"]["warnings"] = ["the report lacks sections: <SourceCounters>"]
    r["top_actions"] = []
    r["program_findings"] = [{"rule": "PRG001", "title": "t"}]
    k = r["kernels"][0]
    for key in list(k):
        if key != "id":
            del k[key]
    r["kernels"][1]["roofline"] = {}
    r["kernels"][1]["findings"] = [{"rule": "X"}]
    page = render_html(r)
    assert page.count("<details") == page.count("</details>")
    assert "&lt;SourceCounters&gt;" in page
    for k in r["kernels"]:
        assert f'id="{k["id"]}"' in page
    empty = render_html({"kernels": []})
    assert "no kernels" in empty


# ----------------------------------------------------------------------------------------------- markdown


def test_markdown_summary_table_and_details(result):
    text = render_markdown(result)
    assert len(text) <= 65000
    first = result["top_actions"][0]
    assert md(first["title"]) in text.split("###")[0]  # the headline names the first thing to fix
    assert "| # | Kernel | Time (share) | Bound | Headroom | First finding |" in text
    rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert len(rows) == len(result["kernels"])
    for k in result["kernels"]:
        assert md(compact_name(k.get("display_name") or k["name"])) in text  # the short name the terminal shows
    assert text.count("<details>") == text.count("</details>") == len(result["kernels"])
    assert text.count("```") % 2 == 0
    assert "left out" not in text


def test_markdown_escapes_hostile_strings(evil):
    text = render_markdown(evil)
    assert "<script>" not in text and "<img" not in text
    assert text.count("<details>") == text.count("</details>")
    row = next(line for line in text.splitlines() if line.startswith("| 1 |"))  # numbered from 1
    assert row.count("|") - row.count("\\|") == 7  # 6 cells: the name's own "|" is escaped
    assert "\\|" in row and "&lt;" in row
    assert '<code>&lt;script&gt;alert(1)&lt;/script&gt;"&gt;&lt;img src=x onerror=alert(1)&gt;' in text  # full name
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in text  # the source line


def test_markdown_fences_outgrow_backticks(result):
    r = copy.deepcopy(result)
    f = next(f for k in r["kernels"] for f in k["findings"] if f["fix_code"])
    f["fix_code"] = "a ``` b\n````\nc"
    text = render_markdown(r)
    assert "`````cuda\na ``` b\n````\nc\n`````" in text


@pytest.mark.slow  # a 1,000-kernel render; `.ci/run` runs the slow tests too
def test_markdown_stays_under_the_limit(result):
    big = _many(result, 500)
    text = render_markdown(big)
    assert len(text) <= 65000
    assert "left out" in text
    assert text.count("<details>") == text.count("</details>")
    assert len(render_markdown(big, max_chars=20000)) <= 20000
    # a moderately large report keeps the whole table and drops only the smallest kernels' details
    mid = _many(result, 30)
    text = render_markdown(mid, max_chars=30000)
    assert len(text) <= 30000
    rows = [line for line in text.splitlines() if re.match(r"^\| \d+ \|", line)]
    assert len(rows) == len(mid["kernels"])
    assert 0 < text.count("<details>") < len(mid["kernels"]) and "left out" in text


def test_markdown_handles_nulls_and_empty(result):
    r = copy.deepcopy(result)
    r["report"]["device"] = {}
    r["kernels"][0] = {}
    text = render_markdown(r)
    assert text.count("<details>") == text.count("</details>")
    assert "Nothing to fix first" in render_markdown({"kernels": [], "top_actions": []})


# ----------------------------------------------------------------------------------------------- HTML, big reports
# Renderer tests: the big results are a real report's analysis (flaws, 31 kernels) copied at the result-dict level
# under distinct names and ids (tests/synthetic.py); no report that big is read.

MB = 1_000_000


@pytest.fixture(scope="module")
def flaws(analyzed) -> dict:
    return analyzed("flaws")


@pytest.mark.parametrize(
    "kernels, launches",
    [(1000, 1), pytest.param(1000, 5, marks=pytest.mark.slow), pytest.param(5000, 1, marks=pytest.mark.slow)],
)
def test_html_of_a_big_report_stays_small_and_keeps_every_kernel(flaws, kernels, launches):
    big = many_kernels(flaws, kernels, launches)
    page = render_html(big)
    assert len(page.encode()) < 5 * MB
    assert page.count("<details") == page.count("</details>")
    cards = re.findall(r'<section class="card" id="(k\d+)">', page)
    rows = re.findall(r'<tr id="(k\d+)"', page)
    assert cards == [f"k{i}" for i in range(FULL_CARDS)]  # the kernels with the most time, in order
    # every kernel is a row of the one kernel table (which sorts and filters them all), in order of time: those
    # with a card link to it, every other one is a row of its own, its id the row's
    table = page[page.index('<table class="kernels ktable"') : page.index("</table>", page.index('id="kernel-table"'))]
    assert re.findall(r'<tr (?:id="k\d+" )?data-index="(\d+)"', table) == [str(i) for i in range(1, kernels + 1)]
    assert rows == [f"k{i}" for i in range(FULL_CARDS, kernels)]
    for k in big["kernels"][FULL_CARDS:]:
        assert html.escape(k["name"]) in table
    top = page[: page.index('id="start"')]
    assert f"one row each</a> in the kernel table for the other {kernels - FULL_CARDS:,}" in top  # before the summary
    # the summary comes first: where to start, where the time goes (the table), the chart, then the cards
    order = [page.index(s) for s in ('id="start"', 'id="time"', 'id="kernel-table"', 'id="roofline"', 'id="kernels"')]
    assert order == sorted(order)


def test_big_report_chart_places_only_the_top_kernels_and_says_so(flaws):
    big = many_kernels(flaws, 1000)
    page = render_html(big)
    svg = page[page.index("<svg") : page.index("</svg>")]
    placed = set(re.findall(r'<a href="#(k\d+)"[^>]*>(?:<line [^>]*/>|<circle class="sits"[^>]*/>)*<circle', svg))
    assert placed and placed <= {f"k{i}" for i in range(CHART_POINTS)}
    assert f"top {CHART_POINTS} of 1,000 kernels by time" in svg


@pytest.mark.slow  # a 1,000-kernel render; `.ci/run` runs the slow tests too
def test_big_report_leaves_the_json_out_and_says_where_it_is(flaws):
    page = render_html(many_kernels(flaws, 1000))
    assert not JSON_BLOCK.search(page)
    assert page_scripts(page) == [PAGE_SCRIPT] and page.lower().count("<script") == 1  # the page's own script only
    assert "is not embedded" in page and "-f json" in page


def test_json_limit_is_what_decides_embedding(result):
    assert JSON_BLOCK.search(render_html(result))
    small_limit = render_html(result, json_limit=100)
    assert not JSON_BLOCK.search(small_limit) and "is not embedded" in small_limit


def test_small_report_is_rendered_in_full(flaws):
    page = render_html(flaws)
    assert len(re.findall(r'<section class="card" id="k\d+">', page)) == len(flaws["kernels"])
    assert '<tr id="' not in page and 'id="big-report"' not in page
    assert json.loads(_json_block(page)) == json.loads(to_json(flaws))
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert "kernels by time" not in svg


def test_a_kernel_where_to_start_names_keeps_its_card(flaws):
    big = many_kernels(flaws, 300)
    far = big["kernels"][250]
    big["top_actions"][0].update({"kernel": far["name"], "kernel_id": far["id"]})
    page = render_html(big)
    assert f'<section class="card" id="{far["id"]}">' in page
    assert f'<tr id="{far["id"]}"' not in page
    assert len(re.findall(r'<section class="card" id="k\d+">', page)) == FULL_CARDS + 1


def test_long_tail_rows_escape_hostile_names(flaws):
    big = many_kernels(flaws, FULL_CARDS + 3)
    k = big["kernels"][-1]
    k["name"] = k["demangled"] = EVIL_NAME + "x" * 1000
    k["findings"] = [{"rule": "<b>R</b>", "title": EVIL_CODE, "category": "memory", "estimated_speedup": 0.5}]
    page = render_html(big)
    row = re.search(rf'<tr id="{k["id"]}".*?</tr>', page).group(0)
    assert "<script" not in row and "<img" not in row and "<b>" not in row
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in row and "&lt;/script&gt;&lt;script&gt;alert(2)" in row
    assert len(row) < 2000  # the tooltip keeps a clipped name, not the whole 1 KB one


def test_program_finding_lists_a_bounded_number_of_kernels(result):
    r = copy.deepcopy(result)
    names = [f"kernel_{i}" for i in range(PROGRAM_KERNELS_SHOWN + 25)]
    r["program_findings"] = [{"rule": "PRG001", "title": "t", "kernels": names}]
    page = JSON_BLOCK.sub("", render_html(r))
    assert names[PROGRAM_KERNELS_SHOWN - 1] in page and names[PROGRAM_KERNELS_SHOWN] not in page
    assert "and 25 more" in page


def test_groups_of_one_name_are_told_apart_by_their_launch_shape(analyzed):
    """The model step's gemm_tiled is six kernel groups (one per grid): every view names the grid beside the name,
    where to start included, so 'gemm_tiled: 64 blocks for 132 SMs' twice is two different launches to fix; kernels
    with a name of their own get no tag."""
    import io

    from rich.console import Console

    from ncuadvisor.render.terminal import render_terminal

    r = analyzed("model_step_315")
    tags = shape_tags(typed_result(r))
    gemms = [k for k in r["kernels"] if k["name"] == "gemm_tiled"]
    assert len(gemms) == 6 and {tags[k["id"]] for k in gemms} == {f"grid {k['grid']}" for k in gemms}
    assert not any(k["id"] in tags for k in r["kernels"] if k["name"] != "gemm_tiled")
    first = r["top_actions"][0]
    assert first["kernel"] == "gemm_tiled"
    grid = tags[first["kernel_id"]]
    page = render_html(r)
    assert f'gemm_<wbr>tiled</a> <span class="muted shape">· {html.escape(grid)}</span> <span class="muted">(' in page
    assert page.count('<span class="muted shape">· grid ') >= 6 * 2 + 1  # the table, the cards, where to start
    text = render_markdown(r)
    assert f"<code>gemm\\_tiled&lt;0&gt;</code> · {md(grid)} (" in text  # the instance of the template, and its grid
    assert "<code>layernorm\\_fwd</code> | " in text
    buf = io.StringIO()
    render_terminal(typed_result(r), Console(file=buf, width=200, highlight=False))
    out = buf.getvalue()
    assert f"1. gemm_tiled<0> · {grid.replace(', ', ',')} (" in out  # a launch shape wraps only between grid and block
    assert "layernorm_fwd · grid" not in out
    # a program-wide action listed among the first five is not listed again below them
    assert sum(1 for line in out.splitlines() if "(PRG001)" in line) == 1


def test_shape_tags_add_the_block_where_grids_agree():
    r = {
        "kernels": [
            {"id": "a", "name": "k", "grid": "(4, 1, 1)", "block": "(128, 1, 1)"},
            {"id": "b", "name": "k", "grid": "(4, 1, 1)", "block": "(256, 1, 1)"},
            {"id": "c", "name": "k", "grid": "(8, 1, 1)", "block": "(128, 1, 1)"},
            {"id": "d", "name": "other", "grid": "(4, 1, 1)"},
        ]
    }
    assert shape_tags(Result.from_dict(r)) == {
        "a": "grid (4, 1, 1) block (128, 1, 1)",
        "b": "grid (4, 1, 1) block (256, 1, 1)",
        "c": "grid (8, 1, 1)",
    }
    assert shape_tags(Result.from_dict({})) == {}
