"""Markdown renderer (GitHub-flavoured): for pull-request comments and CI job summaries.

The template (templates/report.md.j2) holds one macro per piece; this module escapes untrusted text
explicitly (autoescape is off: markdown is not HTML) and assembles the pieces so the output stays
under `max_chars`, dropping per-kernel details from the end (smallest kernels first), then table rows.
"""

from __future__ import annotations

import html
import re
from typing import Any

from ncuadvisor.render import environment, fmt_ns, shape_tag_lookup, short_name
from ncuadvisor.render.html import _number, _Rec, _view, basename, fmt_num, fmt_pct100, is_high_headroom, times

TEMPLATE = "report.md.j2"
GITHUB_LIMIT = 65000
NOTE_SLACK = 16  # the "left out" note's length varies a little with its numbers

# ASCII punctuation that means something to (GitHub-flavoured) markdown inline: backslash-escaped.
_MD_SPECIAL = set("\\`*_[]~#!|$")
_FENCE_LANG = {"cuda": "cuda", "triton": "python", "pytorch": "python"}


def _one_line(v: Any) -> str:
    return " ".join(str(v).split()) if v is not None else ""


def md(v: Any) -> str:
    """Untrusted text as inline markdown, safe in a paragraph, a list item, a table cell or inside <code>:
    newlines become spaces, &, <, > become entities, markdown punctuation (| ` * _ [ ] ...) is backslash-escaped."""
    out = []
    text = _one_line(v)
    for n, ch in enumerate(text):
        nxt = text[n + 1 : n + 2]
        if ch == ":" and (nxt.isalnum() or nxt in ":_+-"):  # could start an emoji shortcode (`std::x::y`, 12:30)
            out.append("\\:")
        elif ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in _MD_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def h(v: Any) -> str:
    """Untrusted text inside a raw HTML block (<summary>): markdown is not parsed there, so entities only."""
    return html.escape(_one_line(v), quote=True)


def fence(code: Any, lang: Any = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in the code."""
    text = str(code or "").replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    tag = _FENCE_LANG.get(str(lang or ""), "")
    return f"{bar}{tag}\n{text}\n{bar}"


def safe_short_name(v: Any, limit: int = 60) -> str:
    return "–" if v is None else short_name(str(v), limit)


def _env():
    env = environment(autoescape=False)
    env.filters.update(
        {
            "md": md,
            "h": h,
            "fence": fence,
            "num": fmt_num,
            "pct100": fmt_pct100,
            "sname": safe_short_name,
            "basename": basename,
        }
    )
    env.globals.update(
        {
            "high_headroom": is_high_headroom,
            "times": times,
            "empty": _Rec(),
        }
    )
    return env


def render_markdown(result: dict, max_chars: int = GITHUB_LIMIT) -> str:
    env = _env()
    env.globals["shape_tag"] = shape_tag_lookup(result)
    r = _view(result)
    mod = env.get_template(TEMPLATE).make_module({"r": r})
    kernels = [k if isinstance(k, dict) else _Rec() for k in (r.get("kernels") or [])]

    head = str(mod.head()).strip("\n") + "\n\n"
    table_head = str(mod.table_head()).strip("\n") + "\n" if kernels else ""
    rows = [str(mod.table_row(i, k)).strip("\n") + "\n" for i, k in enumerate(kernels)]
    footer = "\n" + str(mod.footer()).strip("\n") + "\n"
    details_title = "\n" + str(mod.details_title()).strip("\n") + "\n\n" if kernels else ""

    def note_rows(n_left: int, n_shown: int) -> str:
        left = kernels[n_shown:]
        total = sum(_number(k.get("duration_ns")) or 0.0 for k in left)
        return "\n" + str(mod.rows_left_out(n_left, fmt_ns(total))).strip("\n") + "\n"

    def note_details(n_left: int) -> str:
        return "\n" + str(mod.details_left_out(n_left)).strip("\n") + "\n"

    details = [lambda i=i, k=k: str(mod.kernel_detail(i, k)) for i, k in enumerate(kernels)]
    return fit_markdown(max_chars, head, table_head, rows, details_title, details, footer, note_rows, note_details)


def fit_markdown(
    max_chars: int,
    head: str,
    table_head: str,
    rows: list[str],
    details_title: str,
    details: list[Any],
    footer: str,
    note_rows: Any,
    note_details: Any,
) -> str:
    """Assemble a markdown comment under `max_chars`: the headline, the whole table and as many detail blocks as fit
    (in order); else the headline and the first table rows that fit; else the headline cut at a line. Each cut is
    said: `note_rows(n_left, n_shown)` and `note_details(n_left)` render the notes; `details` are callables that
    render one block each (rendered only when tried)."""
    fixed = len(head) + len(table_head) + sum(map(len, rows)) + len(footer)
    if not rows and fixed <= max_chars:
        return head + footer

    # 1) the whole table fits: add detail blocks while they fit
    if rows and fixed + len(details_title) + len(note_details(len(details))) <= max_chars:
        budget = max_chars - fixed - len(details_title) - len(note_details(len(details)))
        parts: list[str] = []
        for render_one in details:
            text = "\n" + render_one().strip("\n") + "\n"
            if len(text) > budget:
                break
            parts.append(text)
            budget -= len(text)
        left = len(details) - len(parts)
        return (
            head
            + table_head
            + "".join(rows)
            + (details_title + "".join(parts) if parts else "")
            + (note_details(left) if left else "")
            + footer
        )

    # 2) no details at all, and the table itself is cut: keep the first rows
    if rows:
        details_note = note_details(len(details)) if details else ""
        base = len(head) + len(table_head) + len(footer) + len(details_note)
        budget = max_chars - base - len(note_rows(len(rows), 0)) - NOTE_SLACK
        shown = 0
        for row in rows:
            if len(row) > budget:
                break
            budget -= len(row)
            shown += 1
        text = head + table_head + "".join(rows[:shown]) + note_rows(len(rows) - shown, shown) + details_note + footer
        if len(text) <= max_chars:
            return text

    # 3) even the headline does not fit (tiny max_chars, huge warnings): cut it at a line and say so
    note = note_rows(len(rows), 0) if rows else ""
    room = max(0, max_chars - len(note))
    cut = head[:room]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n") + 1]
    return (cut + note)[:max_chars]
