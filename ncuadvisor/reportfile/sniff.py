"""Telling what a report file is before anything reads it: its magic, its compression (a private decompressed copy),
and the ncu version and command line written in its header."""

from __future__ import annotations

import atexit
import mmap
import os
import re
import tempfile
from pathlib import Path

from ncuadvisor.errors import InputError

REPORT_MAGIC = (b"NVR\x00",)
COMPRESSED_SUFFIXES = (".xz", ".gz")
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_VERSION_RE = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?) \(build \d+\)")
_CMDLINE_RE = re.compile(rb"[ -~]{0,300}/ncu [ -~]{1,4000}")


def check_report_path(path: Path, compressed_ok: bool = False) -> None:
    """Reject what is certainly not a report, with one clear sentence (before the native library sees it)."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
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


def decompress(path: Path) -> Path:
    """A report kept compressed (`x.ncu-rep.xz`, `.gz`) is read from a private temporary copy."""
    import gzip
    import lzma
    import shutil

    opener = lzma.open if path.suffix == ".xz" else gzip.open
    tmpdir = Path(tempfile.mkdtemp(prefix="ncuadvisor-"))
    target = tmpdir / path.with_suffix("").name
    try:
        with opener(path, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, EOFError, lzma.LZMAError) as exc:
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise InputError(f"{path}: cannot decompress ({exc})") from exc
    atexit.register(shutil.rmtree, tmpdir, True)
    return target


def unzstd(path: Path) -> Path:
    """A `.ncu-repz` (ncu 2026.3+ writes them by default: zstd-compressed reports) read from a private decompressed
    copy when it is one zstd stream of a plain report: the report-file reader (fast metrics of big reports) and the
    process split need the plain layout; ncu_report reads either. Anything else (no `zstandard` module, another
    inner layout, a damaged stream) leaves the file to ncu_report as it is."""
    try:
        import zstandard  # noqa: PLC0415 - optional at run time: without it ncu_report still reads the file
    except ImportError:
        return path
    import shutil

    tmpdir = Path(tempfile.mkdtemp(prefix="ncuadvisor-"))
    target = tmpdir / (path.stem + ".ncu-rep")
    try:
        with path.open("rb") as src, target.open("wb") as dst:
            zstandard.ZstdDecompressor().copy_stream(src, dst, read_size=1 << 20, write_size=1 << 20)
        with target.open("rb") as fh:
            plain = fh.read(4) in REPORT_MAGIC
    except (OSError, zstandard.ZstdError):
        plain = False
    if not plain:
        shutil.rmtree(tmpdir, ignore_errors=True)
        return path
    atexit.register(shutil.rmtree, tmpdir, True)
    return target


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
