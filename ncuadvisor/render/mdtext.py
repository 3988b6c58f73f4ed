"""Markdown text for GitHub (pull-request comments, job summaries): escaping untrusted text, and fitting a comment
under GitHub's length limit. Shared by the report's and the diff's markdown renderers."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from typing import Any

GITHUB_LIMIT = 65000  # characters of a comment, with room to spare under GitHub's 65,536
# what a comment fills: GitHub's limit, the details worth most first (`fit_markdown`'s `order`); those that do not fit
# are left to the HTML, and the comment says so
COMMENT_CHARS = GITHUB_LIMIT
NOTE_SLACK = 16  # the "left out" note's length varies a little with its numbers

# ASCII punctuation that means something to (GitHub-flavoured) markdown inline: backslash-escaped.
_MD_SPECIAL = set("\\`*_[]~#!|$")
_FENCE_LANG = {"cuda": "cuda", "triton": "python", "pytorch": "python"}


# control characters and the invisible format characters that reorder or hide text (bidirectional overrides and
# isolates, zero-width spaces and joiners, the byte-order mark): shown as `?`, as on the terminal
_HIDDEN_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def _one_line(v: Any) -> str:
    return " ".join(_HIDDEN_RE.sub("?", str(v)).split()) if v is not None else ""


def md(v: Any) -> str:
    """Untrusted text as inline markdown, safe in a paragraph, a list item, a table cell or inside <code>:
    newlines become spaces, &, <, > become entities, markdown punctuation (| ` * _ [ ] ...) and the @ of a mention are backslash-escaped.
    Prose (`ncuadvisor.render.Prose`: a fix, a message) keeps its `code` spans as <code>, each escaped the same way,
    as the HTML shows them (escaped backticks read as raw backticks on GitHub)."""
    from ncuadvisor.render import CODE_SPAN, Prose

    if isinstance(v, Prose):
        parts = CODE_SPAN.split(_one_line(v))  # text, code, text, code, ...
        return "".join(f"<code>{_md(p)}</code>" if n % 2 else _md(p) for n, p in enumerate(parts))
    return _md(_one_line(v))


def _md(text: str) -> str:
    out = []
    for n, ch in enumerate(text):
        nxt = text[n + 1 : n + 2]
        if ch == ":" and (nxt.isalnum() or nxt in ":_+-"):  # could start an emoji shortcode (`std::x::y`, 12:30)
            out.append("\\:")
        elif ch == "@" and (nxt.isalnum() or nxt in "-_"):  # a live @mention (or team) in a PR comment
            out.append("\\@")
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
    """Untrusted text inside a raw HTML block (<summary>): markdown is not parsed there, so entities; GitHub still
    links an @mention in HTML text, so the @ of one is followed by a word joiner (U+2060, invisible)."""
    return re.sub(r"@(?=[0-9A-Za-z_-])", "@\u2060", html.escape(_one_line(v), quote=True))


def fence(code: Any, lang: Any = "") -> str:
    """A fenced code block whose fence is longer than any backtick run in the code."""
    text = str(code or "").replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    tag = _FENCE_LANG.get(str(lang or ""), "")
    return f"{bar}{tag}\n{text}\n{bar}"


MD_FILTERS = {"md": md, "h": h, "fence": fence}


def fit_markdown(
    max_chars: int,
    head: str,
    table_head: str,
    rows: Sequence[str],
    details_title: str,
    details: Sequence[Callable[[], str]],
    footer: str,
    note_rows: Callable[[int, int], str],
    note_details: Callable[[int], str],
    order: Sequence[int] | None = None,
) -> str:
    """Assemble a markdown comment under `max_chars`: the headline, the whole table and as many detail blocks as fit,
    tried in `order` (indices of `details`, the most worth first; default: as given) and shown in their own order, a
    block too long for what is left passed over for the next; else the headline and the first table rows that fit;
    else the headline cut at a line. Each cut is said: `note_rows(n_left, n_shown)` and `note_details(n_left)` render
    the notes; `details` are callables that render one block each (rendered only when tried)."""
    fixed = len(head) + len(table_head) + sum(map(len, rows)) + len(footer)
    if not rows and fixed <= max_chars:
        return head + footer

    # 1) the whole table fits: add detail blocks while they fit
    if rows and fixed + len(details_title) + len(note_details(len(details))) <= max_chars:
        budget = max_chars - fixed - len(details_title) - len(note_details(len(details)))
        chosen: dict[int, str] = {}
        for i in order if order is not None else range(len(details)):
            text = "\n" + details[i]().strip("\n") + "\n"
            if len(text) > budget:
                continue
            chosen[i] = text
            budget -= len(text)
        parts = [chosen[i] for i in sorted(chosen)]
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


def block(text: Any, before: str = "", after: str = "\n") -> str:
    """A rendered macro's text as one piece of the comment: its own blank lines trimmed, `before` and `after` it."""
    return before + str(text).strip("\n") + after
