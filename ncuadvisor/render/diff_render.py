"""Renderers of a diff (`ncuadvisor.comparison.compare`, the typed `DiffResult`): terminal (rich), markdown (GitHub), HTML, JSON.

They format the diff view (`render.diff_view`), never compute: every number comes from the diff. The markdown
escapes as the report's does (`mdtext`) and, like it, stays under GitHub's comment limit however many kernels the
diff has: per-kernel details are dropped first (the smallest changes), then table rows, each time with a note saying
how many were left out.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ncuadvisor.comparison.types import DiffResult
from ncuadvisor.render import HTML_FILTERS, console_for_output, environment, to_json
from ncuadvisor.render import escape_terminal as escape
from ncuadvisor.render.diff_view import diff_view
from ncuadvisor.render.fit import Column, fitted_table
from ncuadvisor.render.mdtext import COMMENT_CHARS, MD_FILTERS, block, fit_markdown, md
from ncuadvisor.units import compact_name, fmt_change, fmt_delta_ns, fmt_ns, fmt_pct, fmt_threshold, fmt_x

MD_TEMPLATE = "diff.md.j2"
HTML_TEMPLATE = "diff.html.j2"

STATUS_TEXT = {
    "regressed": "slower",
    "improved": "faster",
    "unchanged": "unchanged",
    "added": "added",
    "removed": "removed",
}
STATUS_MD = {
    "regressed": "❌ slower",
    "improved": "✅ faster",
    "unchanged": "unchanged",
    "added": "➕ added",
    "removed": "➖ removed",
}
VERDICT_TEXT = {"regressed": "Regression", "improved": "Faster", "unchanged": "No significant change"}
VERDICT_MD = {
    "regressed": "**❌ Regression**",
    "improved": "**✅ Faster**",
    "unchanged": "**No significant change**",
}
STATUS_STYLE = {"regressed": "bold red", "improved": "bold green", "added": "yellow", "removed": "dim", "unchanged": ""}

# the words for a status and a verdict, as text and as markdown (an unknown one is shown as it is, escaped)
LABEL_FILTERS = {
    "status_text": lambda s: STATUS_TEXT.get(s, str(s)),
    "verdict_text": lambda v: VERDICT_TEXT.get(v, str(v)),
}
MD_LABEL_FILTERS = {"status_md": lambda s: STATUS_MD.get(s, md(s)), "verdict_md": lambda v: VERDICT_MD.get(v, md(v))}


def render_diff_markdown(diff: DiffResult, max_chars: int = COMMENT_CHARS) -> str:
    """The markdown of a diff, at most `max_chars` long."""
    view = diff_view(diff)
    env = environment(autoescape=False, filters={**MD_FILTERS, **LABEL_FILTERS, **MD_LABEL_FILTERS})
    mod: Any = env.get_template(MD_TEMPLATE).make_module({"d": view})  # its macros, one per piece
    kernels = view.kernels
    detailed = [k for k in kernels if k.has_detail]  # largest changes first (the diff's order)

    head = block(mod.head(), after="\n\n")
    table_head = block(mod.table_head()) if kernels else ""
    rows = [block(mod.table_row(k)) for k in kernels]
    footer = block(mod.footer(), before="\n")
    details_title = block(mod.details_title(), before="\n") if detailed else ""

    def note_rows(n: int, _shown: int) -> str:
        return block(mod.rows_left_out(n), before="\n")

    def note_details(n: int) -> str:
        return block(mod.details_left_out(n), before="\n")

    details = [lambda k=k: str(mod.kernel_detail(k)) for k in detailed]
    return fit_markdown(max_chars, head, table_head, rows, details_title, details, footer, note_rows, note_details)


def render_diff_html(diff: DiffResult) -> str:
    """The HTML page of a diff."""
    view = diff_view(diff)
    env = environment(autoescape=True, filters={**HTML_FILTERS, **LABEL_FILTERS})
    return env.get_template(HTML_TEMPLATE).render(d=view, generator=view.generator)


def render_diff_json(diff: DiffResult) -> str:
    return to_json(diff.to_dict()) + "\n"


def _styled(status: str) -> str:
    text = STATUS_TEXT.get(status, status)
    style = STATUS_STYLE.get(status)
    return f"[{style}]{text}[/]" if style else escape(text)


def _diff_table(kernels: list[Any], width: int) -> Any:
    """The kernel entries of a diff, in the width there is (`fit.fitted_table`): every column, then without the
    bound, then with the findings under the kernel's name (no frame), then without the times before and after (the
    change stays). Cells wrap between words, never inside one ('headroo|m')."""
    names, befores, afters, changes, statuses, bounds, rooms, cells = [], [], [], [], [], [], [], []
    for k in kernels:
        kb, ka = k.before, k.after
        chg = fmt_delta_ns(k.change_ns)
        if k.change is not None:
            chg += f" ({fmt_change(k.change)})"
        bound = kb.bound or ka.bound or "–"
        if kb.present and ka.present and kb.bound != ka.bound:
            bound = f"{kb.bound} → {ka.bound}"
        name = str(k.label)
        if k.shape_tag:
            name += f" · {k.shape_tag}"
        if k.process_label:
            name += f" · {k.process_label}"
        if k.match == "name":
            name += " (by name)"
        elif k.match == "role":
            name += " (by role)"
        names.append(name)
        befores.append(fmt_ns(kb.duration_ns) if kb.present else "–")
        afters.append(fmt_ns(ka.duration_ns) if ka.present else "–")
        changes.append(chg)
        statuses.append(k.status or "unchanged")
        bounds.append(str(bound))
        rooms.append(" → ".join(fmt_x(side.headroom) for side in (kb, ka) if side.present))
        cells.append(str(k.findings.cell))

    def columns(bound: bool, under: bool, times: bool) -> list[Column]:
        shown = [n + (f"\n{c}" if under and c != "–" else "") for n, c in zip(names, cells)]
        out = [Column("kernel", shown, [escape(n) for n in shown], wraps=True)]
        if times:
            out += [Column("before", befores, befores, right=True), Column("after", afters, afters, right=True)]
        out += [
            Column("change", changes, changes, wraps=True, right=True),
            Column("status", statuses, [_styled(s) for s in statuses]),
        ]
        out += [Column("bound", bounds, [escape(b) for b in bounds], wraps=True)] if bound else []
        out += [Column("headroom", rooms, rooms, wraps=True, right=True)]
        out += [] if under else [Column("findings", cells, [escape(c) for c in cells], wraps=True)]
        return out

    return fitted_table(
        [
            (columns(True, False, True), True),
            (columns(False, False, True), True),
            (columns(False, True, True), False),
            (columns(False, True, False), False),
        ],
        width,
    )


def render_diff_terminal(diff: DiffResult, console: Console | None = None, top: int = 20) -> None:
    """Print the summary of a diff: the verdict, the counts and the first `top` kernel entries."""
    console = console_for_output() if console is None else console
    d = diff_view(diff)
    b, a, t, s, noise = d.before, d.after, d.total, d.summary, d.noise
    console.print(
        f"[bold]{escape(str(b.name or 'before'))}[/bold] → "
        f"[bold]{escape(str(a.name or 'after'))}[/bold]  "
        f"{escape(str(a.device or b.device or 'unknown GPU'))}"
    )
    verdict = d.verdict or "unchanged"
    style = {"regressed": "bold red", "improved": "bold green"}.get(verdict, "bold")
    console.print(
        f"[{style}]{VERDICT_TEXT.get(verdict, verdict)}[/]: GPU time {fmt_ns(t.before_ns)} → "
        f"{fmt_ns(t.after_ns)} ({t.change_text})"
    )
    console.print(
        f"[dim]{s.regressed} slower, {s.improved} faster, {s.unchanged} unchanged, "
        f"{s.added} added, {s.removed} removed; findings {s.new_findings} new, "
        f"{s.resolved_findings} resolved; noise threshold {fmt_threshold(noise.threshold)} "
        f"(at least {fmt_ns(noise.min_change_ns)})[/dim]"
    )
    for w in d.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(str(w))}")
    for k, f in d.predictions:
        frac = f" ({fmt_pct(f.measured_fraction)} of the prediction)" if f.measured_fraction is not None else ""
        console.print(
            f"[bold]{escape(str(f.rule or '?'))}[/bold] resolved in {escape(k.label)}: "
            f"predicted −{fmt_ns(f.estimated_saving_ns)}; measured {fmt_delta_ns(-f.measured_saving_ns)}{frac}"
        )
    for name, text, met in d.counter_checks:
        mark = "[dim]?[/dim]" if met is None else "[green]✓[/green]" if met else "[red]✗[/red]"
        console.print(f"{mark} {escape(compact_name(name))}: {escape(text)}")

    table = _diff_table(d.kernels[:top], console.width)
    console.print()
    console.print(table)
    if len(d.kernels) > top:
        console.print(f"[dim]… {len(d.kernels) - top} more kernels in the full diff (-o diff.html)[/dim]")
    ff = d.first_fix
    if ff:
        console.print(
            f"\n[bold]First fix now[/bold]: {escape(compact_name(ff.kernel))}"
            + (f" [dim]· {escape(str(ff.kernel_shape))}[/dim]" if ff.kernel_shape else "")
            + ": "
            f"{escape(str(ff.title or ''))} [dim]({escape(str(ff.rule or ''))})[/dim] saves "
            f"~{fmt_ns(ff.estimated_saving_ns)} ({fmt_pct(ff.program_fraction)} of the program)"
        )
