"""`ncuadvisor report`: analyze a saved Nsight Compute report and write the result in any format."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ncuadvisor.cli.common import (
    ConfigOption,
    ForceOption,
    Format,
    IgnoreOption,
    RulesDirOption,
    SelectOption,
    SourceRootOption,
    check_output,
    choose_format,
    format_help,
    load_rules,
    refuse_terminal_file,
    render_report,
    write_output,
    wrote,
)
from ncuadvisor.errors import OutputError
from ncuadvisor.render.formats import FORMATS


def report(
    path: Annotated[Path, typer.Argument(help="An Nsight Compute report (.ncu-rep or .ncu-repz).")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here; the extension picks the format.")
    ] = None,
    fmt: Annotated[Format | None, typer.Option("--format", "-f", help=format_help())] = None,
    rules_dir: RulesDirOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    config: ConfigOption = None,
    force: ForceOption = False,
    top: Annotated[
        int, typer.Option("--top", min=0, help="Kernels shown in the terminal summary and in the digest.")
    ] = 10,
    kernel: Annotated[
        str | None,
        typer.Option(
            "--kernel",
            help="One kernel (its id, name, demangled or display name) with --format digest, digest-json or json.",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary when writing a file.")] = False,
    source_root: SourceRootOption = None,
    host_trace: Annotated[
        Path | None,
        typer.Option(
            "--host-trace",
            help="A torch.profiler trace of the same program (CUDA activities, export_chrome_trace; .json, .xz or "
            ".gz): each fix also gets the wall time it saves, the measured host timeline replayed.",
        ),
    ] = None,
    launch_interval_us: Annotated[
        float | None,
        typer.Option(
            "--launch-interval-us",
            help="The host's launch interval where the program runs, in µs (ncuadvisor profile measures it and keeps "
            "it beside the report): fusing tiny launches saves max(kernel time, interval) per launch removed (PRG004).",
        ),
    ] = None,
) -> None:
    """Analyze a saved report: roofline bound of every kernel, then ranked findings with fixes."""
    from ncuadvisor.api import given_interval
    from ncuadvisor.pipeline.analyze import analyze

    interval = given_interval(launch_interval_us)  # a bad value fails first, in one line
    out_format = choose_format(output, fmt)
    if kernel is not None and not out_format.one_kernel:
        shown = ", ".join(f.name for f in FORMATS.values() if f.one_kernel)
        raise OutputError(f"--kernel needs --format {shown}")
    if output is not None:
        check_output(output, force, [path] + ([host_trace] if host_trace else []))
    timeline = None
    if host_trace is not None:  # a bad trace fails before the analysis
        from ncuadvisor.analysis.hosttrace import read_trace

        timeline = read_trace(host_trace)
    rules = load_rules(rules_dir, select, ignore, config, quiet=quiet)
    result = analyze(path, rules=rules, host=timeline, launch_interval=interval)
    if output is None and not out_format.terminal:
        sys.stdout.write(render_report(result, out_format, source_root, rules, kernel, top))
        return
    if output is not None:
        refuse_terminal_file(out_format)
        write_output(output, render_report(result, out_format, source_root, rules, kernel, top), force)
    if not quiet:
        from ncuadvisor.render.terminal import render_terminal

        render_terminal(result, top=top)
        if output is not None:
            wrote(output)
