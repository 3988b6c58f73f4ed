"""Where the roofline chart's points crowd, a second chart zoomed into that region, for the HTML page to show under
the first in a closed `<details>` (it reads without JavaScript: the summary opens it, and the dashed box that marks
the region on the first chart links into it, which opens it in browsers that open a `<details>` on a link to its
content).

A region is crowded when points in it could not put their label beside them (a leader line, or no label at all).
The zoomed region keeps the first chart's decades-per-pixel ratio of x to y, so the roofs keep their slopes, and is
at least ZOOM_MIN times narrower, else it would show nothing new.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ncuadvisor.render.chart import WIDE, Box, Chart, Frame, roofline_chart
from ncuadvisor.render.view import Result
from ncuadvisor.units import fmt_si

ZOOM = 3.0  # the region first looked for spans this fraction of each axis
ZOOM_MIN = 1.8  # a zoom that magnifies less shows nothing new
MARGIN = 0.12  # room around the crowded points, as a fraction of the region looked for (labels sit inside)


@dataclass(frozen=True)
class Zoom:
    chart: Chart  # the zoomed chart
    main: Chart  # the first chart, with the region marked
    kernels: int  # points inside the region
    factor: float  # how much narrower the region is than the first chart
    x_text: str  # the region's ranges in words: "0.02–0.5 FLOP/byte"
    y_text: str


def _points(chart: Chart) -> list[tuple[float, float, bool]]:
    """The plot's points (the no-FLOP strip left out) in log10 axis units, each with whether its label was crowded."""
    xlo, xhi, ylo, yhi = chart.span
    px0, py0 = float(chart.plot.x), float(chart.plot.y)
    pw, ph = float(chart.plot.w), float(chart.plot.h)
    out = []
    for p in chart.points:
        cx, cy = float(p.cx), float(p.cy)
        if cx < px0:
            continue  # in the strip
        lx = xlo + (cx - px0) / pw * (xhi - xlo)
        ly = yhi - (cy - py0) / ph * (yhi - ylo)
        out.append((lx, ly, not p.label or p.leader is not None))
    return out


def crowded_span(chart: Chart) -> tuple[float, float, float, float] | None:
    """The region (log10 x from, x to, y from, y to) around the most crowded points, or None where none crowd."""
    xlo, xhi, ylo, yhi = chart.span
    wx, wy = (xhi - xlo) / ZOOM, (yhi - ylo) / ZOOM
    pts = _points(chart)
    best: tuple[int, int, list[tuple[float, float, bool]]] | None = None
    for cx, cy, crowded in pts:
        if not crowded:
            continue
        inside = [p for p in pts if abs(p[0] - cx) <= wx / 2 and abs(p[1] - cy) <= wy / 2]
        score = (sum(p[2] for p in inside), len(inside))
        if best is None or score > best[:2]:
            best = (score[0], score[1], inside)
    if best is None or best[1] < 2:
        return None
    inside = best[2]
    ratio = (yhi - ylo) / (xhi - xlo)
    for _ in range(4):  # grown until every point in the region has the margin around it
        bx0, bx1 = min(p[0] for p in inside), max(p[0] for p in inside)
        by0, by1 = min(p[1] for p in inside), max(p[1] for p in inside)
        hx = max((bx1 - bx0) / 2, (by1 - by0) / 2 / ratio) + MARGIN * wx
        hy = hx * ratio
        # centred on the points, kept inside the first chart's ranges
        mx = min(max((bx0 + bx1) / 2, xlo + hx), xhi - hx)
        my = min(max((by0 + by1) / 2, ylo + hy), yhi - hy)
        span = (mx - hx, mx + hx, my - hy, my + hy)
        more = [p for p in pts if span[0] <= p[0] <= span[1] and span[2] <= p[1] <= span[3]]
        if len(more) == len(inside):
            break
        inside = more
    if (xhi - xlo) / (2 * hx) < ZOOM_MIN:
        return None
    return span


def _range(lo: float, hi: float, unit: str, si: bool) -> str:
    """A region's range on one axis, two digits each end: '0.029–0.9 FLOP/byte', '24 G–1.3 T FLOP/s'."""
    a, b = (float(f"{10.0**e:.2g}") for e in (lo, hi))
    return f"{fmt_si(a)}–{fmt_si(b)} {unit}" if si else f"{a:g}–{b:g} {unit}"


def zoomed_chart(view: Result, limit: int | None, main: Chart, frame: Frame = WIDE) -> Zoom | None:
    """The zoomed chart of the region where `main`'s points crowd, and `main` with that region marked, both in
    `main`'s frame; None where no points crowd."""
    span = crowded_span(main)
    if span is None:
        return None
    chart = roofline_chart(view, limit, span, frame)
    if len(chart.points) < 2:
        return None
    xlo, xhi, ylo, yhi = main.span
    px0, py0, pw, ph = float(main.plot.x), float(main.plot.y), float(main.plot.w), float(main.plot.h)
    bx0 = px0 + (span[0] - xlo) / (xhi - xlo) * pw
    bx1 = px0 + (span[1] - xlo) / (xhi - xlo) * pw
    by0 = py0 + (yhi - span[3]) / (yhi - ylo) * ph
    by1 = py0 + (yhi - span[2]) / (yhi - ylo) * ph
    box = Box(f"{bx0:.1f}", f"{by0:.1f}", f"{bx1 - bx0:.1f}", f"{by1 - by0:.1f}")
    return Zoom(
        chart=chart,
        main=replace(main, zoom_box=box),
        kernels=len(chart.points),
        factor=(xhi - xlo) / (span[1] - span[0]),
        x_text=_range(span[0], span[1], "FLOP/byte", False),
        y_text=_range(span[2], span[3], "FLOP/s", True),
    )
