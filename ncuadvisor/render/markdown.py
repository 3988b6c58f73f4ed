"""Markdown renderer (GitHub-flavoured) of a report view: for pull-request comments and CI job summaries.

The template (templates/report.md.j2) holds one macro per piece; untrusted text is escaped explicitly there
(autoescape is off: markdown is not HTML) and this module assembles the pieces under `max_chars`, dropping per-kernel
details worth least first (`by_value`: the kernels "where to start" names are kept longest), then table rows
(`mdtext.fit_markdown`), in GitHub's 65,536 characters.
"""

from __future__ import annotations

from typing import Any

from ncuadvisor.render import environment
from ncuadvisor.render.mdtext import COMMENT_CHARS, GITHUB_LIMIT, MD_FILTERS, block, fit_markdown, md
from ncuadvisor.render.view import Result as ViewResult
from ncuadvisor.render.view import report_view
from ncuadvisor.result.types import Result
from ncuadvisor.units import fmt_ns, number

TEMPLATE = "report.md.j2"

__all__ = ["GITHUB_LIMIT", "md", "render_markdown"]


def render_markdown(result: Result, max_chars: int = COMMENT_CHARS) -> str:
    """The markdown of a result, at most `max_chars` long."""
    view = report_view(result)
    env = environment(autoescape=False, filters=MD_FILTERS)
    mod: Any = env.get_template(TEMPLATE).make_module({"r": view})  # its macros, one per piece
    kernels = view.kernels

    head = block(mod.head(), after="\n\n")
    table_head = block(mod.table_head()) if kernels else ""
    rows = [block(mod.table_row(k)) for k in kernels]
    footer = block(mod.footer(), before="\n")
    details_title = block(mod.details_title(), before="\n", after="\n\n") if kernels else ""

    def note_rows(n_left: int, n_shown: int) -> str:
        time = sum(number(k.duration_ns) or 0.0 for k in kernels[n_shown:])
        return block(mod.rows_left_out(n_left, fmt_ns(time)), before="\n")

    def note_details(n_left: int) -> str:
        return block(mod.details_left_out(n_left), before="\n")

    details = [lambda k=k: str(mod.kernel_detail(k)) for k in kernels]
    return fit_markdown(
        max_chars, head, table_head, rows, details_title, details, footer, note_rows, note_details, by_value(view)
    )


def by_value(view: ViewResult) -> list[int]:
    """The kernels' places, the details most worth reading first: the kernels "where to start" names (in its order),
    then those whose findings save the most time, then the rest by time."""
    first = {str(a.kernel_id): n for n, a in enumerate(view.top_actions) if a.scope != "program"}

    def worth(i: int) -> tuple[float, float, float]:
        k = view.kernels[i]
        saving = sum(number(f.saving_ns) or 0.0 for f in k.findings if not f.at_roofline)
        return (-first.get(str(k.id), len(first)), saving, number(k.duration_ns) or 0.0)

    return sorted(range(len(view.kernels)), key=worth, reverse=True)
