"""`ncuadvisor rules`: the rule catalogue, or one rule's documentation in full."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ncuadvisor.cli.common import ConfigOption, load_rules, stdout_console
from ncuadvisor.errors import InputError


def rules(
    code: Annotated[str | None, typer.Argument(help="A rule code (e.g. MEM001) to explain in full.")] = None,
    rules_dir: Annotated[
        list[Path] | None, typer.Option("--rules-dir", help="Also list the rules in this folder.")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """The rule catalogue; `ncuadvisor rules MEM001` explains one rule."""
    from rich.markup import escape
    from rich.table import Table

    from ncuadvisor.rulekit.docs import rule_help

    # every rule, whatever the configuration selects; its rule folders and thresholds apply
    loaded = load_rules(rules_dir, config_file=config, filter_rules=False)
    console = stdout_console()
    if code is None:
        table = Table(header_style="bold")
        for col in ("code", "category", "title", "origin"):
            table.add_column(col)
        for r in sorted(loaded, key=lambda r: r.code):
            table.add_row(r.code, r.category, escape(r.title), escape(r.origin))
        console.print(table)
        return
    match = [r for r in loaded if code.upper() in (r.code, *r.aliases) or code == r.slug]
    if not match:
        raise InputError(f"no rule {code!r} (run `ncuadvisor rules` for the list)")
    console.print(escape(rule_help(match[0])), end="")
