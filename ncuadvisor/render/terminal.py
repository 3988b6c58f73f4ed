"""Terminal summary (rich) of a report view: where to start, then the top kernels with bound, headroom and first
finding.

It fits the terminal it prints to, down to 80 columns: kernels go by their short names (`Kernel.label`: the same in
the table and in "where to start", never one name for two kernels), columns are dropped as the width shrinks
(launches first, then share; then the first finding goes under the kernel's name), and text wraps between words,
indented under its own item, instead of being cut. Piped or redirected it never wraps (`console_for_output`): one
item, one line.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ncuadvisor.render import NOTHING_FIRST, console_for_output
from ncuadvisor.render import escape_terminal as escape
from ncuadvisor.render.fit import Column, fitted_table
from ncuadvisor.render.view import Action, Finding, Kernel, Result, report_view
from ncuadvisor.result.types import Result as ResultRecord
from ncuadvisor.units import (
    basename_loc,
    counted,
    first_sentence,
    fmt_ns,
    fmt_pct,
    fmt_x,
    in_toolkit,
)

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "launch": "red", "unknown": "dim"}
ACTIONS_SHOWN = 5  # lines of "where to start", and as many program-wide findings below them
FIX_MAX = 400  # a fix's first sentence, whole (it wraps): cut only past this


def _extra(k: Kernel) -> str:
    """What follows a kernel's name in the table: its launch shape, process and GPU when they tell it apart."""
    return (
        (f" · {_tight(k.shape_tag)}" if k.shape_tag else "")
        + (f" [{k.process_label}]" if k.process_label else "")
        + (f" [GPU {k.device_id}]" if isinstance(k.device_id, int) else "")
    )


def _tight(shape: str) -> str:
    """'grid (32, 1, 4) block (256, 1, 1)' -> 'grid (32,1,4) block (256,1,1)': a launch shape wraps only between its
    grid and its block."""
    return shape.replace(", ", ",")


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
        return first_sentence(a.fix, FIX_MAX)
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
    fix = first_sentence(a.fix, FIX_MAX)
    return " · ".join(t for t in (where, fix) if t)


def _where_to_start(console: Console, view: Result, width: int) -> None:
    actions = view.top_actions[:ACTIONS_SHOWN]
    if not actions and not view.program_findings:
        if view.kernels:  # as the markdown says it: no finding estimated to save time
            console.print(f"\n{NOTHING_FIRST}")
        return
    console.print("\n[bold]Where to start[/bold]")
    # a grid: the number in its own column, so that wrapped lines stay indented under the item's text
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True, width=4)
    grid.add_column(overflow="fold")
    rows: list[tuple[str, str]] = []
    for i, a in enumerate(actions, 1):
        head = (
            f"[bold]{escape(a.kernel_label or str(a.kernel or ''))}[/bold]"
            + (f" [dim]· {escape(_tight(a.shape_tag))}[/dim]" if a.shape_tag else "")
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
            f"{k.label}{_extra(k)}"
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


def _kernel_table(kernels: list[Kernel], width: int) -> Table:
    """The top kernels, in the width there is (`fit.fitted_table`): the launches column, then the share, are left
    out as it shrinks, then each kernel's first finding goes under its name (no frame), then the bound wraps too.
    Text cells wrap between words: no word of a kernel's short name is longer than `units.LABEL_MAX`."""
    layouts = [(("launches", "share"), False), (("share",), False), ((), False), (("share",), True), ((), True)]
    return fitted_table(
        [(_columns(kernels, shown, narrow), not narrow) for shown, narrow in layouts]
        + [(_columns(kernels, (), True, bound_wraps=True), False)],
        width,
    )


def _columns(kernels: list[Kernel], shown: tuple[str, ...], narrow: bool, bound_wraps: bool = False) -> list[Column]:
    """The kernel table's columns: the optional ones `shown`; `narrow`: the first finding under the name."""
    firsts = [_first_text(k) for k in kernels]
    bounds = [_bound_text(k) for k in kernels]
    names = [
        k.label + _extra(k) + (f"\n→ {first}" if narrow and first != "–" else "") for k, first in zip(kernels, firsts)
    ]
    index = [str(k.index) for k in kernels]
    columns = [
        Column("#", index, index, right=True),
        Column("kernel", names, [_dim_after_line(escape(n)) for n in names], wraps=True),
    ]
    if "launches" in shown:
        launches = [str(k.launches) for k in kernels]
        columns.append(Column("launches", launches, launches, right=True))
    times = [fmt_ns(k.duration_ns) for k in kernels]
    columns.append(Column("time", times, times, right=True))
    if "share" in shown:
        shares = [fmt_pct(k.time_share) for k in kernels]
        columns.append(Column("share", shares, shares, right=True))
    styled = [
        (f"[{BOUND_STYLE[b]}]{b}[/]" if (b := k.bound or "unknown") in BOUND_STYLE else escape(b)) + escape(t[len(b) :])
        for k, t in zip(kernels, bounds)
    ]
    columns.append(Column("bound", bounds, styled, wraps=bound_wraps))
    rooms = [fmt_x(k.headroom) for k in kernels]
    columns.append(Column("headroom", rooms, rooms, right=True))
    if not narrow:
        columns.append(Column("first finding", firsts, [escape(f) for f in firsts], wraps=True))
    return columns


def _dim_after_line(text: str) -> str:
    """A cell whose second line (the first finding under a kernel's name) is dimmed."""
    head, sep, rest = text.partition("\n")
    return head + (f"\n[dim]{rest}[/dim]" if sep else "")


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
    table = _kernel_table(kernels, width)
    console.print()
    console.print(table)
    _executed_notes(console, kernels)
    every = max(len(view.kernels), rep.kernels or 0)  # a big saved result holds fewer than its report counts
    if every > top:
        console.print(
            f"[dim]… {counted(every - len(kernels), 'more kernel')} in the full report (-o report.html)[/dim]"
        )
