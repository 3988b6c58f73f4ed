"""Which process (and which rank) each result of a report comes from.

ncu follows child processes (`--target-processes all`, its default) and writes the results of every process into
one report. `ncu_report` does not say which process a result belongs to, but the report file does: it is a sequence
of blocks, each a length-prefixed protobuf `BlockHeader` (1: number of sources, 2: number of results, 5: payload
size, 6: process {1: pid, 2: host, 3: executable}) followed by its payload. Walking the headers (the payloads are
skipped, so this reads a few kilobytes of a large report) gives the process of every result in file order, which is
the order in which `ncu_report` lists them. Verified on a 2-process report captured on an H200 with ncu 2025.3.1
(fixtures/multiproc.ncu-rep.xz).

A report does not hold the rank of a process (the command line it stores is ncu's own). `ncuadvisor profile`
therefore watches the processes ncu starts and reads RANK / LOCAL_RANK / WORLD_SIZE from their environment (as
torchrun and most launchers set them), and keeps them beside the report in `<report>.processes.json`, which
`ncuadvisor report` reads when it is there.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

MAGIC = b"NVR\0"
RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE")
SIDECAR_SUFFIX = ".processes.json"


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    host: str
    executable: str


def _varint(b: Any, i: int, end: int) -> tuple[int, int]:
    v = s = 0
    while True:
        if i >= end or s > 63:
            raise ValueError("bad varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def _fields(b: Any, start: int, end: int) -> dict[int, list[Any]]:
    """A protobuf message's fields (varints as ints, length-delimited as (start, end) spans)."""
    out: dict[int, list[Any]] = {}
    i = start
    while i < end:
        key, i = _varint(b, i, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i, end)
        elif wire == 2:
            n, i = _varint(b, i, end)
            if i + n > end:
                raise ValueError("field past the end")
            v = (i, i + n)
            i += n
        elif wire == 1:
            v, i = None, i + 8
        elif wire == 5:
            v, i = None, i + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(field, []).append(v)
    if i != end:
        raise ValueError("message overruns")
    return out


class FileView:
    """The bytes of an open file, read on demand: indexing and slicing like `bytes`, through a small cached window
    (one read per 64 KB of headers) or, for a slice larger than the window (a result's payload), one read of its own.
    Walking a large report this way keeps resident memory small; an mmap of it would count every page it touched (a
    1 GB report walked through mmap showed a 1 GB peak RSS)."""

    WINDOW = 1 << 16

    def __init__(self, fh: Any):
        self._fh = fh
        self._size = os.fstat(fh.fileno()).st_size
        self._start = 0
        self._buf = b""

    def __len__(self) -> int:
        return self._size

    def _at(self, i: int, n: int) -> int:
        if not (self._start <= i and i + n <= self._start + len(self._buf)):
            self._fh.seek(i)
            self._buf = self._fh.read(max(n, self.WINDOW))
            self._start = i
        return self._start

    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            start, stop, _ = k.indices(self._size)
            n = max(0, stop - start)
            if n > self.WINDOW:
                self._fh.seek(start)
                return self._fh.read(n)
            s = self._at(start, n)
            return self._buf[start - s : start - s + n]
        if k < 0:
            k += self._size
        if not 0 <= k < self._size:
            raise IndexError("FileView index out of range")
        s = self._at(k, 1)
        return self._buf[k - s]


def u32(b: Any, i: int) -> int:
    """The little-endian uint32 at offset i of bytes, an mmap or a FileView."""
    return int.from_bytes(b[i : i + 4], "little")


class Block(NamedTuple):
    """One block of a report file: its header's fields (see `_fields`) and where its payload lies."""

    header: dict[int, list[Any]]
    payload_start: int
    payload_end: int


def iter_blocks(mm: Any) -> Iterator[Block]:
    """The blocks of a report file's bytes (bytes, an mmap, or a FileView), in order; ValueError when the bytes are
    not in that layout (a truncated file ends in the middle of a block)."""
    size = len(mm)
    if size < 8 or mm[:4] != MAGIC:
        raise ValueError("not an uncompressed Nsight Compute report")
    i = 8 + u32(mm, 4)
    while i + 4 <= size:
        hs = u32(mm, i)
        i += 4
        if i + hs > size:
            raise ValueError("block header past the end")
        h = _fields(mm, i, i + hs)
        i += hs
        end = i + int((h.get(5) or [0])[0])
        if end > size:
            raise ValueError("block payload past the end")
        yield Block(h, i, end)
        i = end
    if i != size:
        raise ValueError("trailing bytes")


class BlockScan(NamedTuple):
    """What one walk over a report file's block headers tells: the process of every result in file order (None
    when the file is not in the block layout or is cut short), and why it is cut short (None when whole)."""

    processes: list[ProcessInfo] | None
    cut: str | None


def scan_blocks(path: str | os.PathLike[str]) -> BlockScan:
    """Walk the block headers of an uncompressed .ncu-rep once (payloads skipped). A file not in this layout
    (another ncu version; a .ncu-repz reaches here decompressed only when it is one zstd stream of this layout, see
    load._unzstd) gives (None, None), so callers fall back to "one process"."""
    try:
        with open(path, "rb") as fh:
            mm = FileView(fh)
            out: list[ProcessInfo] = []
            for block in iter_blocks(mm):
                h = block.header
                n_results = (h.get(2) or [0])[0]
                if n_results:
                    proc = ProcessInfo(0, "", "")
                    if h.get(6):
                        s, e = h[6][0]
                        p = _fields(mm, s, e)
                        host = bytes(mm[slice(*p[2][0])]).decode("utf-8", "replace") if p.get(2) else ""
                        exe = bytes(mm[slice(*p[3][0])]).decode("utf-8", "replace") if p.get(3) else ""
                        proc = ProcessInfo(int((p.get(1) or [0])[0]), host, exe)
                    out.extend([proc] * int(n_results))
            return BlockScan(out, None)
    except ValueError as exc:
        return BlockScan(None, str(exc) if "past the end" in str(exc) else None)
    except (OSError, TypeError, IndexError):
        return BlockScan(None, None)


def result_processes(path: str | os.PathLike[str]) -> list[ProcessInfo] | None:
    """The process of every result of an uncompressed .ncu-rep, in file order (`scan_blocks`); None when unknown."""
    return scan_blocks(path).processes


# -- ranks: the environment of the processes ncu starts (profile only) ---------------------------------------------


def sidecar_path(report: str | os.PathLike[str]) -> Path:
    p = Path(report)
    if p.suffix in (".xz", ".gz"):
        p = p.with_suffix("")
    return p.with_name(p.name + SIDECAR_SUFFIX)


def read_sidecar(report: str | os.PathLike[str]) -> dict[int, dict[str, Any]]:
    """{pid: {"rank": .., "local_rank": .., "world_size": .., "executable": ..}} kept beside a report, or {}."""
    try:
        data = json.loads(sidecar_path(report).read_text())
        return {int(k): v for k, v in data.get("processes", {}).items() if isinstance(v, dict)}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def write_sidecar(report: str | os.PathLike[str], processes: dict[int, dict[str, Any]]) -> Path | None:
    if not processes:
        return None
    path = sidecar_path(report)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps({"processes": {str(k): v for k, v in sorted(processes.items())}}, indent=1))
        os.replace(tmp, path)
        return path
    except OSError:
        return None


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


def describe(processes: list[ProcessInfo], ranks: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per distinct process (first-result order): pid, host, executable, rank fields when known."""
    seen: dict[int, dict[str, Any]] = {}
    for p in processes:
        if p.pid not in seen:
            entry = asdict(p)
            entry.update({k: v for k, v in ranks.get(p.pid, {}).items() if k in ("rank", "local_rank", "world_size")})
            seen[p.pid] = entry
    return list(seen.values())


def process_label(entry: dict[str, Any] | None) -> str:
    """ "rank 1 (pid 4242)" or "pid 4242"."""
    if not entry:
        return ""
    if entry.get("rank") is not None:
        return f"rank {entry['rank']} (pid {entry['pid']})"
    return f"pid {entry['pid']}"
