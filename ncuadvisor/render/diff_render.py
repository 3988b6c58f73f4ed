"""Renderers of a diff dict (`ncuadvisor.diff.diff_results`): terminal (rich), markdown (GitHub), HTML, JSON.

They format, never compute: every number comes from the diff. The markdown reuses the escaping of the report's
markdown renderer (`md`, `h`: pipes, backticks, angle brackets and the rest) and, like it, stays under GitHub's
comment limit however many kernels the diff has: per-kernel details are dropped first (the smallest changes), then
table rows, each time with a note saying how many were left out.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ncuadvisor.render import environment, fmt_ns, fmt_pct, fmt_x, shape_tagger, short_name, to_json
from ncuadvisor.render.html import _Rec, _view, bound_class, css_token, fmt_num, safe_short_name
from ncuadvisor.render.markdown import GITHUB_LIMIT, fit_markdown, h, md
from ncuadvisor.render.markdown import safe_short_name as md_short_name
from ncuadvisor.units import finite

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


# -- small formatters (shared by the three templated formats) --------------------------------------------------


_num = finite


def fmt_change(x: Any) -> str:
    """A relative change with its sign: 0.05 -> '+5.0%', -0.565 -> '−56.5%' (a real minus sign)."""
    x = _num(x)
    if x is None:
        return "–"
    text = f"{abs(x) * 100:.1f}%" if abs(x) < 10 else f"{abs(x) * 100:.0f}%"
    return ("+" if x > 0 else "−" if x < 0 else "±") + text


def fmt_delta_ns(ns: Any) -> str:
    """A signed duration: 997900 -> '+997.9 µs'."""
    ns = _num(ns)
    if ns is None:
        return "–"
    return ("+" if ns > 0 else "−" if ns < 0 else "±") + fmt_ns(abs(ns))


def fmt_threshold(x: Any) -> str:
    """A threshold as a percentage without trailing zeros: 0.05 -> '5%', 0.025 -> '2.5%'."""
    x = _num(x)
    return "–" if x is None else f"{x * 100:.3g}%"


def basename_loc(loc: Any) -> str:
    """'/a/b/pipeline.cu:68' -> 'pipeline.cu:68'."""
    if not loc:
        return ""
    text = str(loc)
    path, sep, line = text.rpartition(":")
    if not sep or not line.isdigit():
        return os.path.basename(text.replace("\\", "/"))
    return f"{os.path.basename(path.replace(chr(92), '/'))}:{line}"


def findings_cell_text(fs: Any) -> str:
    fs = fs or {}
    parts = []
    new = [str(f.get("rule") or "?") for f in fs.get("new") or []]
    resolved = [str(f.get("rule") or "?") for f in fs.get("resolved") or []]
    unchanged = fs.get("unchanged") or []
    if new:
        parts.append("new " + ", ".join(new))
    if resolved:
        parts.append("resolved " + ", ".join(resolved))
    if unchanged:
        parts.append(f"{len(unchanged)} unchanged")
    return "; ".join(parts) if parts else "–"


def _new_findings(d: dict[str, Any]) -> list[tuple[dict, dict]]:
    out = []
    for k in d.get("kernels") or []:
        for f in ((k.get("findings") or {}).get("new")) or []:
            out.append((k, f))
    out.sort(key=lambda kf: -(_num(kf[1].get("estimated_saving_ns")) or 0.0))
    return out


def _by_status(d: dict[str, Any], status: str) -> list[dict[str, Any]]:
    return [k for k in d.get("kernels") or [] if k.get("status") == status]


def _sum_ns(kernels: list[dict[str, Any]], side: str) -> float:
    return sum((_num((k.get(side) or {}).get("duration_ns")) or 0.0) for k in kernels)


def diff_shape_tag(d: dict[str, Any]):
    """entry -> its `shape_tagger` tag among the diff's entries ('grid (8, 8, 1)' where other entries share its name;
    per-process entries are already told apart by their process), from the after side, else the before side."""

    def side(k: Any) -> dict[str, Any]:
        s = (k.get("after") or k.get("before") or {}) if isinstance(k, dict) else {}
        return s if isinstance(s, dict) else {}

    def name(k: Any) -> tuple[str, str]:
        if not isinstance(k, dict):
            return ("", "")
        return (str(k.get("name") or k.get("demangled") or ""), str((k.get("process") or {}).get("label") or ""))

    entries = [k for k in d.get("kernels") or [] if isinstance(k, dict)]
    return shape_tagger(entries, name, lambda k: (str(side(k).get("grid") or "–"), str(side(k).get("block") or "–")))


def total_change_text(t: dict[str, Any]) -> str:
    """The program total's change: '+7.93 ms, +227.6%', and in per-launch mode '+205.5 µs, +1.8% per result: 3.22×
    the results'."""
    text = fmt_delta_ns(t.get("change_ns")) + (
        f", {fmt_change(t.get('change'))}" if t.get("change") is not None else ""
    )
    if _num(t.get("before_scaled_ns")) is not None and _num(t.get("before_ns")):
        text += f" per result: {_num(t['before_scaled_ns']) / _num(t['before_ns']):.2f}× the results"
    return text


def _globals(d: dict[str, Any], markdown: bool) -> dict[str, Any]:
    return {
        "shape_tag": diff_shape_tag(d),
        "total_change": total_change_text,
        "empty": _Rec(),
        "by_status": lambda s: _by_status(d, s),
        "sum_ns": _sum_ns,
        "new_findings": lambda: _new_findings(d),
        "status_text": lambda s: STATUS_TEXT.get(s, str(s)),
        "status_label": lambda s: STATUS_MD.get(s, md(s)),
        "verdict_label": lambda v: VERDICT_MD.get(v, md(v)),
        "verdict_text": lambda v: VERDICT_TEXT.get(v, str(v)),
        "findings_cell": (lambda fs: md(findings_cell_text(fs))) if markdown else findings_cell_text,
        "bound_text": lambda b: md(b) if b else "–",
        "x_text": fmt_x,
    }


def _env(d: dict[str, Any], markdown: bool):
    env = environment(autoescape=not markdown)
    env.filters.update(
        {
            "chg": fmt_change,
            "thr": fmt_threshold,
            "dns": fmt_delta_ns,
            "num": fmt_num,
            "basename_loc": basename_loc,
            "bound_class": bound_class,
            "css_token": css_token,
            "sname": md_short_name if markdown else safe_short_name,
        }
    )
    if markdown:
        env.filters.update({"md": md, "h": h})
    env.globals.update(_globals(d, markdown))
    return env


# -- markdown --------------------------------------------------------------------------------------------------


def _has_detail(k: dict[str, Any]) -> bool:
    fs = k.get("findings") or {}
    return k.get("status") != "unchanged" or bool(fs.get("new") or fs.get("resolved")) or k.get("match") == "name"


def render_diff_markdown(diff: dict[str, Any], max_chars: int = GITHUB_LIMIT) -> str:
    d = _view(diff)
    env = _env(d, markdown=True)
    mod = env.get_template(MD_TEMPLATE).make_module({"d": d})
    kernels = [k if isinstance(k, dict) else _Rec() for k in (d.get("kernels") or [])]

    head = str(mod.head()).strip("\n") + "\n\n"
    table_head = str(mod.table_head()).strip("\n") + "\n" if kernels else ""
    rows = [str(mod.table_row(k)).strip("\n") + "\n" for k in kernels]
    footer = "\n" + str(mod.footer()).strip("\n") + "\n"
    detailed = [k for k in kernels if _has_detail(k)]
    details_title = "\n" + str(mod.details_title()).strip("\n") + "\n\n" if detailed else ""

    details_title = details_title.rstrip("\n") + "\n" if details_title else ""

    def note_rows(n: int, _shown: int) -> str:
        return "\n" + str(mod.rows_left_out(n)).strip("\n") + "\n"

    def note_details(n: int) -> str:
        return "\n" + str(mod.details_left_out(n)).strip("\n") + "\n"

    # the details of changed kernels, largest changes first (the list's order)
    details = [lambda k=k: str(mod.kernel_detail(k)) for k in detailed]
    return fit_markdown(max_chars, head, table_head, rows, details_title, details, footer, note_rows, note_details)


# -- HTML and JSON ---------------------------------------------------------------------------------------------


def render_diff_html(diff: dict[str, Any]) -> str:
    d = _view(diff)
    env = _env(d, markdown=False)
    return env.get_template(HTML_TEMPLATE).render(d=d)


def render_diff_json(diff: dict[str, Any]) -> str:
    return to_json(diff) + "\n"


# -- terminal --------------------------------------------------------------------------------------------------


def _styled(status: str) -> str:
    text = STATUS_TEXT.get(status, status)
    style = STATUS_STYLE.get(status)
    return f"[{style}]{text}[/]" if style else escape(text)


def render_diff_terminal(diff: dict[str, Any], console: Console | None = None, top: int = 20) -> None:
    if console is None:
        console = Console(highlight=False)
        if not console.is_terminal:  # piped or in CI: rich would assume 80 columns
            console = Console(highlight=False, width=140)
    b, a = diff.get("before") or {}, diff.get("after") or {}
    t, s, noise = diff.get("total") or {}, diff.get("summary") or {}, diff.get("noise") or {}
    console.print(
        f"[bold]{escape(str(b.get('name') or 'before'))}[/bold] → "
        f"[bold]{escape(str(a.get('name') or 'after'))}[/bold]  "
        f"{escape(str(a.get('device') or b.get('device') or 'unknown GPU'))}"
    )
    verdict = diff.get("verdict") or "unchanged"
    style = {"regressed": "bold red", "improved": "bold green"}.get(verdict, "bold")
    change = total_change_text(t)
    console.print(
        f"[{style}]{VERDICT_TEXT.get(verdict, verdict)}[/]: GPU time {fmt_ns(t.get('before_ns'))} → "
        f"{fmt_ns(t.get('after_ns'))} ({change})"
    )
    console.print(
        f"[dim]{s.get('regressed', 0)} slower, {s.get('improved', 0)} faster, {s.get('unchanged', 0)} unchanged, "
        f"{s.get('added', 0)} added, {s.get('removed', 0)} removed; findings {s.get('new_findings', 0)} new, "
        f"{s.get('resolved_findings', 0)} resolved; noise threshold {fmt_threshold(noise.get('threshold'))} "
        f"(at least {fmt_ns(noise.get('min_change_ns'))})[/dim]"
    )
    for w in diff.get("warnings") or []:
        console.print(f"[yellow]warning:[/yellow] {escape(str(w))}")

    table = Table(header_style="bold")
    for col, just in (
        ("kernel", "left"),
        ("before", "right"),
        ("after", "right"),
        ("change", "right"),
        ("status", "left"),
        ("bound", "left"),
        ("headroom", "right"),
        ("findings", "left"),
    ):
        table.add_column(col, justify=just, overflow="fold", max_width=48 if col in ("kernel", "findings") else None)
    kernels = diff.get("kernels") or []
    tag = diff_shape_tag(diff)
    for k in kernels[:top]:
        kb, ka = k.get("before") or {}, k.get("after") or {}
        status = k.get("status") or "unchanged"
        chg = fmt_delta_ns(k.get("change_ns"))
        if k.get("change") is not None:
            chg += f" ({fmt_change(k.get('change'))})"
        bound = kb.get("bound") or ka.get("bound") or "–"
        if kb and ka and kb.get("bound") != ka.get("bound"):
            bound = f"{kb.get('bound')} → {ka.get('bound')}"
        headroom = " → ".join(fmt_x(side.get("headroom")) for side in (kb, ka) if side)
        name = short_name(str(k.get("name") or k.get("demangled") or ""), 48)
        if shape := tag(k):
            name += f" · {shape}"
        if (k.get("process") or {}).get("label"):
            name += f" · {k['process']['label']}"
        if k.get("match") == "name":
            name += " (by name)"
        table.add_row(
            escape(name),
            fmt_ns(kb.get("duration_ns")) if kb else "–",
            fmt_ns(ka.get("duration_ns")) if ka else "–",
            chg,
            _styled(status),
            escape(str(bound)),
            headroom,
            escape(findings_cell_text(k.get("findings"))),
        )
    console.print()
    console.print(table)
    if len(kernels) > top:
        console.print(f"[dim]… {len(kernels) - top} more kernels in the full diff (-o diff.html)[/dim]")
    ff = diff.get("first_fix")
    if ff:
        console.print(
            f"\n[bold]First fix now[/bold]: {escape(short_name(str(ff.get('kernel') or ''), 60))}"
            + (f" [dim]· {escape(str(ff['kernel_shape']))}[/dim]" if ff.get("kernel_shape") else "")
            + ": "
            f"{escape(str(ff.get('title') or ''))} [dim]({escape(str(ff.get('rule') or ''))})[/dim] saves "
            f"~{fmt_ns(ff.get('estimated_saving_ns'))} ({fmt_pct(ff.get('program_fraction'))} of the program)"
        )
