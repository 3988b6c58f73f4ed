"""Running one ncu command: its output read as it comes (program output passed on, progress shown), Ctrl-C
handled so that what ncu collected is kept, and a failed run turned into one clear error."""

from __future__ import annotations

import codecs
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncuadvisor.errors import InputError, NothingProfiledError, ProfileError
from ncuadvisor.load.processes import write_sidecar
from ncuadvisor.profile.ncu import Filters, produced_report
from ncuadvisor.profile.output import PERM_READING, LineSplitter, OutputParser, parse_partial
from ncuadvisor.profile.progress import ProgressUI
from ncuadvisor.profile.ranks import ProcessWatcher
from ncuadvisor.profile.target import Target

INTERRUPT_GRACE_S = 60.0


@dataclass
class PhaseRun:
    label: str
    command: list[str]
    out_base: str
    rc: int | None = None
    wall_s: float = 0.0
    parser: OutputParser = field(default_factory=OutputParser)
    report: Path | None = None
    interrupted: bool = False
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)  # pid -> rank fields (ProcessWatcher)


def run_ncu(
    command: list[str],
    out_base: str,
    label: str,
    ui: ProgressUI,
    expected: int | None = None,
    env: dict[str, str] | None = None,
) -> PhaseRun:
    """Run one ncu command, feeding its output to the parser and the progress bar; Ctrl-C stops the program, waits
    for ncu to save what it collected (a second Ctrl-C does not wait) and returns with `interrupted` set."""
    run = PhaseRun(label=label, command=command, out_base=out_base)
    splitter = LineSplitter()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    t0 = time.monotonic()

    def handle(text: str) -> None:
        for line in splitter.feed(text):
            ui.event(run.parser.feed(line))
        tail = splitter.progress()
        partial = parse_partial(tail) if tail is not None else None
        if partial is not None:
            ui.event(partial)

    ui.start(label, expected)
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, bufsize=0)
    except OSError as exc:
        ui.stop()
        raise ProfileError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc
    watcher = ProcessWatcher(proc.pid).start()
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    try:
        try:
            while True:
                data = os.read(fd, 65536)
                if not data:
                    break
                handle(decoder.decode(data))
        except KeyboardInterrupt:
            run.interrupted = True
            ui.note("interrupted: waiting for ncu to save what it collected (Ctrl-C again to stop at once)", "yellow")
            t_int = time.monotonic()
            forwarded = False
            try:
                while True:
                    ready, _, _ = select.select([fd], [], [], 0.5)
                    if ready:
                        data = os.read(fd, 65536)
                        if not data:
                            break
                        handle(decoder.decode(data))
                    elapsed = time.monotonic() - t_int
                    if not forwarded and elapsed > 2.0 and proc.poll() is None:
                        proc.send_signal(signal.SIGINT)  # the terminal's Ctrl-C did not reach it
                        forwarded = True
                    if elapsed > INTERRUPT_GRACE_S:
                        proc.terminate()
                        break
            except KeyboardInterrupt:
                proc.kill()
                proc.wait()
                ui.stop()
                raise
        for line in splitter.flush() + splitter.feed(decoder.decode(b"", final=True)):
            ui.event(run.parser.feed(line))
        try:
            run.rc = proc.wait(timeout=INTERRUPT_GRACE_S if run.interrupted else None)
        except subprocess.TimeoutExpired:
            proc.kill()
            run.rc = proc.wait()
    finally:
        if proc.poll() is None:  # pragma: no cover - only on an unexpected exception above
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        run.processes = watcher.stop()
    run.wall_s = time.monotonic() - t0
    run.report = produced_report(out_base, run.parser.report)
    if run.report is not None:
        write_sidecar(run.report, run.processes)  # the ranks, for the analysis of this report
    ui.stop(
        f"{run.parser.profiled} launch{'es' if run.parser.profiled != 1 else ''} profiled in {run.wall_s:.1f} s"
        + (f", program exit code {run.parser.app_exit}" if run.parser.app_exit else "")
        + (", interrupted" if run.interrupted else "")
    )
    return run


def check_run(run: PhaseRun, filters: Filters, target: Target, phase: str) -> None:
    """Turn a failed ncu run into one clear error (raised); return when there is a report to analyze."""
    p = run.parser
    perm = [e for e in p.errors if e.error_kind == "permission"]
    if perm:
        raise ProfileError(PERM_READING)
    no_exec = [e for e in p.errors if e.error_kind == "no-executable"]
    if no_exec:
        raise InputError(f"{target.display}: ncu could not start it (the path does not exist or is not executable)")
    if run.report is not None:
        return
    if run.interrupted:
        return
    if p.app_exit not in (None, 0) and p.profiled == 0:
        raise NothingProfiledError(
            f"the program exited with code {p.app_exit} before any kernel was profiled ({phase}); its output is above"
        )
    if p.no_kernels or (p.profiled == 0 and not p.errors and run.rc == 0):
        what = []
        if filters.nvtx_include:
            what.append(
                "the NVTX filter " + " ".join(repr(x) for x in filters.nvtx_include) + " (a push/pop range "
                "holds only the kernels of the thread that opened it; a start/end range is selected with "
                "--nvtx-include NAME, without the trailing /)"
            )
        if filters.kernel:
            what.append(f"--kernel {filters.kernel}")
        if filters.launch_skip:
            what.append(f"--launch-skip {filters.launch_skip}")
        avail = ""
        if p.available:
            avail = (
                "; kernels the program did launch: "
                + ", ".join(p.available[:10])
                + (" …" if len(p.available) > 10 else "")
            )
        if what:
            cause = "nothing matched " + " and ".join(what)
        elif p.available:
            cause = "no launch matched"
        else:
            cause = "the program launched no CUDA kernel"
        raise NothingProfiledError(f"no kernel was profiled ({phase}): {cause}{avail}")
    errs = [e for e in p.errors if e.error_kind != "permission"]
    if errs:
        first = errs[0]
        raise ProfileError(f"ncu failed ({phase}): {first.text.strip()} — {first.reading}")
    raise ProfileError(f"ncu exited with code {run.rc} and wrote no report ({phase})")
