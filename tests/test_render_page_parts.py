"""The HTML page's parts that need no browser: the source view of the lines the findings cite (from the result's own
source references), the roofline's frame fitted to the points and their roofs, its hover text, points drawn apart
where they would hide each other, and the roof keys the click-to-focus script matches."""

from __future__ import annotations

import copy
import math
import re

import pytest

from ncuadvisor.render.chart import roofline_chart
from ncuadvisor.render.chart_levels import LEVELS, MARKED
from ncuadvisor.render.html import render_html
from ncuadvisor.render.view import report_view
from tests.synthetic import typed_result

CHARTED = ["flaws", "torch_train", "patterns", "torch_gemm_conv"]


def test_the_source_view_merges_each_cited_line_with_its_instruction_share_and_top_stall(typed):
    view = report_view(typed("flaws"))
    k = next(k for k in view.kernels if k.name == "local_array_dynamic")
    first = k.cited_lines[0]
    # LOC001 cites line 256 for its local loads (executed instructions), LAT001 for its long-scoreboard stalls
    assert first.line == 256 and first.rules == ["LOC001", "LAT001"]
    assert first.inst_share == pytest.approx(0.1704, abs=1e-3) and first.stall == "long scoreboard"
    assert first.stall_share == pytest.approx(0.913, abs=1e-3)
    assert len({(c.file, c.line) for c in k.cited_lines}) == len(k.cited_lines)  # each line once
    shares = [c.inst_share or 0.0 for c in k.cited_lines]
    assert shares == sorted(shares, reverse=True)
    # a kernel whose findings cite no line has no source view, and the page no table for it
    assert all(not k.cited_lines for k in view.kernels if not any(f.source for f in k.findings))
    page = render_html(typed("flaws"))
    assert page.count('<table class="cited stack">') == sum(1 for k in view.kernels if k.cited_lines)


@pytest.mark.parametrize("name", CHARTED)
def test_the_frame_fits_the_points_and_each_kernels_own_roof(typed, name):
    view = report_view(typed(name))
    chart = roofline_chart(view, None)
    xlo, xhi, ylo, yhi = chart.span
    assert 2 <= xhi - xlo <= 10 and 2 <= yhi - ylo <= 10
    peaks = view.report.device.peak_flops_per_s
    for k in view.kernels:
        rl = k.roofline
        if not (rl.intensity and rl.achieved_flops_per_s):
            continue
        assert xlo <= math.log10(rl.intensity) <= xhi
        if isinstance(rl.limiting_precision, str) and peaks.get(rl.limiting_precision):
            assert math.log10(peaks[rl.limiting_precision]) <= yhi  # its roof is drawn
    # no frame wider than the points need: a decade of margin at most beyond the points and their roofs' ridges
    bw = view.report.device.peak_dram_bytes_per_s
    xs = [k.roofline.intensity for k in view.kernels if k.roofline.intensity and k.roofline.achieved_flops_per_s]
    own = {
        k.roofline.limiting_precision for k in view.kernels if k.roofline.intensity and k.roofline.achieved_flops_per_s
    }
    ridges = [peaks[p] / bw for p in own if isinstance(p, str) and peaks.get(p)]
    placed = [k for k in view.kernels if k.roofline.intensity and k.roofline.achieved_flops_per_s]
    xs += [  # the L2 and L1 intensities the chart marks, for the kernels with the most time
        h["intensity"]
        for k in placed[:MARKED]
        for h in k.roofline.hierarchy
        if h.get("level") in LEVELS and (h.get("intensity") or 0) > 0
    ]
    assert xlo >= math.floor(math.log10(min(xs + ridges))) - 1
    assert xhi <= math.ceil(math.log10(max(xs + ridges))) + 1


def test_torch_trains_frame_is_no_longer_the_devices_every_roof(typed):
    """Its kernels run in FP32: the frame stops at their roof (no axis up to the FP8 tensor peak, none out to 10⁴)."""
    chart = roofline_chart(report_view(typed("torch_train")), None)
    assert chart.span[1] <= 3 and chart.span[3] <= 14  # up to 1000 FLOP/byte and 100 TFLOP/s
    assert not any("FP8" in label.text for label in chart.labels)


def test_the_hover_says_time_flops_intensity_and_the_limiting_roof(typed):
    chart = roofline_chart(report_view(typed("torch_train")), None)
    placed = [p for p in chart.points if "FLOP/byte" in p.title]
    assert placed
    for p in placed:
        assert re.search(r"of GPU time", p.title) and "FLOP/s at" in p.title and "limiting roof: " in p.title
    strip = [p for p in chart.points if "no FLOPs" in p.title]
    assert all("limiting roof: DRAM" in p.title for p in strip)


def test_a_point_that_would_hide_under_another_is_drawn_beside_it(typed):
    data = copy.deepcopy(typed("flaws").to_dict())
    twin = copy.deepcopy(data["kernels"][4])
    twin.update(id="twin", name="twin_kernel", demangled="twin_kernel")
    data["kernels"].insert(5, twin)
    chart = roofline_chart(report_view(typed_result(data)), None)
    a = next(p for p in chart.points if p.href == f"#{data['kernels'][4]['id']}")
    b = next(p for p in chart.points if p.href == "#twin")
    assert b.moved is not None and (b.moved.x1, b.moved.y1) == (a.cx, a.cy)
    assert math.hypot(float(a.cx) - float(b.cx), float(a.cy) - float(b.cy)) >= 0.6 * (float(a.r) + float(b.r))
    assert f"drawn beside {a.label}" in b.title


@pytest.mark.parametrize("name", CHARTED)
def test_each_point_names_its_roofs_as_the_lines_that_draw_them(typed, name):
    view = report_view(typed(name))
    chart = roofline_chart(view, None)
    drawn = {key for line in chart.ceilings for key in line.roof.split()} | {r.level for r in chart.level_roofs}
    assert "dram" in drawn
    for p in chart.points:
        keys = p.roofs.split()
        assert keys[0] == "dram" and len(p.roof_names.split(", ")) == len(keys)
        assert any(key in drawn for key in keys)
    page = render_html(typed(name))
    main = page[page.index('<svg id="roofline-chart"') : page.index("</svg>")]
    assert main.count(' data-roofs="') == len(chart.points)
    assert len(re.findall(r'<line class="ceil-[^"]*"[^>]* data-roof="', main)) == len(chart.ceilings) + len(
        chart.level_roofs
    )


def test_the_missing_sections_are_named_once(typed):
    """A report from another GPU without a section the analysis uses: the warning names it, and the page's warning
    box once listed it a second time ("Sections missing from the report: ...")."""
    result = typed("foreign/panjd123+cutlass__report")
    missing = result.report.missing_sections
    assert missing
    page = render_html(result).split('<script type="application/json"')[0]  # the embedded result aside
    assert page.count(missing[0]) == 1, page.count(missing[0])
    assert "Sections missing from the report" not in page
