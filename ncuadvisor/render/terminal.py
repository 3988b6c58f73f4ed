"""Terminal summary (rich): where to start, then the top kernels with bound, headroom and first finding."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ncuadvisor.render import fmt_ns, fmt_pct, fmt_x, shape_tags, short_name

BOUND_STYLE = {"memory": "cyan", "compute": "magenta", "latency": "yellow", "launch": "red", "unknown": "dim"}


def render_terminal(result: dict[str, Any], console: Console | None = None, top: int = 10) -> None:
    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:  # piped or in CI: rich would assume 80 columns
            console = Console(highlight=False, width=140)
    rep = result["report"]
    dev = rep.get("device") or {}
    console.print(
        f"[bold]{escape(rep.get('name') or '')}[/bold]  {escape(str(dev.get('name') or 'unknown GPU'))}  "
        f"ncu {escape(str(rep.get('ncu_version') or '?'))}  {rep.get('results', 0)} results, "
        f"{rep.get('kernels', 0)} kernels, {fmt_ns(rep.get('total_duration_ns'))} of GPU time"
    )
    for w in rep.get("warnings") or []:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")

    actions = result.get("top_actions") or []
    program = result.get("program_findings") or []
    tags = shape_tags(result)
    if actions or program:
        console.print("\n[bold]Where to start[/bold]")
        for i, a in enumerate(actions[:5], 1):
            tag = tags.get(str(a.get("kernel_id"))) if a.get("scope") != "program" else None
            console.print(
                f"  {i}. [bold]{escape(short_name(a['kernel'], 60))}[/bold]"
                + (f" [dim]· {escape(tag)}[/dim]" if tag else "")
                + f": {escape(a['title'])} [dim]({a['rule']})[/dim] saves ~{fmt_ns(a['estimated_saving_ns'])} "
                f"({fmt_pct(a['program_fraction'])} of the program)"
            )
        listed = {(a.get("rule"), a.get("title")) for a in actions[:5] if a.get("scope") == "program"}
        for p in [p for p in program if (p.get("rule"), p.get("title")) not in listed][:5]:
            console.print(
                f"  • {escape(p['title'])} [dim]({p['rule']})[/dim] saves ~{fmt_ns(p.get('estimated_saving_ns'))}"
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
    kernels = result.get("kernels") or []
    for i, k in enumerate(kernels[:top]):
        first = (k.get("findings") or [None])[0]
        first_text = "–"
        if first:
            est = first.get("estimated_speedup") or 0
            first_text = f"{first['rule']} {first['category']}" + (f" −{fmt_pct(est)}" if est else "")
        sizes = k.get("variants") or []
        if sizes:  # launches of another size, analysed on their own (or timed only)
            vfirst = [(v.get("findings") or [{}])[0].get("rule") for v in sizes]
            first_text += (
                f" (+{len(sizes)} size{'s' if len(sizes) > 1 else ''}: "
                + ", ".join(r or ("–" if v.get("profiled") else "timed") for r, v in zip(vfirst, sizes))
                + ")"
            )
        bound = k.get("bound") or "unknown"
        table.add_row(
            str(i),
            escape(
                short_name(k["name"], 48)
                + (f" · {tags[str(k.get('id'))]}" if str(k.get("id")) in tags else "")
                + (f" [{k['process_label']}]" if k.get("process_label") else "")
                + (f" [GPU {k['device_id']}]" if isinstance(k.get("device_id"), int) else "")
            ),
            str(k.get("launches")),
            fmt_ns(k.get("duration_ns")),
            fmt_pct(k.get("time_share")),
            f"[{BOUND_STYLE.get(bound, '')}]{bound}[/]",
            fmt_x(k.get("headroom")),
            escape(first_text),
        )
    console.print()
    console.print(table)
    if len(kernels) > top:
        console.print(f"[dim]… {len(kernels) - top} more kernels in the full report (-o report.html)[/dim]")
