"""HTML renderer: one self-contained page (inline CSS, SVG and script, no external requests).

It formats the report view (`render.view`); the roofline chart's coordinates (`render.chart`) are the one thing
computed for it. Every string from the result is untrusted and goes through Jinja2's autoescape; nothing from the
result is ever marked safe except the embedded JSON, which is escaped for a <script> block first. The page's own
script (templates/_report.js: sorting and filtering the kernel table, opening a linked card, focusing the roofline
on one kernel) is the same text for every report, holds nothing of the result, and only enhances: with scripts off
the page reads the same, every row and card in place.

Big reports stay under 5 MB: the first FULL_CARDS kernels by time (and any kernel a "where to start" action names)
get a full card, every other kernel only its row in the kernel table (which sorts and filters every kernel); the chart places the first CHART_POINTS kernels; a
result JSON over JSON_EMBED_LIMIT is left out with a note (the JSON output has it). A small report (up to 100
kernels, a JSON under 2 MB) renders every kernel as a card and on the chart, the JSON embedded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from ncuadvisor.render import HTML_FILTERS, environment, to_json
from ncuadvisor.render.chart import PHONE, roofline_chart
from ncuadvisor.render.chart_zoom import zoomed_chart
from ncuadvisor.render.view import Kernel, Result, report_view
from ncuadvisor.result.types import Result as ResultRecord
from ncuadvisor.units import number

TEMPLATE = "report.html.j2"
OPEN_CARDS = 3  # kernel cards after this many start closed: the table and contents lead to the rest
FULL_CARDS = 100  # kernels by time with a full card (~8 KB each); the long tail gets one row each
CHART_POINTS = 100  # kernels by time placed on the roofline chart
JSON_EMBED_LIMIT = 2_000_000  # bytes of result JSON embedded at most; a bigger one is left out, with a note
PROGRAM_KERNELS_SHOWN = 50  # kernel names listed under one program-level finding
TAIL_TITLE_CHARS = 300  # characters of a long-tail kernel's full name kept in its tooltip


# -- the embedded JSON -----------------------------------------------------------------------------------------


def _sanitize(o: Any) -> Any:
    """NaN/inf -> None, for the JSON block when a result carries them (JSON has no NaN)."""
    if isinstance(o, float) and not math.isfinite(o):
        return None
    if isinstance(o, dict):
        return {k: _sanitize(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_sanitize(v) for v in o]
    return o


def _compact_json(result: Mapping[str, Any]) -> str:
    try:
        return to_json(result, indent=None)
    except ValueError:
        return to_json(_sanitize(result), indent=None)


def script_json(text: str) -> Markup:
    """JSON text that cannot end its <script> block: <, > and & become \\u escapes (still valid JSON)."""
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)  # safe: no <, > or & left


# -- the page --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Which kernels get a full card and which only their row in the kernel table (the long tail)."""

    cards: list[Kernel]
    tail: list[Kernel]
    carded: frozenset[str]  # the anchors of the kernels with a card: the kernel table links their rows to it
    tail_share: float
    tail_duration_ns: float


def page_layout(view: Result, full_cards: int = FULL_CARDS) -> Layout:
    """The first `full_cards` kernels by time get cards, and so does every kernel a "where to start" action links to;
    the rest are rows, each with the kernel's id so that links still land on it."""
    wanted = {a.kernel_id for a in view.top_actions}
    cards: list[Kernel] = []
    tail: list[Kernel] = []
    for k in view.kernels:
        (cards if k.index <= full_cards or (k.id or f"k{k.index - 1}") in wanted else tail).append(k)
    return Layout(
        cards=cards,
        tail=tail,
        carded=frozenset(k.anchor for k in cards),
        tail_share=sum(number(k.time_share) or 0.0 for k in tail),
        tail_duration_ns=sum(number(k.duration_ns) or 0.0 for k in tail),
    )


def render_html(
    result: ResultRecord,
    full_cards: int = FULL_CARDS,
    chart_points: int | None = CHART_POINTS,
    json_limit: int = JSON_EMBED_LIMIT,
) -> str:
    """The page of a result (its JSON embedded). The limits keep a big report under 5 MB; a report under all of them renders every
    kernel in full."""
    view = report_view(result)
    text = _compact_json(result.to_dict())
    json_bytes = len(text.encode())
    env = environment(autoescape=True, filters=HTML_FILTERS)
    chart = roofline_chart(view, chart_points)
    phone = roofline_chart(view, chart_points, frame=PHONE)  # the same chart drawn for a phone's width
    return env.get_template(TEMPLATE).render(
        r=view,
        generator=view.generator,
        chart=chart,
        zoom=zoomed_chart(view, chart_points, chart),
        phone=phone,
        phone_zoom=zoomed_chart(view, chart_points, phone, PHONE),
        layout=page_layout(view, full_cards),
        result_json=script_json(text) if json_bytes <= json_limit else None,
        json_bytes=json_bytes,
        open_cards=OPEN_CARDS,
        program_kernels_shown=PROGRAM_KERNELS_SHOWN,
        tail_title_chars=TAIL_TITLE_CHARS,
    )
