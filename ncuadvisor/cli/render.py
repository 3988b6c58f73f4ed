"""`ncuadvisor render`: a saved result (report or diff JSON) in another format, without the report or ncu."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ncuadvisor.cli.common import (
    ConfigOption,
    ForceOption,
    Format,
    SourceRootOption,
    check_output,
    format_help,
    format_name,
    load_rules,
    refuse_diff_sarif,
    refuse_terminal_file,
    render_diff,
    render_report,
    write_output,
    wrote,
)
from ncuadvisor.render import formats
from ncuadvisor.saved.validate import load_saved


def render(
    path: Annotated[Path, typer.Argument(help="A saved result: the JSON of `ncuadvisor report` or `ncuadvisor diff`.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here; the extension picks the format.")
    ] = None,
    fmt: Annotated[Format | None, typer.Option("--format", "-f", help=format_help())] = None,
    source_root: SourceRootOption = None,
    rules_dir: Annotated[
        list[Path] | None,
        typer.Option("--rules-dir", help="SARIF: also take rule help texts from this folder (repeatable)."),
    ] = None,
    config: ConfigOption = None,
    force: ForceOption = False,
    top: Annotated[
        int | None,
        typer.Option("--top", min=0, help="Kernels shown in the terminal summary (default 10, a diff's 20)."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Say nothing when writing a file.")] = False,
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel", help="One kernel (its id, name, demangled or display name), in a format that takes one."
        ),
    ] = None,
) -> None:
    """Re-render a saved result (report or diff JSON) as html, md, sarif, json or terminal; no report or ncu needed."""
    name = format_name(output, fmt)
    if output is not None:
        check_output(output, force, [path])
        refuse_terminal_file(formats.get(name))
    from ncuadvisor.comparison.types import DiffResult  # the diff package: imported by the commands that read a diff

    saved = load_saved(path)
    if isinstance(saved, DiffResult):
        refuse_diff_sarif(name)
        if name == "terminal":
            from ncuadvisor.render.diff_render import render_diff_terminal

            render_diff_terminal(saved, top=top or 20)
            return
        text = render_diff(saved, name)
    elif name == "terminal":
        from ncuadvisor.render.terminal import render_terminal

        render_terminal(saved, top=top or 10)
        return
    elif name == "sarif":  # the SARIF's rule help texts come from the rules' docstrings (the user's folders too)
        rules = load_rules(rules_dir, config_file=config, quiet=True)
        text = render_report(saved, formats.get(name), source_root, rules, kernel, top)
    else:
        text = render_report(saved, formats.get(name), kernel=kernel, top=top)
    if output is None:
        sys.stdout.write(text)
        return
    write_output(output, text, force)
    if not quiet:
        wrote(output, blank_line=False)
