"""`ncuadvisor rules`: the rule catalogue (all of it, or the rules a code prefix selects, as `--select` does), or one
rule's documentation in full; as a table or as JSON."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ncuadvisor.cli.common import ConfigOption, load_rules, stdout_console
from ncuadvisor.errors import InputError

DOCS_PAGE = "docs/rules/{code}.md"  # a built-in rule's page in the repository (`python3 -m ncuadvisor.rulekit.docs`)
WIDE = 120  # the terminal width from which the catalogue has a column of each rule's page


class RulesFormat(str, Enum):
    table = "table"
    json = "json"


def docs_page(rule: Any) -> str:
    """A built-in rule's documentation page ("" for a rule of the user's own folder: it has none)."""
    return DOCS_PAGE.format(code=rule.code) if rule.origin == "builtin" else ""


def rule_record(rule: Any) -> dict[str, Any]:
    """A rule as plain data: what the table shows, and its aliases, languages and thresholds in effect."""
    return {
        "code": rule.code,
        "slug": rule.slug,
        "category": rule.category,
        "title": rule.title,
        "aliases": list(rule.aliases),
        "languages": list(getattr(rule, "languages", ()) or ()),
        "thresholds": dict(rule.thresholds),
        "origin": rule.origin,
        "docs": docs_page(rule) or None,
    }


def rules(
    code: Annotated[
        str | None,
        typer.Argument(
            help="A rule code (MEM001), old code or slug to explain in full; a code prefix (MEM) lists those rules."
        ),
    ] = None,
    rules_dir: Annotated[
        list[Path] | None, typer.Option("--rules-dir", help="Also list the rules in this folder.")
    ] = None,
    config: ConfigOption = None,
    out_format: Annotated[
        RulesFormat, typer.Option("--format", "-f", help="A table (one rule: its help text), or JSON.")
    ] = RulesFormat.table,
) -> None:
    """The rule catalogue; `ncuadvisor rules MEM` lists the MEM rules, `ncuadvisor rules MEM001` explains one."""
    from rich.markup import escape
    from rich.table import Table

    from ncuadvisor.rulekit.docs import rule_help

    # every rule, whatever the configuration selects; its rule folders and thresholds apply
    loaded = sorted(load_rules(rules_dir, config_file=config, filter_rules=False), key=lambda r: r.code)
    console = stdout_console()
    shown = loaded
    if code is not None:
        exact = [r for r in loaded if code.upper() in (r.code, *r.aliases) or code == r.slug]
        if exact:
            rule = exact[0]
            if out_format is RulesFormat.json:
                print(json.dumps({**rule_record(rule), "help": rule_help(rule)}, indent=2, ensure_ascii=False))
                return
            page = docs_page(rule)
            console.print(escape(rule_help(rule)), end="")
            if page:
                console.print(f"\nDocumentation: {page}")
            return
        # a prefix, as --select takes it: the rules whose code starts with it
        shown = [r for r in loaded if r.code.startswith(code.upper())]
        if not shown:
            raise InputError(f"no rule {code!r}, and no rule code starts with it (run `ncuadvisor rules` for the list)")
    if out_format is RulesFormat.json:
        print(json.dumps([rule_record(r) for r in shown], indent=2, ensure_ascii=False))
        return
    # each rule's page in its own column where the width allows, else said once under the table
    with_docs = console.width >= WIDE
    table = Table(
        header_style="bold", caption=None if with_docs else "Each rule's page: " + DOCS_PAGE.format(code="CODE")
    )
    for col in ("code", "slug", "category"):
        table.add_column(col, no_wrap=True)
    table.add_column("title")
    if with_docs:
        table.add_column("docs", no_wrap=True)
    for r in shown:
        origin = "" if r.origin == "builtin" else f" (from {r.origin})"
        row = [r.code, r.slug, r.category, escape(r.title + origin)]
        table.add_row(*row, *([docs_page(r) or "–"] if with_docs else []))
    console.print(table)
