"""Telling what a report file is before anything reads it: its magic, its compression (a private decompressed copy),
and the ncu version and command line written in its header."""

from __future__ import annotations

import atexit
import functools
import gzip
import io
import lzma
import mmap
import os
import re
import shutil
import stat
import tempfile
import zlib
from pathlib import Path
from typing import Any

from ncuadvisor.errors import InputError
from ncuadvisor.reportfile.integrity import Integrity, StreamCheck, write_whole_copy

REPORT_MAGIC = (b"NVR\x00",)
COMPRESSED_SUFFIXES = (".xz", ".gz")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
XZ_MAGIC, GZIP_MAGIC = b"\xfd7zXZ", b"\x1f\x8b"
# what opening and reading a compressed file raises: the file's own errors, a stream cut short, damaged xz or deflate
DECOMPRESS_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)
_VERSION_RE = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?) \(build \d+\)")
_CMDLINE_RE = re.compile(rb"[ -~]{0,300}/ncu [ -~]{1,4000}")


def check_report_path(path: Path, compressed_ok: bool = False) -> None:
    """Reject what is certainly not a report, with one clear sentence (before the native library sees it)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:  # a symbolic-link loop, a folder without search permission, a name too long
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not an Nsight Compute report (.ncu-rep)")
    if not path.is_file():  # a pipe would block the reader forever, a device would be read without end
        raise InputError(f"{path}: not a regular file (a pipe, socket or device), not an Nsight Compute report")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if size == 0:
        raise InputError(f"{path}: empty file, not an Nsight Compute report")
    if compressed_ok and path.suffix in COMPRESSED_SUFFIXES:
        return
    if head not in REPORT_MAGIC and head != ZSTD_MAGIC:
        raise InputError(f"{path}: not an Nsight Compute report (.ncu-rep/.ncu-repz): unknown file format")


def scan_header(path: Path) -> tuple[str | None, str | None]:
    """The ncu version and command line that wrote the report (plain text inside uncompressed reports)."""

    def near(mm: mmap.mmap, anchor: bytes, pattern: re.Pattern[bytes], before: int) -> re.Match[bytes] | None:
        at = mm.find(anchor)  # a plain find runs at memory speed; the regex only looks around it
        return pattern.search(mm[max(0, at - before) : at + 4096]) if at >= 0 else None

    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            version = near(mm, b" (build ", _VERSION_RE, 64)
            cmd = near(mm, b"/ncu ", _CMDLINE_RE, 400)
            return (
                version.group(1).decode() if version else None,
                cmd.group(0).decode(errors="replace").strip() if cmd else None,
            )
    except (OSError, ValueError):
        return None, None


def clocks_locked(path: Path) -> bool | None:
    """Whether ncu locked the GPU's clocks for the report's first result (`--clock-control base`, its default: True;
    `--clock-control none`: False), from the result's clock status (result field 25, its field 1: 1 where locked, 0
    where not; every fixture, captured with `--clock-control none`, has 0, and 125 of 129 results of other people's
    reports, captured with ncu's default, have 1, 2026-12-05). None where the file does not say."""
    from ncuadvisor.reportfile.blocks import FileView, _fields, iter_blocks, u32

    try:
        with path.open("rb") as fh:
            mm = FileView(fh)
            for b in iter_blocks(mm):
                n_sources, n_results = ((b.header.get(k) or [0])[0] for k in (1, 2))
                if not n_results:
                    continue
                j = b.payload_start
                for _ in range(n_sources):
                    j += 4 + u32(mm, j)
                status = _fields(mm, j + 4, j + 4 + u32(mm, j)).get(25)
                if not status or not isinstance(status[0], tuple):
                    return None
                mode = _fields(mm, *status[0]).get(1)
                return bool(mode[0]) if mode and isinstance(mode[0], int) else None
    except (OSError, ValueError):
        return None
    return None


# A report compresses well (the fixtures: up to ~200x with xz), but not without end: a stream that expands past this
# many times its compressed size, plus a floor for tiny files, is refused as a bomb instead of filling the disk.
MAX_EXPANSION = 1000  # the fixtures: 215x for a 794 MiB report (model_step_1010), 1095x for a 26 MiB one
MAX_DECOMPRESSED = 64 << 30  # whatever the compressed size, unless MAX_DECOMPRESSED_ENV says otherwise
MAX_DECOMPRESSED_ENV = "NCUADVISOR_MAX_DECOMPRESSED"  # bytes, or with a unit: 512M, 4G, 1T (powers of 1024)
_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
FREE_SPACE_EVERY = 64 << 20  # the temp folder's free space checked every this many bytes written
FREE_SPACE_MARGIN = 256 << 20  # left free on that disk
EXPANSION_FLOOR = 256 << 20


def max_decompressed() -> int:
    """The most bytes a compressed report may expand to in the private folder: MAX_DECOMPRESSED, or the size
    NCUADVISOR_MAX_DECOMPRESSED gives (`2G`, `512M`, bytes); a value that is no size is an InputError."""
    text = os.environ.get(MAX_DECOMPRESSED_ENV, "").strip()
    if not text:
        return MAX_DECOMPRESSED
    size = re.fullmatch(r"(\d{1,15})\s*([KMGT]?)(?:i?B)?", text, re.IGNORECASE)
    if size is None or int(size[1]) == 0:
        raise InputError(
            f"{MAX_DECOMPRESSED_ENV}={text!r} is not a size: give bytes or a number with K, M, G or T (e.g. 8G)"
        )
    return int(size[1]) << _UNITS[size[2].upper()]


def _copy_checked(path: Path, src: Any, target: Path) -> None:
    """Stream a decompressed report into `target`, its block layout checked as it goes (`integrity.StreamCheck`:
    what is not a report is refused on its first bytes, a bomb of zeros behind valid blocks within 64 MiB) and its
    size kept under the expansion limits: MAX_EXPANSION times its compressed size (with a floor for tiny files), the
    absolute cap (`max_decompressed`) and the free space of the private folder's disk."""
    cap = max_decompressed()
    by_ratio = max(EXPANSION_FLOOR, MAX_EXPANSION * path.stat().st_size)
    limit = min(cap, by_ratio)
    check = StreamCheck()
    next_check = 0
    with target.open("wb") as dst:
        while chunk := src.read(1 << 20):
            try:
                check.feed(chunk)
            except ValueError as exc:
                raise InputError(f"{path}: the decompressed data is not an Nsight Compute report ({exc})") from None
            if check.offset > limit or check.claimed_end > limit:  # a header's claim is refused before it is written
                if by_ratio <= cap:
                    raise InputError(
                        f"{path}: expands past {limit >> 20} MiB ({MAX_EXPANSION}x its size, at most "
                        f"{cap >> 20} MiB): refused as a decompression bomb"
                    )
                raise InputError(
                    f"{path}: expands past {cap >> 20} MiB, the cap on a decompressed report: refused "
                    f"(set {MAX_DECOMPRESSED_ENV}, e.g. {MAX_DECOMPRESSED_ENV}=128G, to read a bigger one)"
                )
            if check.offset >= next_check:  # on the first chunk, then every FREE_SPACE_EVERY bytes
                _check_free_space(path, target)
                next_check = check.offset + FREE_SPACE_EVERY
            dst.write(chunk)
    if check.offset < 8:
        raise InputError(f"{path}: the decompressed data is not an Nsight Compute report (too short)")


class _StrictXz(io.RawIOBase):
    """An .xz file's decompressed bytes, stream after stream as lzma.open reads them, except that bytes after the
    last stream that are neither stream padding (zeros) nor another stream are an LZMAError: lzma.open ignored them
    silently (a file with something appended read as whole)."""

    def __init__(self, path: Path) -> None:
        self._fh = path.open("rb")
        self._dec = lzma.LZMADecompressor()
        self._at = 0  # compressed bytes consumed, for the error message
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        while not self._done:
            if self._dec.eof:
                rest = self._dec.unused_data.lstrip(b"\0")
                while not rest:
                    more = self._fh.read(1 << 16)
                    if not more:
                        self._done = True
                        return 0
                    rest = more.lstrip(b"\0")
                if not rest.startswith(XZ_MAGIC[:1]) or (len(rest) >= len(XZ_MAGIC) and not rest.startswith(XZ_MAGIC)):
                    raise lzma.LZMAError("garbage after the last xz stream")
                self._dec = lzma.LZMADecompressor()
                data = rest
            elif self._dec.needs_input:
                data = self._fh.read(1 << 16)
                if not data:
                    raise EOFError("the xz stream ends before its end marker")
            else:
                data = b""
            out = self._dec.decompress(data, max_length=len(view))
            if out:
                view[: len(out)] = out
                return len(out)
        return 0

    def close(self) -> None:
        self._fh.close()
        super().close()


def _open_xz(path: Path) -> io.BufferedIOBase:
    return io.BufferedReader(_StrictXz(path), buffer_size=1 << 20)


def _check_free_space(path: Path, target: Path) -> None:
    """Refuse before the private copy fills the disk: FREE_SPACE_MARGIN must stay free."""
    try:
        free = shutil.disk_usage(target.parent).free
    except OSError:
        return
    if free < FREE_SPACE_MARGIN:
        raise InputError(
            f"{path}: not enough free space for its decompressed copy in {target.parent.parent} "
            f"({free >> 20} MiB free; set TMPDIR to a folder with more)"
        )


def open_decompressed(path: Path, by_magic: bool = False) -> io.BufferedIOBase:
    """`path` opened to read its decompressed bytes: xz or gzip by its suffix (`.xz`, else gzip), or with `by_magic`
    by its first bytes whatever its name, a file of neither kind as it is. Opening and reading raise one of
    `DECOMPRESS_ERRORS`."""
    if not by_magic:
        return _open_xz(path) if path.suffix == ".xz" else gzip.open(path, "rb")
    with path.open("rb") as fh:
        head = fh.read(len(XZ_MAGIC))
    if head.startswith(XZ_MAGIC):
        return _open_xz(path)
    if head.startswith(GZIP_MAGIC):
        return gzip.open(path, "rb")
    return path.open("rb")


def decompress(path: Path) -> Path:
    """A report kept compressed (`x.ncu-rep.xz`, `.gz`) is read from a private temporary copy."""
    target = private_dir() / path.with_suffix("").name
    try:
        with open_decompressed(path) as src:
            _copy_checked(path, src, target)
    except DECOMPRESS_ERRORS as exc:
        target.unlink(missing_ok=True)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).replace(str(target), "")
        raise InputError(f"{path}: cannot decompress ({why or type(exc).__name__})") from exc
    except InputError:
        target.unlink(missing_ok=True)
        raise
    return target


def unzstd(path: Path) -> Path:
    """A `.ncu-repz` (ncu 2026.3+ writes them by default: zstd-compressed reports) read from a private decompressed
    copy when it is one zstd stream of a plain report: the report-file reader (fast metrics of big reports) and the
    process split need the plain layout; ncu_report reads either. Without the `zstandard` module the file goes to
    ncu_report as it is; a stream that fails its checksum or is cut short is refused, never read."""
    try:
        import zstandard  # noqa: PLC0415 - optional at run time: without it ncu_report still reads the file
    except ImportError:
        return path
    target = private_dir() / (path.stem + ".ncu-rep")
    try:
        with path.open("rb") as fh:
            reader = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True)
            _copy_checked(path, reader, target)
    except zstandard.ZstdError as exc:
        target.unlink(missing_ok=True)
        raise InputError(f"{path}: damaged compressed report ({exc})") from exc
    except OSError as exc:
        target.unlink(missing_ok=True)
        raise InputError(f"{path}: cannot decompress ({exc.strerror or exc})") from exc
    except InputError:
        target.unlink(missing_ok=True)
        raise
    return target


def private_dir(parent: Path | None = None, prefix: str = "ncuadvisor-") -> Path:
    """A private folder (in the temporary folder, or in `parent`), removed when the process exits (normally, on an
    error, or on SIGTERM/SIGINT, which the command line turns into an exit). Its removal is registered before the
    folder is made: a Ctrl-C landing between the two (a signal can reach any thread, so blocking it in this one is
    not enough) would otherwise leave it behind."""
    import secrets
    import shutil

    base = parent if parent is not None else _temp_base()
    for _ in range(100):
        tmpdir = base / f"{prefix}{secrets.token_hex(8)}"
        remove = functools.partial(shutil.rmtree, tmpdir, True)
        atexit.register(remove)
        try:
            os.mkdir(tmpdir, 0o700)
        except FileExistsError:  # another's folder of that name: never ours to remove
            atexit.unregister(remove)
            continue
        return tmpdir
    raise InputError(f"cannot make a private folder under {base}")


def drop_private(folder: Path, owner: int) -> None:
    """Remove a private folder (`private_dir`) once its reader is done with it, in the process that made it only: a
    forked worker holds a copy of the reader, and its end must not take the folder from under its parent. Without
    this the copy stayed until the process ended, and forever where it ended by `os._exit` (pool and forked workers):
    each analysis of an 830 MB report in a long-lived process (a notebook, a pool) left 830 MB behind."""
    import shutil

    if os.getpid() == owner and folder.name.startswith("ncuadvisor-"):
        shutil.rmtree(folder, True)


def _temp_base() -> Path:
    """The temporary folder, found as `tempfile.gettempdir` finds it (TMPDIR, TEMP, TMP, then the usual folders) but
    without its probe: it writes a randomly named test file into each candidate, which a Ctrl-C landing then leaves
    behind."""
    if tempfile.tempdir:
        return Path(tempfile.tempdir)
    for d in [os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp", "/usr/tmp"]:
        if d and os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return Path(d)
    return Path(tempfile.gettempdir())


def whole_copy(path: Path, found: Integrity) -> Path:
    """A private copy of a damaged report made of its whole blocks only (`integrity.write_whole_copy`)."""
    target = private_dir() / path.name
    try:
        write_whole_copy(path, found, target)
    except OSError as exc:
        raise InputError(f"{path}: cannot make a private copy of its whole results ({exc.strerror or exc})") from exc
    return target


def held(path: Path) -> tuple[Path, int | None]:
    """A name for the file `path` names now that stays its name whatever happens to `path` (replaced, renamed,
    removed): `/proc/PID/fd/N` of a descriptor held open here (and `N`, for the caller to close), which this process,
    its workers and the native library all open as the same file. Where there is no /proc, `path` itself."""
    proc = Path(f"/proc/{os.getpid()}/fd")
    if not proc.is_dir():
        return path, None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced by a pipe or device since it was checked
        os.close(fd)
        raise InputError(f"{path}: not a regular file (a pipe, socket or device), not an Nsight Compute report")
    return proc / str(fd), fd


def local_copy(path: Path) -> Path:
    """The plain .ncu-rep to read for `path`: itself, or a private decompressed copy of an .xz, .gz or .ncu-repz."""
    check_report_path(path, compressed_ok=True)
    if path.suffix in COMPRESSED_SUFFIXES:
        local = decompress(path)
    elif path.suffix == ".ncu-repz":
        local = unzstd(path)
    else:
        local = path
    check_report_path(local)
    return local
