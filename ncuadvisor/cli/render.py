"""`ncuadvisor render`: a saved result (report or diff JSON) in another format, without the report or ncu."""

from __future__ import annotations

import sys
from collections.abc import Iterator
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
from ncuadvisor.saved.stream import StreamedResult
from ncuadvisor.saved.validate import load_saved


def json_chunks(result: StreamedResult) -> Iterator[str]:
    """The JSON of a result read a kernel at a time, as `render -f json` writes any result, with every kernel of its
    file (read again, one at a time, instead of the ones kept)."""
    from ncuadvisor.render import to_json

    data = result.to_dict()
    data["report"]["warnings"] = [w for w in data["report"].get("warnings", []) if w != result.left_out]
    head = to_json({**data, "kernels": []})
    before, after = head.split('"kernels": []', 1)
    yield before + '"kernels": ['
    for i, k in enumerate(result.all_kernels()):
        yield ("," if i else "") + "\n    " + to_json(k.to_dict()).replace("\n", "\n    ")
    yield ("\n  ]" if result.streamed else "]") + after + "\n"


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

    saved = load_saved(path, stream=True)
    text: str | Iterator[str]
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
    elif name == "json" and kernel is None and isinstance(saved, StreamedResult):  # every kernel, one at a time
        text = json_chunks(saved)
    elif name == "sarif":  # the SARIF's rule help texts come from the rules' docstrings (the user's folders too)
        rules = load_rules(rules_dir, config_file=config, quiet=True)
        text = render_report(saved, formats.get(name), source_root, rules, kernel, top)
    else:
        text = render_report(saved, formats.get(name), kernel=kernel, top=top)
    if output is None:
        for chunk in [text] if isinstance(text, str) else text:
            sys.stdout.write(chunk)
        return
    write_output(output, text, force)
    if not quiet:
        wrote(output, blank_line=False)
