"""Formatting of quantities shared by every stage (no dependencies, so any stage may import it)."""

from __future__ import annotations

import math
from typing import Any


def finite(value: Any) -> float | None:
    """A value as a finite float, or None when it is missing, not a number, NaN or infinite."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def fmt_ns(ns: Any, missing: str = "–", seconds: bool = True) -> str:
    """Nanoseconds, readable: 1234 -> '1.2 µs'; `missing` for None; above 1 s in seconds unless `seconds` is off."""
    if ns is None:
        return missing
    ns = float(ns)
    if seconds and ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def clip(text: Any, limit: int) -> str:
    """Text cut at `limit` characters, the last one an ellipsis ("" for None): long kernel names in one line."""
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
