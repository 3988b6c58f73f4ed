"""`ncuadvisor profile --host-time`: one more run of the script, without ncu, under torch.profiler with CUDA
activities (the torch runner's feature "hosttime", `profile.target.TORCH_RUNNER_HOSTTIME`), whose trace becomes the
result's host timeline (`analysis.hosttrace`, `analysis.walltime`): each fix then also gets the wall time it saves on
this machine's host.

The run costs one more execution of the script, at its own pace (the profiler adds a few µs of host time per CUDA
call: `fixtures/host-trace-2026-12-02`; the runner measures how many on this host, `profile.host_runner`, and the
replays take them out); it runs before ncu's phases, with none of `--torch-ops` or `--python-lines`'s
instrumentation, whose own host time would be in the timeline. The trace is kept beside the output,
`<stem>.host-trace.json.gz` (removed with `--no-keep`), so that `ncuadvisor report <stem>.ncu-rep --host-trace
<stem>.host-trace.json.gz` gives the same estimates later. A run that fails, or a trace without CUDA activity, is a
warning in the result ("host timeline not recorded: ..."), never the end of the profile.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ncuadvisor.analysis.hosttrace import COST_KEY, Timeline, call_cost, read_trace
from ncuadvisor.errors import InputError, OutputError, ProfileInterrupted
from ncuadvisor.profile.progress import ProgressUI
from ncuadvisor.profile.target import TORCH_RUNNER, Target

HOST_TRACE_ENV = "NCUADVISOR_HOST_TRACE"  # where the runner exports the trace
HOST_FEATURE = "hosttime"


def host_trace_path(base: Path) -> Path:
    """Where the trace is kept: `<stem>.host-trace.json.gz` beside the reports."""
    return base.parent / f"{base.name}.host-trace.json.gz"


def check_host_time(target: Target) -> None:
    """`--host-time` needs a Python script and PyTorch in this Python: an InputError before anything runs."""
    if target.script is None:
        raise InputError(
            "--host-time runs a Python script under torch.profiler; for another program record a trace of it "
            "(torch.profiler or Kineto, CUDA activities) and give it to `ncuadvisor report --host-trace`"
        )
    if importlib.util.find_spec("torch") is None:
        raise InputError("--host-time needs PyTorch in this Python (pip install 'ncuadvisor[torch]')")


def host_argv(target: Target) -> list[str]:
    """The command of the host-time run: the script and its arguments under the torch runner, feature "hosttime"."""
    assert target.script is not None
    script = str(target.script)
    args = target.argv[target.argv.index(script) + 1 :] if script in target.argv else []
    python = target.argv[0] if target.argv else sys.executable
    return [python, "-c", TORCH_RUNNER, HOST_FEATURE, script, *args]


def record_host_timeline(session: Any) -> Timeline | None:
    """The host timeline of a `profile.session.Session`'s script (`run_host_time`): the trace placed beside its
    reports, and a warning in its result when there is no timeline."""
    timeline, kept, warning = run_host_time(
        session.target, session.env, session.work, session.base, session.ui, session.force
    )
    if kept is not None:
        session.placed.append(kept)
    if warning:
        session.warnings.append(warning)
    return timeline


def run_host_time(
    target: Target, env: dict[str, str], work: Path, base: Path, ui: ProgressUI, force: bool
) -> tuple[Timeline | None, Path | None, str | None]:
    """Run the script once under torch.profiler: (its timeline, the trace kept beside the output, None), or (None,
    None or the trace kept, the warning that says why there is no timeline)."""
    raw = work / "host_trace.json"
    ui.note("host time: one plain run of the script under torch.profiler (CUDA activities), without ncu")
    t0 = time.monotonic()
    try:
        proc = subprocess.run(host_argv(target), env={**env, HOST_TRACE_ENV: str(raw)}, check=False)
    except KeyboardInterrupt:
        raise ProfileInterrupted("interrupted during the host-time run, before ncu ran: nothing to analyze") from None
    except OSError as exc:
        return None, None, f"host timeline not recorded: the script could not run ({exc.strerror or exc})"
    if not raw.is_file():
        why = f"the script exited with code {proc.returncode}" if proc.returncode else "the runner wrote no trace"
        return None, None, f"host timeline not recorded: {why}"
    cost = measured_cost(raw)
    kept = keep_trace(raw, host_trace_path(base), force, cost)
    warning = None
    if proc.returncode:
        warning = f"host timeline: the script exited with code {proc.returncode}; its trace up to then is used"
    try:
        timeline = read_trace(raw)
    except InputError as exc:
        return None, kept, f"host timeline not used: {exc}"
    timeline.call_cost_ns = call_cost(cost)
    ui.note(f"  host time: {len(timeline.ops)} GPU operations in {time.monotonic() - t0:.1f} s")
    return timeline, kept, warning


def measured_cost(raw: Path) -> dict[str, Any] | None:
    """The profiler's cost per call the runner measured after the script (`profile.host_runner`: a file beside the
    trace), or None where it could not."""
    try:
        cost = json.loads(raw.with_name(raw.name + ".cost.json").read_text())
    except (OSError, ValueError):
        return None
    return cost if isinstance(cost, dict) else None


def keep_trace(raw: Path, dest: Path, force: bool, cost: dict[str, Any] | None = None) -> Path:
    """The trace, gzip-compressed, beside the output (never over a file without --force), with the measured cost
    as its first top-level key (`hosttrace.COST_KEY`) so that it carries it to `report --host-trace`; a trace that is
    not a JSON object is kept as it is (read_trace will say what it is)."""
    if dest.exists() and not force:
        raise OutputError(f"{dest}: already exists (pass --force to overwrite it)")
    try:
        with open(raw, "rb") as fin, gzip.open(dest, "wb", compresslevel=6) as fout:
            head = fin.read(4096)
            brace = head.find(b"{")
            if cost is not None and brace >= 0 and not head[:brace].strip():
                fout.write(b"{" + json.dumps({COST_KEY: cost})[1:-1].encode() + b",")
                head = head[brace + 1 :]
            fout.write(head)
            shutil.copyfileobj(fin, fout)
    except OSError as exc:
        raise OutputError(f"{dest}: cannot write ({exc.strerror or exc})") from exc
    return dest
