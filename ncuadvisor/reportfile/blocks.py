"""The block layout of an .ncu-rep file, read without ncu_report: which process each result comes from, where a file
is cut short.

ncu follows child processes (`--target-processes all`, its default) and writes the results of every process into
one report. `ncu_report` does not say which process a result belongs to, but the report file does: it is a sequence
of blocks, each a length-prefixed protobuf `BlockHeader` (1: number of sources, 2: number of results, 5: payload
size, 6: process {1: pid, 2: host, 3: executable}) followed by its payload. Walking the headers (the payloads are
skipped, so this reads a few kilobytes of a large report) gives the process of every result in file order, which is
the order in which `ncu_report` lists them. Verified on a 2-process report captured on an H200 with ncu 2025.3.1
(fixtures/multiproc.ncu-rep.xz).

A report does not hold the rank of a process: `ncuadvisor.load.processes` reads the ranks `ncuadvisor profile`
kept beside the report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

MAGIC = b"NVR\0"


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
            v = (i, i + n)  # type: ignore[assignment]  # a length-delimited field: its (start, end)
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
    (one read per 8 KB of headers: a walk from block header to block header reads little more than the headers) or,
    for a slice larger than the window (a result's payload), one read of its own.
    Walking a large report this way keeps resident memory small; an mmap of it would count every page it touched (a
    1 GB report walked through mmap showed a 1 GB peak RSS)."""

    WINDOW = 1 << 13

    def __init__(self, fh: Any):
        self._fh = fh
        self._size = os.fstat(fh.fileno()).st_size
        self._start = 0
        self._buf = b""
        self._reuse = bytearray()

    def __len__(self) -> int:
        return self._size

    def _at(self, i: int, n: int) -> int:
        if not (self._start <= i and i + n <= self._start + len(self._buf)):
            self._fh.seek(i)
            self._buf = self._fh.read(max(n, self.WINDOW))
            self._start = i
        return self._start

    def view(self, start: int, n: int) -> memoryview:
        """The `n` bytes from `start` in a buffer this view keeps and reads into again: valid until the next call.
        A result's payload (up to a few MB) read this way costs no fresh allocation; protobuf parses the buffer as
        it is. ValueError where the file holds fewer bytes."""
        if len(self._reuse) < n:
            self._reuse = bytearray(n)
        out = memoryview(self._reuse)[:n]
        self._fh.seek(start)
        if self._fh.readinto(out) != n:
            raise ValueError("payload past the end of the file")
        return out

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


_PARTIAL: dict[str, Any] = {}


def partial_message(package: str, messages: dict[str, list[tuple[str, int, str]]]) -> Any:
    """A protobuf message class that parses only the listed fields of a message with protobuf's C parser (the others,
    a result's thousands of metrics among them, are skipped there, not walked in Python); None without protobuf.
    `messages`: message name -> its fields (name, number, kind), kind "bytes", "uint64", "uint32", "string", "float",
    "double" or the name of another of the messages, with "*" repeated; the last message is the one returned. Built
    once per package."""
    if package not in _PARTIAL:
        try:
            from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

            F = descriptor_pb2.FieldDescriptorProto
            fdp = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package)
            for name, fields in messages.items():
                m = fdp.message_type.add(name=name)
                for field, number, kind in fields:
                    label = F.LABEL_REPEATED if kind.endswith("*") else F.LABEL_OPTIONAL
                    kind = kind.rstrip("*")
                    if kind in messages:
                        m.field.add(
                            name=field, number=number, type=F.TYPE_MESSAGE, label=label, type_name=f".{package}.{kind}"
                        )
                    else:
                        ftype = {
                            "bytes": F.TYPE_BYTES,
                            "uint64": F.TYPE_UINT64,
                            "uint32": F.TYPE_UINT32,
                            "string": F.TYPE_STRING,
                            "float": F.TYPE_FLOAT,
                            "double": F.TYPE_DOUBLE,
                        }[kind]
                        m.field.add(name=field, number=number, type=ftype, label=label)
            pool = descriptor_pool.DescriptorPool()
            pool.Add(fdp)
            top = list(messages)[-1]
            _PARTIAL[package] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.{top}"))
        except Exception:
            _PARTIAL[package] = None
    return _PARTIAL[package]
