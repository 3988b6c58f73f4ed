"""`ncuadvisor profile`: the command line of the profile package (`ncuadvisor.profile`), which does the work."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ncuadvisor.cli.common import (
    ConfigOption,
    IgnoreOption,
    RulesDirOption,
    SelectOption,
    check_output,
    choose_format,
    load_rules,
    render_report,
    stdout_console,
    write_output,
    wrote,
)
from ncuadvisor.errors import InputError, Interrupted, OutputError, PartialResult

if TYPE_CHECKING:
    from ncuadvisor.profile.target import Target
    from ncuadvisor.result import Result


class CacheControl(str, Enum):
    all = "all"
    none = "none"


class ClockControl(str, Enum):
    none = "none"
    base = "base"


class TargetProcesses(str, Enum):
    all = "all"
    application_only = "application-only"


# bounds checked with the other options, before the program starts (a --top past an index-sized integer failed after
# both ncu phases had run)
MAX_KERNELS = 1_000_000
MAX_LAUNCHES = 2**63 - 1  # ncu's launch counters are 64-bit
MAX_TIMEOUT_S = 30 * 86400.0


# the command's argument and options, as typer reads them from the annotations
TargetArgument = Annotated[
    list[str] | None,
    typer.Argument(
        help="The program: a Python script (run with this Python) or an executable, then its own arguments. "
        "Options ncuadvisor knows are taken wherever they are: put the program after `--` to pass them to it.",
        show_default=False,
    ),
]

OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="The report; the extension picks the format (.html .json .md). Default: <program name>.html here.",
    ),
]

NvtxRangeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--nvtx-range",
        help="Only kernels launched inside this NVTX push/pop range, e.g. "
        "torch.cuda.nvtx.range('step') (repeatable; becomes ncu's --nvtx-include 'step/').",
    ),
]

NvtxIncludeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--nvtx-include",
        help="An ncu NVTX filter expression passed as it is (repeatable), e.g. "
        "'step_all_threads' for a start/end range, 'Domain@range/' or 'regex:iter_[0-9]+/'.",
    ),
]

KernelOption = Annotated[
    str | None,
    typer.Option("--kernel", "-k", help="Only kernels matching this ncu filter: a name, or 'regex:EXPR'."),
]

TopOption = Annotated[
    int | None,
    typer.Option("--top", min=1, max=MAX_KERNELS, help="Profile in depth the K kernels with the most GPU time."),
]

CoverageOption = Annotated[
    float | None,
    typer.Option(
        "--coverage",
        min=0.0,
        max=1.0,
        help="Profile in depth the fewest kernels that hold this "
        "share of the GPU time (default 0.9; with --top, capped at K).",
    ),
]

FullOption = Annotated[
    bool, typer.Option("--full", help="ncu's full set on every launch, one pass: the slow, exhaustive way.")
]

LaunchSkipOption = Annotated[
    int,
    typer.Option("--launch-skip", min=0, max=MAX_LAUNCHES, help="Skip this many launches first (warm-up)."),
]

CacheControlOption = Annotated[
    CacheControl | None,
    typer.Option(
        "--cache-control",
        help="ncu's cache control between replay passes: all (flush; ncu's "
        "default) or none (keep caches warm, as in production).",
    ),
]

ClockControlOption = Annotated[
    ClockControl,
    typer.Option(
        "--clock-control",
        help="none: clocks as in production (peaks come from the measured clocks); base: ncu locks them to base.",
    ),
]

TorchOpsOption = Annotated[
    bool,
    typer.Option(
        "--torch-ops",
        help="Run the script under PyTorch's NVTX emission: each kernel shows "
        "the ATen op and module that launched it (needs PyTorch).",
    ),
]

PythonLinesOption = Annotated[
    bool,
    typer.Option(
        "--python-lines",
        help="Run the script with an NVTX range per ATen op naming the Python line that called it: each kernel "
        "shows the file:line that launched it (backward kernels: the forward line). Code under torch.compile "
        "still compiles; its generated kernels take the line of the nodes they came from (Inductor's "
        "provenance tracking, caches off). Needs PyTorch.",
    ),
]

HostTimeOption = Annotated[
    bool,
    typer.Option(
        "--host-time",
        help="Run the script once more, without ncu, under torch.profiler (CUDA activities): each fix also gets "
        "the wall time it saves on this host, and a step that waits on its host is said. The trace is kept as "
        "<stem>.host-trace.json.gz. Needs PyTorch.",
    ),
]

TargetProcessesOption = Annotated[
    TargetProcesses | None,
    typer.Option(
        "--target-processes",
        help="all (ncu's default: child processes too, e.g. workers and "
        "torchrun ranks, in the same report) or application-only.",
    ),
]

ForceReportsOption = Annotated[bool, typer.Option("--force", help="Overwrite existing output and report files.")]

KeepOption = Annotated[
    bool, typer.Option("--keep/--no-keep", help="Keep the .ncu-rep files next to the output (default).")
]

NcuPathOption = Annotated[
    str | None, typer.Option("--ncu", help="The ncu executable (default: PATH, CUDA_HOME, usual folders).")
]

ShowOption = Annotated[int, typer.Option("--show", help="Kernels shown in the terminal summary.")]

QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no terminal summary.")]

VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show every line ncu prints.")]

TimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=0.001,
        max=MAX_TIMEOUT_S,
        help="Stop the program after this many seconds in each ncu run, analyse what was collected and mark the "
        "result partial (exit 4); the processes the program started are ended with it.",
    ),
]


def profile(
    target: TargetArgument = None,
    output: OutputOption = None,
    nvtx_range: NvtxRangeOption = None,
    nvtx_include: NvtxIncludeOption = None,
    kernel: KernelOption = None,
    top: TopOption = None,
    coverage: CoverageOption = None,
    full: FullOption = False,
    launch_skip: LaunchSkipOption = 0,
    cache_control: CacheControlOption = None,
    clock_control: ClockControlOption = ClockControl.none,
    torch_ops: TorchOpsOption = False,
    python_lines: PythonLinesOption = False,
    host_time: HostTimeOption = False,
    target_processes: TargetProcessesOption = None,
    force: ForceReportsOption = False,
    keep: KeepOption = True,
    rules_dir: RulesDirOption = None,
    select: SelectOption = None,
    ignore: IgnoreOption = None,
    config: ConfigOption = None,
    ncu_path: NcuPathOption = None,
    show: ShowOption = 10,
    quiet: QuietOption = False,
    verbose: VerboseOption = False,
    timeout: TimeoutOption = None,
) -> None:
    """Profile a program with ncu and analyze it: a cheap timing pass over every launch, then the full analysis
    sections on one launch of each kernel that matters."""
    # the profile package is imported by this command only: `ncuadvisor report` does not pay for it
    from ncuadvisor.profile.ncu import Filters, nvtx_expression, require_ncu
    from ncuadvisor.profile.session import run_profile
    from ncuadvisor.profile.target import resolve_target

    if full and (top is not None or coverage is not None):
        raise InputError("--full profiles every launch in depth; it does not combine with --top or --coverage")
    tgt = resolve_target(target or [], torch_ops=torch_ops, python_lines=python_lines)
    out_path = _checked_output(tgt, output, full, host_time, force)
    ncu = require_ncu(ncu_path)
    rules = load_rules(rules_dir, select, ignore, config, quiet=quiet)
    filters = Filters(
        nvtx_include=[nvtx_expression(r) for r in (nvtx_range or [])] + list(nvtx_include or []),
        kernel=kernel,
        launch_skip=launch_skip,
        cache_control=cache_control.value if cache_control else None,
        clock_control=clock_control.value,
        target_processes=target_processes.value if target_processes else None,
        record_nvtx=torch_ops or python_lines,
    )
    session, result = run_profile(
        out_path,
        tgt,
        ncu,
        filters,
        rules,
        full=full,
        top=top,
        coverage=coverage,
        force=force,
        torch_ops=torch_ops,
        python_lines=python_lines,
        verbose=verbose,
        quiet=quiet,
        host_time=host_time,
        timeout_s=timeout,
    )
    write_output(out_path, render_report(result, choose_format(out_path, None)), force)
    if not keep:
        session.remove_reports()
    if not quiet:
        _summary(result, session.placed if keep else [], out_path, show)
    if session.interrupted:
        raise Interrupted(f"wrote what was collected to {out_path} (partial)")
    if session.incomplete:
        raise PartialResult(f"{session.incomplete}; wrote {out_path} (partial)")


def _checked_output(tgt: Target, output: Path | None, full: bool, host_time: bool, force: bool) -> Path:
    """The report's path (default: <program name>.html here), checked before the program runs, with the ncu
    reports and the host trace to be written beside it: none overwrites what exists without --force, or an input."""
    from ncuadvisor.profile.reports import planned_reports, report_base

    if host_time:
        from ncuadvisor.profile.hosttime import check_host_time

        check_host_time(tgt)
    out_path = output if output is not None else Path(f"{tgt.stem}.html")
    if choose_format(out_path, None).terminal:  # pragma: no cover - choose_format never returns terminal for a path
        raise OutputError("the profile report must be written to a file (.html, .json or .md)")
    inputs = [tgt.script] if tgt.script else []
    check_output(out_path, force, inputs)
    for rp in planned_reports(report_base(out_path), full):
        check_output(rp, force, inputs)
    if host_time:
        from ncuadvisor.profile.hosttime import host_trace_path

        check_output(host_trace_path(report_base(out_path)), force, inputs)
    return out_path


def _summary(result: Result, placed: list[Path], out_path: Path, show: int) -> None:
    """The terminal summary of the result, the file written and the ncu reports kept (`placed`)."""
    from ncuadvisor.render.terminal import render_terminal

    render_terminal(result, top=show)
    wrote(out_path)
    if placed:
        from rich.markup import escape

        reports = [p for p in placed if not str(p).endswith(".json")]  # not the files kept beside them
        stdout_console().print(
            "reports: "
            + ", ".join(escape(str(p)) for p in placed)
            + f" (re-analyse one with `ncuadvisor report {escape(str(reports[-1] if reports else placed[-1]))}`)"
        )
