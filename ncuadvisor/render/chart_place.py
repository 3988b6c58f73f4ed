"""Where the roofline chart's point labels go: beside their point, never on another label or point.

Labels are placed in the order given (the kernels with the most time first), each at the first of a ring of
candidate spots around its point, then at rings further out with a leader line back to the point; a label that finds
no free spot is left off the chart and listed under it (the point keeps its tooltip and its link). The boxes are
estimated from the label's length at the chart's font size, with a margin, so the check holds in any browser.
"""

from __future__ import annotations

from dataclasses import dataclass

CHAR_W = 7.2  # px per character of an 11 px bold label (a wide estimate: digits and '#' in system-ui)
LABEL_H = 13.0
PAD = 1.5
# unit directions around a point: right, upper right, up, upper left, left, lower left, down, lower right
DIRECTIONS = ((1, 0), (0.7, -0.7), (0, -1), (-0.7, -0.7), (-1, 0), (-0.7, 0.7), (0, 1), (0.7, 0.7))
RINGS = (3.0, 14.0, 28.0, 46.0, 70.0)  # gaps beyond the point's radius; past the first a leader line is drawn


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
class Spot:
    """A label's text origin (start-anchored baseline), its box, and whether it needs a leader line."""

    x: float
    y: float
    box: Rect
    leader: bool


def label_box(x: float, y: float, text: str) -> Rect:
    """The box of a start-anchored label whose baseline starts at (x, y)."""
    return Rect(x - PAD, y - LABEL_H + 2 - PAD, x + CHAR_W * len(text) + PAD, y + 3 + PAD)


def place_labels(
    points: list[tuple[float, float, float, str]], bounds: Rect, taken: list[Rect] | None = None
) -> list[Spot | None]:
    """A spot for each (cx, cy, r, text), in order, or None where no free spot is near; `taken` boxes are avoided."""
    blocked = list(taken or [])
    blocked += [Rect(cx - r, cy - r, cx + r, cy + r) for cx, cy, r, _ in points]
    spots: list[Spot | None] = []
    for cx, cy, r, text in points:
        w = CHAR_W * len(text)
        found = None
        for ring, gap in enumerate(RINGS):
            for dx, dy in DIRECTIONS:
                # the label's centre sits `gap` beyond the circle in this direction, clear of it by half its size
                mx = cx + dx * (r + gap + w / 2)
                my = cy + dy * (r + gap + LABEL_H / 2)
                x, y = mx - w / 2, my + LABEL_H / 2 - 3
                box = label_box(x, y, text)
                if box.inside(bounds) and not any(box.hits(b) for b in blocked):
                    found = Spot(x, y, box, ring > 0)
                    break
            if found:
                break
        if found:
            blocked.append(found.box)
        spots.append(found)
    return spots
