"""The HTML report's roofline chart: SVG primitives (coordinates as text) for a log-log plot of a report view.

Plotting lives with the renderers: the chart's coordinates are the one thing the HTML renderer computes. Kernels with
FLOPs are points at (intensity, FLOP/s) under the DRAM slope and the FLOP ceilings; kernels without FLOPs but with a
DRAM rate sit in a strip at the left edge, by their share of the DRAM peak; the rest are listed as not placed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ncuadvisor.render import bound_class
from ncuadvisor.render.chart_levels import (
    LEVELS,
    MARKED,
    LevelMark,
    LevelRoof,
    level_marks,
    level_peaks,
    level_roofs,
)
from ncuadvisor.render.chart_place import Rect, Turned, label_box, nearest, overlap, place_labels, segment_box
from ncuadvisor.render.view import Device, Kernel, Result
from ncuadvisor.units import fmt_decade, fmt_ns, fmt_num, fmt_pct, fmt_rate, fmt_si, fmt_x, number


@dataclass(frozen=True)
class Frame:
    """The chart's size and margins, in SVG units (px where the chart is shown at its own width, as it is on a page
    that wide: every text then keeps its CSS size, 11 px and up)."""

    w: int
    h: int
    top: int
    bottom: int
    y_ticks: int  # room left of the plot for the y tick labels and the axis title
    right: int  # room right of the plot for the ceiling labels (a narrow frame writes them inside the plot)
    strip_x: int  # the "no FLOPs" strip at the left edge: where it starts, its width, the gap after it
    strip_w: int
    strip_gap: int
    x_title: str
    y_title: str
    strip_lines: tuple[str, ...]  # the strip's caption, a line each
    r_scale: float = 1.0  # the points' radii, scaled

    @property
    def roof_labels_inside(self) -> bool:
        return self.right < 100


# a wide page; and a phone (390 px: the chart box is 360 px wide, so the chart is drawn at 360 and its text keeps
# its size instead of shrinking to a third)
WIDE = Frame(
    1120, 470, 24, 62, 64, 210, 46, 84, 18, "arithmetic intensity (FLOP per DRAM byte)", "performance (FLOP/s)",
    ("no FLOPs", "(memory only)", "y: % of DRAM peak"),
)  # fmt: skip
PHONE = Frame(
    360, 420, 14, 46, 50, 16, 36, 32, 8, "intensity (FLOP per DRAM byte)", "FLOP/s", ("no", "FLOPs"), r_scale=0.6
)
W, H = WIDE.w, WIDE.h
MAX_DECADES = 10
MIN_DECADES = 2  # an axis spans at least this many decades, however close the points
LABEL_GAP = 13  # min vertical distance between ceiling labels
SHORT_COST = 25  # a ceiling label's value alone costs as much as 2.5 points near its full text (10 each)
NEAR = 24  # px around a ceiling label (inside a narrow plot) where points count against its spot: their labels go there
ROOF_CHAR_W = 6.8  # px per character of an 11.5 px ceiling label (a wide estimate)
SLOPE_CHAR_W = 7.4  # px per character of the DRAM slope's 11.5 px semibold label (Chromium's system-ui: 7.33)
SLOPE_SPOTS = (0.3, 0.45, 0.6, 0.75, 0.15)  # where along the DRAM slope its label may sit, the first preferred
ARROWS = 3  # headroom arrows for the kernels with the most time
ARROW_MIN_HEADROOM = 1.6  # no arrow for a kernel this close to its roof: ROOF001's at-roofline threshold
ARROW_AGREE = 0.05  # an arrow only where roof ÷ point is the card's headroom within this


@dataclass(frozen=True)
class Line:
    x1: str
    y1: str
    x2: str
    y2: str
    cls: str = ""
    roof: str = ""  # the roof the line draws, as the keys a point's `roofs` names ("dram", "fp32 fp16"), else ""
    title: str = ""  # the label of a roof whose label found no room: the line's tooltip instead


@dataclass(frozen=True)
class Label:
    x: str
    y: str
    text: str
    anchor: str
    transform: str = ""
    cls: str = ""
    roof: str = ""  # the roof the label names (a ceiling's label), else ""
    title: str = ""  # the full text of a label shortened to its value for want of room: its tooltip


@dataclass(frozen=True)
class Box:
    x: str
    y: str
    w: str
    h: str


@dataclass(frozen=True)
class Point:
    """One kernel's dot: area by its time share, colour by its bound, a link to its card, a tooltip."""

    cx: str
    cy: str
    r: str
    cls: str
    label: str  # "" when no free spot was near: the label is listed under the chart instead
    lx: str
    ly: str
    leader: Line | None  # from the point's edge to a label placed further out
    href: str
    title: str
    roofs: str = ""  # the kernel's roofs, as the keys of the lines that draw them ("dram fp32 l2 l1")
    roof_names: str = ""  # the same in words ("DRAM, FP32")
    name: str = ""  # "#3 kernel_name", for the note that a click on the point shows
    moved: Line | None = None  # from where the kernel sits to where it is drawn, when it would hide another point


@dataclass(frozen=True)
class Arrow:
    """From a kernel's point up to its roof at the same intensity: the headroom it has, as a ratio."""

    line: Line
    text: str  # "" where no spot beside the arrow was free: the arrow alone (its card says the headroom)
    tx: str
    ty: str
    of: str = ""  # the kernel's number, "#3"


@dataclass(frozen=True)
class StripTick:
    y: str
    ty: str
    text: str


@dataclass(frozen=True)
class Strip:
    x: str
    y: str
    w: str
    h: str
    cx: str
    label_y: str
    ticks: list[StripTick]
    lines: tuple[str, ...] = ("no FLOPs",)  # the caption under the strip, a line each


@dataclass(frozen=True)
class Shown:
    """How many kernels the chart places of how many, and their share of GPU time (a big report)."""

    count: int
    total: int
    share: float


@dataclass(frozen=True)
class Chart:
    w: int
    h: int
    plot: Box
    x_label: Label
    y_label: Label
    grid: list[Line]
    ticks: list[Label]
    ceilings: list[Line]
    labels: list[Label]
    points: list[Point]
    arrows: list[Arrow]
    level_roofs: list[LevelRoof]  # L2 and L1 slopes, when the result holds the memory hierarchy
    level_marks: list[LevelMark]
    unlabelled: list[Kernel]  # points whose label found no free spot near them
    clock_hz: float | None  # the one SM clock of the ceilings and the points
    off_pipe: list[Kernel]  # placed kernels whose limiter is not a FLOP pipe or a memory level
    strip: Strip | None
    unplaced: list[Kernel]
    empty: bool
    no_ceilings: bool
    shown: Shown | None
    span: tuple[float, float, float, float]  # the axes' ranges, log10: x from, x to, y from, y to
    zoom_box: Box | None = None  # the crowded region that a zoomed chart below shows


def _peak_label(keys: list[str]) -> str:
    """['tensor_fp16', 'tensor_bf16'] -> 'FP16/BF16 tensor'; ['fp32', 'tensor_fp64'] -> 'FP32, FP64 tensor'."""
    plain = [k.upper().replace("_", " ") for k in keys if not k.startswith("tensor_")]
    tensor = [k[len("tensor_") :].upper().replace("_", " ") for k in keys if k.startswith("tensor_")]
    parts = (["/".join(plain)] if plain else []) + (["/".join(tensor) + " tensor"] if tensor else [])
    return ", ".join(parts)


def _roofs(device: Device) -> list[tuple[float, str]]:
    """Every positive FLOP peak, equal peaks merged into one labelled roof, lowest first."""
    return [(v, label) for v, label, _ in _keyed_roofs(device)]


def _keyed_roofs(device: Device) -> list[tuple[float, str, str]]:
    """`_roofs`, each with the precisions it stands for, space-separated ("fp16 bf16")."""
    vals = [(v, str(k)) for k, v in ((k, number(v)) for k, v in device.peak_flops_per_s.items()) if v and v > 0]
    vals.sort(key=lambda t: t[0])  # stable: equal peaks keep the device's order
    merged: list[tuple[float, list[str]]] = []
    for v, k in vals:
        if merged and abs(v - merged[-1][0]) <= 1e-3 * v:
            merged[-1][1].append(k)
        else:
            merged.append((v, [k]))
    return [(v, _peak_label(keys), " ".join(keys)) for v, keys in merged]


def _tick_box(t: Label) -> Rect:
    x, y = float(t.x), float(t.y)
    w = 6.5 * len(t.text)
    x = x - w if t.anchor == "end" else x - w / 2 if t.anchor == "middle" else x
    return label_box(x, y, "") if not t.text else Rect(x, y - 11, x + w, y + 3)


def _slope_box(cx: float, cy: float, angle: float, text: str) -> Turned:
    """The box of a label of `text` (SLOPE_CHAR_W a character, 13 px high) whose baseline is centred at (cx, cy),
    turned by `angle` degrees about that point (the text's middle is 4 px above its baseline)."""
    a = math.radians(angle)
    return Turned(cx + 4 * math.sin(a), cy - 4 * math.cos(a), SLOPE_CHAR_W * len(text), 13.0, angle)


def _tick_values(lo: float, hi: float) -> list[tuple[float, bool]]:
    """The ticks of a log axis from 10**lo to 10**hi: every decade, and 2× and 5× between them on a short axis (a
    zoomed chart); each value with whether it is a decade."""
    out = []
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        for m in (1, 2, 5) if hi - lo < 2.5 else (1,):
            v = m * 10.0**e
            if lo - 1e-9 <= math.log10(v) <= hi + 1e-9:
                out.append((v, m == 1))
    return out


def _x_tick(v: float, decade: bool) -> str:
    e = math.floor(math.log10(v) + 1e-9)
    return fmt_decade(e, 1 if decade else round(v / 10.0**e))


def _arrow_text(k: Kernel) -> str:
    return f"#{k.index} {fmt_x(k.headroom)} to roof"


def _f(v: float) -> str:
    return f"{v:.1f}"


def _radius(k: Kernel, scale: float = 1.0) -> float:
    """A point's radius: its area grows with the kernel's share of the time (`scale`: a narrow frame's smaller)."""
    return scale * (4 + 10 * math.sqrt(max(0.0, min(1.0, number(k.time_share) or 0.0))))


def _kernel_roofs(k: Kernel, strip: bool = False) -> tuple[str, str]:
    """The keys of a kernel's roofs (its DRAM slope, its precision's FLOP roof, its L2 and L1 slopes when the result
    holds them) and the same in words."""
    keys, words = ["dram"], ["DRAM"]
    prec = k.roofline.limiting_precision
    if isinstance(prec, str) and prec and not strip:
        keys.append(prec)
        words.append(_peak_label([prec]))
    levels = {str(h.get("level")) for h in k.roofline.hierarchy}
    for level in ("l2", "l1"):
        if level in levels:
            keys.append(level)
            words.append(level.upper())
    return " ".join(keys), ", ".join(words)


def _hover(k: Kernel) -> str:
    """The time a point's kernel takes: total, share and launches."""
    launches = number(k.launches)
    per = f", {launches:,.0f} launches" if launches and launches > 1 else ""
    return f"{fmt_ns(k.duration_ns)} ({fmt_pct(k.time_share)} of GPU time{per})"


def _point(
    k: Kernel, cx: float, cy: float, extra: str, cls: str = "", strip: bool = False, r_scale: float = 1.0
) -> Point:
    name = k.demangled or k.name or "?"
    shape = f"grid {k.grid} block {k.block}\n" if k.grid else ""
    if k.roofline.executed_reason:  # the executed floor, where it is well above the needed one
        extra += f"\nas executed: {k.roofline.executed_reason}"
    head = number(k.headroom)
    extra += f"\n{k.bound or 'unknown'} bound" + (f", headroom {fmt_x(head)}" if head is not None else "")
    roofs, roof_names = _kernel_roofs(k, strip)
    return Point(
        cx=_f(cx),
        cy=_f(cy),
        r=_f(_radius(k, r_scale)),
        cls=(bound_class(k.bound) + " " + cls).strip(),
        label=f"#{k.index}",
        lx="",
        ly="",
        leader=None,
        href=f"#{k.anchor}",
        title=f"#{k.index} {name}\n{shape}{_hover(k)}\n{extra}",
        roofs=roofs,
        roof_names=roof_names,
        name=f"#{k.index} {k.shown_name or name}",
    )


MEMORY_LEVELS = frozenset({"dram", "memory", "l2", "lts", "l1", "l1tex", "shared", "tex"})
FLOP_PIPES = frozenset({"fma", "fp32", "fp64", "fp16", "tensor", "dfma", "hfma"})
NOT_UNITS = frozenset({"launch", "latency"})  # limiters that are no unit at all: not marked


def _off_pipe(k: Kernel, device: Device) -> bool:
    """Whether the result names a limiter that is neither a FLOP pipe nor a memory level (issue, ALU, SFU...)."""
    lim = k.roofline.limiter
    if not isinstance(lim, str) or not lim:
        return False
    key = lim.lower()
    flop = key in FLOP_PIPES or key in device.peak_flops_per_s or key.startswith("tensor")
    return not flop and key not in MEMORY_LEVELS and key not in NOT_UNITS


def _roof_at(inten: float, bw: float | None, peak: float | None) -> float | None:
    """The roof above an intensity: min(DRAM slope, FLOP ceiling), either may be missing."""
    cands = [v for v in (bw * inten if bw else None, peak) if v]
    return min(cands) if cands else None


def _device_peak(k: Kernel, device: Device) -> float | None:
    """The device's peak FLOP/s in the kernel's limiting precision, where both are known."""
    prec = k.roofline.limiting_precision
    return number(device.peak_flops_per_s.get(prec)) if isinstance(prec, str) and prec else None


def _limiting_roof(k: Kernel, device: Device, inten: float, bw: float | None) -> str:
    """The roof over a kernel at its intensity, in words: 'DRAM 3.35 TB/s (1.2 TFLOP/s at this intensity)' or
    'FP32 67 TFLOP/s'."""
    prec = k.roofline.limiting_precision if isinstance(k.roofline.limiting_precision, str) else None
    peak = _device_peak(k, device)
    slope = bw * inten if bw else None
    if slope is not None and (peak is None or slope <= peak):
        return f"DRAM {fmt_rate(bw, 'B/s')} ({fmt_rate(slope, 'FLOP/s')} at this intensity)"
    if peak is not None and prec:
        return f"{_peak_label([prec])} {fmt_rate(peak, 'FLOP/s')}"
    return "unknown (the report lacks the device's peaks)"


def _clock_scale(k: Kernel, device: Device, inten: float, bw: float | None) -> float:
    """The factor that moves a kernel's achieved FLOP/s from its own clocks to the chart's: the device roof over the
    kernel's own roof at its intensity, so that its gap to the drawn roof is the headroom on its card."""
    rl = k.roofline
    dev_peak = _device_peak(k, device)
    own = _roof_at(inten, number(rl.peak_dram_bytes_per_s) or bw, number(rl.limiting_peak_flops_per_s) or dev_peak)
    dev = _roof_at(inten, bw, dev_peak or number(rl.limiting_peak_flops_per_s))
    return dev / own if own and dev else 1.0


def roofline_chart(
    view: Result, limit: int | None, span: tuple[float, float, float, float] | None = None, frame: Frame = WIDE
) -> Chart:
    """The log-log roofline of the first `limit` kernels (the result orders them by time; None: every kernel). With
    a `span` (log10 x from, x to, y from, y to) the chart zooms into that region: only the kernels inside it, no
    strip, no headroom arrows and no hierarchy marks (their ends may lie outside)."""
    device = view.report.device
    bw = number(device.peak_dram_bytes_per_s)
    bw = bw if bw and bw > 0 else None
    roofs = _roofs(device)
    every = view.kernels
    kernels = every if limit is None else every[:limit]
    shown = None
    if len(kernels) < len(every):
        shown = Shown(len(kernels), len(every), sum(number(k.time_share) or 0.0 for k in kernels))

    placed: list[tuple[Kernel, float, float]] = []
    strip: list[tuple[Kernel, float, float]] = []
    unplaced: list[Kernel] = []
    for k in kernels:
        rl = k.roofline
        inten, perf = number(rl.intensity), number(rl.achieved_flops_per_s)
        if inten is not None and perf is not None and inten > 0 and perf > 0:
            placed.append((k, inten, perf * _clock_scale(k, device, inten, bw)))
            continue
        peak_bw = number(rl.peak_dram_bytes_per_s) or bw
        got = number(rl.achieved_dram_bytes_per_s)
        if got is not None and peak_bw:
            strip.append((k, max(0.0, min(1.0, got / peak_bw)), got))
        else:
            unplaced.append(k)

    if span is not None:
        xlo, xhi, ylo, yhi = span
        inside = [p for p in placed if xlo <= math.log10(p[1]) <= xhi and ylo <= math.log10(p[2]) <= yhi]
        return _draw(view, every, inside, [], [], span, None, zoomed=True, frame=frame)
    span = _fitted_span(placed, device, roofs, bw)
    return _draw(view, every, placed, strip, unplaced, span, shown, zoomed=False, frame=frame)


def _fitted_span(
    placed: list[tuple[Kernel, float, float]], device: Device, roofs: list[tuple[float, str]], bw: float | None
) -> tuple[float, float, float, float]:
    """The axes' ranges (log10) fitted to the points and the roofs they are under: the points with a margin, the
    ridge and the height of each placed kernel's own FLOP roof (a roof of a precision no kernel uses is drawn only
    where it falls inside), at least MIN_DECADES and at most MAX_DECADES each way. Without points: every roof."""
    own = {
        number(device.peak_flops_per_s.get(p))
        for k, *_ in placed
        if isinstance(p := k.roofline.limiting_precision, str)
    }
    mine = [v for v, _ in roofs if v in own] or ([] if placed else [v for v, _ in roofs])
    xs = [p[1] for p in placed] + ([v / bw for v in mine] if bw else []) + _marked_intensities(placed)
    xs = [x for x in xs if x > 0] or [0.1, 1000.0]
    xlo, xhi = math.floor(math.log10(min(xs) / 2)), math.ceil(math.log10(max(xs) * 2))
    ys = [p[2] for p in placed] + mine
    top = max(ys) if ys else (bw * 10.0**xhi if bw else 1e12)
    yhi = math.ceil(math.log10(top * 1.5))
    lows = [p[2] / 2 for p in placed] or ([bw * 10.0**xlo] if bw else [])
    ylo = math.floor(math.log10(min(lows))) if lows else yhi - 5
    xlo, xhi = _widen(xlo, xhi)
    ylo, yhi = _widen(ylo, yhi)
    return max(xlo, xhi - MAX_DECADES), xhi, max(ylo, yhi - MAX_DECADES), yhi


def _marked_intensities(placed: list[tuple[Kernel, float, float]]) -> list[float]:
    """The L2 and L1 intensities the chart marks (`chart_levels.level_marks`): inside the frame, not at its edge."""
    out = []
    for k, *_ in placed[:MARKED]:
        for h in k.roofline.hierarchy:
            v = number(h.get("intensity"))
            if h.get("level") in LEVELS and v and v > 0 and math.isfinite(v):
                out.append(v)
    return out


def _widen(lo: int, hi: int) -> tuple[int, int]:
    """A range of at least MIN_DECADES, widened on both sides (the upper first)."""
    while hi - lo < MIN_DECADES:
        hi += 1
        if hi - lo < MIN_DECADES:
            lo -= 1
    return lo, hi


def _line_box(line: Line | LevelRoof) -> Turned:
    """A drawn line as the box a label must not touch: the segment and half its stroke each side."""
    return segment_box(float(line.x1), float(line.y1), float(line.x2), float(line.y2))


# what a drawn line is, for the labels that must keep off it: a roof's keys ("dram", "fp32 fp16", "l2"), OWN and the
# point's link for a line a point draws (its hierarchy marks' joins, the line from where a moved point sits: its own
# label may touch them), ARROW for a headroom arrow (its label keeps off it too)
OWN, ARROW = "point ", "arrow"
Drawn = list[tuple[str, Turned]]  # the lines drawn in the plot, each with what it draws


def _marks_lines(lmarks: list[LevelMark], points: list[Point], arrows: list[HeadroomArrow], f: Frame) -> Drawn:
    """The lines drawn that no label names: the hierarchy marks' joins, the moved points' lines, the headroom arrows."""
    out: Drawn = [(OWN + m.href, segment_box(float(m.x0), float(m.cy), float(m.cx), float(m.cy))) for m in lmarks]
    out += [(OWN + p.href, _line_box(p.moved)) for p in points if p.moved]
    out += [(ARROW, _line_box(_arrow_line(a, f))) for a in arrows]
    return out


def _arrow_line(a: HeadroomArrow, f: Frame) -> Line:
    """A headroom arrow's line: from just above its point to its roof."""
    return Line(_f(a.x), _f(a.ya - _radius(a.k, f.r_scale) - 2), _f(a.x), _f(a.yb + 3), "headroom")


# two points closer than this × the sum of their radii (circles reaching more than a tenth into each other: the GEMMs
# of one training step, each hiding part of the next) are drawn apart: the later one beside the first
APART = 0.9
APART_STEPS = 12  # moves tried outward in each direction before a point is left where it sits


def _apart(points: list[Point], plot: Rect, roofs: list[Callable[[float], float | None]] | None = None) -> list[Point]:
    """The points, each drawn where no earlier one hides it: a point whose centre sits under an earlier (bigger)
    point's is moved aside, the least distance in one of eight directions that clears every earlier point, with a
    line from where it sits and its tooltip saying so. `roofs[n](x)`: the y of point n's own roof at x (px), where
    known: a point under its roof is never moved above it (a kernel drawn over its roof reads as beating it)."""
    out: list[Point] = []

    def clash(x: float, y: float, r: float) -> Point | None:
        for q in out:
            if math.hypot(x - float(q.cx), y - float(q.cy)) < APART * (r + float(q.r)):
                return q
        return None

    def below(roof: Callable[[float], float | None] | None, x: float, y: float) -> bool:
        top = roof(x) if roof else None
        return top is None or y >= top - 0.5

    for n, p in enumerate(points):
        cx, cy, r = float(p.cx), float(p.cy), float(p.r)
        under = clash(cx, cy, r)
        if under is None:
            out.append(p)
            continue
        roof = roofs[n] if roofs and below(roofs[n], cx, cy) else None  # one drawn over its roof already: as it is
        best = None
        for step in range(1, APART_STEPS + 1):
            for dx, dy in ((1, 0), (0, -1), (-1, 0), (0, 1), (0.7, -0.7), (-0.7, -0.7), (-0.7, 0.7), (0.7, 0.7)):
                d = step * (r + 2)
                x, y = cx + dx * d, cy + dy * d
                inside = plot.x0 <= x <= plot.x1 and plot.y0 <= y <= plot.y1
                if inside and below(roof, x, y) and clash(x, y, r) is None:
                    best = (x, y)
                    break
            if best:
                break
        if best is None:
            out.append(p)
            continue
        x, y = best
        note = f"\ndrawn beside {under.label}, which sits at nearly the same spot"
        out.append(replace(p, cx=_f(x), cy=_f(y), title=p.title + note, moved=Line(p.cx, p.cy, _f(x), _f(y), "moved")))
    return out


@dataclass(frozen=True)
class Plot:
    """The plot box (x0..x1, y0 at the top..y1 at the bottom, px) and the axes' ranges (log10) that its scales map."""

    x0: float
    x1: float
    y0: float
    y1: float
    xlo: float
    xhi: float
    ylo: float
    yhi: float

    def px(self, x: float) -> float:
        lx = math.log10(x)
        return self.x0 + (min(max(lx, self.xlo), self.xhi) - self.xlo) / (self.xhi - self.xlo) * (self.x1 - self.x0)

    def py(self, y: float) -> float:
        ly = math.log10(y)
        return self.y1 - (min(max(ly, self.ylo), self.yhi) - self.ylo) / (self.yhi - self.ylo) * (self.y1 - self.y0)

    def intensity_at(self, x: float) -> float:
        """The intensity a pixel column x stands for (the inverse of `px`)."""
        return 10.0 ** (self.xlo + (x - self.x0) / (self.x1 - self.x0) * (self.xhi - self.xlo))

    @property
    def rect(self) -> Rect:
        return Rect(self.x0, self.y0, self.x1, self.y1)

    @property
    def slope_angle(self) -> float:
        """The angle of a slope of one (a bandwidth roof) on the page, in degrees."""
        return -math.degrees(
            math.atan2((self.y1 - self.y0) / (self.yhi - self.ylo), (self.x1 - self.x0) / (self.xhi - self.xlo))
        )

    def dots(self, placed: list[tuple[Kernel, float, float]], lmarks: list[LevelMark]) -> list[tuple[float, float]]:
        """Where the placed kernels and the hierarchy marks sit, px."""
        return [(self.px(i), self.py(p)) for _, i, p in placed] + [(float(m.cx), float(m.cy)) for m in lmarks]


@dataclass(frozen=True)
class Roofs:
    """The ceilings' lines and labels, and the boxes that keep the other labels off the labels."""

    ceilings: list[Line]
    labels: list[Label]
    slope_box: Turned | None
    roof_boxes: list[Rect]


@dataclass(frozen=True)
class HeadroomArrow:
    """A headroom arrow before its label is placed: the kernel, its x, from y (the point) to y (the roof), px."""

    k: Kernel
    x: float
    ya: float
    yb: float


def _draw(
    view: Result,
    every: list[Kernel],
    placed: list[tuple[Kernel, float, float]],
    strip: list[tuple[Kernel, float, float]],
    unplaced: list[Kernel],
    span: tuple[float, float, float, float],
    shown: Shown | None,
    zoomed: bool,
    frame: Frame = WIDE,
) -> Chart:
    """The chart's marks at the axes' ranges `span` (log10): grid, roofs, points, arrows, labels."""
    device = view.report.device
    bw = number(device.peak_dram_bytes_per_s)
    bw = bw if bw and bw > 0 else None
    f = frame
    x0 = (f.strip_x + f.strip_w + f.strip_gap if strip else 0) + f.y_ticks
    plot = Plot(x0, f.w - f.right, f.top, f.h - f.bottom, *span)
    grid, ticks = _grid(plot)
    lmarks = [] if zoomed else level_marks(placed, plot.px, plot.py)
    points = _apart(
        [_placed_point(plot, device, bw, k, i, p, f) for k, i, p in placed],
        plot.rect,
        [_roof_y(plot, device, bw, k) for k, _, _ in placed],
    )
    strip_box = None
    if strip:
        strip_box, in_strip = _strip(plot, strip, f)
        points += in_strip
    arrows = [] if zoomed else _headroom_arrows(plot, device, bw, placed)
    # every line the plot draws is known before any label is placed, and every label keeps off every line but its
    # own: the level slopes (their lines, before their labels), the marks' lines, then the roofs'
    level_lines, _ = _level_slopes(plot, every, placed, lmarks, None, _top_roof(device), zoomed, [])
    drawn: Drawn = [(r.level, _line_box(r)) for r in level_lines] + _marks_lines(lmarks, points, arrows, f)
    roofs = _ceilings(plot, device, bw, placed, lmarks, zoomed, f, drawn)
    drawn += [(c.roof, _line_box(c)) for c in roofs.ceilings]
    lroofs, lboxes = _level_slopes(plot, every, placed, lmarks, roofs, _top_roof(device), zoomed, drawn)
    taken = _taken(plot, roofs, ticks, lboxes, lmarks, shown, drawn)
    taken_owners = [""] * (len(taken) - len(drawn)) + [key for key, _ in drawn]
    roof_boxes = ([roofs.slope_box] if roofs.slope_box else []) + roofs.roof_boxes + lboxes
    points, unlabelled, arrow_marks = _labels(plot, placed, strip, points, arrows, taken, taken_owners, roof_boxes, f)
    x1, y0, y1 = plot.x1, plot.y0, plot.y1
    return Chart(
        w=f.w,
        h=f.h,
        plot=Box(_f(x0), _f(y0), _f(x1 - x0), _f(y1 - y0)),
        x_label=Label(_f((x0 + x1) / 2), _f(f.h - 14), f.x_title, "middle"),
        y_label=Label(_f(x0 - f.y_ticks + 14), _f((y0 + y1) / 2), f.y_title, "middle"),
        grid=grid,
        ticks=ticks,
        ceilings=roofs.ceilings,
        labels=roofs.labels,
        points=points,
        arrows=arrow_marks,
        level_roofs=lroofs,
        level_marks=lmarks,
        unlabelled=sorted(unlabelled, key=lambda k: k.index),
        clock_hz=number(device.sm_clock_hz),
        off_pipe=[k for k, *_ in placed if _off_pipe(k, device)],
        strip=strip_box,
        unplaced=unplaced,
        empty=not placed and not strip,
        no_ceilings=not roofs.ceilings,
        shown=shown,
        span=span,
    )


def _top_roof(device: Device) -> float | None:
    """The highest FLOP roof, where the bandwidth slopes end."""
    roofs = _roofs(device)
    return roofs[-1][0] if roofs else None


def _grid(plot: Plot) -> tuple[list[Line], list[Label]]:
    """The grid lines at each tick of both axes, and the tick labels."""
    grid: list[Line] = []
    ticks: list[Label] = []
    for v, decade in _tick_values(plot.xlo, plot.xhi):
        x = _f(plot.px(v))
        grid.append(Line(x, _f(plot.y0), x, _f(plot.y1)))
        ticks.append(Label(x, _f(plot.y1 + 16), _x_tick(v, decade), "middle"))
    for v, _ in _tick_values(plot.ylo, plot.yhi):
        y = _f(plot.py(v))
        grid.append(Line(_f(plot.x0), y, _f(plot.x1), y))
        ticks.append(Label(_f(plot.x0 - 6), _f(plot.py(v) + 4), fmt_si(v), "end"))
    return grid, ticks


def roof_label_box(x: float, y: float, anchor: str, text: str) -> Rect:
    """The box of a FLOP roof's label (11.5 px, ROOF_CHAR_W a character; cap height and descent) whose baseline is at
    y, anchored at x."""
    w = ROOF_CHAR_W * len(text)
    x0 = x - w if anchor == "end" else x - w / 2 if anchor == "middle" else x
    return Rect(x0, y - 10, x0 + w, y + 3)


SlopeSpot = tuple[int, float, float, Turned, str]  # points near it, where its baseline's middle sits, its box, text


@dataclass(frozen=True)
class SlopeLabel:
    """The DRAM slope before its label is placed: its line, the text, and the label's spots (points near it, where
    its centre sits, its box), in groups tried in turn (the second where every spot of the first is on a label)."""

    line: Line
    text: str
    angle: float
    spots: tuple[list[SlopeSpot], ...]

    def spot(self, blocked: Sequence[Rect | Turned]) -> SlopeSpot | None:
        """The first of the least crowded spots clear of `blocked`, or None where every spot touches one."""
        for group in self.spots:
            free = [s for s in group if not any(overlap(s[3], b) for b in blocked)]
            if free:
                return min(free, key=lambda s: s[0])
        return None


@dataclass(frozen=True)
class FlopLabels:
    """A narrow frame's FLOP roof labels as placed, their boxes, the texts that found no free spot and those (in full)
    that were shortened to their value to find one."""

    labels: list[Label]
    boxes: list[Rect]
    dropped: list[str]
    shortened: list[str]


def _ceilings(
    plot: Plot,
    device: Device,
    bw: float | None,
    placed: list[tuple[Kernel, float, float]],
    lmarks: list[LevelMark],
    zoomed: bool,
    f: Frame,
    drawn: Drawn,
) -> Roofs:
    """The DRAM slope and the FLOP roofs, with their labels: none on another label nor on a line drawn in the plot
    (`drawn`, and these roofs' own lines) but its own; a FLOP roof's label with no free spot is shortened to its value
    (its full text the label's and the line's tooltip), and a label with no free spot even so is left off, its full
    text the line's tooltip."""
    slope = _dram_slope(plot, bw, _top_roof(device), placed, lmarks) if bw else None
    flop_lines, roof_labels, roof_keys, roof_starts, roof_short = _flop_roofs(plot, device, bw, f)
    lines: Drawn = [*drawn, *((ln.roof, _line_box(ln)) for ln in ([slope.line] if slope else []) + flop_lines)]
    off_slope = [b for key, b in lines if key != "dram"]  # the lines the slope's label keeps off
    if not f.roof_labels_inside:  # right of the plot, a line each: clear of each other and of the slope's label
        flop = FlopLabels(
            [Label(_f(plot.x1 + 6), _f(y), t, "start", "", "lbl-flop", roof_keys[t]) for y, t in roof_labels],
            [roof_label_box(plot.x1 + 6, y, "start", t) for y, t in roof_labels],
            [],
            [],
        )
        spot = slope.spot([*flop.boxes, *off_slope]) if slope else None
    else:
        near = plot.dots(placed, lmarks)
        # the ceiling labels first (a few spots each), kept off where the slope's label would rather be; then the
        # slope's label clear of them. Where it finds no spot: the slope's label first and the ceilings' around it,
        # if that leaves fewer labels off (or as many, and fewer shortened)
        best = slope.spot(off_slope) if slope else None
        prefer_off = [best[3]] if best else []
        flop = _roof_labels_inside(plot, roof_labels, roof_keys, roof_starts, roof_short, near, lines, prefer_off)
        spot = slope.spot([*flop.boxes, *off_slope]) if slope else None
        if slope and best and spot is None:
            first = _roof_labels_inside(
                plot, roof_labels, roof_keys, roof_starts, roof_short, near, lines, [], [best[3]]
            )
            if (len(first.dropped), len(first.shortened)) <= (len(flop.dropped) + 1, len(flop.shortened)):
                flop, spot = first, best
    ceilings, labels = [], []
    slope_box = None
    if slope:
        text = slope.text
        if spot is not None:
            _, lx, ly, slope_box, shown_text = spot
            if not zoomed or slope_box.inside(plot.rect):  # a zoom may cut the slope too short for its label
                rotate = f"rotate({slope.angle:.1f} {lx:.1f} {ly:.1f})"
                short = shown_text != text
                labels.append(
                    Label(_f(lx), _f(ly), shown_text, "middle", rotate, "lbl-mem", "dram", text if short else "")
                )
                text = text if short else ""
        ceilings.append(replace(slope.line, title=text))
    titles = {roof_keys[t]: t for t in flop.dropped + flop.shortened}
    ceilings += [replace(line, title=titles.get(line.roof, "")) for line in flop_lines]
    return Roofs(ceilings, labels + flop.labels, slope_box, flop.boxes)


SLOPE_UNDER_SPOTS = tuple(n / 40 for n in range(2, 39))  # under the slope, every 40th of it: between the marks' joins
SLOPE_UNDER = 13.0  # a label under its slope: 13 px high, its middle 4 px above its baseline, 2.5 px off the line
SLOPE_MORE = (
    0.9,
    0.05,
    0.82,
    0.22,
    0.37,
    0.52,
    0.67,
)  # further spots along the DRAM slope, where SLOPE_SPOTS are taken


def _dram_slope(
    plot: Plot,
    bw: float,
    top_roof: float | None,
    placed: list[tuple[Kernel, float, float]],
    lmarks: list[LevelMark],
) -> SlopeLabel | None:
    """The DRAM slope's line and its label's spots along it, each with the points near it (the label sits where the
    fewest are: a third of the way up when none are); None where the slope is outside the axes' ranges."""
    px, py = plot.px, plot.py
    xa = max(10.0**plot.xlo, 10.0**plot.ylo / bw)
    xb = min(10.0**plot.xhi, (top_roof or 10.0**plot.yhi) / bw, 10.0**plot.yhi / bw)
    if xb <= xa:
        return None
    line = Line(_f(px(xa)), _f(py(bw * xa)), _f(px(xb)), _f(py(bw * xb)), "ceil-mem", "dram")
    angle = plot.slope_angle
    text = f"DRAM {fmt_rate(bw, 'B/s')}"
    dots = plot.dots(placed, lmarks)
    groups = []
    a = math.radians(angle)
    # above the line (6 px up), then under it: the text's baseline SLOPE_UNDER px off the line, across it; then the
    # same for the bandwidth alone (the full text its tooltip)
    tries = ((SLOPE_SPOTS, False), (SLOPE_MORE, False), (SLOPE_UNDER_SPOTS, True))
    for (fracs, under), shown in [(t, text) for t in tries] + [(t, fmt_rate(bw, "B/s")) for t in tries]:
        spots: list[SlopeSpot] = []
        for frac in fracs:
            xm = 10 ** (math.log10(xa) + (math.log10(xb) - math.log10(xa)) * frac)
            lx, ly = px(xm), py(bw * xm) - 6
            if under:
                lx, ly = px(xm) - SLOPE_UNDER * math.sin(a), py(bw * xm) + SLOPE_UNDER * math.cos(a)
            box = _slope_box(lx, ly, angle, shown)
            crowd = sum(box.near(x, y, 14) for x, y in dots)
            spots.append((crowd, lx, ly, box, shown))
        groups.append(spots)
    return SlopeLabel(line, text, angle, tuple(groups))


def _flop_roofs(
    plot: Plot, device: Device, bw: float | None, f: Frame
) -> tuple[list[Line], list[tuple[float, str]], dict[str, str], dict[str, float], dict[str, str]]:
    """The FLOP roofs inside the axes' ranges: their lines, their labels' (y, text) pushed apart from the bottom up,
    each label's roof keys, where each roof starts (its ridge), px, and each label shortened to its value."""
    ceilings: list[Line] = []
    roof_labels: list[tuple[float, str]] = []
    roof_keys: dict[str, str] = {}
    roof_starts: dict[str, float] = {}
    roof_short: dict[str, str] = {}
    for v, name, keys in _keyed_roofs(device):
        if not (plot.ylo <= math.log10(v) <= plot.yhi):
            continue
        xa = max(10.0**plot.xlo, v / bw) if bw else 10.0**plot.xlo
        if xa >= 10.0**plot.xhi:
            continue
        roof_y = plot.py(v)
        ceilings.append(Line(_f(plot.px(xa)), _f(roof_y), _f(plot.x1), _f(roof_y), "ceil-flop", keys))
        text = f"{name} {fmt_rate(v, '')}".rstrip() if f.roof_labels_inside else f"{name} · {fmt_rate(v, 'FLOP/s')}"
        roof_keys[text] = keys
        roof_starts[text] = plot.px(xa)
        roof_short[text] = fmt_rate(v, "")
        roof_labels.append((roof_y + 4, text) if not f.roof_labels_inside else (roof_y - 4, text))
    # ceiling labels sit right of the plot (inside it, just above their line, in a narrow frame), pushed apart so
    # none overlap: from the bottom up, each above the next
    roof_labels.sort()
    for n in range(len(roof_labels) - 2, -1, -1):
        roof_labels[n] = (min(roof_labels[n][0], roof_labels[n + 1][0] - LABEL_GAP), roof_labels[n][1])
    return ceilings, roof_labels, roof_keys, roof_starts, roof_short


def _roof_labels_inside(
    plot: Plot,
    roof_labels: list[tuple[float, str]],
    roof_keys: dict[str, str],
    roof_starts: dict[str, float],
    roof_short: dict[str, str],
    near: list[tuple[float, float]],
    lines: Drawn,
    prefer_off: list[Turned] | None = None,
    blocked: list[Turned] | None = None,
) -> FlopLabels:
    """A narrow frame's FLOP roof labels, each just above its line: at the right end, after the ridge or before it
    (where no point can be), wherever the fewest points are under the text (and off `prefer_off`); where those spots
    are all on another label, on `blocked` or on a line drawn in the plot other than its own, midway along the line or
    just under it; where none of those is clear either, the same spots for the roof's value alone (its full text the
    label's tooltip); else left off."""
    x0, x1, y0, y1 = plot.x0, plot.x1, plot.y0, plot.y1
    labels: list[Label] = []
    roof_boxes: list[Rect] = []
    dropped: list[str] = []
    shortened: list[str] = []
    for base, t in roof_labels:
        key = roof_keys[t]
        ridge = roof_starts[t]
        under = base + 4 + 14  # the baseline just under the line (the label's own line is 4 px under `base`)
        mid = (max(ridge, x0) + x1) / 2
        spots = [
            (x1 - 4, base, "end"),
            (ridge + 4, base, "start"),
            (ridge - 6, base, "end"),
        ]
        more = [(mid, base, "middle"), (x1 - 4, under, "end"), (ridge + 4, under, "start"), (mid, under, "middle")]
        others: list[Rect | Turned] = [*(blocked or []), *roof_boxes, *(b for k, b in lines if k != key)]

        def cost(e: tuple[float, float, str, Rect]) -> int:
            box = e[3]
            dots = sum(box.x0 - NEAR <= a <= box.x1 + NEAR and box.y0 - NEAR <= b <= box.y1 + NEAR for a, b in near)
            return 10 * dots + sum(overlap(box, r) for r in prefer_off or [])

        # the first spots with the full text, else the further ones, else the value alone; but a spot with points
        # near (whose labels and leader lines need the room) gives way to one a step down that has none
        fits = [
            (cost(e) + 5 * n + SHORT_COST * short, n + 2 * short, text, e)
            for short, text in enumerate((t, roof_short[t]))
            for n, g in enumerate((spots, more))
            for e in ((x, y, a, roof_label_box(x, y, a, text)) for x, y, a in g)
            if e[3].inside(Rect(x0, y0 - 2, x1, y1)) and not any(overlap(e[3], b) for b in others)
        ]
        choice = None
        if fits:
            _, _, text, e = min(fits, key=lambda f: f[:2])
            choice = (text, e)
        if choice is None:
            dropped.append(t)
            continue
        text, (at, y, anchor, box) = choice
        if text != t:
            shortened.append(t)
        labels.append(Label(_f(at), _f(y), text, anchor, "", "lbl-flop", key, t if text != t else ""))
        roof_boxes.append(box)
    return FlopLabels(labels, roof_boxes, dropped, shortened)


def _roof_y(plot: Plot, device: Device, bw: float | None, k: Kernel) -> Callable[[float], float | None]:
    """The y (px) of the kernel's own roof at a pixel column x: its limiting precision's peak under the DRAM slope."""
    peak = _device_peak(k, device)

    def at(x: float) -> float | None:
        roof = _roof_at(plot.intensity_at(x), bw, peak)
        return plot.py(roof) if roof else None

    return at


def _placed_point(
    plot: Plot, device: Device, bw: float | None, k: Kernel, inten: float, perf: float, f: Frame
) -> Point:
    """A kernel with FLOPs: its point at (intensity, FLOP/s), with its limiting roof in the tooltip."""
    cx, cy = plot.px(inten), plot.py(perf)
    extra = f"{fmt_rate(perf, 'FLOP/s')} at {fmt_num(inten)} FLOP/byte\nlimiting roof: {_limiting_roof(k, device, inten, bw)}"
    off = _off_pipe(k, device)
    if off:
        extra += f"; limited by {k.roofline.limiter}, not a FLOP pipe"
    return _point(k, cx, cy, extra, "off-pipe" if off else "", r_scale=f.r_scale)


def _strip(plot: Plot, strip: list[tuple[Kernel, float, float]], f: Frame) -> tuple[Strip, list[Point]]:
    """The "no FLOPs" strip at the left edge and its points, by their share of the DRAM peak."""
    y0, y1 = plot.y0, plot.y1
    sx0, sx1 = f.strip_x, f.strip_x + f.strip_w
    strip_ticks = [StripTick(_f(y1 - s * (y1 - y0)), _f(y1 - s * (y1 - y0) + 4), fmt_pct(s)) for s in (0.0, 0.5, 1.0)]
    strip_box = Strip(
        _f(sx0), _f(y0), _f(sx1 - sx0), _f(y1 - y0), _f((sx0 + sx1) / 2), _f(y1 + 16), strip_ticks, f.strip_lines
    )
    cols = 3
    in_strip = []
    for n, (k, frac, got) in enumerate(strip):
        cx = sx0 + 14 + (n % cols) * ((sx1 - sx0 - 28) / (cols - 1))
        cy = y1 - frac * (y1 - y0)
        extra = f"no FLOPs; DRAM {fmt_rate(got, 'B/s')} ({fmt_pct(frac)} of peak)\nlimiting roof: DRAM"
        in_strip.append(_point(k, cx, cy, extra, strip=True, r_scale=f.r_scale))
    return strip_box, _apart(in_strip, Rect(sx0, y0, sx1, y1))  # kernels at one share of the peak: side by side


def _headroom_arrows(
    plot: Plot, device: Device, bw: float | None, placed: list[tuple[Kernel, float, float]]
) -> list[HeadroomArrow]:
    """The headroom arrows of the kernels with the most time that sit well under their roof."""
    arrows: list[HeadroomArrow] = []
    for k, inten, perf in placed[:ARROWS]:
        roof = _roof_at(inten, bw, _device_peak(k, device))
        head = number(k.headroom)
        ax = plot.px(inten)
        clear = all(abs(ax - a.x) > 8 for a in arrows)  # one arrow per column: another would hide under it
        # only where the drawn roof is the kernel's floor (not an issue, lane or launch floor the chart has no line
        # for): then the arrow's length is the headroom on its card
        drawn = roof is not None and head is not None and abs(roof / perf - head) <= ARROW_AGREE * head
        leave = any(f.at_roofline for f in k.findings)  # the report says to leave it: no arrow urges otherwise
        if (
            roof
            and head
            and head >= ARROW_MIN_HEADROOM
            and plot.py(roof) < plot.py(perf) - 12
            and clear
            and drawn
            and not leave
        ):
            arrows.append(HeadroomArrow(k, ax, plot.py(perf), plot.py(roof)))
    return arrows


def _level_slopes(
    plot: Plot,
    every: list[Kernel],
    placed: list[tuple[Kernel, float, float]],
    lmarks: list[LevelMark],
    roofs: Roofs | None,
    top_roof: float | None,
    zoomed: bool,
    drawn: Drawn,
) -> tuple[list[LevelRoof], list[Rect | Turned]]:
    """The L2 and L1 slopes, when the result holds the memory hierarchy, and their labels' boxes: each label off the
    roofs' labels and off every line in `drawn` but its own slope (without `roofs`: the lines alone matter)."""
    lroofs, lboxes = level_roofs(
        level_peaks(every),
        top_roof,
        (plot.xlo, plot.xhi, plot.ylo, plot.yhi),
        plot.px,
        plot.py,
        plot.slope_angle,
        plot.dots(placed, lmarks),
        (([roofs.slope_box] if roofs.slope_box else []) + roofs.roof_boxes) if roofs else [],
        plot.rect,
        drawn,
    )
    if zoomed:  # a slope cut short by the zoom may leave no room for its label: the first chart has it
        lroofs = [
            r if b.inside(plot.rect) or not r.text else replace(r, text="", title=r.text)
            for r, b in zip(lroofs, lboxes)
        ]
    return lroofs, lboxes


def _labels(
    plot: Plot,
    placed: list[tuple[Kernel, float, float]],
    strip: list[tuple[Kernel, float, float]],
    points: list[Point],
    arrows: list[HeadroomArrow],
    taken: list[Rect | Turned],
    taken_owners: list[str],
    roof_boxes: list[Rect | Turned],
    f: Frame,
) -> tuple[list[Point], list[Kernel], list[Arrow]]:
    """The points' and arrows' labels, the biggest kernels first, each box clear of `taken` and of the other labels,
    and each leader line clear of the roofs' labels (`roof_boxes`) and the other labels. Returns the labelled points,
    the kernels whose label found no free spot, and the arrows."""
    order = sorted(range(len(points)), key=lambda i: -float(points[i].r))
    bounds = Rect(f.strip_x if strip else plot.x0, plot.y0, plot.x1, plot.y1)
    items = [(float(points[i].cx), float(points[i].cy), float(points[i].r), points[i].label) for i in order]
    items += [(a.x, (a.ya + a.yb) / 2, 0.0, _arrow_text(a.k)) for a in arrows]
    leaders = [True] * len(order) + [False] * len(arrows)  # an arrow's label has no leader line
    owners = [OWN + points[i].href for i in order] + [""] * len(arrows)
    spots = place_labels(items, bounds, taken, roof_boxes, leaders, owners, taken_owners)
    unlabelled: list[Kernel] = []
    by_index = {f"#{k.index}": k for k, *_ in placed + strip}
    points = list(points)
    for n, i in enumerate(order):
        p, spot = points[i], spots[n]
        if spot is None:
            unlabelled.append(by_index[p.label])
            points[i] = replace(p, label="")
            continue
        leader = None
        if spot.leader:
            bx, by = nearest(spot.box, float(p.cx), float(p.cy))
            leader = Line(p.cx, p.cy, _f(bx), _f(by), "leader")
        points[i] = replace(p, lx=_f(spot.x), ly=_f(spot.y), leader=leader)
    arrow_marks = []
    for a, spot in zip(arrows, spots[len(order) :]):
        line = _arrow_line(a, f)
        tx, ty = (spot.x, spot.y) if spot else (-1.0, -1.0)
        arrow_marks.append(Arrow(line, _arrow_text(a.k) if spot else "", _f(tx), _f(ty), f"#{a.k.index}"))
    return points, unlabelled, arrow_marks


def _taken(
    plot: Plot,
    roofs: Roofs,
    ticks: list[Label],
    lboxes: list[Rect | Turned],
    lmarks: list[LevelMark],
    shown: Shown | None,
    drawn: Drawn,
) -> list[Rect | Turned]:
    """The boxes no point or arrow label may touch: tick labels, roof labels, marks, and every line drawn in the plot
    (the roofs, the marks' joins, the moved points' lines, the arrows' lines: no label struck through, its own arrow's
    label included)."""
    slope = [roofs.slope_box] if roofs.slope_box else []
    taken: list[Rect | Turned] = [*(_tick_box(t) for t in ticks), *slope, *lboxes, *roofs.roof_boxes]
    taken += [Rect(float(m.cx) - 4, float(m.cy) - 4, float(m.cx) + 4, float(m.cy) + 4) for m in lmarks]
    if shown:
        taken.append(Rect(plot.x0, plot.y0, min(plot.x1, plot.x0 + 380), plot.y0 + 22))
    return taken + [b for _, b in drawn]  # last: what drew each is known by its place from the end
