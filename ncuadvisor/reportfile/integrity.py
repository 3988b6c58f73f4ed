"""Checking a report file's structure before the native library reads it: every result is whole and parses, or it is
left out and counted.

`ncu_report` trusts the file: a result cut short or with one damaged byte reads back as a kernel named "nan" with no
metrics, and a damaged block header can abort the process (SIGABRT, nothing on stderr). So the block layout
(`reportfile.blocks`) is walked strictly first: every block header must parse and carry a payload size, the payload
must hold exactly its (sources + results) length-prefixed messages, and every result message must parse (protobuf's
C parser, the schema of `reportfile.fastread`) and carry a kernel name. The walk stops at the first block it cannot
trust (nothing after it can be located); a block whose results do not parse is skipped. When anything was skipped or
cut, the native library reads a private copy made of the blocks that passed, so what it lists is exactly the results
counted here as whole.

Checked on ncu 2025.3.1's layout (every fixture walks clean). A file in another layout (`not_layout`) is left to the
native library as before.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ncuadvisor.reportfile.blocks import MAGIC, FileView, _fields, u32

# A file header or block header longer than this is not one ncu wrote (the largest seen: ~130 KB, the metric names).
MAX_HEADER_BYTES = 64 << 20


@dataclass
class Integrity:
    """What the strict walk found. `whole`: results that passed; `lost`: results counted in a block that did not pass;
    `cut_at`/`why`: where and why the walk stopped before the end (None when it reached the end cleanly);
    `keep`: the (start, end, emptied) byte spans of the blocks to keep, in order (`emptied`: a damaged block kept for
    its header alone, the metric names later results refer to, with no sources or results); `not_layout`: the file is not in the
    block layout this walk knows (left to the native library)."""

    whole: int = 0
    lost: int = 0
    cut_at: int | None = None
    why: str | None = None
    header_end: int = 0
    keep: list[tuple[int, int, bool]] = field(default_factory=list)
    dropped_blocks: int = 0
    not_layout: bool = False

    @property
    def damaged(self) -> bool:
        return self.cut_at is not None or self.dropped_blocks > 0

    @property
    def state(self) -> str:
        """ "truncated" (the file ends inside a block and nothing else is wrong), "damaged" or "whole"."""
        if not self.damaged:
            return "whole"
        if not self.dropped_blocks and self.why and ("past the end" in self.why or self.why.startswith("cut")):
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
        if self.cut_at is not None:
            parts.append(f"the file cannot be read past byte {self.cut_at} ({self.why}): every result after it is lost")
        return "; ".join(parts)


def _result_ok(payload: bytes) -> str | None:
    """Why a result message is not whole (None when it parses and names its kernel)."""
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
    return None


def check_report(path: str | os.PathLike[str]) -> Integrity:
    """Walk an uncompressed report strictly (see the module docstring); reads every result message once."""
    out = Integrity()
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
            _fields(mm, 8, i)
        except ValueError as exc:
            out.cut_at, out.why = 4, f"file header: {exc}"
            return out
        out.header_end = i
        while i < size:
            start = i
            problem, n_results, end = _block(mm, i, size)
            if problem is not None and end is None:  # the block cannot be located: nothing after it can
                out.cut_at, out.why = start, problem
                return out
            assert end is not None
            out.keep.append((start, end, problem is not None))
            if problem is None:
                out.whole += n_results
            else:
                out.dropped_blocks += 1
                out.lost += n_results
            i = end
    return out


def _block(mm: Any, i: int, size: int) -> tuple[str | None, int, int | None]:
    """(why the block at i is not whole or None, its result count, its end or None when it cannot be located)."""
    if i + 4 > size:
        return "cut inside a block header's length", 0, None
    hs = u32(mm, i)
    if hs == 0 or hs > MAX_HEADER_BYTES:
        return f"implausible block header length {hs}", 0, None
    hstart = i + 4
    if hstart + hs > size:
        return "block header past the end of the file", 0, None
    try:
        h = _fields(mm, hstart, hstart + hs)
    except ValueError as exc:
        return f"block header does not parse ({exc})", 0, None
    counts = [h.get(k) or [0] for k in (1, 2, 5)]
    if not h.get(5) or not all(isinstance(c[0], int) for c in counts):
        return "block header without a payload size", 0, None
    n_sources, n_results, payload = (int(c[0]) for c in counts)
    p0 = hstart + hs
    end = p0 + payload
    if end > size:
        return "block payload past the end of the file", 0, None
    # each message takes at least its 4-byte length: a count beyond that cannot be true (and is never allocated)
    if 4 * (n_sources + n_results) > payload:
        return f"block header counts {n_sources + n_results} messages in {payload} bytes", 0, None
    j = p0
    for k in range(n_sources + n_results):
        if j + 4 > end:
            return "block payload holds fewer messages than its header counts", n_results, end
        n = u32(mm, j)
        if j + 4 + n > end:
            return "a message runs past its block", n_results, end
        if k >= n_sources:
            why = _result_ok(bytes(mm[j + 4 : j + 4 + n]))
            if why is not None:
                return why, n_results, end
        j += 4 + n
    if j != end:
        return "block payload holds more than its header counts", n_results, end
    return None, n_results, end


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
    """The block layout checked as a decompressed report streams by (`feed` each chunk in order): no report magic, or
    a header of length 0 or past `MAX_HEADER_BYTES`, or one that does not parse or has no payload size, raises
    ValueError at once, so a bomb of zeros behind a report's first bytes is refused after its first bad block, not
    after gigabytes. Payloads are skipped, not kept: memory stays at one header and one chunk. A stream that simply
    ends (a report cut short) is not an error here: `check_report` says what it holds."""

    def __init__(self) -> None:
        self.offset = 0  # bytes fed so far
        self._next: int | None = None  # where the next block starts; None until the file header's length is known
        self._pending = bytearray()  # bytes from _next on (from 0 until the file header's length is known)

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
        while len(p) >= 4:
            hs = u32(p, 0)
            if hs == 0 or hs > MAX_HEADER_BYTES:
                raise ValueError(f"implausible block header length {hs} at byte {self._next}")
            if len(p) < 4 + hs:
                return
            h = _fields(bytes(p[4 : 4 + hs]), 0, hs)
            size = (h.get(5) or [None])[0]
            if not isinstance(size, int):
                raise ValueError(f"block header without a payload size at byte {self._next}")
            step = 4 + hs + size
            self._next += step
            if step >= len(p):  # the rest of this block's payload is still to come: skipped as it streams by
                p.clear()
                return
            del p[:step]
