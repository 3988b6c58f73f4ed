"""Helpers of the result: NCU's rule messages as the result keeps them, and the shape tags that tell kernels of one
name apart."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

_MARKUP_RE = re.compile(r"@(section|url|source|sass):([^@]*)@")
_NCU_TYPES = {1: "ok", 2: "optimization", 3: "warning", 4: "error"}


def strip_ncu_markup(text: str) -> str:
    """NCU's rule messages carry link markup (@section:ID:text@, @url:text:link@, ...); keep the words."""

    def repl(m: re.Match[str]) -> str:
        kind, body = m.group(1), m.group(2)
        parts = body.split(":")
        if kind == "url":
            return parts[0]
        if kind == "source":
            return parts[-1] if len(parts) >= 3 else body
        return parts[-1] if len(parts) >= 2 else body

    return _MARKUP_RE.sub(repl, text or "")


def ncu_guidance(rule_dicts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """NCU's own rule results that say something to act on, deduplicated, largest estimated speedup first."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for d in rule_dicts:
        msg = d.get("rule_message") or {}
        kind = _NCU_TYPES.get(int(msg.get("type", 0) or 0), "none")
        if kind not in ("optimization", "warning", "error"):
            continue
        est = d.get("speedup_estimation") or {}
        speedup = est.get("speedup")
        entry = {
            "rule": d.get("rule_identifier", ""),
            "name": d.get("name", ""),
            "section": d.get("section_identifier", ""),
            "title": strip_ncu_markup(msg.get("title", "")) or d.get("name", ""),
            "message": strip_ncu_markup(msg.get("message", "")),
            "type": kind,
            "speedup_pct": float(speedup) if speedup is not None else None,
            "speedup_type": {1: "local", 2: "global"}.get(int(est.get("type", 0) or 0), None),
        }
        key = (entry["rule"], entry["title"])
        prev = out.get(key)
        if prev is None or (entry["speedup_pct"] or 0) > (prev["speedup_pct"] or 0):
            out[key] = entry
    return sorted(out.values(), key=lambda e: -(e["speedup_pct"] or 0.0))


def shape_tagger(
    entries: list[Any], name: Callable[[Any], Any], shape: Callable[[Any], tuple[str, str]]
) -> Callable[[Any], str]:
    """entry -> what tells it from the other entries of the same name: 'grid (8, 8, 1)', with the block where the
    grids agree too, and '' for an entry whose name is its own. `name` and `shape` (grid, block) read an entry; the
    tag depends on those values only, so an entry read again through a wrapper gets the same tag."""
    names = Counter(name(e) for e in entries)
    grids = Counter((name(e), shape(e)[0]) for e in entries)

    def tag(e: Any) -> str:
        n, (grid, block) = name(e), shape(e)
        if names[n] < 2:
            return ""
        return f"grid {grid}" + (f" block {block}" if grids[(n, grid)] > 1 else "")

    return tag


def shape_tags(result: Any) -> dict[str, str]:
    """Kernel id -> its `shape_tagger` tag (the name shown: the display name, else the name), for the kernels of a
    typed result (`Result`) whose name other kernel groups share: a model's gemm is many groups, one per launch
    shape, and a list of five identical names cannot say which one to fix."""
    tag = shape_tagger(
        result.kernels,
        lambda k: str(k.display_name or k.name or k.demangled or ""),
        lambda k: (str(k.grid or "–"), str(k.block or "–")),
    )
    return {str(k.id): t for k in result.kernels if (t := tag(k))}


def no_surrogates(value: Any) -> Any:
    """A result (or parsed JSON) with every lone surrogate in its strings (keys included) replaced by U+FFFD: no
    output can encode one. They come from saved JSON (a \\udcxx escape) and from ncu_report, which hands over report
    text that is not UTF-8 (a Latin-1 kernel name or source line) with each bad byte as a surrogate escape."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
        try:  # the bytes ncu_report could not decode, back as bytes: each invalid one becomes U+FFFD
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, list):
        return [no_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {no_surrogates(k): no_surrogates(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):  # a typed result: its fields replaced in place
        for f in fields(value):
            setattr(value, f.name, no_surrogates(getattr(value, f.name)))
    return value
