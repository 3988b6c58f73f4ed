"""The roofline chart's memory hierarchy, when the result holds it (each kernel's `roofline.hierarchy`: bytes moved
at L1, L2 and DRAM with each level's peak bandwidth): a roof per level, and for the kernels with the most time a mark
at each level's intensity, joined to the kernel's DRAM point (the way Nsight Compute draws its hierarchical roofline).

A kernel far right of its DRAM point at L2 or L1 reuses data in that cache; one whose L1 or L2 mark sits on that
level's roof is bound there, not by DRAM.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ncuadvisor.render.chart_place import Rect, Turned, overlap
from ncuadvisor.render.view import Kernel
from ncuadvisor.units import fmt_num, fmt_rate, number

LEVELS = ("l2", "l1")  # drawn besides DRAM, whose roof and points the chart always has
LEVEL_NAMES = {"l1": "L1/shared", "l2": "L2"}
MARKED = 5  # kernels (the most time first) whose levels are marked


@dataclass(frozen=True)
class LevelRoof:
    level: str
    x1: str
    y1: str
    x2: str
    y2: str
    text: str
    tx: str
    ty: str
    angle: str  # the slope's angle on the page, degrees
    title: str = ""  # the label that found no room beside the others: the line's tooltip instead


@dataclass(frozen=True)
class LevelMark:
    level: str
    cx: str
    cy: str
    x0: str  # the kernel's DRAM point, where the joining line starts
    title: str
    href: str = ""  # the kernel's card: which point the mark belongs to


def _f(v: float) -> str:
    return f"{v:.1f}"


def level_peaks(kernels: list[Kernel]) -> dict[str, float]:
    """Each level's peak bytes/s, the median over the kernels that report it (clocks vary)."""
    seen: dict[str, list[float]] = {}
    for k in kernels:
        for h in k.roofline.hierarchy:
            peak = number(h.get("peak_bytes_per_s"))
            if h.get("level") in LEVELS and peak and peak > 0:
                seen.setdefault(str(h.get("level")), []).append(peak)
    return {lvl: statistics.median(v) for lvl, v in seen.items()}


SLOPE_SPOTS = (0.1, 0.4, 0.25, 0.55, 0.7)  # where along its slope a level's label may sit
SLOPE_MORE = (0.85, 0.02, 0.18, 0.33, 0.48, 0.62, 0.78)  # further spots, where those are all on another label


def _turned_box(tx: float, ty: float, angle: float, text: str) -> Turned:
    """The box of a start-anchored label (6.2 px a character, 12 px high) whose baseline starts at (tx, ty), turned by
    `angle` degrees about that point (the text's middle is 4 px above its baseline)."""
    a = math.radians(angle)
    w = 6.2 * len(text)
    return Turned(
        tx + math.cos(a) * w / 2 + 4 * math.sin(a), ty + math.sin(a) * w / 2 - 4 * math.cos(a), w, 12.0, angle
    )


def level_roofs(
    peaks: dict[str, float],
    top_roof: float | None,
    span: tuple[float, float, float, float],
    px: Callable[[float], float],
    py: Callable[[float], float],
    angle: float,
    dots: list[tuple[float, float]],
    avoid: list[Rect | Turned],
    plot: Rect | None = None,
    lines: Sequence[tuple[str, Rect | Turned]] = (),
) -> tuple[list[LevelRoof], list[Rect | Turned]]:
    """A slope per level from the left edge up to the highest FLOP roof, labelled along it near its low end (each
    level further along, so parallel slopes never stack their labels; inside `plot` where a spot is); the label
    boxes. A label is on none of `avoid` and none of `lines` (what each line draws, with its box) but its own slope's;
    where every spot is, the slope's tooltip says it instead."""
    xlo, xhi, ylo, yhi = span
    roofs: list[LevelRoof] = []
    boxes: list[Rect | Turned] = []
    for n, level in enumerate(LEVELS):
        bw = peaks.get(level)
        if not bw:
            continue
        xa = max(10.0**xlo, 10.0**ylo / bw)
        xb = min(10.0**xhi, (top_roof or 10.0**yhi) / bw, 10.0**yhi / bw)
        if xb <= xa:
            continue
        text = f"{LEVEL_NAMES[level]} {fmt_rate(bw, 'B/s')}"
        crossing = [b for key, b in lines if key != level]
        # along the slope where the fewest points and no other label are; the first of the least crowded spots
        best: tuple[int, float, float, Rect | Turned] | None = None
        for k, frac in enumerate(SLOPE_SPOTS[n:] + SLOPE_SPOTS[:n] + SLOPE_MORE):
            if k == len(SLOPE_SPOTS) and best is not None and best[0] < 1000:
                break  # the further spots only where every first one is on another label
            xm = 10 ** (math.log10(xa) + (math.log10(xb) - math.log10(xa)) * frac)
            tx, ty = px(xm), py(bw * xm) - 5
            turned = _turned_box(tx, ty, angle, text)
            crowd = sum(turned.near(x, y, 6) for x, y in dots)
            crowd += 1000 * sum(overlap(turned, b) for b in avoid + boxes + crossing)
            crowd += 100 * (plot is not None and not turned.inside(plot))  # a label off the plot runs over its frame
            if best is None or crowd < best[0]:
                best = (crowd, tx, ty, turned)
        assert best is not None
        crowd, tx, ty, box = best
        title = ""
        if crowd >= 1000:  # on another label wherever it goes (a narrow chart): the slope's tooltip says it instead
            text, title, box = "", text, Rect(tx, ty, tx, ty)
        roofs.append(
            LevelRoof(
                level, _f(px(xa)), _f(py(bw * xa)), _f(px(xb)), _f(py(bw * xb)), text, _f(tx), _f(ty), _f(angle), title
            )
        )
        boxes.append(box)
    return roofs, boxes


def level_marks(
    placed: list[tuple[Kernel, float, float]], px: Callable[[float], float], py: Callable[[float], float]
) -> list[LevelMark]:
    """For the first MARKED placed kernels: a mark at each level's intensity, at the kernel's performance."""
    marks = []
    for k, inten, perf in placed[:MARKED]:
        for h in k.roofline.hierarchy:
            level, lvl_int = h.get("level"), number(h.get("intensity"))
            if level not in LEVELS or not lvl_int or lvl_int <= 0 or not math.isfinite(lvl_int):
                continue
            title = f"#{k.index} at {LEVEL_NAMES[str(level)]}: {fmt_num(lvl_int)} FLOP/byte"
            marks.append(LevelMark(str(level), _f(px(lvl_int)), _f(py(perf)), _f(px(inten)), title, f"#{k.anchor}"))
    return marks
