"""`ncuadvisor diff`: compare two reports (or saved results) of the same program; with `--fail-on`, a CI gate."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
from ncuadvisor.errors import GateFailed
from ncuadvisor.render import formats
from ncuadvisor.result.types import Result

if TYPE_CHECKING:
    from ncuadvisor.comparison.types import DiffResult


class FailOn(str, Enum):
    regression = "regression"
    findings = "findings"


def _result_of(path: Path, rules: list[Any]) -> Result:
    """A report is analyzed; a saved report result (.json) is read as it is (the API's `result_record`)."""
    from ncuadvisor.api import result_record

    return result_record(path, rules)


# the command's argument and options, as typer reads them from the annotations
BeforeArgument = Annotated[
    Path,
    typer.Argument(help="The baseline (e.g. main): a report (.ncu-rep, .ncu-rep.xz) or a saved result (.json)."),
]

AfterArgument = Annotated[Path, typer.Argument(help="The new version (e.g. the pull request), same kinds.")]

OutputOption = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the diff here; the extension picks the format.")
]

FormatOption = Annotated[DiffFormat | None, typer.Option("--format", "-f", help=format_help(diff=True))]

FailOnOption = Annotated[
    FailOn | None,
    typer.Option(
        "--fail-on",
        help="Exit 1 when a kernel or the total got slower beyond the threshold (regression), "
        "or when a finding is new (findings).",
    ),
]

ThresholdOption = Annotated[
    str | None,
    typer.Option(
        "--threshold",
        help="Noise threshold: smaller changes are 'unchanged' (e.g. 5%, 0.05). Default 5%, from ncu's "
        "run-to-run spread; changes under 1 µs never count.",
    ),
]

TopOption = Annotated[int, typer.Option("--top", min=0, help="Kernels shown in the terminal table.")]

QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary when writing a file.")]

AllowPartialOption = Annotated[
    bool,
    typer.Option(
        "--allow-partial",
        help="With --fail-on: gate even when a report is partial (cut short, damaged); by default that is "
        "refused (exit 2), since a partial report looks faster than it is.",
    ),
]

AllowCrossDeviceOption = Annotated[
    bool,
    typer.Option(
        "--allow-cross-device",
        help="With --fail-on: gate even when the two reports come from different GPUs; by default that is "
        "refused (exit 2), since their times are not comparable.",
    ),
]


def diff(
    before: BeforeArgument,
    after: AfterArgument,
    output: OutputOption = None,
    fmt: FormatOption = None,
    fail_on: FailOnOption = None,
    threshold: ThresholdOption = None,
    rules_dir: RulesDirOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    config: ConfigOption = None,
    force: ForceOption = False,
    top: TopOption = 20,
    quiet: QuietOption = False,
    allow_partial: AllowPartialOption = False,
    allow_cross_device: AllowCrossDeviceOption = False,
) -> None:
    """Compare two reports of the same program (before, after): time, bound and findings per kernel; a CI gate."""
    from ncuadvisor.comparison.gate import compared, devices_differ, gate, parse_threshold, refuse_gate

    value = parse_threshold(threshold) if threshold is not None else None
    name = format_name(output, fmt)
    if name == "sarif":
        refuse_diff_sarif(name)
    if output is not None:
        check_output(output, force, [before, after])
        refuse_terminal_file(formats.get(name), diff=True)
    # the rules (and the configuration) apply to the reports analysed here, not to saved results
    rules = load_rules(rules_dir, select, ignore, config, quiet=quiet)
    result_before, result_after = _result_of(before, rules), _result_of(after, rules)
    d, partial = compared(result_before, result_after, value)
    _show(d, name, output, force, quiet, top)
    if fail_on is not None:
        devices = devices_differ(result_before, result_after)
        refuse_gate(fail_on.value, partial, devices, allow_partial, allow_cross_device)
    reasons = gate(d, fail_on.value if fail_on is not None else None)
    if reasons and fail_on is not None:
        shown = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
        raise GateFailed(f"--fail-on {fail_on.value} failed: {shown}")


def _show(d: DiffResult, name: str, output: Path | None, force: bool, quiet: bool, top: int) -> None:
    """The diff on stdout in its format, or written to `output` with the terminal table (unless `quiet`)."""
    from ncuadvisor.render.diff_render import render_diff_terminal

    if output is None and name != "terminal":
        sys.stdout.write(render_diff(d, name))
        return
    if output is not None:
        write_output(output, render_diff(d, name), force)
    if not quiet:
        render_diff_terminal(d, top=top)
        if output is not None:
            wrote(output)
