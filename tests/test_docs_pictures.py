"""docs/screenshots/ holds the pictures a page shows, and only those: every picture there is linked from a page of the
docs (the README, docs/*.md, the gallery), and every picture a page links is there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"


def _linked() -> dict[str, set[str]]:
    """Each page's linked pictures, as paths under docs/screenshots/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), SHOTS / "README.md"]
    out: dict[str, set[str]] = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        found = set()
        for ref in re.findall(r"[\w./-]+\.(?:webp|png|jpg|gif|svg)", text):
            path = (page.parent / ref).resolve()
            if path.is_relative_to(SHOTS):
                found.add(path.relative_to(SHOTS).as_posix())
        out[str(page.relative_to(ROOT))] = found
    return out


def test_every_picture_is_linked_and_every_link_has_its_picture():
    linked = _linked()
    every = set().union(*linked.values())
    here = {p.name for p in SHOTS.iterdir() if p.suffix in {".webp", ".png", ".jpg", ".gif", ".svg"}}
    assert here - every == set(), "pictures no page links: prune them (python3 -m tests.screenshots does)"
    missing = {page: sorted(refs - here) for page, refs in linked.items() if refs - here}
    assert not missing, f"pages link pictures that are not there: {missing}"
    assert "flaws-1400.webp" in linked["README.md"]  # the README's own picture
