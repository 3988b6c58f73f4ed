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
PIPE_GRACE_S = 2.0  # after ncu exits, how long the output pipe may stay open (a process the program left behind)


def with_log_file(command: list[str], log_path: str) -> list[str]:
    """The ncu command with `--log-file log_path` among ncu's own options (before its `-o`, ahead of the program)."""
    at = command.index("-o") if "-o" in command else 1
    return [*command[:at], "--log-file", log_path, *command[at:]]


def _is_terminal(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> float:
    """`sig` to ncu's process group (ncu, the program, its children); the time it was sent."""
    try:
        os.killpg(proc.pid, sig)
    except OSError:  # the group is gone
        pass
    return time.monotonic()


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill what is left of ncu's process group (processes the program started and left running)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


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
    timed_out: bool = False  # stopped at `--timeout`
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)  # pid -> rank fields (ProcessWatcher)


def run_ncu(
    command: list[str],
    out_base: str,
    label: str,
    ui: ProgressUI,
    expected: int | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float | None = None,
    program_output: Path | None = None,
) -> PhaseRun:
    """Run one ncu command, feeding its output to the parser and the progress bar; Ctrl-C stops the program, waits
    for ncu to save what it collected (a second Ctrl-C does not wait) and returns with `interrupted` set. After
    `timeout_s` seconds the program is stopped the same way and the run returns with `timed_out` set. ncu, the
    program and whatever it started run in a process group of their own, ended when the run returns: a child the
    program left behind holding the output pipe does not keep the run waiting. `program_output`: where the program
    writes when it runs elsewhere (an attach to a program `ncu --mode launch` started: profile.early), passed on the
    same way, ncu's own lines left out."""
    run = PhaseRun(label=label, command=command, out_base=out_base)
    t0 = time.monotonic()
    # ncu's own messages come from its log file, never from the program's streams (a program printing
    # `==ERROR== ERR_NVGPUCTRPERM` or `==PROF== Profiling` lines must not be taken for ncu); the pipe carries the
    # program's output only, passed on as it comes without being kept
    log_path = out_base + ".log"
    command = with_log_file(command, log_path)
    streams = _Streams(run, ui, log_path, program_output)
    ui.start(label, expected)
    proc = _start(command, env, ui)
    watcher = ProcessWatcher(proc.pid).start()
    try:
        stopping_since = _follow(proc, run, streams, ui, t0 + timeout_s if timeout_s else None, timeout_s)
        ui.program_output(streams.program_decoder.decode(b"", final=True), end=True)
        try:
            run.rc = proc.wait(timeout=INTERRUPT_GRACE_S if stopping_since is not None else None)
        except subprocess.TimeoutExpired:
            proc.kill()
            run.rc = proc.wait()
        streams.read_log()  # what ncu wrote last, once it has exited
        streams.read_side(final=True)
        streams.flush()
    finally:
        streams.close()
        if proc.poll() is None:  # pragma: no cover - only on an unexpected exception above
            proc.kill()
            proc.wait()
        _end_group(proc)
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
        + (", stopped at --timeout" if run.timed_out else "")
    )
    return run


class _Streams:
    """What ncu and the program write, decoded as it comes: ncu's log file, line by line, to the run's parser and the
    progress bar (its last, unfinished line too, for the bar); the program's output (`program_decoder`) passed on."""

    def __init__(self, run: PhaseRun, ui: ProgressUI, log_path: str, side: Path | None = None) -> None:
        self.run, self.ui, self.log_path = run, ui, log_path
        self.side, self.side_at, self.side_held = side, 0, b""  # the program's output file, read so far, held
        self.side_decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.splitter = LineSplitter()
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.program_decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.log: list[Any] = []  # the log file once ncu has created it

    def handle(self, text: str) -> None:
        for line in self.splitter.feed(text):
            self.ui.event(self.run.parser.feed(line))
        tail = self.splitter.progress()
        partial = parse_partial(tail) if tail is not None else None
        if partial is not None:
            self.ui.event(partial)

    def read_log(self) -> None:
        if not self.log:
            try:
                self.log.append(open(self.log_path, "rb"))  # noqa: SIM115 - held across the run, closed by close()
            except OSError:
                return
        while data := self.log[0].read(65536):
            self.handle(self.decoder.decode(data))

    def read_side(self, final: bool = False) -> None:
        """The program's output from its file (`side`), 64 KiB at a time: whole lines, ncu's `==PROF==` lines left
        out; a line longer than that goes on in pieces (`final`: the last, unfinished line too)."""
        if self.side is None:
            return
        try:
            fh = open(self.side, "rb")  # noqa: SIM115 - closed below
        except OSError:
            return
        with fh:
            fh.seek(self.side_at)
            while True:
                data = fh.read(65536)
                self.side_at += len(data)
                held = self.side_held + data
                lines = held.splitlines(keepends=True)
                last = lines[-1] if lines else b""
                keep = bool(lines) and not last.endswith((b"\n", b"\r")) and len(last) < 65536
                self.side_held = lines.pop() if keep and not (final and not data) else b""
                text = b"".join(x for x in lines if not x.startswith(b"==PROF=="))
                if text:
                    self.ui.program_output(self.side_decoder.decode(text))
                if not data:
                    break

    def flush(self) -> None:
        """The lines left in the splitter and the decoder, once ncu has exited."""
        for line in self.splitter.flush() + self.splitter.feed(self.decoder.decode(b"", final=True)):
            self.ui.event(self.run.parser.feed(line))

    def close(self) -> None:
        for fh in self.log:
            fh.close()


def _start(command: list[str], env: dict[str, str] | None, ui: ProgressUI) -> subprocess.Popen[bytes]:
    """Start ncu in a process group of its own: the program's children too are ended with it (`_end_group`); stdin
    from a terminal is not passed on (a process outside the terminal's foreground group that reads it would stop for
    good)."""
    try:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL if _is_terminal(0) else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            bufsize=0,
            preexec_fn=os.setpgrp,  # noqa: PLW1509 - nothing else runs threads that fork here
        )
    except OSError as exc:
        ui.stop()
        raise ProfileError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc


def _follow(
    proc: subprocess.Popen[bytes],
    run: PhaseRun,
    streams: _Streams,
    ui: ProgressUI,
    deadline: float | None,
    timeout_s: float | None,
) -> float | None:
    """Pass the program's output on and read ncu's log until the pipe closes (or ncu is gone and a process the
    program started keeps it open), stopping the program at Ctrl-C or the deadline; returns when SIGINT went to the
    group, None when it never did."""
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    stopping_since: float | None = None  # when SIGINT went to the group (Ctrl-C or the time limit)
    ncu_ended: float | None = None
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                data = os.read(fd, 65536)
                if not data:
                    break
                ui.program_output(streams.program_decoder.decode(data))
            streams.read_log()
            streams.read_side()
        except KeyboardInterrupt:
            if stopping_since is not None and run.interrupted:  # a second Ctrl-C: stop at once
                _end_group(proc)
                ui.stop()
                raise
            run.interrupted = True
            ui.note("interrupted: waiting for ncu to save what it collected (Ctrl-C again to stop at once)", "yellow")
            stopping_since = _signal_group(proc, signal.SIGINT)
        now = time.monotonic()
        if deadline is not None and now > deadline and stopping_since is None:
            run.timed_out = True
            ui.note(f"--timeout {timeout_s:g} s reached: stopping the program; ncu saves what it collected", "yellow")
            stopping_since = _signal_group(proc, signal.SIGINT)
        if ncu_ended is None and proc.poll() is not None:
            ncu_ended = now
        if ncu_ended is not None and now - ncu_ended > PIPE_GRACE_S:
            break  # ncu is gone, but a process the program started keeps the pipe open
        if stopping_since is not None and now - stopping_since > INTERRUPT_GRACE_S:
            proc.terminate()
            break
    return stopping_since


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
    if run.interrupted or run.timed_out:
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
