"""Where the roofline chart's point labels go: beside their point, never on another label or point.

Labels are placed in the order given (the kernels with the most time first), each at the first of a ring of
candidate spots around its point, then at rings further out with a leader line back to the point; a label that finds
no free spot is left off the chart and listed under it (the point keeps its tooltip and its link). The boxes are
estimated from the label's length at the chart's font size, with a margin, so the check holds in any browser.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

CHAR_W = 7.2  # px per character of an 11 px bold label (a wide estimate: digits and '#' in system-ui)
LABEL_H = 13.0
PAD = 1.5
# unit directions around a point: right, upper right, up, upper left, left, lower left, down, lower right; then the
# eight between them (a leader line may cross no label, so a crowded point needs more ways out)
DIRECTIONS = (
    *((1, 0), (0.7, -0.7), (0, -1), (-0.7, -0.7), (-1, 0), (-0.7, 0.7), (0, 1), (0.7, 0.7)),
    *((0.92, -0.38), (0.38, -0.92), (-0.38, -0.92), (-0.92, -0.38), (-0.92, 0.38), (-0.38, 0.92), (0.38, 0.92)),
    (0.92, 0.38),
)
UNLED = 46.0  # the furthest gap of a label drawn with no leader line (a headroom arrow's), so it reads as its mark's
RINGS = (3.0, 14.0, 28.0, 46.0, 70.0, 95.0, 120.0)  # gaps beyond the point's radius; past the first a leader line


@dataclass(frozen=True)
class Rect:
    x0: float
    y0: float
    x1: float
    y1: float

    def hits(self, o: Rect) -> bool:
        return self.x0 < o.x1 and o.x0 < self.x1 and self.y0 < o.y1 and o.y0 < self.y1

    def inside(self, o: Rect) -> bool:
        return o.x0 <= self.x0 and self.x1 <= o.x1 and o.y0 <= self.y0 and self.y1 <= o.y1


@dataclass(frozen=True)
class Turned:
    """A turned label's box as drawn: w × h about its centre (cx, cy), turned by `angle` degrees. On a steep slope the
    upright box around it (`rect`) is several times its area, and parallel slopes' labels would never fit."""

    cx: float
    cy: float
    w: float
    h: float
    angle: float

    @cached_property
    def _corners(self) -> list[tuple[float, float]]:
        a = math.radians(self.angle)
        c, s = math.cos(a), math.sin(a)
        half = ((-1, -1), (1, -1), (1, 1), (-1, 1))
        return [
            (self.cx + u * self.w / 2 * c - v * self.h / 2 * s, self.cy + u * self.w / 2 * s + v * self.h / 2 * c)
            for u, v in half
        ]

    def corners(self) -> list[tuple[float, float]]:
        return self._corners  # computed once: a label's box is tested against hundreds of others

    @cached_property
    def rect(self) -> Rect:
        xs, ys = zip(*self.corners())
        return Rect(min(xs), min(ys), max(xs), max(ys))

    def inside(self, o: Rect) -> bool:
        return self.rect.inside(o)

    def near(self, x: float, y: float, margin: float) -> bool:
        """Whether (x, y) lies within `margin` of the box (a point under the text)."""
        a = math.radians(self.angle)
        dx, dy = x - self.cx, y - self.cy
        u, v = dx * math.cos(a) + dy * math.sin(a), -dx * math.sin(a) + dy * math.cos(a)
        return abs(u) <= self.w / 2 + margin and abs(v) <= self.h / 2 + margin


LINE_HALF = 1.0  # half a drawn line's width: the roofs' strokes are 1.2 to 2 px


def segment_box(x1: float, y1: float, x2: float, y2: float) -> Turned:
    """A drawn line from (x1, y1) to (x2, y2) as a box no label may touch: the segment, LINE_HALF each side of it."""
    return Turned(
        (x1 + x2) / 2,
        (y1 + y2) / 2,
        math.hypot(x2 - x1, y2 - y1),
        2 * LINE_HALF,
        math.degrees(math.atan2(y2 - y1, x2 - x1)),
    )


def nearest(box: Rect, x: float, y: float) -> tuple[float, float]:
    """The point of `box` nearest (x, y): where a leader line from a point at (x, y) meets its label."""
    return min(max(x, box.x0), box.x1), min(max(y, box.y0), box.y1)


def _corners(b: Rect | Turned) -> list[tuple[float, float]]:
    return b.corners() if isinstance(b, Turned) else [(b.x0, b.y0), (b.x1, b.y0), (b.x1, b.y1), (b.x0, b.y1)]


def overlap(a: Rect | Turned, b: Rect | Turned) -> bool:
    """Whether two boxes, upright or turned, share more than an edge (the separating-axis test)."""
    if isinstance(a, Rect) and isinstance(b, Rect):
        return a.hits(b)
    if not (a if isinstance(a, Rect) else a.rect).hits(b if isinstance(b, Rect) else b.rect):
        return False  # apart by the upright boxes around them: no need to turn
    ca, cb = _corners(a), _corners(b)
    for poly in (ca, cb):
        for i in range(2):  # a rectangle's two edge directions; their normals are the axes to test
            (x0, y0), (x1, y1) = poly[i], poly[i + 1]
            nx, ny = y0 - y1, x1 - x0
            pa = [x * nx + y * ny for x, y in ca]
            pb = [x * nx + y * ny for x, y in cb]
            if max(pa) <= min(pb) + 1e-9 or max(pb) <= min(pa) + 1e-9:
                return False
    return True


@dataclass(frozen=True)
class Spot:
    """A label's text origin (start-anchored baseline), its box, and whether it needs a leader line."""

    x: float
    y: float
    box: Rect
    leader: bool


def label_box(x: float, y: float, text: str) -> Rect:
    """The box of a start-anchored label whose baseline starts at (x, y)."""
    return Rect(x - PAD, y - LABEL_H + 2 - PAD, x + CHAR_W * len(text) + PAD, y + 3 + PAD)


GRID_STEP = 8.0  # px between the label spots tried around a point whose rings found none
GRID_REACH = 100.0  # px from the point, at most, to a label's centre on that grid


def _bounds(b: Rect | Turned) -> Rect:
    return b.rect if isinstance(b, Turned) else b


@dataclass(frozen=True)
class _Label:
    """One label to place: its point (centre, radius), its text, and whether a leader line would be drawn to it."""

    cx: float
    cy: float
    r: float
    text: str
    leader: bool

    def spot(
        self, x: float, y: float, far: bool, bounds: Rect, blocked: list[Rect | Turned], crossed: list[Rect | Turned]
    ) -> Spot | None:
        """The spot whose text starts at (x, y), where its box is inside `bounds` and on none of `blocked`, and (if
        `far`: a leader line drawn) the leader line crosses none of `crossed`; else None."""
        box = label_box(x, y, self.text)
        if not box.inside(bounds) or any(overlap(box, b) for b in blocked):
            return None
        line = segment_box(self.cx, self.cy, *nearest(box, self.cx, self.cy)) if far and self.leader else None
        if line is not None and any(overlap(line, b) for b in crossed):
            return None
        return Spot(x, y, box, far)


def _grid_offsets() -> list[tuple[float, float, float]]:
    """The grid's offsets from a point, (distance, dx, dy), nearest first."""
    steps = int(GRID_REACH / GRID_STEP)
    out = []
    for i in range(-steps, steps + 1):
        for j in range(-steps, steps + 1):
            d = math.hypot(i * GRID_STEP, j * GRID_STEP)
            if d <= GRID_REACH:
                out.append((d, i * GRID_STEP, j * GRID_STEP))
    return sorted(out)


GRID = _grid_offsets()


def _on_grid(lb: _Label, bounds: Rect, blocked: list[Rect | Turned], crossed: list[Rect | Turned]) -> Spot | None:
    """A label spot on a grid around a crowded point, the nearest free one first (a leader line drawn to it): where
    the rings' few spots are all on a line, a label or under a leader line that would cross one, a gap between
    them often remains. Only the boxes near the point are tested, each first by the upright box around it."""
    cx, cy, w = lb.cx, lb.cy, CHAR_W * len(lb.text)
    reach = Rect(cx - GRID_REACH - w, cy - GRID_REACH - LABEL_H, cx + GRID_REACH + w, cy + GRID_REACH + LABEL_H)
    near = [(r, b) for b in blocked if (r := _bounds(b)).hits(reach)]
    near_labels = [(r, b) for b in crossed if (r := _bounds(b)).hits(reach)]
    for d, dx, dy in GRID:
        if d <= lb.r + LABEL_H / 2:
            continue
        x, y = cx + dx - w / 2, cy + dy + LABEL_H / 2 - 3
        box = label_box(x, y, lb.text)
        if not box.inside(bounds) or any(r.hits(box) and overlap(box, b) for r, b in near):
            continue
        bx, by = nearest(box, cx, cy)
        span = Rect(min(cx, bx) - 1, min(cy, by) - 1, max(cx, bx) + 1, max(cy, by) + 1)
        line = segment_box(cx, cy, bx, by)
        if any(r.hits(span) and overlap(line, b) for r, b in near_labels):
            continue
        return Spot(x, y, box, True)
    return None


def place_labels(
    points: list[tuple[float, float, float, str]],
    bounds: Rect,
    taken: list[Rect | Turned] | None = None,
    labels: list[Rect | Turned] | None = None,
    leaders: list[bool] | None = None,
    owners: list[str] | None = None,
    taken_owners: list[str] | None = None,
) -> list[Spot | None]:
    """A spot for each (cx, cy, r, text), in order, or None where no free spot is near; `taken` boxes are avoided.
    Where `leaders[n]` (every point by default) a label placed further out has a leader line drawn back to its point:
    that line crosses none of `labels` (the chart's other labels) nor a label placed before, and no later label sits
    on it. `taken_owners[i]` names what drew `taken[i]` and `owners[n]` what point n is: a label may touch what its
    own point drew (the line from where a moved point sits, its hierarchy marks' joins)."""
    blocked: list[Rect | Turned] = list(taken or [])
    whose = list(taken_owners or [""] * len(blocked))
    blocked += [Rect(cx - r, cy - r, cx + r, cy + r) for cx, cy, r, _ in points]
    crossed: list[Rect | Turned] = list(labels or [])  # the boxes a leader line must not cross
    spots: list[Spot | None] = []
    for n, (cx, cy, r, text) in enumerate(points):
        drawn = leaders[n] if leaders is not None else True
        me = owners[n] if owners else ""
        others = [b for b, o in zip(blocked, whose) if not me or o != me] + blocked[len(whose) :]
        w = CHAR_W * len(text)
        lb = _Label(cx, cy, r, text, drawn)
        found = None
        for ring, gap in enumerate(RINGS):
            if not drawn and gap > UNLED:
                break  # a label with no leader line stays beside its mark, or is not drawn
            for dx, dy in DIRECTIONS:
                # the label's centre sits `gap` beyond the circle in this direction, clear of it by half its size
                mx = cx + dx * (r + gap + w / 2)
                my = cy + dy * (r + gap + LABEL_H / 2)
                found = lb.spot(mx - w / 2, my + LABEL_H / 2 - 3, ring > 0, bounds, others, crossed)
                if found:
                    break
            if found:
                break
        if found is None and drawn:
            found = _on_grid(lb, bounds, others, crossed)
        if found:
            blocked.append(found.box)
            crossed.append(found.box)
            if found.leader and drawn:
                blocked.append(segment_box(cx, cy, *nearest(found.box, cx, cy)))
        spots.append(found)
    return spots
