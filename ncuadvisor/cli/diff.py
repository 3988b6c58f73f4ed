"""`ncuadvisor diff`: compare two reports (or saved results) of the same program; with `--fail-on`, a CI gate."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ncuadvisor.cli.common import (
    ConfigOption,
    DiffFormat,
    ForceOption,
    IgnoreOption,
    RulesDirOption,
    SelectOption,
    check_output,
    format_help,
    format_name,
    load_rules,
    refuse_diff_sarif,
    refuse_terminal_file,
    render_diff,
    write_output,
    wrote,
)
from ncuadvisor.errors import GateFailed, InputError
from ncuadvisor.render import formats
from ncuadvisor.result.types import Result


class FailOn(str, Enum):
    regression = "regression"
    findings = "findings"


def _result_of(path: Path, rules: list[Any]) -> Result:
    """A report is analyzed; a saved report result (.json) is read as it is (the API's `result_record`)."""
    from ncuadvisor.api import result_record

    return result_record(path, rules)


def _partial_sides(before: Result, after: Result) -> list[tuple[str, str]]:
    """(side, its first `partial:` warning) for each result that is partial (a report cut short or damaged, a profile
    run interrupted)."""
    out = []
    for side, res in (("before", before), ("after", after)):
        prof = res.report.profile
        warns = [str(w) for w in res.report.warnings if str(w).startswith("partial")]
        if warns or (prof is not None and prof.partial):
            out.append((side, warns[0].split(": ", 1)[-1] if warns else "the profile run was partial"))
    return out


def _devices_differ(before: Result, after: Result) -> tuple[str, str] | None:
    """(before's GPU, after's) when both name their GPU and the names differ."""
    b, a = before.report.device.name, after.report.device.name
    return (b, a) if b and a and b != a else None


def diff(
    before: Annotated[
        Path,
        typer.Argument(help="The baseline (e.g. main): a report (.ncu-rep, .ncu-rep.xz) or a saved result (.json)."),
    ],
    after: Annotated[Path, typer.Argument(help="The new version (e.g. the pull request), same kinds.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the diff here; the extension picks the format.")
    ] = None,
    fmt: Annotated[DiffFormat | None, typer.Option("--format", "-f", help=format_help(diff=True))] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a kernel or the total got slower beyond the threshold (regression), "
            "or when a finding is new (findings).",
        ),
    ] = None,
    threshold: Annotated[
        str | None,
        typer.Option(
            "--threshold",
            help="Noise threshold: smaller changes are 'unchanged' (e.g. 5%, 0.05). Default 5%, from ncu's "
            "run-to-run spread; changes under 1 µs never count.",
        ),
    ] = None,
    rules_dir: RulesDirOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    config: ConfigOption = None,
    force: ForceOption = False,
    top: Annotated[int, typer.Option("--top", min=0, help="Kernels shown in the terminal table.")] = 20,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary when writing a file.")] = False,
    allow_partial: Annotated[
        bool,
        typer.Option(
            "--allow-partial",
            help="With --fail-on: gate even when a report is partial (cut short, damaged); by default that is "
            "refused (exit 2), since a partial report looks faster than it is.",
        ),
    ] = False,
    allow_cross_device: Annotated[
        bool,
        typer.Option(
            "--allow-cross-device",
            help="With --fail-on: gate even when the two reports come from different GPUs; by default that is "
            "refused (exit 2), since their times are not comparable.",
        ),
    ] = False,
) -> None:
    """Compare two reports of the same program (before, after): time, bound and findings per kernel; a CI gate."""
    from ncuadvisor.comparison import compare, gate, parse_threshold
    from ncuadvisor.render.diff_render import render_diff_terminal

    value = parse_threshold(threshold) if threshold is not None else None
    name = format_name(output, fmt)
    if name == "sarif":
        refuse_diff_sarif(name)
    if output is not None:
        check_output(output, force, [before, after])
        refuse_terminal_file(formats.get(name), diff=True)
    # the rules (and the configuration) apply to the reports analysed here, not to saved results
    rules = load_rules(rules_dir, select, ignore, config, quiet=quiet)
    result_before = _result_of(before, rules)
    result_after = _result_of(after, rules)
    d = compare(result_before, result_after, threshold=value)
    partial = _partial_sides(result_before, result_after)
    for side, why in reversed(partial):  # first, in every format: the comparison is not of whole reports
        d.warnings.insert(0, f"partial: the {side} report is incomplete, so its times are too ({why})")
    if output is None and name != "terminal":
        sys.stdout.write(render_diff(d, name))
    else:
        if output is not None:
            write_output(output, render_diff(d, name), force)
        if not quiet:
            render_diff_terminal(d, top=top)
            if output is not None:
                wrote(output)
    if partial and fail_on is not None and not allow_partial:
        sides = " and ".join(side for side, _ in partial)
        raise InputError(
            f"--fail-on {fail_on.value}: the {sides} report is partial, so the gate cannot tell a speedup from lost "
            "kernels (pass --allow-partial to gate anyway)"
        )
    devices = _devices_differ(result_before, result_after)
    if devices and fail_on is not None and not allow_cross_device:
        raise InputError(
            f"--fail-on {fail_on.value}: the reports come from different GPUs ({devices[0]} before, {devices[1]} "
            "after), so their times are not comparable (pass --allow-cross-device to gate anyway)"
        )
    reasons = gate(d, fail_on.value if fail_on is not None else None)
    if reasons and fail_on is not None:
        shown = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
        raise GateFailed(f"--fail-on {fail_on.value} failed: {shown}")
