"""Terminal summary (rich) of a report view: where to start, then the top kernels with bound, headroom and first
finding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ncuadvisor.render import console_for_output
from ncuadvisor.render import escape_terminal as escape
from ncuadvisor.render.view import Kernel, report_view
from ncuadvisor.units import fmt_ns, fmt_pct, fmt_x, short_name

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "launch": "red", "unknown": "dim"}
ACTIONS_SHOWN = 5  # lines of "where to start", and as many program-wide findings below them


def _first_text(k: Kernel) -> str:
    """The first finding's rule, category and saving, and the first finding of each launch size of its own."""
    text = "–"
    first = k.first_finding
    if first:
        est = first.estimated_speedup or 0
        text = f"{first.rule} {first.category}" + (f" −{fmt_pct(est)}" if est else "")
    if k.variants:  # launches of another size, analysed on their own (or timed only)
        rules = [(v.findings[0].rule if v.findings else None) or ("–" if v.profiled else "timed") for v in k.variants]
        text += f" (+{len(k.variants)} size{'s' if len(k.variants) > 1 else ''}: " + ", ".join(rules) + ")"
    return text


def render_terminal(result: Mapping[str, Any], console: Console | None = None, top: int = 10) -> None:
    """Print the summary of a result dict: the first `top` kernels by time."""
    console = console_for_output() if console is None else console
    view = report_view(result)
    rep = view.report
    console.print(
        f"[bold]{escape(str(rep.name or ''))}[/bold]  {escape(str(rep.device.name or 'unknown GPU'))}  "
        f"ncu {escape(str(rep.ncu_version or '?'))}  {rep.results or 0} results, "
        f"{rep.kernels or 0} kernels, {fmt_ns(rep.total_duration_ns)} of GPU time"
    )
    for w in rep.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(str(w))}")

    actions = view.top_actions[:ACTIONS_SHOWN]
    if actions or view.program_findings:
        console.print("\n[bold]Where to start[/bold]")
        for i, a in enumerate(actions, 1):
            console.print(
                f"  {i}. [bold]{escape(short_name(a.kernel, 60))}[/bold]"
                + (f" [dim]· {escape(a.shape_tag)}[/dim]" if a.shape_tag else "")
                + f": {escape(str(a.title or ''))} [dim]({escape(str(a.rule))})[/dim] saves ~{fmt_ns(a.estimated_saving_ns)} "
                f"({fmt_pct(a.program_fraction)} of the program)"
            )
        listed = {(a.rule, a.title) for a in actions if a.scope == "program"}
        for p in [p for p in view.program_findings if (p.rule, p.title) not in listed][:ACTIONS_SHOWN]:
            console.print(
                f"  • {escape(str(p.title or ''))} [dim]({escape(str(p.rule))})[/dim] saves ~{fmt_ns(p.estimated_saving_ns)}"
            )

    table = Table(title=None, show_lines=False, header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("kernel", overflow="fold", max_width=48)
    table.add_column("launches", justify="right")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    table.add_column("bound")
    table.add_column("headroom", justify="right")
    table.add_column("first finding", overflow="fold", max_width=40)
    for k in view.kernels[:top]:
        bound = k.bound or "unknown"
        table.add_row(
            str(k.index),
            escape(
                short_name(k.name, 48)
                + (f" · {k.shape_tag}" if k.shape_tag else "")
                + (f" [{k.process_label}]" if k.process_label else "")
                + (f" [GPU {k.device_id}]" if isinstance(k.device_id, int) else "")
            ),
            str(k.launches),
            fmt_ns(k.duration_ns),
            fmt_pct(k.time_share),
            f"[{BOUND_STYLE[bound]}]{bound}[/]" if bound in BOUND_STYLE else escape(bound),
            fmt_x(k.headroom),
            escape(_first_text(k)),
        )
    console.print()
    console.print(table)
    if len(view.kernels) > top:
        console.print(f"[dim]… {len(view.kernels) - top} more kernels in the full report (-o report.html)[/dim]")
