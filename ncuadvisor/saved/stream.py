"""A saved result too big to hold whole, read a kernel at a time.

`json.loads` of a saved result of 100,000 kernels (1.1 GB) holds the file's bytes, its text, its dicts and then the
typed kernels all at once (about 9 GB). A file of STREAM_FROM bytes or more is read here instead: its top-level
object a key at a time, the `kernels` array an element at a time, each element typed (every value checked, as
`validate.load_saved` checks a small file) and dropped. The result kept holds the first KEEP_KERNELS kernels (the
file's order: by time, as ncuadvisor writes it) and every kernel "where to start" names; its report's warnings say how
many were left out. Where the kernels of the file sit is kept (`StreamedKernels`), so that `render -f json` writes
every kernel again, a kernel at a time (`iter_json`), and `--kernel` finds any kernel.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from ncuadvisor.errors import InputError
from ncuadvisor.result.helpers import no_surrogates
from ncuadvisor.result.record import optional
from ncuadvisor.result.types import KernelEntry, Result

STREAM_FROM = 32 << 20  # bytes: a saved result this big (about 3,000 kernels) is read a kernel at a time
KEEP_KERNELS = 5000  # kernels kept of such a result (by time, beside those "where to start" names)
_CHUNK = 1 << 20
_ID = re.compile(r"k\d+")  # a kernel's id as ncuadvisor writes it (pipeline.build)
MAX_VALUE = 64 << 20  # characters of one kernel entry (or other top-level value) at most: real ones take kilobytes
_WS = " \t\n\r"


@dataclass
class StreamedKernels:
    """Where each kernel of a saved file lies (byte offset and length) with the CRC-32 of its bytes, read again from
    the held file when asked: a file changed since is refused, never read as another result."""

    path: Path
    fh: Any
    starts: array = field(default_factory=lambda: array("q"))
    lengths: array = field(default_factory=lambda: array("q"))
    crcs: array = field(default_factory=lambda: array("L"))

    def __len__(self) -> int:
        return len(self.starts)

    def _bytes(self, i: int) -> bytes:
        data = os.pread(self.fh.fileno(), self.lengths[i], self.starts[i])
        if len(data) != self.lengths[i] or zlib.crc32(data) != self.crcs[i]:
            raise InputError(f"{self.path}: changed while it was read")
        return data

    def entry(self, i: int) -> KernelEntry:
        """Kernel `i` of the file, typed."""
        data = self._bytes(i)
        return _typed(self.path, json.loads(data.decode("utf-8")), data, i)

    def __iter__(self) -> Iterator[KernelEntry]:
        return (self.entry(i) for i in range(len(self)))


@dataclass(kw_only=True)
class StreamedResult(Result):
    """A saved result read a kernel at a time: `kernels` holds the ones kept, `streamed` where every kernel of the
    file lies (not a field: never written)."""

    streamed: StreamedKernels | None = optional(omit=lambda _record, _value: True)
    left_out: str | None = optional(omit=lambda _record, _value: True)  # the warning that says so

    def all_kernels(self) -> Iterator[KernelEntry]:
        """Every kernel of the file, read again a kernel at a time."""
        return iter(self.streamed) if self.streamed is not None else iter(self.kernels)

    def kernel(self, kernel_id: str | None) -> KernelEntry | None:
        held = super().kernel(kernel_id)
        if held is not None or kernel_id is None or not _ID.fullmatch(kernel_id):
            return held  # a name (`--kernel NAME`) is looked for among the kernels held, not in the whole file
        return next((k for k in self.all_kernels() if k.id == kernel_id), None)


class _Reader:
    """The file's text, a window at a time, with the byte offset and line of the window's start."""

    def __init__(self, path: Path, fh: Any, no_constant: Callable[[str], Any]) -> None:
        self.path = path
        self.fh = fh
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.json = json.JSONDecoder(parse_constant=no_constant)
        self.buf = ""
        self.pos = 0  # in buf
        self.base = 0  # bytes of the file before buf
        self.line = 1  # the line buf starts on
        self._column0 = 0  # characters of that line before buf
        self.eof = False

    def more(self, at_least: int = _CHUNK) -> bool:
        if self.eof:
            return False
        if self.pos:  # drop what was read, keeping its bytes and lines counted
            done = self.buf[: self.pos]
            self.base += len(done.encode("utf-8", "surrogatepass"))
            self.line += done.count("\n")
            last = done.rfind("\n")
            self._column0 = len(done) - last - 1 if last >= 0 else self._column0 + len(done)
            self.buf, self.pos = self.buf[self.pos :], 0
        want = max(at_least, _CHUNK)
        try:
            data = self.fh.read(want)
            text = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: not a text file (not UTF-8), not a saved ncuadvisor result") from exc
        if not data:
            self.eof = True
        if self.base == 0 and not self.buf and data[:3] == codecs.BOM_UTF8:
            self.base = 3  # the mark utf-8-sig drops
        self.buf += text
        return bool(data)

    def skip_ws(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos : self.pos + 1]

    def expect(self, chars: str, what: str) -> str:
        c = self.skip_ws()
        if not c or c not in chars:
            self.fail(f"Expecting {what}")
        self.pos += 1
        return c

    def value(self) -> tuple[Any, int, bytes]:
        """The next JSON value, with the byte offset and the bytes of its text in the file."""
        self.skip_ws()
        while True:
            try:
                value, end = self.json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # an element cut by the window's end: read more (doubling, so a long value costs linear time), but
                # never past MAX_VALUE: a damaged element is said without reading the rest of a big file into memory
                where = self.where(exc.pos)  # before more() moves the window
                if len(self.buf) - self.pos <= MAX_VALUE and self.more(len(self.buf)):
                    continue
                raise InputError(f"{self.path}: not valid JSON ({exc.msg} at {where})") from None
            except RecursionError:
                raise InputError(f"{self.path}: nested too deeply to be a saved ncuadvisor result") from None
            except ValueError as exc:  # an integer of more digits than Python converts (4300)
                raise InputError(f"{self.path}: holds a number too long to read ({str(exc).split(':')[0]})") from None
            if end == len(self.buf) and not self.eof:  # a number may go on in the next window
                self.more(len(self.buf))
                continue
            data = self.buf[self.pos : end].encode("utf-8", "surrogatepass")
            start = self.base + len(self.buf[: self.pos].encode("utf-8", "surrogatepass"))
            self.pos = end
            return value, start, data

    def where(self, at: int) -> str:
        """Line and column of the window's character `at`, as json's errors give them."""
        before = self.buf[:at]
        line = self.line + before.count("\n")
        col = at - before.rfind("\n") if "\n" in before else self._column0 + at + 1
        return f"line {line}, column {col}"

    def fail(self, msg: str) -> NoReturn:
        raise InputError(f"{self.path}: not valid JSON ({msg} at {self.where(self.pos)})")


def read_streamed(path: Path, no_constant: Callable[[str], Any], check: Callable[[dict[str, Any]], None]) -> Result:
    """The saved result at `path`, read a kernel at a time (see the module docstring). `check(head)` is given the
    top-level keys but the kernels (as `{"kernels": []}` beside them) before any kernel is read: the kind, the
    schema_version and what must be there, as `load_saved` checks them."""
    fh = path.open("rb")
    try:
        return _read(path, fh, _Reader(path, fh, no_constant), check)
    except BaseException:
        fh.close()
        raise


def _read(path: Path, fh: Any, r: _Reader, check: Callable[[dict[str, Any]], None]) -> Result:
    """The whole-file read parses all of the JSON before it checks what it holds: a file that is both damaged JSON and
    an invalid report is said to be damaged JSON. So a check that fails here is held (`deferred`) while the rest of
    the file is only parsed, and said at the end if the JSON held."""
    deferred: list[InputError] = []
    if r.skip_ws() != "{":
        raise InputError(
            f"{path}: not an ncuadvisor result (no schema_version); "
            "save one with `ncuadvisor report x.ncu-rep -o x.json`"
        )
    r.pos += 1
    head: dict[str, Any] = {}
    store = StreamedKernels(path, fh)
    kept: list[KernelEntry] = []
    wanted: set[str] = set()
    seen_kernels = False
    if r.skip_ws() == "}":
        r.pos += 1
    else:
        while True:
            key, _, _ = r.value()
            if not isinstance(key, str):
                r.fail("Expecting property name enclosed in double quotes")
            r.expect(":", "':' delimiter")
            if key == "kernels" and r.skip_ws() == "[":
                if seen_kernels:
                    raise InputError(f"{path}: not a valid saved report: `kernels` appears twice")
                seen_kernels = True
                try:
                    check({**head, "kernels": []})
                except InputError as exc:
                    deferred.append(exc)
                wanted = _wanted(head)
                _kernels(r, store, kept, wanted, deferred)
            else:
                head[key] = r.value()[0]
            if r.expect(",}", "',' delimiter") == "}":
                break
    if r.skip_ws():
        r.fail("Extra data")
    if deferred:
        raise deferred[0]
    if not seen_kernels:
        check(head)  # says what is missing
    try:
        result = Result.from_dict(no_surrogates({**head, "kernels": []}), complete=True)
    except InputError as exc:
        raise InputError(f"{path}: not a valid saved report: {exc}") from None
    missed = (_wanted(head) - {k.id for k in kept}) if seen_kernels else set()
    if missed:  # "where to start" came after the kernels: its kernels are read again
        kept += [k for k in (store.entry(i) for i in range(KEEP_KERNELS, len(store))) if k.id in missed]
    out = StreamedResult(**{f: getattr(result, f) for f in result.__dataclass_fields__})
    out.kernels = kept
    left = len(store) - min(len(store), KEEP_KERNELS)
    if left:
        share = 1.0 - sum(float(k.time_share or 0.0) for k in kept)
        out.left_out = (
            f"this result holds {len(store):,} kernels: shown are the first {KEEP_KERNELS:,} by time and those "
            f"'where to start' names; {left:,} more ({max(share, 0.0):.1%} of the GPU time) are in "
            f"`ncuadvisor render {path.name} -f json` and each with --kernel ID"
        )
        out.report = replace(out.report, warnings=[*out.report.warnings, out.left_out])
    out.streamed = store
    return out


def _wanted(head: dict[str, Any]) -> set[str]:
    """The kernel ids "where to start" and the program findings name, when they come before the kernels."""
    ids: set[str] = set()
    for a in head.get("top_actions") or []:
        if isinstance(a, dict):
            ids.update(str(i) for i in [a.get("kernel_id"), *(a.get("kernel_ids") or [])] if i is not None)
    return ids


def _kernels(
    r: _Reader, store: StreamedKernels, kept: list[KernelEntry], wanted: set[str], deferred: list[InputError]
) -> None:
    """Each kernel typed and kept (or only placed); after a failed check (`deferred`), only parsed."""
    r.pos += 1  # the [
    if r.skip_ws() == "]":
        r.pos += 1
        return
    while True:
        value, start, data = r.value()
        i = len(store)
        entry = None
        if not deferred:  # after a failed check the rest is only parsed: the file is refused at its end
            try:
                entry = _typed(store.path, value, data, i)
            except InputError as exc:
                deferred.append(exc)
        if entry is None:
            if r.expect(",]", "',' delimiter") == "]":
                return
            continue
        store.starts.append(start)
        store.lengths.append(len(data))
        store.crcs.append(zlib.crc32(data))
        if i < KEEP_KERNELS or entry.id in wanted:
            kept.append(entry)
        if r.expect(",]", "',' delimiter") == "]":
            return


def _typed(path: Path, value: Any, data: bytes, i: int) -> KernelEntry:
    """Kernel `i` typed (a \\ud800-\\udfff escape read as U+FFFD, as `load_saved` reads one)."""
    try:
        value = no_surrogates(value) if b"\\ud" in data.lower() else value
        return KernelEntry.from_dict(value, f"kernels[{i}]", complete=True)
    except InputError as exc:
        raise InputError(f"{path}: not a valid saved report: {exc}") from None
