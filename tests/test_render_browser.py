"""The HTML report as a browser lays it out (headless Chromium; `slow`, skipped without it): at 1400 px the kernel
table sorts and filters, and the cards follow it; at 390 px (a phone) each kernel's bound, headroom and first finding,
the cards' Peak/Work/Threshold and the diff's Before/After/Change are on screen, with no sideways scroll; with scripts
off every row and card is there; a click on a chart point shows that kernel's roofs alone; print keeps the cards with
findings and leaves NCU's guidance closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncuadvisor.comparison.compare import compare
from ncuadvisor.render.diff_render import render_diff_html
from ncuadvisor.render.html import FULL_CARDS, render_html
from ncuadvisor.units import number
from tests.browser import Browser, Page, chromium
from tests.synthetic import many_kernels, typed_result

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium() is None, reason="needs a headless Chromium (apt-get install chromium)"),
]

REPORTS = ["torch_train", "flaws", "scatter-ops-2026-12-01/scatter_ops_full"]


@pytest.fixture(scope="module")
def browser():
    b = Browser()
    yield b
    b.close()


@pytest.fixture(scope="module")
def page_file(typed, tmp_path_factory):
    """page_file(name) -> the HTML report of a fixture, written once."""
    folder = tmp_path_factory.mktemp("pages")
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = folder / (name.replace("/", "_") + ".html")
            made[name].write_text(render_html(typed(name)))
        return made[name]

    return get


def _open(browser: Browser, path: Path, width: int, **kw) -> Page:
    return browser.open(path, width, **kw)


OFF_SCREEN = """(sel => {
  const W = innerWidth, out = [];
  for (const el of document.querySelectorAll(sel)) {
    if (el.closest("[hidden]") || !el.getClientRects().length) continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 0 || r.left < -0.5 || r.right > W + 0.5) out.push([el.className, el.textContent.slice(0, 40), r.left, r.right]);
  }
  return {W, over: document.documentElement.scrollWidth - W, bad: out,
          seen: [...document.querySelectorAll(sel)].filter(e => e.getClientRects().length).length};
})"""


@pytest.mark.parametrize("name", REPORTS)
def test_at_390px_each_kernels_bound_headroom_and_first_finding_are_on_screen(browser, page_file, typed, name):
    p = _open(browser, page_file(name), 390)
    try:
        cells = p.js(OFF_SCREEN + '("#kernel-table tbody td:is(.bound, .headroom, .first)")')
        rows = len(typed(name).kernels)
        assert cells["over"] <= 0 and not cells["bad"] and cells["seen"] == 3 * rows, cells
        # the first open card's tables keep every column: each value beside its column's name
        card = p.js(OFF_SCREEN + '("section.card details[open] :is(table.floor, table.evidence) td[data-label]")')
        assert card["seen"] > 0 and not card["bad"], card
        labels = p.js(
            "[...document.querySelectorAll('section.card details[open] table.floor td[data-label]')]"
            ".map(td => getComputedStyle(td, '::before').content)"
        )
        assert {'"Peak"', '"Work"', '"Floor"', '"Achieved"'} <= set(labels)
        if p.js("!!document.querySelector('section.card details[open] table.evidence')"):
            assert '"Threshold"' in p.js(
                "[...document.querySelectorAll('section.card details[open] table.evidence td[data-label]')]"
                ".map(td => getComputedStyle(td, '::before').content)"
            )
        # the roofline drawn for the width, every roof in it
        chart = p.js(OFF_SCREEN + '("#roofline-phone")')
        assert chart["seen"] == 1 and not chart["bad"], chart
    finally:
        p.close()


def _rows(p: Page, key: str) -> list:
    return p.js(
        f"[...document.querySelectorAll('#kernel-table tbody tr')].filter(r => !r.hidden).map(r => r.dataset.{key})"
    )


def _numbers(values: list) -> list[float]:
    return [float(v) for v in values if v != ""]


def test_the_table_sorts_by_time_headroom_and_bound_and_filters_the_cards_with_it(browser, page_file, typed):
    result = typed("flaws")
    p = _open(browser, page_file("flaws"), 1400)
    try:
        assert p.js("document.getElementById('kernel-tools').hidden") is False
        click = "document.querySelector('#kernel-table th[data-sort=\"{}\"] button').click()"
        p.js(click.format("headroom"))
        heads = _rows(p, "headroom")
        assert _numbers(heads) == sorted(_numbers(heads), reverse=True)
        assert heads == [h for h in heads if h] + [h for h in heads if not h]  # a kernel without one goes last
        p.js(click.format("headroom"))
        assert _numbers(_rows(p, "headroom")) == sorted(_numbers(heads))
        p.js(click.format("time"))
        times = _numbers(_rows(p, "time"))
        assert times == sorted(times, reverse=True) and len(times) == len(result.kernels)
        p.js(click.format("bound"))
        bounds = _rows(p, "bound")
        assert bounds == sorted(bounds)
        # a filter hides the rows and cards that do not match it, and says how many are left
        memory = [k for k in result.kernels if k.bound == "memory"]
        p.js("(s => { s.value = 'memory'; s.dispatchEvent(new Event('input')); })(document.getElementById('kf-bound'))")
        assert set(_rows(p, "bound")) == {"memory"} and len(_rows(p, "bound")) == len(memory)
        shown = p.js("[...document.querySelectorAll('section.card')].filter(c => !c.hidden).map(c => c.id)")
        assert shown == [k.id for k in memory]
        assert (
            p.js("document.getElementById('kcount').textContent") == f"{len(memory)} of {len(result.kernels)} kernels"
        )
        # the search, on top of the filter: one kernel by a word of its name
        p.js(
            "(s => { s.value = 'TRANSPOSE_naive'; s.dispatchEvent(new Event('input')); })(document.getElementById('kq'))"
        )
        assert _rows(p, "index") == [str(i) for i, k in enumerate(result.kernels, 1) if k.name == "transpose_naive"]
        # a finding's rule: the kernels it fires on
        p.js("document.getElementById('kq').value = ''; document.getElementById('kf-bound').value = ''")
        p.js("(s => { s.value = 'MEM001'; s.dispatchEvent(new Event('input')); })(document.getElementById('kf-rule'))")
        fired = [str(i) for i, k in enumerate(result.kernels, 1) if any(f.rule == "MEM001" for f in k.findings)]
        assert fired and sorted(_rows(p, "index"), key=int) == fired
    finally:
        p.close()


@pytest.mark.parametrize("name", REPORTS)
def test_with_scripts_off_every_row_and_card_is_there(browser, page_file, typed, name):
    result = typed(name)
    p = _open(browser, page_file(name), 1400, scripts=False)
    try:
        assert p.js("document.getElementById('kernel-tools').getClientRects().length") == 0  # no dead controls
        assert p.js(
            "[...document.querySelectorAll('#kernel-table tbody tr')].filter(r => r.getClientRects().length).length"
        ) == len(result.kernels)  # every kernel a row
        cards = p.js(
            "Object.fromEntries([...document.querySelectorAll('section.card')].map(c => [c.id, c.textContent]))"
        )
        for k in result.kernels[:100]:
            text = cards[k.id]
            assert (k.demangled or k.name) in text
            for f in k.findings:
                # `code` in a fix shows as <code>: its text without the backticks
                assert f.title in text and f.fix.replace("`", "").split(".")[0][:40] in text
        # a closed card's summary still reads: its time, bound and headroom
        assert p.js("[...document.querySelectorAll('section.card summary')].every(s => s.getClientRects().length)")
    finally:
        p.close()


def test_a_click_on_a_point_shows_that_kernels_roofs_alone(browser, page_file):
    p = _open(browser, page_file("torch_train"), 1400)
    try:
        p.js(
            "document.querySelector('#roofline-chart a[data-roofs]').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true}))"
        )
        state = p.js("""(() => { const svg = document.getElementById('roofline-chart'), a = svg.querySelector('a.focus');
          const lit = [...svg.querySelectorAll('line[data-roof]')].filter(l => !l.classList.contains('dim')).map(l => l.dataset.roof);
          return {focused: svg.classList.contains('focused'), roofs: a && a.dataset.roofs, lit, all: svg.querySelectorAll('line[data-roof]').length,
                  note: svg.nextElementSibling.hidden ? '' : svg.nextElementSibling.textContent, hash: location.hash}; })()""")
        assert state["focused"] and state["lit"] and state["hash"] == ""  # focused, not navigated to the card
        roofs = set(state["roofs"].split())
        assert all(roofs & set(r.split()) for r in state["lit"]) and len(state["lit"]) < state["all"]
        assert state["note"].startswith("#1 ") and "DRAM" in state["note"]
        p.js("document.querySelector('.focus-note button').click()")
        assert p.js("document.querySelectorAll('#roofline-chart .dim').length") == 0
    finally:
        p.close()


def test_print_keeps_the_cards_with_findings_and_leaves_ncus_guidance_closed(browser, page_file, typed):
    result = typed("torch_train")
    p = _open(browser, page_file("torch_train"), 1400, media="print")
    try:
        cards = p.js("""[...document.querySelectorAll('section.card')].map(c => ({id: c.id,
            shown: c.checkVisibility(), body: c.querySelector('.card-body').checkVisibility(),
            ncu: [...c.querySelectorAll('details.ncu table')].some(t => t.checkVisibility())}))""")
        acting = {k.id for k in result.kernels if any(f.category != "at-roofline" for f in k.findings)}
        assert acting and {c["id"] for c in cards if c["shown"]} == acting
        assert not all(c["shown"] for c in cards)  # a kernel with nothing to act on is in the table only
        assert all(c["body"] for c in cards if c["shown"]) and not any(c["ncu"] for c in cards)
        assert p.js("getComputedStyle(document.querySelector('h2')).breakAfter") == "avoid"
        assert p.js("getComputedStyle(document.querySelector('#kernel-table td.name')).overflowWrap") == "break-word"
    finally:
        p.close()
    # on an A4 page (718 CSS px inside its margins) the kernel table fits, every cell of every row
    a4 = _open(browser, page_file("torch_train"), 718, media="print")
    try:
        cells = a4.js(OFF_SCREEN + '("#kernel-table :is(th, td)")')
        assert cells["seen"] > 0 and not cells["bad"], cells
    finally:
        a4.close()


def test_dark_mode_is_dark(browser, page_file):
    p = _open(browser, page_file("flaws"), 1400, dark=True)
    try:
        assert p.js("getComputedStyle(document.body).backgroundColor") == "rgb(18, 22, 28)"
    finally:
        p.close()


def test_the_diff_at_390px_shows_before_after_and_change(browser, typed, tmp_path):
    page = tmp_path / "diff.html"
    page.write_text(render_diff_html(compare(typed("pipeline_v0"), typed("pipeline_v1"))))
    p = _open(browser, page, 390)
    try:
        for label in ("Before", "After", "Change"):
            cells = p.js(OFF_SCREEN + f"('td[data-label=\"{label}\"]')")
            assert cells["seen"] >= 3 and not cells["bad"] and cells["over"] <= 0, (label, cells)
    finally:
        p.close()


def test_at_390px_the_long_tails_rows_stack_too(browser, typed, tmp_path):
    """A big report's kernels after the full cards are one row each: on a phone their bound, headroom and first
    finding are on screen as the table's are (here the cards stop after 5 to make a tail of the flaws report)."""
    page = tmp_path / "tail.html"
    page.write_text(render_html(typed("flaws"), full_cards=5))
    p = _open(browser, page, 390)
    try:
        cells = p.js(OFF_SCREEN + '("#kernel-table tbody tr[id] td:is(.bound, .headroom, .first)")')
        rows = p.js("document.querySelectorAll('#kernel-table tbody tr[id]').length")
        assert rows > 10 and cells["seen"] == 3 * rows and not cells["bad"] and cells["over"] <= 0, cells
    finally:
        p.close()


def test_past_the_full_cards_every_kernels_row_sorts_and_filters(browser, analyzed, tmp_path):
    """The 1,010-result capture as 1,010 kernels (one per result, tests/synthetic.py): the 910 without a card once
    sat in a table of their own that the sort and the filters never reached; now every kernel is a row of the one
    kernel table, and each sort and filter covers them all."""
    big = many_kernels(analyzed("model_step_1010"), 1010)
    result = typed_result(big)
    page = tmp_path / "big.html"
    page.write_text(render_html(result))
    p = _open(browser, page, 1400)
    try:
        assert len(_rows(p, "index")) == 1010
        click = "document.querySelector('#kernel-table th[data-sort=\"{}\"] button').click()"
        p.js(click.format("headroom"))
        heads = _numbers(_rows(p, "headroom"))
        assert len(heads) == sum(number(k.headroom) is not None for k in result.kernels) > FULL_CARDS
        assert heads == sorted(heads, reverse=True)
        top = max(result.kernels, key=lambda k: number(k.headroom) or 0.0)
        assert _rows(p, "index")[0] == str(result.kernels.index(top) + 1)
        p.js(click.format("finding"))
        firsts = p.js(
            "[...document.querySelectorAll('#kernel-table tbody tr')].map(r => r.dataset.finding"
            " ?? (r.dataset.rules || '').split(' ')[0])"
        )
        named = [f for f in firsts if f]
        assert named == sorted(named) and len(named) == sum(
            bool(k.findings and k.findings[0].rule) for k in result.kernels
        )

        def pick(select: str, value: str) -> None:
            p.js(
                f"(s => {{ s.value = {value!r}; s.dispatchEvent(new Event('input')); }})(document.getElementById('{select}'))"
            )

        bound = result.kernels[-1].bound  # a bound a kernel past the cards has
        pick("kf-bound", bound)
        expect = [str(i) for i, k in enumerate(result.kernels, 1) if k.bound == bound]
        assert sorted(_rows(p, "index"), key=int) == expect and int(expect[-1]) > FULL_CARDS
        assert p.js("document.getElementById('kcount').textContent") == f"{len(expect)} of 1010 kernels"
        pick("kf-bound", "")
        rule = next(f.rule for k in reversed(result.kernels) for f in k.findings if f.rule)
        pick("kf-rule", rule)
        fired = [str(i) for i, k in enumerate(result.kernels, 1) if any(f.rule == rule for f in k.findings)]
        assert sorted(_rows(p, "index"), key=int) == fired and int(fired[-1]) > FULL_CARDS
        pick("kf-rule", "")
        # the search finds a kernel past the cards by a word of its name, and by its full name
        far = result.kernels[-1]
        pick("kq", str(far.name).upper())
        assert _rows(p, "index") == ["1010"]
        pick("kq", str(far.demangled).split("(")[0][-20:] + " copy")
        assert "1010" in _rows(p, "index")
    finally:
        p.close()


TEXT_SIZES = """(() => {
  const out = [];
  for (const svg of document.querySelectorAll("svg.roofline")) {
    if (!svg.getClientRects().length) continue;
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll("text")) {
      if (!t.textContent.trim()) continue;
      out.push([svg.id, t.textContent.slice(0, 30), parseFloat(getComputedStyle(t).fontSize) * scale]);
    }
  }
  return out;
})()"""


@pytest.mark.parametrize("name", ["torch_train", "flaws"])
def test_at_390px_the_rooflines_text_keeps_its_size(browser, page_file, name):
    """The chart drawn for a wide page, scaled to a phone's 360 px, had 3.6 px text; the phone gets a chart drawn at
    its own width (the wide one hidden), whose every text, its zoomed view's too, is 11 CSS px or more, and which
    fits the screen."""
    p = _open(browser, page_file(name), 390)
    try:
        p.js("document.querySelectorAll('.chart details.zoom').forEach(d => { d.open = true; })")
        sizes = p.js(TEXT_SIZES)
        assert {s[0] for s in sizes} == {"roofline-phone", "roofline-phone-zoom"}
        small = [s for s in sizes if s[2] < 10.9]
        assert len(sizes) > 20 and not small, small[:5]
        chart = p.js(OFF_SCREEN + '("svg.roofline")')
        assert chart["seen"] == 2 and not chart["bad"] and chart["over"] <= 0, chart
    finally:
        p.close()
    wide = _open(browser, page_file(name), 1400)
    try:
        sizes = wide.js(TEXT_SIZES)
        assert not any(s[0].startswith("roofline-phone") for s in sizes)  # the phone's drawing hidden
        assert min(s[2] for s in sizes if s[0] == "roofline-chart") >= 10.9
    finally:
        wide.close()
