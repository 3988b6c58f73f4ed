"""The roofline's labels as drawn, at every width the page draws the chart (wide, the phone's 360 px, and the zoomed
view of each): no roof label (the DRAM slope's, a FLOP ceiling's, an L2 or L1 slope's) on another or on a point's or
headroom arrow's label; no label struck through by a line the plot draws (every roof, sloped, flat or a dashed level
roof, the hierarchy marks' joins, the moved points' lines, the headroom arrows and the leader lines) other than its
own; a roof label with no room is shortened to its value, else left off, its full text its line's tooltip.

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
import tarfile

import pytest

from ncuadvisor.pipeline.analyze import analyze
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
from tests.conftest import ROOT

# the two whose phone chart had the DRAM slope's label on the ceilings' (flaws, model_step_1010), a training step, and
# cuBLAS/cuDNN GEMMs under three ceilings
FIXTURES = ["flaws", "model_step_1010", "torch_train", "torch_gemm_conv", "patterns", "ceilings"]


def label_boxes(chart: Chart) -> list[tuple[str, Rect | Turned]]:
    """Every label the chart draws, with its box."""
    return [(text, box) for text, box, _ in owned_label_boxes(chart)]


def owned_label_boxes(chart: Chart) -> list[tuple[str, Rect | Turned, str]]:
    """Every label the chart draws, with its box and what it belongs to: a roof's keys, a point's link, or ""."""
    out: list[tuple[str, Rect | Turned, str]] = []
    for lb in chart.labels:  # the DRAM slope's (turned) and the FLOP ceilings'
        x, y = float(lb.x), float(lb.y)
        if lb.transform:
            m = re.fullmatch(r"rotate\(([-\d.]+) [-\d.]+ [-\d.]+\)", lb.transform)
            assert m and lb.anchor == "middle", lb
            out.append((lb.text, _slope_box(x, y, float(m.group(1)), lb.text), lb.roof))
        else:
            out.append((lb.text, roof_label_box(x, y, lb.anchor, lb.text), lb.roof))
    out += [
        (r.text, _turned_box(float(r.tx), float(r.ty), float(r.angle), r.text), r.level)
        for r in chart.level_roofs
        if r.text
    ]
    out += [(p.label, label_box(float(p.lx), float(p.ly), p.label), p.href) for p in chart.points if p.label]
    out += [(a.text, label_box(float(a.tx), float(a.ty), a.text), "") for a in chart.arrows if a.text]
    return out


def drawn_lines(chart: Chart) -> list[tuple[str, str, tuple[float, float, float, float]]]:
    """Every line drawn in the plot but the grid: (what it is, what it belongs to, x1 y1 x2 y2). A roof's line belongs
    to its label, a leader line, a moved point's line and a hierarchy mark's join to the point's label; a headroom
    arrow's line to nothing (its label keeps off it too)."""
    out = [(f"roof {c.roof}", c.roof, (c.x1, c.y1, c.x2, c.y2)) for c in chart.ceilings]
    out += [(f"roof {r.level}", r.level, (r.x1, r.y1, r.x2, r.y2)) for r in chart.level_roofs]
    out += [(f"join of {m.href}", m.href, (m.x0, m.cy, m.cx, m.cy)) for m in chart.level_marks]
    out += [(f"arrow {a.text}", "", (a.line.x1, a.line.y1, a.line.x2, a.line.y2)) for a in chart.arrows]
    for p in chart.points:
        for what, ln in (("leader", p.leader), ("moved", p.moved)):
            if ln is not None:
                out.append((f"{what} of {p.label or p.href}", p.href, (ln.x1, ln.y1, ln.x2, ln.y2)))
    return [(what, owner, tuple(float(v) for v in xy)) for what, owner, xy in out]  # type: ignore[misc]


def crosses(seg: tuple[float, float, float, float], box: Rect | Turned) -> bool:
    """Whether a segment passes through the inside of a box (its edge alone does not count): the segment is taken
    into the box's own frame (turned back by its angle) and clipped to it (Liang-Barsky)."""
    x1, y1, x2, y2 = seg
    if isinstance(box, Turned):
        a = math.radians(box.angle)
        c, s = math.cos(a), math.sin(a)
        (x1, y1), (x2, y2) = (
            ((x - box.cx) * c + (y - box.cy) * s, -(x - box.cx) * s + (y - box.cy) * c) for x, y in ((x1, y1), (x2, y2))
        )
        bx0, by0, bx1, by1 = -box.w / 2, -box.h / 2, box.w / 2, box.h / 2
    else:
        bx0, by0, bx1, by1 = box.x0, box.y0, box.x1, box.y1
    t0, t1 = 0.0, 1.0
    dx, dy = x2 - x1, y2 - y1
    for p, q in ((-dx, x1 - bx0), (dx, bx1 - x1), (-dy, y1 - by0), (dy, by1 - y1)):
        if abs(p) < 1e-12:
            if q <= 1e-9:
                return False
        elif p < 0:
            t0 = max(t0, q / p)
        else:
            t1 = min(t1, q / p)
    # through the inside, not along an edge: the clipped part has length and its middle is inside by a margin
    if t1 - t0 <= 1e-6:
        return False
    mx, my = x1 + dx * (t0 + t1) / 2, y1 + dy * (t0 + t1) / 2
    return bx0 + 1e-6 < mx < bx1 - 1e-6 and by0 + 1e-6 < my < by1 - 1e-6


EXAM = ROOT / "fixtures" / "exam-h100-2026-12-06" / "exam_reports.tar.xz"
EXAM_REPORTS = ["layernorm_forward_v2", "triton_matmul", "matmul_forward_v4"]  # CUDA, Triton, a GEMM: H100 reports


def charts(view) -> list[tuple[str, Chart]]:
    out = []
    for name, frame in (("wide", WIDE), ("phone", PHONE)):  # the page's two sizes, each with its zoomed chart
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


def _no_line_through_a_label(name: str, view) -> None:
    for which, chart in charts(view):
        boxes = owned_label_boxes(chart)
        struck = [
            (what, text)
            for what, owner, seg in drawn_lines(chart)
            for text, box, mine in boxes
            if not (owner and owner == mine) and crosses(seg, box)
        ]
        assert not struck, f"{name}, {which} chart: labels struck through by lines: {struck}"


@pytest.mark.parametrize("name", FIXTURES)
def test_no_label_is_struck_through_by_a_line_at_any_width(typed, name):
    """Roofs (sloped, flat, dashed levels), joins, moved points' lines, arrows and leader lines: none through a label
    but its own (a roof's line under its label, a point's leader line to its label), wide, on the phone and zoomed."""
    _no_line_through_a_label(name, report_view(typed(name)))


@pytest.mark.parametrize("name", EXAM_REPORTS)
def test_no_label_struck_through_or_on_another_on_the_exam_reports(name, tmp_path):
    with tarfile.open(EXAM) as tar:
        tar.extract(f"{name}.ncu-rep", tmp_path, filter="data")
    view = report_view(analyze(tmp_path / f"{name}.ncu-rep"))
    _no_line_through_a_label(name, view)
    for which, chart in charts(view):
        boxes = label_boxes(chart)
        assert not [(a, b) for i, (a, ra) in enumerate(boxes) for b, rb in boxes[:i] if overlap(ra, rb)], which


@pytest.mark.parametrize("name", FIXTURES)
def test_a_headroom_arrows_label_sits_beside_its_arrow(typed, name):
    """An arrow's label has no leader line: it is drawn beside its arrow or not at all (it once sat 150 px off, in
    the no-FLOPs strip), and names the arrow's kernel."""
    for which, chart in charts(report_view(typed(name))):
        for a in chart.arrows:
            if not a.text:
                continue
            assert a.text.startswith(f"{a.of} "), (name, which, a)
            box = label_box(float(a.tx), float(a.ty), a.text)
            x, ya, yb = float(a.line.x1), float(a.line.y1), float(a.line.y2)
            dx = max(box.x0 - x, 0.0, x - box.x1)
            dy = max(box.y0 - max(ya, yb), 0.0, min(ya, yb) - box.y1)
            assert math.hypot(dx, dy) <= 70, (name, which, a.text, math.hypot(dx, dy))  # 1.5 × UNLED, 46 px


def test_a_line_through_a_label_is_seen():
    """The check above, on boxes whose answer is known: through, beside, along an edge, through a turned box."""
    box = Rect(0, 0, 40, 13)
    assert crosses((-5, 6, 50, 6), box) and crosses((20, -5, 20, 20), box) and crosses((-5, -5, 45, 18), box)
    assert (
        not crosses((-5, 14, 50, 14), box) and not crosses((-5, 13, 50, 13), box) and not crosses((41, 0, 60, 9), box)
    )
    turned = Turned(100, 100, 80, 13, -60)
    assert crosses((60, 100, 140, 100), turned) and not crosses((60, 145, 140, 145), turned)


FOREIGN = "foreign/panjd123+cutlass__report"  # a CUTLASS GEMM on another GPU: its L1 and L2 intensities under 0.1


@pytest.mark.parametrize("name", [*FIXTURES, FOREIGN])
def test_the_hierarchy_marks_are_inside_the_frame_not_on_its_edge(typed, name):
    """The frame is fitted to what the chart marks: an L1 or L2 intensity left of the points once sat clamped on the
    frame's left edge, both levels at one spot, reading as 0.1 FLOP/byte."""
    for frame in (WIDE, PHONE):
        chart = roofline_chart(report_view(typed(name)), CHART_POINTS, frame=frame)
        x0, x1 = float(chart.plot.x), float(chart.plot.x) + float(chart.plot.w)
        for m in chart.level_marks:
            assert x0 < float(m.cx) < x1, (name, frame.w, m)


@pytest.mark.parametrize("name", [FOREIGN])
def test_no_label_struck_through_on_a_report_from_another_gpu(typed, name):
    _no_line_through_a_label(name, report_view(typed(name)))


@pytest.mark.parametrize("name", ["model_step_1010", "torch_train"])
def test_the_dram_slopes_label_is_kept_on_the_phone(typed, name):
    """The slope's label once sat on the ceilings' at 360 px; it moves along the slope (above it, else under it)
    instead of being left off. (On flaws' phone chart every spot is crossed by the L2 roof above the slope or by the
    headroom arrows and the marks' joins under it: the label is the line's tooltip there.)"""
    chart = roofline_chart(report_view(typed(name)), CHART_POINTS, frame=PHONE)
    assert [lb for lb in chart.labels if lb.roof == "dram" and lb.text.startswith("DRAM ")]


@pytest.mark.parametrize("name", FIXTURES)
def test_a_roof_left_unlabelled_keeps_its_label_as_its_lines_tooltip(typed, name):
    view = report_view(typed(name))
    for which, chart in charts(view):
        full = {lb.roof for lb in chart.labels if not lb.title}
        short = {lb.roof: lb.title for lb in chart.labels if lb.title}
        for line in chart.ceilings:  # every roof: its label drawn in full, or its line's tooltip
            assert (line.roof in full) != bool(line.title), f"{name}, {which}: {line}"
            if line.roof in short:  # shortened to its value: the full text is the label's tooltip and the line's
                assert short[line.roof] == line.title, f"{name}, {which}: {line}"
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
  .map(t => [t.getAttribute('class'), [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join(''),
              t.getComputedTextLength()])
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
                # (flaws' phone chart has no room for the DRAM slope's label: it is the line's tooltip there)
                need = {"lbl-flop", "pt-label"} | ({"lbl-mem"} if width == 1400 or name != "flaws" else set())
                assert {c for c, _, _ in widths} >= need, (name, width)
                for cls, text, px in widths:
                    if cls in estimate:
                        assert px <= estimate[cls] * len(text), (name, width, cls, text, px)
                    else:
                        box = label_box(0, 0, text)
                        assert px <= box.x1 - box.x0, (name, width, cls, text, px)
    finally:
        browser.close()
