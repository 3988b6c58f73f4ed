"""The roofline chart where its points crowd: a second chart zoomed into that region, under the first in a closed
`<details>` that the dashed box on the first chart links into; its labels as clear of each other and of the points as
the first chart's; and the headroom labels clear of every arrow line, their own included."""

from __future__ import annotations

import math
import re

import pytest
from synthetic import typed_result

from ncuadvisor.render.chart import ARROW_MIN_HEADROOM, PHONE, WIDE, Chart, _line_box, roofline_chart
from ncuadvisor.render.chart_levels import _turned_box
from ncuadvisor.render.chart_place import Rect, label_box, overlap
from ncuadvisor.render.chart_zoom import ZOOM_MIN, crowded_span, zoomed_chart
from ncuadvisor.render.html import CHART_POINTS, render_html
from ncuadvisor.render.view import report_view
from tests.synthetic import PAGE_SCRIPT, page_scripts

FIXTURES = ["flaws", "patterns", "ceilings", "torch_gemm_conv", "torch_scatter", "torch_eager", "torch_compile"]


def _labels(chart: Chart) -> list[Rect]:
    boxes = [label_box(float(p.lx), float(p.ly), p.label) for p in chart.points if p.label]
    return boxes + [label_box(float(a.tx), float(a.ty), a.text) for a in chart.arrows if a.text]


def _circles(chart: Chart) -> list[Rect]:
    return [
        Rect(float(p.cx) - float(p.r), float(p.cy) - float(p.r), float(p.cx) + float(p.r), float(p.cy) + float(p.r))
        for p in chart.points
    ]


def _arrow_lines(chart: Chart) -> list[Rect]:
    """Each arrow's line as a box 1.4 px wide (its stroke), from the roof down to the point's edge."""
    out = []
    for a in chart.arrows:
        x, ya, yb = float(a.line.x1), float(a.line.y1), float(a.line.y2)
        out.append(Rect(x - 0.7, min(ya, yb), x + 0.7, max(ya, yb)))
    return out


def _clear(chart: Chart) -> None:
    labels, circles = _labels(chart), _circles(chart)
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[:i] if a.hits(b)]
    assert not [(lb, c) for lb in labels for c in circles if lb.hits(c)]
    assert not [(lb, ln) for lb in labels for ln in _arrow_lines(chart) if lb.hits(ln)]


@pytest.mark.parametrize("name", FIXTURES)
def test_no_label_sits_on_a_headroom_arrow_line_nor_on_another_label(typed, name):
    view = report_view(typed(name))
    chart = roofline_chart(view, 60)
    _clear(chart)
    for a in chart.arrows:  # an arrow only for a kernel well under its roof that the report does not say to leave
        k = next(k for k in view.kernels if a.of == f"#{k.index}")
        assert not a.text or a.text.startswith(f"{a.of} ")
        assert k.headroom >= ARROW_MIN_HEADROOM and not any(f.at_roofline for f in k.findings)


@pytest.mark.parametrize("name", FIXTURES)
def test_a_zoomed_chart_where_points_crowd_reads_as_clearly_as_the_first(typed, name):
    view = report_view(typed(name))
    main = roofline_chart(view, 60)
    zoom = zoomed_chart(view, 60, main)
    crowded = [p for p in main.points if float(p.cx) >= float(main.plot.x) and (not p.label or p.leader)]
    if zoom is None:
        assert crowded_span(main) is None or len(roofline_chart(view, 60, crowded_span(main)).points) < 2
        return
    assert crowded, "a zoom only where points crowd"
    _clear(zoom.chart)
    assert zoom.factor >= ZOOM_MIN and zoom.kernels == len(zoom.chart.points) >= 2
    # every point of the zoomed chart is inside its plot, and is a point of the first chart inside the dashed box
    plot = Rect(
        float(zoom.chart.plot.x),
        float(zoom.chart.plot.y),
        float(zoom.chart.plot.x) + float(zoom.chart.plot.w),
        float(zoom.chart.plot.y) + float(zoom.chart.plot.h),
    )
    box = zoom.main.zoom_box
    assert box is not None
    region = Rect(float(box.x), float(box.y), float(box.x) + float(box.w), float(box.y) + float(box.h))
    first = {p.title.split()[0]: p for p in main.points}
    for p in zoom.chart.points:
        assert plot.x0 <= float(p.cx) <= plot.x1 and plot.y0 <= float(p.cy) <= plot.y1
        q = first[p.title.split()[0]]
        assert region.x0 - 0.2 <= float(q.cx) <= region.x1 + 0.2 and region.y0 - 0.2 <= float(q.cy) <= region.y1 + 0.2
    # a memory level's label stays inside the plot, or is left to the first chart
    for lr in zoom.chart.level_roofs:
        assert not lr.text or _turned_box(float(lr.tx), float(lr.ty), float(lr.angle), lr.text).inside(plot)
    # the zoomed region keeps the first chart's slope: decades of y per decade of x
    xlo, xhi, ylo, yhi = main.span
    zx0, zx1, zy0, zy1 = zoom.chart.span
    assert (zy1 - zy0) / (zx1 - zx0) == pytest.approx((yhi - ylo) / (xhi - xlo))
    assert math.isclose(zoom.factor, (xhi - xlo) / (zx1 - zx0))


def test_no_zoom_where_every_label_sits_beside_its_point():
    kernels = [
        {
            "id": f"k{n}",
            "name": f"k_{n}",
            "duration_ns": 1000.0,
            "time_share": 0.5,
            "bound": "memory",
            "roofline": {"intensity": 10.0 ** (n * 2 - 1), "achieved_flops_per_s": 1e11 * 10 ** (n * 2)},
        }
        for n in range(2)
    ]
    result = typed_result(
        {
            "report": {"device": {"peak_dram_bytes_per_s": 4.8e12, "peak_flops_per_s": {"fp32": 6.7e13}}},
            "kernels": kernels,
        }
    )
    view = report_view(result)
    main = roofline_chart(view, None)
    assert all(p.label and p.leader is None for p in main.points)
    assert zoomed_chart(view, None, main) is None
    assert 'details class="zoom"' not in render_html(result)


def test_the_page_links_the_dashed_box_into_the_closed_zoom_and_needs_no_script(typed):
    page = render_html(typed("patterns"))
    zoom = re.search(r'<details class="zoom"><summary>Zoom ×([\d.]+) into the crowded region: ([^<]+)</summary>', page)
    assert zoom and float(zoom.group(1)) >= ZOOM_MIN and "FLOP/byte" in zoom.group(2) and "FLOP/s" in zoom.group(2)
    assert '<a href="#roofline-chart-zoom"><rect class="zoom-box"' in page
    assert page.count('<svg id="roofline-chart-zoom"') == 1 and page.count('<svg id="roofline-chart"') == 1
    # each chart its own arrowhead marker: ids are unique on the page
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert page_scripts(page) == [PAGE_SCRIPT]  # no script of its own: a plain link opens the zoom


def test_the_at_roofline_threshold_is_one_number_in_the_readme_the_rule_the_chart_and_the_page(typed):
    """ROOF001's `max_headroom` is the one constant: the docs state it (docs/how-it-thinks.md), the chart draws no
    headroom arrow under it, and a verdict's evidence shows it as its threshold."""
    from pathlib import Path

    from ncuadvisor.rulekit.engine import discover

    rule = next(r for r in discover() if r.code == "ROOF001")
    limit = rule.thresholds["max_headroom"]
    readme = (Path(__file__).resolve().parent.parent / "docs" / "how-it-thinks.md").read_text()
    stated = re.search(r"A kernel within ([\d.]+)× of its\s+floor gets `at-roofline`", readme)
    assert stated and float(stated.group(1)) == limit
    assert ARROW_MIN_HEADROOM == limit
    result = typed("torch_compile")
    verdicts = [f for k in result.to_dict()["kernels"] for f in k["findings"] if f["rule"] == "ROOF001"]
    assert verdicts and all(f["evidence"][0]["threshold"] == limit for f in verdicts)
    page = render_html(result)
    assert re.search(
        rf'<td class="num" data-label="Value">\d\.\d\d×</td><td class="num" data-label="Threshold">{limit:.2f}×</td>',
        page,
    )  # 1.58× under 1.60×


OVERLAP_MAX = 0.1  # how far two point markers may reach into each other, as a share of their radii summed


def _overlap(a, b) -> float:
    d = math.hypot(float(a.cx) - float(b.cx), float(a.cy) - float(b.cy))
    return max(0.0, (float(a.r) + float(b.r) - d) / (float(a.r) + float(b.r)))


@pytest.mark.parametrize("name", ["torch_train", "torch_gemm_conv", "model_step_1010", "torch_scatter"])
def test_no_two_points_hide_each_other_and_a_moved_point_says_where_it_sits(typed, name):
    """The GEMMs of a training step sit at nearly one spot under the FLOP roofs, and memory-only kernels at one share
    of the DRAM peak in the strip: their markers once overlapped up to 40% (one hiding most of the next). Now no two
    markers of the chart or of its zoomed view overlap more than a tenth; the labels stay clear of the points, of each
    other and of every roof; and a point drawn away from where it sits says so in its tooltip, a dashed line from
    its own spot, at its own intensity, to where it is drawn."""
    view = report_view(typed(name))
    charts = []
    for frame in (WIDE, PHONE):  # the page's chart, and the one a phone shows
        main = roofline_chart(view, CHART_POINTS, frame=frame)
        zoom = zoomed_chart(view, CHART_POINTS, main, frame)
        charts += [main] + ([zoom.chart] if zoom else [])
    for chart in charts:
        pts = chart.points
        worst = max((_overlap(a, b) for i, a in enumerate(pts) for b in pts[:i]), default=0.0)
        assert worst <= OVERLAP_MAX, f"{name}: two points overlap {worst:.0%}"
        _clear(chart)
        roofs = [_line_box(line) for line in chart.ceilings]
        assert not [
            (p.label, r)
            for p in pts
            if p.label
            for r in roofs
            if overlap(label_box(float(p.lx), float(p.ly), p.label), r)
        ]
        xlo, xhi = chart.span[:2]
        x0, w = float(chart.plot.x), float(chart.plot.w)
        by_label = {f"#{k.index}": k for k in view.kernels}
        for p in pts:
            k = by_label[p.title.split()[0]]
            assert p.title.startswith(f"#{k.index} {k.demangled or k.name}")
            if p.moved is None:
                continue
            assert "drawn beside #" in p.title and (p.moved.x2, p.moved.y2) == (p.cx, p.cy)
            if "strip" not in p.cls and "no FLOPs" not in p.title:
                sits = x0 + (math.log10(k.roofline.intensity) - xlo) / (xhi - xlo) * w
                assert float(p.moved.x1) == pytest.approx(sits, abs=0.1)
                assert not _over_its_roof(chart, view, k, float(p.cx), float(p.cy)), f"{name}: {p.title} over its roof"
    assert any(p.moved for p in charts[0].points) or name == "torch_gemm_conv"


def _over_its_roof(chart, view, k, x: float, y: float) -> bool:
    """Whether (x, y) px lies above the kernel's own roof there: min(DRAM slope, its limiting precision's peak)."""
    xlo, xhi, ylo, yhi = chart.span
    x0, w, y0, h = (float(v) for v in (chart.plot.x, chart.plot.w, chart.plot.y, chart.plot.h))
    inten = 10 ** (xlo + (x - x0) / w * (xhi - xlo))
    prec = k.roofline.limiting_precision
    device = view.report.device
    bw = device.peak_dram_bytes_per_s
    roofs = [v for v in (bw * inten if bw else None, device.peak_flops_per_s.get(prec) if prec else None) if v]
    if not roofs:
        return False
    roof_y = y0 + h - (math.log10(min(roofs)) - ylo) / (yhi - ylo) * h
    return y < roof_y - 0.5
