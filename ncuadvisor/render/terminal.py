"""Terminal summary (rich) of a report view: where to start, then the top kernels with bound, headroom and first
finding.

It fits the terminal it prints to: kernel names are cut with an ellipsis that keeps what identifies them, columns are
dropped as the width shrinks (launches first, then share, then the first finding), and wrapped lines are indented
under their own item. Piped or redirected it never wraps (`console_for_output`): one item, one line.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ncuadvisor.render import console_for_output
from ncuadvisor.render import escape_terminal as escape
from ncuadvisor.render.view import Action, Finding, Kernel, Result, report_view
from ncuadvisor.result.types import Result as ResultRecord
from ncuadvisor.units import (
    basename_loc,
    counted,
    first_sentence,
    fit_name,
    fmt_ns,
    fmt_pct,
    fmt_x,
    in_toolkit,
    short_name,
)

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "launch": "red", "unknown": "dim"}
ACTIONS_SHOWN = 5  # lines of "where to start", and as many program-wide findings below them
NAME_MAX = 60  # a kernel name is never longer than this, however wide the terminal
# the table's optional columns, and the width below which each is dropped (the first dropped first)
DROP_BELOW = {"launches": 110, "share": 96, "first finding": 72}
NAME_MIN, FIRST_MAX, FIRST_MIN = 14, 34, 14  # the kernel name's and first finding's widths (characters)


def _extra(k: Kernel) -> str:
    """What follows a kernel's name in the table: its launch shape, process and GPU when they tell it apart."""
    return (
        (f" · {k.shape_tag}" if k.shape_tag else "")
        + (f" [{k.process_label}]" if k.process_label else "")
        + (f" [GPU {k.device_id}]" if isinstance(k.device_id, int) else "")
    )


def _bound_text(k: Kernel) -> str:
    """The bound, and the limiter when the result names one that says more ('compute · issue')."""
    bound = k.bound or "unknown"
    lim = k.roofline.limiter
    return f"{bound} · {lim}" if lim and str(lim) != bound else bound


def _first_text(k: Kernel) -> str:
    """The first finding's rule, category and saving, and the first finding of each launch size of its own."""
    text = k.no_rule_label or "–"
    first = k.first_finding
    if first:
        est = first.estimated_speedup or 0
        text = f"{first.rule} {first.category}" + (f" −{fmt_pct(est)}" if est else "")
    if k.variants:  # launches of another size, analysed on their own (or timed only)
        rules = [(v.findings[0].rule if v.findings else None) or ("–" if v.profiled else "timed") for v in k.variants]
        text += f" (+{len(k.variants)} size{'s' if len(k.variants) > 1 else ''}: " + ", ".join(rules) + ")"
    return text


def _finding_of(view: Result, a: Action) -> tuple[Kernel | None, Finding | None]:
    """The kernel and the finding an action speaks of (the kernel's own findings, then its launch sizes')."""
    for k in view.kernels:
        if k.id is not None and k.id == a.kernel_id:
            for group, _, _ in k.finding_groups:
                for f in group:
                    if f.rule == a.rule and (not a.title or f.title == a.title):
                        return k, f
            return k, None
    return None, None


def _where_and_fix(view: Result, a: Action) -> str:
    """'file:line · fix in one line' for an action: the finding's first source line, else the kernel's."""
    if a.scope == "program":
        p = next((p for p in view.program_findings if p.rule == a.rule), None)
        if p:
            return first_sentence(p.fix)
        # one setting for several kernels (a switch rule's entries merged): the first kernel's finding of that rule
        k = next((k for k in view.kernels if k.id is not None and k.id == a.kernel_id), None)
        f = next((f for group, _, _ in (k.finding_groups if k else []) for f in group if f.rule == a.rule), None)
        return first_sentence(f.fix) if f else ""
    k, f = _finding_of(view, a)
    src = [f"{s.file}:{s.line}" for s in (f.source if f else []) if s.file and s.line is not None]
    anchor = k.source_anchor if k else None
    kernel_at = f"{anchor.file}:{anchor.line}" if anchor and anchor.file and anchor.line is not None else ""
    mine = [s for s in src if not in_toolkit(s.rpartition(":")[0])]
    if mine:
        where = basename_loc(mine[0])
    elif src and kernel_at:  # the line is inside CUDA's headers: name the kernel's own line beside it
        where = f"{basename_loc(kernel_at)} (kernel; the line is in {basename_loc(src[0])})"
    else:
        where = basename_loc(src[0]) if src else basename_loc(kernel_at)
    if k is not None and k.python_line is not None:  # a PyTorch kernel: the Python line that launched it
        pl = k.python_line
        where = f"{pl.where} ({pl.code})" if pl.code else pl.where
    fix = first_sentence(f.fix) if f else ""
    return " · ".join(t for t in (where, fix) if t)


def _where_to_start(console: Console, view: Result, width: int) -> None:
    actions = view.top_actions[:ACTIONS_SHOWN]
    if not actions and not view.program_findings:
        return
    console.print("\n[bold]Where to start[/bold]")
    # a grid: the number in its own column, so that wrapped lines stay indented under the item's text
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, width=4)
    grid.add_column(overflow="fold")
    name_limit = max(16, min(NAME_MAX, width // 3))
    rows: list[tuple[str, str]] = []
    for i, a in enumerate(actions, 1):
        head = (
            f"[bold]{escape(fit_name(a.kernel, name_limit))}[/bold]"
            + (f" [dim]· {escape(a.shape_tag)}[/dim]" if a.shape_tag else "")
            + (f" [dim]({escape(a.covers)})[/dim]" if a.covers else "")
            + f": {escape(str(a.title or ''))} [dim]({escape(str(a.rule))})[/dim] saves ~{fmt_ns(a.estimated_saving_ns)}"
            + (f" ({fmt_pct(a.program_fraction)} of the program)" if not a.wall_only else "")
            + (f"; {escape(a.wall)}" if a.wall else "")
        )
        detail = _where_and_fix(view, a)
        then = "".join(
            f"\nthen {escape(str(u.title or ''))} [dim]({escape(str(u.rule))})[/dim] ~{fmt_ns(u.estimated_saving_ns)} more"
            for u in a.follow_ups
        )
        rows.append((f"{i}.", head + (f"\n[dim]→ {escape(detail)}[/dim]" if detail else "") + then))
    listed = {(a.rule, a.title) for a in actions if a.scope == "program"}
    for p in [p for p in view.program_findings if (p.rule, p.title) not in listed][:ACTIONS_SHOWN]:
        rows.append(
            (
                "•",
                f"{escape(str(p.title or ''))} [dim]({escape(str(p.rule))})[/dim] "
                + (f"saves ~{fmt_ns(p.estimated_saving_ns)}" if p.estimated_saving_ns else "no saving claimed"),
            )
        )
    if not console.is_terminal:  # piped: one line each, never wrapped, no padding
        for mark, text in rows:
            for n, line in enumerate(text.split("\n")):
                console.print(f"{mark:>4} {line}" if n == 0 else f"     {line}", soft_wrap=True)
        return
    for mark, text in rows:
        grid.add_row(mark, text)
    console.print(grid)


def _executed_notes(console: Console, kernels: list[Kernel]) -> None:
    """Where the executed floor is well above the needed one, the headroom column alone would mislead: both floors,
    one note per kernel, wrapped lines indented under their text (piped: one line each)."""
    notes = [
        (
            f"#{k.index}",
            f"{fit_name(k.shown_name, NAME_MAX)}"
            + (f" (the launch analysed, {fmt_ns(k.roofline.duration_ns)})" if (k.launches or 0) > 1 else "")
            + f" as executed: {k.roofline.executed_reason}",
        )
        for k in kernels
        if k.roofline.executed_reason
    ]
    if not console.is_terminal:
        for mark, text in notes:
            console.print(f"[dim]{mark:>4} {escape(text)}[/dim]", soft_wrap=True)
        return
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, width=4)
    grid.add_column(overflow="fold")
    for mark, text in notes:
        grid.add_row(f"[dim]{mark}[/dim]", f"[dim]{escape(text)}[/dim]")
    if notes:
        console.print(grid)


def render_terminal(result: ResultRecord, console: Console | None = None, top: int = 10) -> None:
    """Print the summary of a result: the first `top` kernels by time."""
    console = console_for_output() if console is None else console
    width = console.width
    view = report_view(result)
    rep = view.report
    console.print(
        f"[bold]{escape(str(rep.name or ''))}[/bold]  {escape(str(rep.device.name or 'unknown GPU'))}  "
        f"ncu {escape(str(rep.ncu_version or '?'))}  {rep.results or 0} results, "
        f"{rep.kernels or 0} kernels, {fmt_ns(rep.total_duration_ns)} of GPU time"
    )
    for w in rep.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(str(w))}")
    if view.host is not None and view.host.used:
        console.print(f"host timeline {escape(str(view.host.name))}: {escape(view.host.summary)}")
    _where_to_start(console, view, width)

    kernels = view.kernels[:top]
    shown = [c for c, below in DROP_BELOW.items() if width >= below]
    firsts = [_first_text(k) for k in kernels]
    extras = [_extra(k) for k in kernels]
    # the columns' contents: the fixed ones at their widest, then the name and the first finding share the rest
    bounds = [_bound_text(k) for k in kernels]
    index_w = max([len(str(k.index)) for k in kernels] + [1])
    bound_w = max([len(b) for b in bounds] + [5])
    fixed = [index_w, 8, bound_w, 8] + ([8] if "launches" in shown else []) + ([5] if "share" in shown else [])
    ncols = len(fixed) + 2
    avail = width - sum(fixed) - 3 * ncols - 1  # each column: 1 space either side and a border
    name_need = min(
        NAME_MAX,
        max([len(short_name(k.shown_name, NAME_MAX)) + len(e) for k, e in zip(kernels, extras)] + [6]),
    )
    first_need = min(FIRST_MAX, max([len(t) for t in firsts] + [13]))
    if "first finding" in shown and name_need + first_need > avail:
        name_w = max(NAME_MIN, min(name_need, avail - FIRST_MIN))
        first_w = avail - name_w
        if first_w < FIRST_MIN:
            shown.remove("first finding")
    if "first finding" not in shown:
        name_w = max(NAME_MIN, min(name_need, avail + 3))  # the first finding's column and its padding freed
        first_w = 0
    elif name_need + first_need <= avail:
        name_w, first_w = name_need, first_need
    table = Table(title=None, show_lines=False, header_style="bold")
    table.add_column("#", justify="right", no_wrap=True, min_width=index_w)
    table.add_column("kernel", no_wrap=True, overflow="ellipsis", min_width=min(name_w, 12), max_width=name_w)
    if "launches" in shown:
        table.add_column("launches", justify="right", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True, min_width=8)
    if "share" in shown:
        table.add_column("share", justify="right", no_wrap=True)
    table.add_column("bound", no_wrap=True, min_width=bound_w)
    table.add_column("headroom", justify="right", no_wrap=True, min_width=8)
    if "first finding" in shown:
        table.add_column("first finding", no_wrap=True, overflow="ellipsis", max_width=first_w)
    for k, first, extra, bound_text in zip(kernels, firsts, extras, bounds):
        bound = k.bound or "unknown"
        name = fit_name(k.shown_name, max(8, name_w - len(extra))) + extra
        row = [str(k.index), escape(name)]
        row += [str(k.launches)] if "launches" in shown else []
        row += [fmt_ns(k.duration_ns)]
        row += [fmt_pct(k.time_share)] if "share" in shown else []
        row += [
            (f"[{BOUND_STYLE[bound]}]{bound}[/]" if bound in BOUND_STYLE else escape(bound))
            + escape(bound_text[len(bound) :]),
            fmt_x(k.headroom),
        ]
        row += [escape(first)] if "first finding" in shown else []
        table.add_row(*row)
    console.print()
    console.print(table)
    _executed_notes(console, kernels)
    if len(view.kernels) > top:
        console.print(
            f"[dim]… {counted(len(view.kernels) - top, 'more kernel')} in the full report (-o report.html)[/dim]"
        )
