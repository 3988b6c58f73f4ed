"""Reading a saved result (the JSON of `ncuadvisor report` or `ncuadvisor diff`) back, for `render` and `diff`.

Everything a hand-edited, truncated or hostile file can be is refused with one line (an InputError, exit code 2)
before a renderer sees it: not a file, not JSON, NaN or Infinity, nesting too deep to parse, numbers too long to read,
an unknown kind or schema_version, and any value of the wrong type or a required key missing. The last two are the
JSON Schema's checks (`schema/*.schema.json`), made by reading the file into its dataclasses with
`from_dict(complete=True)`: the schema is generated from those dataclasses, and the tests check that both refuse the
same files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from ncuadvisor.errors import InputError
from ncuadvisor.result.helpers import no_surrogates
from ncuadvisor.result.types import SCHEMA_VERSION, Result
from ncuadvisor.saved.schemas import DIFF_KIND, REPORT_KIND, record_class
from ncuadvisor.saved.stream import STREAM_FROM, read_streamed
from ncuadvisor.version import __version__

if TYPE_CHECKING:
    from ncuadvisor.comparison.types import DiffResult

_REPORT_MAGIC = (b"NVR\x00", b"\x28\xb5\x2f\xfd", b"\xfd7zX", b"\x1f\x8b")  # ncu-rep, ncu-repz, xz, gzip
_REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz", ".ncu-rep.xz", ".ncu-rep.gz")
# what must be there before the rest is worth reading, with the words the error uses
_NEEDED = {
    REPORT_KIND: {"report": dict, "kernels": list},
    DIFF_KIND: {"before": dict, "after": dict, "total": dict, "kernels": list},
}


def supported_versions() -> dict[str, int]:
    """The schema_version this ncuadvisor reads, by kind."""
    from ncuadvisor.comparison.types import SCHEMA_VERSION as DIFF_VERSION

    return {REPORT_KIND: SCHEMA_VERSION, DIFF_KIND: DIFF_VERSION}


def kind_of(saved: Result | DiffResult) -> str:
    return REPORT_KIND if isinstance(saved, Result) else DIFF_KIND


def load_saved(path: Path, want: Iterable[str] = (REPORT_KIND, DIFF_KIND), stream: bool = False) -> Result | DiffResult:
    """A saved result (`Result`) or diff (`DiffResult`), checked: readable, valid JSON, a known kind and
    schema_version, every value of its type. Every problem is an InputError of one line that names the file.
    `stream`: a saved report of STREAM_FROM bytes or more is read a kernel at a time and holds only its first kernels
    (`saved.stream`: for `render`, whose pages show no more); `diff` and the API read every kernel."""
    want = tuple(want)
    if stream and _size(path) >= STREAM_FROM:
        with path.open("rb") as fh:
            _not_a_report(path, fh.read(4))
        try:
            return read_streamed(path, _no_constant(path), lambda head: _check(path, head, want, streaming=True))
        except _WholeFile:  # a diff, or the keys in another order than ncuadvisor writes them
            pass
    data = _read_json(path)
    _check(path, data, want)
    kind = data.get("kind", REPORT_KIND)
    try:
        return cast("Result | DiffResult", record_class(kind).from_dict(data, complete=True))
    except InputError as exc:
        raise InputError(f"{path}: not a valid saved {kind}: {exc}") from None


class _WholeFile(Exception):
    """A big saved file that is not read a kernel at a time."""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0  # said by _read_json


def _check(path: Path, data: Any, want: Iterable[str], streaming: bool = False) -> None:
    """The checks of a saved result's top level: a known kind and schema_version, what must be there, a kind
    wanted. `streaming`: the top level read so far (before the kernels), which only a saved report may be."""
    if streaming and (data.get("kind", REPORT_KIND) != REPORT_KIND or "schema_version" not in data):
        raise _WholeFile
    if not isinstance(data, dict) or "schema_version" not in data:
        raise InputError(
            f"{path}: not an ncuadvisor result (no schema_version); "
            "save one with `ncuadvisor report x.ncu-rep -o x.json`"
        )
    kind = data.get("kind", REPORT_KIND)
    versions = supported_versions()
    if not isinstance(kind, str) or kind not in versions:
        raise InputError(f"{path}: unknown result kind {kind!r} (this ncuadvisor reads: {', '.join(versions)})")
    _check_version(path, data, kind, versions[kind])
    for key, typ in _NEEDED[kind].items():
        if not isinstance(data.get(key), typ):
            raise InputError(f"{path}: not a complete {kind} result (`{key}` is missing or not a {typ.__name__})")
    want = tuple(want)
    if kind not in want:
        raise InputError(f"{path}: is a saved {kind}; expected a saved {' or '.join(want)}")


def _read_json(path: Path) -> Any:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a saved ncuadvisor result (.json)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    _not_a_report(path, raw[:4])
    if not raw.strip():
        raise InputError(f"{path}: empty file, not a saved ncuadvisor result")
    try:
        data = json.loads(raw.decode("utf-8-sig"), parse_constant=_no_constant(path))
        # a \ud800-\udfff escape can decode to a lone surrogate, which no output can encode: shown as U+FFFD
        return no_surrogates(data) if b"\\ud" in raw.lower() else data
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a text file (not UTF-8), not a saved ncuadvisor result") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a saved ncuadvisor result") from None
    except ValueError as exc:  # an integer of more digits than Python converts (4300)
        raise InputError(f"{path}: holds a number too long to read ({str(exc).split(':')[0]})") from None


def _not_a_report(path: Path, magic: bytes) -> None:
    if magic in _REPORT_MAGIC or path.name.endswith(_REPORT_SUFFIXES):
        raise InputError(
            f"{path}: is an Nsight Compute report, not a saved result; analyze it with `ncuadvisor report {path}`"
        )


def _no_constant(path: Path) -> Callable[[str], NoReturn]:
    def no_constant(name: str) -> NoReturn:
        raise InputError(f"{path}: not valid JSON ({name} is not a number JSON knows; ncuadvisor never writes it)")

    return no_constant


def _check_version(path: Path, data: dict[str, Any], kind: str, supported: int) -> None:
    version = data.get("schema_version")
    if isinstance(version, bool) or version != supported:
        writer = (data.get("generator") or {}).get("version") if isinstance(data.get("generator"), dict) else None
        raise InputError(
            f"{path}: {kind} schema_version {version!r} is not supported: ncuadvisor {__version__} reads version "
            f"{supported}"
            + (f"; it was written by ncuadvisor {writer}" if writer else "")
            + " (re-create it from the report with this version)"
        )
