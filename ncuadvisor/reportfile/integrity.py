"""Checking a report file's structure before the native library reads it: every result is whole and parses, or it is
left out and counted.

`ncu_report` trusts the file: a result cut short or with one damaged byte reads back as a kernel named "nan" with no
metrics, and a damaged block header can abort the process (SIGABRT, nothing on stderr). So the block layout
(`reportfile.blocks`) is walked strictly first: every block header must parse and carry a payload size, the payload
must hold exactly its (sources + results) length-prefixed messages, and every result message must parse (protobuf's
C parser, the schema of `reportfile.fastread`) and carry a kernel name. A block whose results do not parse is left
out (its header kept, see `_emptied_header`). A block that cannot be located (its header does not parse) is skipped
by finding the next block again (`_resync`: the process field every block header ends with, behind its own length
prefix, and a whole block there followed by another block or the end of the file); the results after it are kept
only while they number no metric name the skipped bytes could have added. When anything was skipped or cut, the
native library reads a private copy made of the blocks that passed, so what it lists is exactly the results counted
here as whole.

A file cut exactly at a block boundary is a shorter valid file: nothing in it records how many results were to come
(the file header holds one field, the format version 7; a block header holds its own counts, session data, metric
names, payload size and process; a result holds no sequence number, its field 2 being the CUDA API call id; there is
no closing block). Two boundary cuts still show (`_boundary_cut`): a file that ends before the session blocks ncu
writes right after its first result (devices, versions, the command line), and a file that ends with a block of
sources only (ncu writes a module's block just before the first result that runs its code). ncu before 2022.2 records
no command line, and some writers put the whole session before the first result: the session counts as written
when it shows its end in the layout of the version it names, or ends with its host block having named no ncu version
at all (`_Session`), so such whole reports are not called cut.

Checked on ncu 2025.3.1's layout (every fixture walks clean). A file in another layout (`not_layout`) is left to the
native library as before.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncuadvisor.reportfile.blocks import MAGIC, FileView, _fields, u32

# A file header or block header longer than this is not one ncu wrote (the largest seen: ~130 KB, the metric names).
MAX_HEADER_BYTES = 64 << 20
# How far back from a process field a block header may start when the walk looks for the next block after a damaged
# one (the largest header seen: ~130 KB, the metric names of the first result).
RESYNC_HEADER_BYTES = 1 << 20
_RESYNC_WINDOW = 4 << 20
# How far a decompressed stream may run past a damaged block header before a next header is found (the largest
# result block seen: ~2 MB); beyond it the stream is refused (a bomb of zeros behind a report's first bytes).
RESYNC_STREAM_BYTES = 64 << 20
# The file format version (file header field 1) whose session blocks are known to follow the first result, ending
# with the command line (ncu 2025.3.1 writes 7; every fixture): only there does a missing one show a cut.
SESSION_ORDER_FORMAT = 7
# ncu versions before this one record no command line (session data field 11): 2020.2.1, 2020.3.1, 2021.1.0 and
# 2021.2.2 reports lack it, 2022.2.0 and later ones have it (reports other people captured, 2026-12-05); the session
# of such a file ends with the host block (field 4), or earlier.
COMMAND_LINE_SINCE = (2022, 2)
_NCU_VERSION = re.compile(rb"Nsight Compute[^\x12]*\x12.(\d{4})\.(\d+)", re.DOTALL)


@dataclass
class Integrity:
    """What the strict walk found. `whole`: results that passed; `lost`: results counted in a block that did not pass;
    `cut_at`/`why`: where and why the walk stopped before the end (None when it reached the end cleanly);
    `boundary`: the file ends at a block boundary and what shows that it was cut there (see `_boundary_cut`);
    `keep`: the (start, end, emptied) byte spans of the blocks to keep, in order (`emptied`: a damaged block kept for
    its header alone, the metric names later results refer to, with no sources or results); `skipped`: the (start,
    end) byte spans of damaged blocks that could not be located, passed over to the next block found (their results
    cannot be counted); `not_layout`: the file is not in the block layout this walk knows (left to the native
    library); `results_parsed`: every result counted in `whole` was parsed (see `check_report`)."""

    whole: int = 0
    lost: int = 0
    cut_at: int | None = None
    why: str | None = None
    boundary: str | None = None
    header_end: int = 0
    keep: list[tuple[int, int, bool]] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)
    dropped_blocks: int = 0
    not_layout: bool = False
    results_parsed: bool = True  # False: results left to the caller to parse (`check_report`'s `parse_results`)

    @property
    def damaged(self) -> bool:
        return self.cut_at is not None or self.dropped_blocks > 0 or bool(self.skipped) or self.boundary is not None

    @property
    def needs_copy(self) -> bool:
        """The native library must read a copy made of the kept blocks (a file cut at a block boundary is read as it
        is: every byte of it is kept)."""
        return self.cut_at is not None or self.dropped_blocks > 0 or bool(self.skipped)

    @property
    def state(self) -> str:
        """ "truncated" (the file ends inside a block and nothing else is wrong), "damaged" or "whole"."""
        if not self.damaged:
            return "whole"
        if self.dropped_blocks or self.skipped:
            return "damaged"
        if self.boundary is not None or (self.why and ("past the end" in self.why or self.why.startswith("cut"))):
            return "truncated"
        return "damaged"

    def summary(self) -> str:
        """One clause for a warning: what is missing and why."""
        parts = []
        if self.dropped_blocks:
            n, k = self.lost, self.dropped_blocks
            parts.append(
                f"{k} damaged block{'s' if k != 1 else ''} left out ({n} result{'s' if n != 1 else ''} by "
                f"{'their headers' if k != 1 else 'its header'})"
            )
        if self.skipped:
            k, n = len(self.skipped), sum(e - s for s, e in self.skipped)
            its = "their" if k != 1 else "its"
            parts.append(
                f"{k} block{'s' if k != 1 else ''} with an unreadable header skipped ({n} bytes from byte "
                f"{self.skipped[0][0]}: {its} results are lost and cannot be counted, and the results after "
                f"{'them' if k != 1 else 'it'} may lack source lines)"
            )
        if self.cut_at is not None:
            parts.append(f"the file cannot be read past byte {self.cut_at} ({self.why}): every result after it is lost")
        if self.boundary is not None:
            parts.append(
                f"the file ends at a block boundary where ncu never stops, {self.boundary}: the results after it are "
                "lost, and the file does not record how many"
            )
        return "; ".join(parts)


def _result_ok(payload: bytes, names: int | None = None) -> str | None:
    """Why a result message is not whole (None when it parses and names its kernel; with `names`, also when every
    metric it holds numbers one of the first `names` metric names)."""
    from ncuadvisor.reportfile.fastread import _classes

    classes = _classes()
    if classes is None:  # no protobuf package: the top-level fields must still parse
        try:
            f = _fields(payload, 0, len(payload))
        except ValueError as exc:
            return str(exc)
        return None if (f.get(5) or f.get(6) or f.get(7)) else "no kernel name"
    try:
        r = classes[1].FromString(payload)
    except Exception as exc:  # protobuf's DecodeError
        return f"result does not parse ({type(exc).__name__})"
    if not (r.mangled or r.function or r.demangled):
        return "no kernel name"
    if names is not None and any(m.name_id >= names for m in r.metrics):
        return "a metric numbers a name that was in the skipped bytes"
    return None


def _name_count(mm: Any, header: dict[int, list[Any]]) -> int:
    """How many metric names a block header adds to the file's table (field 4: a message of repeated strings)."""
    n = 0
    for span in header.get(4) or []:
        if isinstance(span, tuple) and span[1] > span[0]:
            n += len(_fields(bytes(mm[span[0] : span[1]]), 0, span[1] - span[0]).get(1) or [])
    return n


def check_report(path: str | os.PathLike[str], parse_results: bool = True) -> Integrity:
    """Walk an uncompressed report strictly (see the module docstring); reads every result message once.
    `parse_results` False: the walk checks the layout only (headers, payload sizes, message lengths) and leaves the
    results of the blocks that hold results alone unparsed (`results_parsed` False): the caller parses each of them
    (`fastread.read_rows`, which a big report needs anyway) and walks again with them parsed where one does not parse
    or names no kernel. A block of sources and results, and every block after skipped bytes, are
    parsed here all the same."""
    out = Integrity(results_parsed=parse_results)
    with open(path, "rb") as fh:
        mm = FileView(fh)
        size = len(mm)
        if size < 8 or mm[:4] != MAGIC:
            out.not_layout = True
            return out
        hs = u32(mm, 4)
        i = 8 + hs
        try:
            if hs == 0 or hs > MAX_HEADER_BYTES or i > size:
                raise ValueError("bad file header size")
            version = (_fields(mm, 8, i).get(1) or [None])[0]
        except ValueError as exc:
            out.cut_at, out.why = 4, f"file header: {exc}"
            return out
        out.header_end = i
        processes: set[bytes] = set()  # the process field (tag, length, message) of every header read: resync marks
        names = 0  # metric names in the table so far
        last: dict[int, list[Any]] = {}
        session = _Session()
        while i < size:
            start = i
            after_skip = bool(out.skipped)
            problem, n_results, end, h = _block(mm, i, size, names if after_skip else None, parse_results or after_skip)
            if end is None or h is None:  # the block cannot be located: find the next one, else nothing after it
                found = _resync(mm, start + 4, size, processes)
                if found is None:
                    out.cut_at, out.why = start, problem
                    return out
                out.skipped.append((start, found))
                i = found
                continue
            if after_skip and _name_count(mm, h):  # names numbered after ones the skipped bytes may have added
                out.cut_at, out.why = start, "metric names after skipped bytes cannot be numbered"
                return out
            names += _name_count(mm, h)
            for span in h.get(6) or []:
                processes.add(bytes(mm[span[0] - 1 - len(_varint_bytes(span[1] - span[0])) : span[1]]))
            session.see(mm, h, results_so_far=out.whole + out.lost)
            out.keep.append((start, end, problem is not None))
            if problem is None:
                out.whole += n_results
            else:
                out.dropped_blocks += 1
                out.lost += n_results
            last, i = h, end
        # skipped bytes may have held the session data: no evidence either way; and the order of the session blocks
        # is known only for the format version the fixtures are in
        if not out.skipped and version == SESSION_ORDER_FORMAT:
            out.boundary = _boundary_cut(out.whole + out.lost, last, session.closed)
    return out


class _Session:
    """What the blocks read so far show of the session data (block header field 3), to tell whether all of it was
    written (`closed`): its command line (field 11) was read; or results follow session data that came after a result
    (ncu writes the session blocks together); or the session's devices (field 6) came before the first result (a
    layout that writes the session first: nothing of it is left for after the first result); or the ncu version the
    session names records no command line (`COMMAND_LINE_SINCE`) and its host block (field 4) was read; or the host
    block was read and no session data before it named an ncu version (`unversioned_host`: every ncu that names
    itself does so in a block before the host, so a file cut after its host still shows the version that says a
    command line was to come; a V100 report of an NVSHMEM Jacobi step, PerfWorks 0.108.5, names none and ends with
    its host)."""

    def __init__(self) -> None:
        self.command_line = self.devices_first = self.host = self.followed = False
        self.old_ncu = self.named_version = self.unversioned_host = False
        self._after_result = False  # session data was read after a result, and no result since

    def see(self, mm: Any, h: dict[int, list[Any]], results_so_far: int) -> None:
        if (h.get(2) or [0])[0] and self._after_result:
            self.followed = True
        for span in h.get(3) or []:
            if not isinstance(span, tuple):
                continue
            raw = bytes(mm[span[0] : span[1]])
            try:
                f = _fields(raw, 0, len(raw))
            except ValueError:
                continue
            self.command_line = self.command_line or bool(f.get(11))
            for v in f.get(8) or []:
                m = _NCU_VERSION.search(raw[v[0] : v[1]]) if isinstance(v, tuple) else None
                self.named_version = self.named_version or m is not None
                if m and (int(m.group(1)), int(m.group(2))) < COMMAND_LINE_SINCE:
                    self.old_ncu = True
            if f.get(4):
                self.host = True
                self.unversioned_host = self.unversioned_host or not self.named_version
            if f.get(6) and not results_so_far:
                self.devices_first = True
            if results_so_far:
                self._after_result = True

    @property
    def closed(self) -> bool:
        return (
            self.command_line
            or self.followed
            or self.devices_first
            or self.unversioned_host
            or (self.old_ncu and self.host)
        )


def _boundary_cut(results: int, last: dict[int, list[Any]], session_closed: bool) -> str | None:
    """What shows that a file whose walk ended cleanly was cut at a block boundary, or None (see the module
    docstring: a cut between two results cannot be seen)."""
    if not results:
        return None
    if not session_closed:
        return "before the session data (devices, versions, command line) ncu writes after the first result"
    if (last.get(1) or [0])[0] and not (last.get(2) or [0])[0]:
        return "after a module's block, without the result ncu wrote it for"
    return None


def _resync(mm: Any, lo: int, size: int, processes: set[bytes]) -> int | None:
    """Where the next block starts after a damaged one that cannot be located (from byte `lo` on), or None: a block
    header ends with its process field, the same bytes in every block of that process (`processes`, from the headers
    read before), and starts with its own length (`_candidates`); the block found there must be whole and be followed
    by the end of the file or by a block header that parses. Reads the rest of the file at most once, in windows."""
    if not processes:
        return None
    overlap = RESYNC_HEADER_BYTES + max(len(p) for p in processes)
    at = lo
    while at < size:
        window = bytes(mm[at : min(size, at + _RESYNC_WINDOW)])
        for start in _candidates(window, 0, processes):
            problem, _n, end, h = _block(mm, at + start, size, None)
            if problem is None and end is not None and h is not None:
                if end == size or _block(mm, end, size, None)[3] is not None:
                    return at + start
        if at + len(window) >= size:
            return None
        at += len(window) - overlap
    return None


_MAX_CANDIDATES = 256


def _candidates(data: bytes, lo: int, processes: set[bytes]) -> list[int]:
    """Offsets s >= lo of `data` where a block header could start (nearest first, at most `_MAX_CANDIDATES`): the
    little-endian uint32 at s is the length of a header, at most `RESYNC_HEADER_BYTES`, that ends exactly where one
    of the process fields in `processes` ends (the last field of every block header). One vectorised pass over the
    bytes, whatever the number of matches."""
    import numpy as np

    ends = sorted({k + len(x) for x in processes for k in _all(data, x)})
    if not ends or len(data) - lo < 8:
        return []
    wanted = np.asarray(ends, dtype=np.int64)
    found: list[np.ndarray] = []
    for r in range(4):
        vals = np.frombuffer(data, dtype="<u4", offset=lo + r, count=(len(data) - lo - r) // 4).astype(np.int64)
        starts = lo + r + 4 * np.arange(len(vals), dtype=np.int64)
        ok = (vals > 0) & (vals <= RESYNC_HEADER_BYTES) & np.isin(starts + 4 + vals, wanted)
        found.append(starts[ok])
    return sorted(int(x) for x in np.concatenate(found))[:_MAX_CANDIDATES]


def _all(data: bytes, needle: bytes) -> list[int]:
    out, k = [], data.find(needle)
    while k >= 0:
        out.append(k)
        k = data.find(needle, k + 1)
    return out


def _block(
    mm: Any, i: int, size: int, names: int | None, parse: bool = True
) -> tuple[str | None, int, int | None, dict[int, list[Any]] | None]:
    """(why the block at i is not whole or None, its result count, its end or None when it cannot be located, its
    header's fields or None). With `names`: a result numbering a metric name past the first `names` is not whole.
    `parse` False: the results of a block without sources are not parsed (`check_report`'s `parse_results`)."""
    if i + 4 > size:
        return "cut inside a block header's length", 0, None, None
    hs = u32(mm, i)
    if hs == 0 or hs > MAX_HEADER_BYTES:
        return f"implausible block header length {hs}", 0, None, None
    hstart = i + 4
    if hstart + hs > size:
        return "block header past the end of the file", 0, None, None
    try:
        h = _fields(mm, hstart, hstart + hs)
    except ValueError as exc:
        return f"block header does not parse ({exc})", 0, None, None
    counts = [h.get(k) or [0] for k in (1, 2, 5)]
    if not h.get(5) or not all(isinstance(c[0], int) for c in counts):
        return "block header without a payload size", 0, None, None
    n_sources, n_results, payload = (int(c[0]) for c in counts)
    p0 = hstart + hs
    end = p0 + payload
    if end > size:
        return "block payload past the end of the file", 0, None, None
    # each message takes at least its 4-byte length: a count beyond that cannot be true (and is never allocated)
    if 4 * (n_sources + n_results) > payload:
        return f"block header counts {n_sources + n_results} messages in {payload} bytes", 0, None, None
    j = p0
    parse = parse or n_sources > 0
    for k in range(n_sources + n_results):
        if j + 4 > end:
            return "block payload holds fewer messages than its header counts", n_results, end, h
        n = u32(mm, j)
        if j + 4 + n > end:
            return "a message runs past its block", n_results, end, h
        if k >= n_sources and parse:
            why = _result_ok(bytes(mm[j + 4 : j + 4 + n]), names)
            if why is not None:
                return why, n_results, end, h
        j += 4 + n
    if j != end:
        return "block payload holds more than its header counts", n_results, end, h
    return None, n_results, end, h


def _varint_bytes(v: int) -> bytes:
    out = bytearray()
    while True:
        c, v = v & 0x7F, v >> 7
        out.append(c | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _emptied_header(header: bytes) -> bytes:
    """A block header with its counts (fields 1, 2) and payload size (5) set to 0, every other field kept byte for
    byte: the metric names a block header adds (field 4) are numbered by later results, so the header must stay."""
    from ncuadvisor.reportfile.blocks import _varint

    kept, i, end = bytearray(), 0, len(header)
    while i < end:
        start = i
        key, i = _varint(header, i, end)
        wire = key & 7
        if wire == 0:
            _, i = _varint(header, i, end)
        elif wire == 2:
            n, i = _varint(header, i, end)
            i += n
        else:
            i += 8 if wire == 1 else 4
        if key >> 3 not in (1, 2, 5):
            kept += header[start:i]
    return b"\x08\x00\x10\x00" + bytes(kept) + b"\x28\x00"


def write_whole_copy(path: str | os.PathLike[str], found: Integrity, target: Path) -> None:
    """A copy of the report made of its file header and the blocks that passed (`found.keep`; a damaged block keeps
    its header alone, emptied), for the native library."""
    with open(path, "rb") as src, open(target, "wb") as dst:
        src.seek(0)
        dst.write(src.read(found.header_end))
        for start, end, emptied in found.keep:
            src.seek(start)
            if emptied:
                hs = int.from_bytes(src.read(4), "little")
                header = _emptied_header(src.read(hs))
                dst.write(len(header).to_bytes(4, "little") + header)
                continue
            left = end - start
            while left > 0:
                chunk = src.read(min(left, 1 << 20))
                if not chunk:
                    raise OSError("report changed while it was read")
                dst.write(chunk)
                left -= len(chunk)


class StreamCheck:
    """The block layout checked as a decompressed report streams by (`feed` each chunk in order): no report magic or
    a file header of length 0 or past `MAX_HEADER_BYTES` raises ValueError at once. A block header that is
    implausible, does not parse or has no payload size is passed over like `check_report` does, to the next header
    of a process seen before (`_resync`); when none follows within `RESYNC_STREAM_BYTES`, or when no header was read
    before it, ValueError: a bomb of zeros behind a report's first bytes is refused after 64 MiB, not after gigabytes.
    Payloads are skipped, not kept: memory stays at one header, the bytes kept to find the next one and one chunk. A
    stream that simply ends (a report cut short) is not an error here: `check_report` says what it holds."""

    def __init__(self) -> None:
        self.offset = 0  # bytes fed so far
        self._next: int | None = None  # where _pending starts; None until the file header's length is known
        self._pending = bytearray()  # bytes from _next on (from 0 until the file header's length is known)
        self._processes: set[bytes] = set()  # the process field of every header read
        self._lost: tuple[int, str] | None = None  # (where, why) of a damaged header passed over: looking for the next

    @property
    def claimed_end(self) -> int:
        """How far the blocks read so far say the report runs (the end of the payload being streamed)."""
        return self._next or 0

    def feed(self, chunk: bytes) -> None:
        start = self.offset
        self.offset += len(chunk)
        if self._next is None:
            self._pending += chunk
            if len(self._pending) < 8:
                return
            if self._pending[:4] != MAGIC:
                raise ValueError("no report magic")
            hs = u32(self._pending, 4)
            if hs == 0 or hs > MAX_HEADER_BYTES:
                raise ValueError(f"implausible file header length {hs}")
            self._next = 8 + hs
            chunk, start, self._pending = bytes(self._pending), 0, bytearray()
        if self.offset <= self._next:
            return
        self._pending += chunk[max(0, self._next - start) :]
        self._walk()

    def _walk(self) -> None:
        p = self._pending
        assert self._next is not None
        while True:
            if self._lost is not None and not self._resync():
                return
            if len(p) < 4:
                return
            hs = u32(p, 0)
            why = None
            if hs == 0 or hs > MAX_HEADER_BYTES:
                why = f"implausible block header length {hs}"
            elif len(p) < 4 + hs:
                return
            else:
                try:
                    h = _fields(bytes(p[4 : 4 + hs]), 0, hs)
                    size = (h.get(5) or [None])[0]
                    if not isinstance(size, int):
                        why = "block header without a payload size"
                except ValueError as exc:
                    why = f"block header does not parse ({exc})"
            if why is not None:
                if not self._processes:
                    raise ValueError(f"{why} at byte {self._next}")
                self._lost = (self._next, why)
                continue
            for s, e in h.get(6) or []:
                self._processes.add(bytes(p[4 + s - 1 - len(_varint_bytes(e - s)) : 4 + e]))
            step = 4 + hs + size
            self._next += step
            if step >= len(p):  # the rest of this block's payload is still to come: skipped as it streams by
                p.clear()
                return
            del p[:step]

    def _resync(self) -> bool:
        """Look for the next block header in the bytes kept (see `_resync`); True when the walk can go on."""
        assert self._lost is not None and self._next is not None
        p = self._pending
        data = bytes(p)
        longest = max(len(x) for x in self._processes)
        for start in _candidates(data, 4, self._processes):
            try:
                h = _fields(data, start + 4, start + 4 + u32(data, start))
            except ValueError:
                continue
            if isinstance((h.get(5) or [None])[0], int):
                del p[:start]
                self._next += start
                self._lost = None
                return True
        at, why = self._lost
        if self.offset - at > RESYNC_STREAM_BYTES:
            raise ValueError(f"{why} at byte {at}, and no block header after it in {RESYNC_STREAM_BYTES >> 20} MiB")
        drop = len(p) - (RESYNC_HEADER_BYTES + longest)
        if drop > 4:
            del p[:drop]
            self._next += drop
        return False
