"""The ranks of the processes ncu starts: RANK / LOCAL_RANK / WORLD_SIZE, read from their environment in /proc.

A report does not hold the rank of a process (the command line it stores is ncu's own), so `ncuadvisor profile`
watches ncu's descendants while it runs, as torchrun and most launchers set these variables, and keeps what it found
beside the report (`processes.write_sidecar`).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE")


def _environ(pid: int) -> dict[str, str]:
    """The RANK / LOCAL_RANK / WORLD_SIZE of a process's environment; {} when there are none or it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        k, _, v = item.partition(b"=")
        name = k.decode(errors="replace")
        if name in RANK_VARS:
            env[name] = v.decode(errors="replace")
    return env


class _Stat(NamedTuple):
    state: str  # R, S, ..., Z (exited, not yet waited for), X (dead)
    ppid: int
    start_ticks: int  # start time after boot: a pid reused by another process has another


def _stat(pid: int | str) -> _Stat | None:
    """A process's /proc/<pid>/stat, or None when it is gone (or was never there) or unreadable."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ")"
        rest = raw[raw.rindex(b")") + 2 :].split()
        return _Stat(rest[0].decode(errors="replace"), int(rest[1]), int(rest[19]))
    except (OSError, ValueError, IndexError):
        return None


def _children_map() -> dict[int, int]:
    """{pid: parent pid} of every process visible in /proc."""
    out: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            st = _stat(name)
            if st is not None:
                out[int(name)] = st.ppid
    return out


class ProcessWatcher:
    """Polls /proc while ncu runs: every descendant of `root` (ncu) with RANK/LOCAL_RANK/WORLD_SIZE in its environment
    is remembered with them. Linux only; elsewhere it records nothing.

    It runs during every profile, most of them of one process, so it keeps its cost down (a poll reads the stat of
    every process on the machine): every `fast_interval_s` for the first `fast_for_s` (launchers start their workers
    early, and a short-lived one must not be missed), then every `slow_interval_s`, and not at all once `root` has
    exited (its processes are then gone, or no longer its descendants). A descendant without ranks is read again at
    the next poll: between fork and exec, a launcher's child still shows the launcher's environment. Processes vanish
    while they are read: what cannot be read is skipped, and neither a poll nor the thread ever raises."""

    def __init__(self, root: int, fast_interval_s: float = 0.2, slow_interval_s: float = 1.0, fast_for_s: float = 2.0):
        self.root = root
        self.fast_interval_s = fast_interval_s
        self.slow_interval_s = slow_interval_s
        self.fast_for_s = fast_for_s
        self.found: dict[int, dict[str, Any]] = {}
        root_stat = _stat(root)
        self._root_start = root_stat.start_ticks if root_stat is not None else None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> ProcessWatcher:
        if os.path.isdir("/proc"):
            self._thread = threading.Thread(target=self._loop, name="ncuadvisor-procs", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> dict[int, dict[str, Any]]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        return dict(self.found)

    def interval_s(self, elapsed_s: float) -> float:
        """The wait before the next poll, `elapsed_s` after the first."""
        return self.fast_interval_s if elapsed_s < self.fast_for_s else self.slow_interval_s

    def root_running(self) -> bool:
        """Whether `root` still runs: not gone, not exited (a zombie until waited for), its pid not reused."""
        st = _stat(self.root)
        return st is not None and st.state not in ("Z", "X") and st.start_ticks == self._root_start

    def poll(self) -> None:
        """One look at /proc: the ranks of root's descendants not found yet."""
        parents = _children_map()
        children: dict[int, list[int]] = {}
        for pid, ppid in parents.items():
            children.setdefault(ppid, []).append(pid)
        family, todo = set(), [self.root]
        while todo:  # descendants of root, whatever their depth (a set: pids reused mid-scan can make a cycle)
            pid = todo.pop()
            if pid not in family:
                family.add(pid)
                todo.extend(children.get(pid, ()))
        for pid in family - self.found.keys() - {self.root}:
            env = _environ(pid)
            if not env:
                continue
            info: dict[str, Any] = {k.lower(): _int_or(v) for k, v in env.items()}
            try:
                info["executable"] = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                pass
            self.found[pid] = info

    def _loop(self) -> None:
        t0 = time.monotonic()
        try:
            while self.root_running():
                self.poll()
                if self._stop.wait(self.interval_s(time.monotonic() - t0)):
                    return
        except Exception:  # ranks are a nicety: a failure must not print a traceback over the profile's progress
            return


def _int_or(v: str) -> Any:
    try:
        return int(v)
    except ValueError:
        return v
