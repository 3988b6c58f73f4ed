"""Reading Nsight Compute reports: the one module that imports `ncu_report`.

Metrics are read once, by name, for the names the analysis asks for (reading one metric costs ~25 µs, so reading
every metric of a full-set report would dominate the run time).
"""

from __future__ import annotations

import atexit
import mmap
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from ncuadvisor.errors import InputError
from ncuadvisor.model import ID_COLUMNS, Profile, ResultDetail, SourceLine

# Device attributes copied into Profile.device (read from the first result).
DEVICE_METRICS = {
    "name": "device__attribute_display_name",
    "chip": "device__attribute_chip",
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
    "sm_count": "device__attribute_multiprocessor_count",
    "l2_bytes": "device__attribute_l2_cache_size",
    "max_warps_per_sm": "device__attribute_max_warps_per_multiprocessor",
    "max_threads_per_sm": "device__attribute_max_threads_per_multiprocessor",
    "max_blocks_per_sm": "device__attribute_max_blocks_per_multiprocessor",
    "max_registers_per_sm": "device__attribute_max_registers_per_multiprocessor",
    "max_shared_mem_per_sm": "device__attribute_max_shared_memory_per_multiprocessor",
    "max_shared_mem_per_block_optin": "device__attribute_max_shared_memory_per_block_optin",
    "memory_bus_width": "device__attribute_global_memory_bus_width",
    "max_gpu_frequency_khz": "device__attribute_max_gpu_frequency_khz",
    "max_mem_frequency_khz": "device__attribute_max_mem_frequency_khz",
}

_REPORT_MAGIC = (b"NVR\x00",)
COMPRESSED_SUFFIXES = (".xz", ".gz")
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_VERSION_RE = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?) \(build \d+\)")
_CMDLINE_RE = re.compile(rb"[ -~]{0,300}/ncu [ -~]{1,4000}")


def _import_ncu_report():
    try:
        import ncu_report  # noqa: PLC0415 - imported lazily so `ncuadvisor --help` works without it
    except ImportError as exc:  # pragma: no cover - the dependency is declared; this is a broken install
        raise InputError(f"cannot import ncu_report ({exc}); install it with: pip install ncu-report") from exc
    return ncu_report


def check_report_path(path: Path, compressed_ok: bool = False) -> None:
    """Reject what is certainly not a report, with one clear sentence (before the native library sees it)."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not an Nsight Compute report (.ncu-rep)")
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
    if head not in _REPORT_MAGIC and head != _ZSTD_MAGIC:
        raise InputError(f"{path}: not an Nsight Compute report (.ncu-rep/.ncu-repz): unknown file format")


def _scan_header(path: Path) -> tuple[str | None, str | None]:
    """The ncu version and command line that wrote the report (plain text inside uncompressed reports)."""

    def near(mm: mmap.mmap, anchor: bytes, pattern: re.Pattern[bytes], before: int) -> re.Match[bytes] | None:
        at = mm.find(anchor)  # a plain find runs at memory speed; the regex only looks around it
        return pattern.search(mm[max(0, at - before): at + 4096]) if at >= 0 else None

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


def _decompress(path: Path) -> Path:
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


# ncu_report keeps every result it has opened in memory for as long as the process lives (about 7 MB for a result
# with the analysis sections; freeing the report does not return it). Reports with more results than
# IN_PROCESS_MAX are therefore read in short-lived worker processes, CHUNK results each, at most WORKERS at a time:
# memory stays bounded and both cores work.
IN_PROCESS_MAX = 64
CHUNK = 64
WORKERS = 2


def _value(metric: Any) -> Any:
    if metric is None:
        return None
    try:
        if metric.kind() == metric.ValueKind_STRING:
            return metric.as_string()
        return metric.as_double()
    except Exception:
        return None


def _nvtx(action: Any) -> str:
    try:
        state = action.nvtx_state()
        if state is None:
            return ""
        names: list[str] = []
        for dom_id in state.domains():
            dom = state.domain_by_id(dom_id)
            names.extend(str(n) for n in dom.push_pop_ranges())
            names.extend(str(n) for n in dom.start_end_ranges())
        return " > ".join(names)
    except Exception:
        return ""


def _row(ncu: Any, action: Any, rid: int, r: int, a: int, metrics: list[str]) -> dict[str, Any]:
    """One result as a row: identity columns and the requested metrics (None where absent)."""
    row: dict[str, Any] = {
        "result_id": rid,
        "range_idx": r,
        "action_idx": a,
        "name": action.name(ncu.IAction.NameBase_FUNCTION) or action.name(),
        "demangled": action.name(ncu.IAction.NameBase_DEMANGLED) or action.name(),
        "mangled": action.name(ncu.IAction.NameBase_MANGLED) or "",
        "nvtx": _nvtx(action),
        "process": "",
    }
    by = action.metric_by_name
    row["grid"] = _dim3(*(_value(by(f"launch__grid_dim_{c}")) for c in "xyz"))
    row["block"] = _dim3(*(_value(by(f"launch__block_dim_{c}")) for c in "xyz"))
    row["device_id"] = _value(by("launch__device_id"))
    for m in metrics:
        row[m] = _value(by(m))
    return row


def _read_rows(task: tuple[str, list[tuple[int, int, int]], list[str]]) -> list[dict[str, Any]]:
    """Worker: open the report, read the rows of the given (result id, range, action) triples."""
    path, items, metrics = task
    ncu = _import_ncu_report()
    ctx = ncu.load_report(path)
    ranges: dict[int, Any] = {}
    rows = []
    for rid, r, a in items:
        rng = ranges.get(r) or ranges.setdefault(r, ctx.range_by_idx(r))
        rows.append(_row(ncu, rng.action_by_idx(a), rid, r, a, metrics))
    return rows


class ReportReader:
    """An opened report. `results()` reads the scalar metrics of every result; `details()` the deep data of a few."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        check_report_path(self.path, compressed_ok=True)
        local = _decompress(self.path) if self.path.suffix in COMPRESSED_SUFFIXES else self.path
        check_report_path(local)
        self._local = local
        self._ncu = _import_ncu_report()
        try:
            self._ctx = self._ncu.load_report(str(local))
            n_ranges = self._ctx.num_ranges() if self._ctx is not None else None
        except Exception as exc:  # the native library raises its own exception types
            raise InputError(f"{self.path}: not a readable Nsight Compute report ({exc})") from exc
        if not n_ranges:
            raise InputError(f"{self.path}: not a readable Nsight Compute report (truncated or corrupt)")
        # (range, action) of every result; an action is opened only when its data is read (see IN_PROCESS_MAX)
        self._index: list[tuple[int, int]] = []
        self._ranges = [self._ctx.range_by_idx(r) for r in range(n_ranges)]
        for r, rng in enumerate(self._ranges):
            self._index.extend((r, a) for a in range(rng.num_actions() or 0))
        if not self._index:
            raise InputError(f"{self.path}: the report holds no kernel results")
        self._opened: dict[int, Any] = {}
        self.ncu_version, self.command_line = _scan_header(local)
        try:
            self.reader_version = str(self._ctx.get_version())
        except Exception:  # pragma: no cover - older ncu_report
            self.reader_version = None

    def __len__(self) -> int:
        return len(self._index)

    def _action(self, rid: int) -> Any:
        if rid not in self._opened:
            r, a = self._index[rid]
            self._opened[rid] = self._ranges[r].action_by_idx(a)
        return self._opened[rid]

    # -- scalar metrics -------------------------------------------------------------------------------------
    def results(self, metrics: Iterable[str]) -> pd.DataFrame:
        """One row per result with the identity columns and the requested metrics (None where absent)."""
        metrics = list(dict.fromkeys(metrics))
        items = [(rid, r, a) for rid, (r, a) in enumerate(self._index)]
        if len(items) <= IN_PROCESS_MAX:
            rows = [_row(self._ncu, self._action(rid), rid, r, a, metrics) for rid, r, a in items]
        else:
            rows = self._results_in_workers(items, metrics)
        return pd.DataFrame(rows, columns=ID_COLUMNS + [m for m in metrics if m not in ID_COLUMNS])

    def _results_in_workers(self, items: list[tuple[int, int, int]], metrics: list[str]) -> list[dict[str, Any]]:
        import multiprocessing

        tasks = [(str(self._local), items[i: i + CHUNK], metrics) for i in range(0, len(items), CHUNK)]
        ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        rows: list[dict[str, Any]] = []
        try:
            with ctx.Pool(processes=min(WORKERS, len(tasks)), maxtasksperchild=1) as pool:
                for chunk in pool.imap(_read_rows, tasks):
                    rows.extend(chunk)
        except Exception as exc:  # a worker that dies (out of memory, a broken report past some result)
            raise InputError(f"{self.path}: reading the results failed ({type(exc).__name__}: {exc})") from exc
        return rows

    def device(self) -> dict[str, Any]:
        action = self._action(0)
        dev = {k: _value(action.metric_by_name(v)) for k, v in DEVICE_METRICS.items()}
        if dev.get("cc_major") is not None and dev.get("cc_minor") is not None:
            dev["compute_capability"] = f"{int(dev['cc_major'])}.{int(dev['cc_minor'])}"
        return dev

    # -- deep data --------------------------------------------------------------------------------------------
    def details(self, result_ids: Iterable[int], per_instruction: Iterable[str]) -> dict[int, ResultDetail]:
        per_instruction = list(dict.fromkeys(per_instruction))
        out: dict[int, ResultDetail] = {}
        for rid in result_ids:
            action = self._action(rid)
            d = ResultDetail(result_id=rid)
            try:
                d.sections = [s.identifier() for s in action.sections()]
            except Exception:
                d.sections = []
            resolved: dict[int, tuple[str | None, int | None, str | None]] = {}

            def resolve(pc: int, _action: Any = action, _cache: dict = resolved) -> tuple:
                if pc not in _cache:
                    _cache[pc] = self._resolve_pc(_action, pc)
                return _cache[pc]

            for name in per_instruction:
                metric = action.metric_by_name(name)
                if metric is None or not metric.has_correlation_ids():
                    continue
                lines = []
                ids = metric.correlation_ids()
                for i in range(metric.num_instances()):
                    try:
                        value = float(metric.as_double(i))
                        pc = int(ids.as_uint64(i))
                    except Exception:
                        continue
                    if value == 0 or pc == 0:
                        continue
                    lines.append(SourceLine(pc=pc, value=value, resolve=resolve))
                d.per_instruction[name] = lines
            try:
                d.ncu_rules = [dict(x) for x in action.rule_results_as_dicts()]
            except Exception:
                d.ncu_rules = []
            out[rid] = d
        return out

    @staticmethod
    def _resolve_pc(action: Any, pc: int) -> tuple[str | None, int | None, str | None]:
        file = line = sass = None
        try:
            info = action.source_info(pc)
            if info is not None:
                file, line = info.file_name() or None, int(info.line()) or None
        except Exception:
            pass
        try:
            sass = (action.sass_by_pc(pc) or "").strip() or None
        except Exception:
            pass
        return file, line, sass

    def source_files(self, result_ids: Iterable[int]) -> dict[str, str]:
        files: dict[str, str] = {}
        for rid in result_ids:
            try:
                for k, v in dict(self._action(rid).source_files()).items():
                    files.setdefault(str(k), str(v))
            except Exception:
                continue
        return files

    def source_lookup(self, result_ids: Iterable[int]):
        """A function file -> text that reads the embedded sources of the given results only until it finds the
        file (each result's read costs ~25 ms, and most kernels share their module's files)."""
        pending = list(result_ids)
        found: dict[str, str] = {}

        def lookup(file: str) -> str | None:
            while file not in found and pending:
                found.update({k: v for k, v in self.source_files([pending.pop(0)]).items() if k not in found})
            return found.get(file)

        return lookup


def _dim3(x: Any, y: Any, z: Any) -> str:
    vals = [int(v) if isinstance(v, (int, float)) and v == v else None for v in (x, y, z)]
    if vals[0] is None:
        return ""
    return "(" + ", ".join(str(v if v is not None else 1) for v in vals) + ")"


def read_profile(
    path: str | os.PathLike[str],
    metrics: Iterable[str],
    per_instruction: Iterable[str],
    detail_ids: Any = None,
) -> Profile:
    """Load a report: scalar metrics of every result, deep data of `detail_ids(frame)` (default: all results)."""
    reader = ReportReader(path)
    frame = reader.results(metrics)
    ids = list(detail_ids(frame)) if detail_ids is not None else list(frame["result_id"])
    profile = Profile(
        path=str(path),
        results=frame,
        device=reader.device(),
        ncu_version=reader.ncu_version,
        command_line=reader.command_line,
        reader_version=reader.reader_version,
    )
    _attach_processes(profile, reader)
    profile.details = reader.details(ids, per_instruction)
    profile.source_lookup = reader.source_lookup(ids)
    return profile


def _attach_processes(profile: Profile, reader: "ReportReader") -> None:
    """Several processes in one report (ncu --target-processes all): the pid of each result goes into the `process`
    column (kernels are grouped per process) and the processes, with their ranks when `profile` recorded them, into
    `profile.processes`. One process: nothing changes."""
    from ncuadvisor.processes import describe, read_sidecar, result_processes

    procs = result_processes(reader._local)
    frame = profile.results
    if not procs or len({p.pid for p in procs}) < 2:
        return
    if len(procs) != len(frame):
        profile.warnings.append(
            f"the report holds several processes, but their {len(procs)} results do not line up with the "
            f"{len(frame)} that ncu_report lists: kernels are not split by process"
        )
        return
    by_rid = [str(procs[int(rid)].pid) for rid in frame["result_id"]]
    frame["process"] = by_rid
    profile.processes = describe(procs, read_sidecar(profile.path))
