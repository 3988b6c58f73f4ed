"""Renderers: format a result dict (never compute analysis). Jinja2 environment and shared filters live here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2

from ncuadvisor.errors import AdvisorError
from ncuadvisor.result import shape_tag_lookup, shape_tagger, shape_tags  # noqa: F401  (for the renderers)
from ncuadvisor.units import fmt_ns as _units_fmt_ns


def templates_dir() -> Path:
    """templates/ inside the installed package, or the repository's top-level templates/ in a source checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "templates", here.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise AdvisorError("the templates folder is missing from this installation (reinstall ncuadvisor)")


def fmt_ns(ns: Any) -> str:
    """Nanoseconds, readable: 1234 -> '1.2 µs'."""
    return _units_fmt_ns(ns)


def fmt_pct(x: Any, digits: int = 0) -> str:
    """A 0..1 fraction as a percentage."""
    if x is None:
        return "–"
    return f"{float(x) * 100:.{digits}f}%"


def fmt_bytes(b: Any) -> str:
    if b is None:
        return "–"
    b = float(b)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


def fmt_rate(x: Any, unit: str) -> str:
    """Per-second rates with SI prefixes: fmt_rate(4.8e12, 'B/s') -> '4.80 TB/s'."""
    if x is None:
        return "–"
    x = float(x)
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {prefix}{unit}"
    return f"{x:.2f} {unit}"


def fmt_x(x: Any) -> str:
    """A ratio such as headroom: 3.04 -> '3.0×'."""
    if x is None:
        return "–"
    x = float(x)
    return f"{x:.1f}×" if x < 100 else f"{x:.0f}×"


def short_name(name: str, limit: int = 80) -> str:
    """A readable kernel name: templates collapsed (`f<...>`), then cut at `limit` characters."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 1] + "…"


FILTERS = {
    "ns": fmt_ns,
    "pct": fmt_pct,
    "bytes": fmt_bytes,
    "rate": fmt_rate,
    "x": fmt_x,
    "short_name": short_name,
}


def environment(autoescape: bool = True) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=autoescape,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def to_json(result: dict[str, Any], indent: int | None = 2) -> str:
    return json.dumps(result, indent=indent, ensure_ascii=False, allow_nan=False, default=_json_default)


def _json_default(o: Any) -> Any:
    try:
        return float(o)
    except (TypeError, ValueError):
        return str(o)
