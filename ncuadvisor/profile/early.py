"""Phase 2's program started while phase 1 runs: `ncu --mode launch` starts it at once, the program runs its start-up
(imports, building the model on the CPU) and waits at its first CUDA call; when phase 1 has chosen the kernels,
`ncu --mode attach` gives it phase 2's options and the program goes on under them. A Python program's start-up under
ncu is most of a run: on the H100 with ncu 2025.3.1, transformers' GPT-2 step ran 21.4 s under ncu with nothing
profiled, and once attached after its start-up, the rest (CUDA, three steps, 321 launches profiled) took 8.4 s.

Only for Python scripts (`Target.script`: the process ncu starts is the one that calls CUDA) and never with the
user's `--target-processes all`: the early program is launched with `--target-processes application-only`, so a
child process never waits for an attach that will not come; a phase 1 that saw kernels of more than one process
gives it up and phase 2 runs the program again as before. Anything else that goes wrong (the program exits before
its first CUDA call, ncu refuses the attach) ends it the same way: phase 2 then runs as if it never started.
`NCUADVISOR_EARLY_START=0` turns it off."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ncuadvisor.profile.meta import shown
from ncuadvisor.profile.ncu import Filters

if TYPE_CHECKING:
    from ncuadvisor.profile.runner import PhaseRun

EARLY_ENV = "NCUADVISOR_EARLY_START"
WAITING = b"==PROF== Waiting for profiler to attach"
PORT_SPAN = 8  # ports ncu may try from the base (--max-connections), on both sides
LAUNCH_ONLY_FLAGS = ("--nvtx",)  # options ncu takes on the launch side only (an attach refuses them)
LAUNCH_ONLY_VALUES = ("--target-processes",)


def wanted(script: Path | None, filters: Filters, env: dict[str, str]) -> bool:
    """Whether phase 2's program starts early: a Python script, not turned off, not asked to follow children."""
    return script is not None and env.get(EARLY_ENV, "1") != "0" and filters.target_processes != "all"


def _free_base_port() -> int:
    """A base port whose PORT_SPAN ports are free on this machine now (ncu's own default range is 49152-49215)."""
    for _ in range(20):
        base = random.randrange(50000, 60000, PORT_SPAN)
        try:
            for p in range(base, base + PORT_SPAN):
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return base
    return 50000


@dataclass
class EarlyStart:
    """The program under `ncu --mode launch`, its output in a file of the work folder."""

    proc: subprocess.Popen[bytes]
    port: int
    out_path: Path
    command: list[str]
    started: float

    def listening(self, limit_s: float) -> bool:
        """Wait until ncu in the program says it waits for the attach (True), the program ended or `limit_s`
        passed (False)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if WAITING in self.out_path.read_bytes():
                    return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def wait(self, limit_s: float) -> int | None:
        """The launch side's exit code (the program's), None when it did not end within `limit_s`."""
        try:
            return self.proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        """End the program and whatever it started (its own process group, also once ncu's launch side is gone)."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


def launch_command(ncu: str, argv: Sequence[str], filters: Filters, port: int) -> list[str]:
    """`ncu --mode launch` for the program: the launch-side options (NVTX support when a filter or the record needs
    it; the launched process alone)."""
    args = [ncu, "--mode", "launch", "--port", str(port), "--max-connections", str(PORT_SPAN)]
    args += ["--target-processes", "application-only"]
    if filters.nvtx_include or filters.record_nvtx:
        args.append("--nvtx")
    return args + list(argv)


def start(ncu: str, argv: Sequence[str], filters: Filters, env: dict[str, str], work: Path) -> EarlyStart | None:
    """Start the program under `ncu --mode launch`; None when it cannot start."""
    port = _free_base_port()
    command = launch_command(ncu, argv, filters, port)
    out_path = work / "early_start.out"
    try:
        with open(out_path, "wb") as out:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=os.setpgrp,  # noqa: PLW1509 - nothing else runs threads that fork here
            )
    except OSError:
        return None
    return EarlyStart(proc=proc, port=port, out_path=out_path, command=command, started=time.monotonic())


def attach_command(phase2: Sequence[str], argv: Sequence[str], port: int) -> list[str]:
    """Phase 2's command (`ncu OPTIONS -o OUT PROGRAM ARGS`) as an attach to the early program: its options without
    the launch-side ones, without the program."""
    body = list(phase2[1 : len(phase2) - len(argv)])
    if list(phase2[len(phase2) - len(argv) :]) != list(argv):
        raise ValueError("phase 2's command does not end with the program")
    kept: list[str] = []
    skip = False
    for a in body:
        if skip:
            skip = False
            continue
        if a in LAUNCH_ONLY_VALUES:
            skip = True
            continue
        if a in LAUNCH_ONLY_FLAGS:
            continue
        kept.append(a)
    head = [phase2[0], "--mode", "attach", "--hostname", "127.0.0.1", "--port", str(port)]
    return head + ["--max-connections", str(PORT_SPAN), *kept]


def attach_round(
    early: EarlyStart,
    s: Any,
    phase2: list[str],
    out_base: str,
    label: str,
    expected: int | None,
    timeout_s: float | None,
) -> tuple[PhaseRun | None, dict[str, Any]]:
    """Round 1 of phase 2 on the program started early: ncu attaches to it with phase 2's options (`s.runner`, the
    program's output passed on from its file). (the run, what became of the early start for report.profile); the
    run is None, with the early program ended, when it cannot be used: phase 2 then runs the program again."""
    waited = time.monotonic()
    if not early.listening(timeout_s or 600.0):
        early.stop()
        return None, {"used": False, "why": "the early program ended or never reached its first CUDA call"}
    command = attach_command(phase2, s.target.argv, early.port)
    limit: dict[str, Any] = {"timeout_s": timeout_s} if timeout_s else {}
    run = s.runner(command, out_base, label, s.ui, expected=expected, env=s.env, program_output=early.out_path, **limit)
    stopped = run.interrupted or run.timed_out
    if not (run.parser.pids or run.parser.profiled or run.report is not None) and not stopped:
        early.stop()
        why = next((e.text.strip() for e in run.parser.errors), f"ncu exited with code {run.rc}")
        s.ui.note("  phase 2's early start could not be used: running the program again", "yellow")
        return None, {"used": False, "why": f"the attach failed: {why}"}
    rc = early.wait(0.0 if stopped else 30.0)
    early.stop()
    if rc not in (None, 0) and run.parser.app_exit is None:
        run.parser.app_exit = rc
    return run, {
        "used": True,
        "port": early.port,
        "launch_command": shown(early.command),
        "waited_s": round(time.monotonic() - waited - run.wall_s, 2),
        "started_before_attach_s": round(waited - early.started, 2),
    }
