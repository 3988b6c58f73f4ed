"""`ncuadvisor render`: a saved result (report or diff JSON) in another format, without the report or ncu."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from ncuadvisor.cli.common import (
    ConfigOption,
    ForceOption,
    Format,
    SourceRootOption,
    check_output,
    format_name,
    load_rules,
    refuse_diff_sarif,
    render_diff,
    render_report,
    write_output,
    wrote,
)
from ncuadvisor.errors import OutputError
from ncuadvisor.saved.validate import load_saved


class RenderFormat(str, Enum):
    terminal = "terminal"
    json = "json"
    html = "html"
    md = "md"
    sarif = "sarif"
    digest = "digest"
    digest_json = "digest-json"


def render(
    path: Annotated[Path, typer.Argument(help="A saved result: the JSON of `ncuadvisor report` or `ncuadvisor diff`.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here; the extension picks the format.")
    ] = None,
    fmt: Annotated[
        RenderFormat | None, typer.Option("--format", "-f", help="Output format (default: by extension).")
    ] = None,
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
) -> None:
    """Re-render a saved result (report or diff JSON) as html, md, sarif, json or terminal; no report or ncu needed."""
    name = format_name(output, fmt)
    if output is not None:
        check_output(output, force, [path])
        if name == "terminal":
            raise OutputError("--format terminal cannot be written to a file; use .html, .json, .md or .sarif")
    from ncuadvisor.diff.types import DiffResult  # the diff package: imported by the commands that read a diff

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
        text = render_report(saved, Format.sarif, source_root, load_rules(rules_dir, config_file=config, quiet=True))
    else:
        text = render_report(saved, Format(name))
    if output is None:
        sys.stdout.write(text)
        return
    write_output(output, text, force)
    if not quiet:
        wrote(output, blank_line=False)
