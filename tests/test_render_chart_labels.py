"""The roofline's labels as drawn, at every width the page draws the chart (wide, the phone's 360 px, and the zoomed
view of each): no roof label (the DRAM slope's, a FLOP ceiling's, an L2 or L1 slope's) on another or on a point's or
headroom arrow's label; a roof label with no room is left off and its full text is its line's tooltip.

Each box is measured from where the label is drawn with the text-width estimates the chart places by: point and
arrow labels `chart_place.label_box` (7.2 px a character of 11 px bold, 1.5 px pad each side, 13 px high), FLOP
ceiling labels `chart.roof_label_box` (6.8 px a character of 11.5 px), the DRAM slope's `chart._slope_box` (7.4 px a
character of 11.5 px semibold, turned with the text) and the L2 and L1 slopes' `chart_levels._turned_box` (6.2 px a
character, turned). Headless Chromium (2026-12-06, flaws and model_step_1010 at 1400 and 390 px) lays them out
narrower: 6.4 (arrows), 6.3 (ceilings), 7.33 (DRAM) and 5.8 (levels) px a character; "#8" 16.9 px against its 17.4 px
box. Turned boxes are compared as drawn (`chart_place.overlap`, the separating-axis test), not by the upright boxes
around them."""

from __future__ import annotations

import json
import math
import re

import pytest

from ncuadvisor.render.chart import (
    PHONE,
    ROOF_CHAR_W,
    SLOPE_CHAR_W,
    WIDE,
    Chart,
    _slope_box,
    roof_label_box,
    roofline_chart,
)
from ncuadvisor.render.chart_levels import _turned_box
from ncuadvisor.render.chart_place import Rect, Turned, label_box, overlap
from ncuadvisor.render.chart_zoom import zoomed_chart
from ncuadvisor.render.html import CHART_POINTS, render_html
from ncuadvisor.render.view import report_view
from tests.browser import Browser, chromium

# the two whose phone chart had the DRAM slope's label on the ceilings' (flaws, model_step_1010), a training step, and
# cuBLAS/cuDNN GEMMs under three ceilings
FIXTURES = ["flaws", "model_step_1010", "torch_train", "torch_gemm_conv", "patterns", "ceilings"]


def label_boxes(chart: Chart) -> list[tuple[str, Rect | Turned]]:
    """Every label the chart draws, with its box."""
    out: list[tuple[str, Rect | Turned]] = []
    for lb in chart.labels:  # the DRAM slope's (turned) and the FLOP ceilings'
        x, y = float(lb.x), float(lb.y)
        if lb.transform:
            m = re.fullmatch(r"rotate\(([-\d.]+) [-\d.]+ [-\d.]+\)", lb.transform)
            assert m and lb.anchor == "middle", lb
            out.append((lb.text, _slope_box(x, y, float(m.group(1)), lb.text)))
        else:
            out.append((lb.text, roof_label_box(x, y, lb.anchor, lb.text)))
    out += [
        (r.text, _turned_box(float(r.tx), float(r.ty), float(r.angle), r.text)) for r in chart.level_roofs if r.text
    ]
    out += [(p.label, label_box(float(p.lx), float(p.ly), p.label)) for p in chart.points if p.label]
    out += [(a.text, label_box(float(a.tx), float(a.ty), a.text)) for a in chart.arrows if a.text]
    return out


def charts(view) -> list[tuple[str, Chart]]:
    out = []
    for name, frame in (("wide", WIDE), ("phone", PHONE)):
        main = roofline_chart(view, CHART_POINTS, frame=frame)
        out.append((name, main))
        zoom = zoomed_chart(view, CHART_POINTS, main, frame)
        if zoom is not None:
            out.append((f"{name} zoomed", zoom.chart))
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_no_two_labels_of_the_chart_touch_at_any_width(typed, name):
    for which, chart in charts(report_view(typed(name))):
        boxes = label_boxes(chart)
        hits = [(a, b) for i, (a, ra) in enumerate(boxes) for b, rb in boxes[:i] if overlap(ra, rb)]
        assert not hits, f"{name}, {which} chart: labels on each other: {hits}"
        roof_texts = [t for t, _ in boxes if not t.startswith("#")]
        assert roof_texts or which.endswith("zoomed"), f"{name}, {which} chart: no roof is labelled"


@pytest.mark.parametrize("name", ["flaws", "model_step_1010"])
def test_the_dram_slopes_label_is_kept_on_the_phone(typed, name):
    """The slope's label once sat on the ceilings' at 360 px; it moves along the slope instead of being left off."""
    chart = roofline_chart(report_view(typed(name)), CHART_POINTS, frame=PHONE)
    assert [lb for lb in chart.labels if lb.roof == "dram" and lb.text.startswith("DRAM ")]


@pytest.mark.parametrize("name", FIXTURES)
def test_a_roof_left_unlabelled_keeps_its_label_as_its_lines_tooltip(typed, name):
    view = report_view(typed(name))
    for which, chart in charts(view):
        shown = {lb.roof for lb in chart.labels}
        for line in chart.ceilings:  # every roof: its label drawn, or its line's tooltip
            assert (line.roof in shown) != bool(line.title), f"{name}, {which}: {line}"
        for r in chart.level_roofs:
            assert bool(r.text) != bool(r.title), f"{name}, {which}: {r}"
    page = render_html(typed(name))
    for _, chart in charts(view):
        for line in chart.ceilings:
            if line.title:
                assert f'data-roof="{line.roof}"><title>{line.title}</title></line>' in page


def test_turned_boxes_overlap_as_drawn_not_as_their_upright_boxes():
    """Two labels along parallel steep slopes 16 px apart: their upright boxes meet, the labels do not; turned into
    each other, or a turned label over an upright one, they do."""
    a = Turned(100, 100, 95, 13, -60)
    b = Turned(100 + 16 * math.sin(math.radians(60)), 100 + 16 * math.cos(math.radians(60)), 95, 13, -60)
    assert a.rect.hits(b.rect) and not overlap(a, b) and not overlap(b, a)
    assert overlap(a, Turned(100, 100, 95, 13, 30))  # crossing at their centres
    assert overlap(a, Rect(95, 95, 105, 105)) and not overlap(a, Rect(140, 140, 160, 150))
    assert a.near(100, 100, 0) and not a.near(b.cx, b.cy, 9) and a.near(b.cx, b.cy, 10)  # 16 - 13 / 2 = 9.5 px off


TEXT_WIDTHS = """JSON.stringify([...document.querySelectorAll('svg.roofline text')]
  .filter(t => /^(lbl-mem|lbl-flop|lbl-level|pt-label|headroom-label)$/.test(t.getAttribute('class') || ''))
  .map(t => [t.getAttribute('class'), t.textContent, t.getComputedTextLength()])
  .filter(r => r[2] > 0))"""


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs a headless Chromium (apt-get install chromium)")
def test_the_width_estimates_hold_in_chromium(typed, tmp_path):
    """The boxes above are only as good as their text widths: every label Chromium lays out, at 1400 and 390 px,
    is no wider than the chart's estimate for it (the point labels' with their pad)."""
    estimate = {"lbl-mem": SLOPE_CHAR_W, "lbl-flop": ROOF_CHAR_W, "lbl-level": 6.2}
    browser = Browser()
    try:
        for name in ("flaws", "model_step_1010"):
            path = tmp_path / f"{name}.html"
            path.write_text(render_html(typed(name)))
            for width in (1400, 390):
                page = browser.open(path, width)
                try:
                    widths = json.loads(page.js(TEXT_WIDTHS))
                finally:
                    page.close()
                assert {c for c, _, _ in widths} >= {"lbl-mem", "lbl-flop", "pt-label"}, (name, width)
                for cls, text, px in widths:
                    if cls in estimate:
                        assert px <= estimate[cls] * len(text), (name, width, cls, text, px)
                    else:
                        box = label_box(0, 0, text)
                        assert px <= box.x1 - box.x0, (name, width, cls, text, px)
    finally:
        browser.close()
