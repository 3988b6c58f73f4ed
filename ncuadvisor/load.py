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
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

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
    if head not in _REPORT_MAGIC and head != _ZSTD_MAGIC:
        raise InputError(f"{path}: not an Nsight Compute report (.ncu-rep/.ncu-repz): unknown file format")


class _native_stderr_silenced:
    """Keep the native library's own log lines (protobuf's "Can't parse message ..." on a cut-short header) off the
    user's terminal: file descriptor 2 points at /dev/null while it runs; our one-line error says what went wrong."""

    def __enter__(self) -> None:
        try:
            self._saved = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except OSError:  # no fd 2 to redirect: nothing to silence
            self._saved = None

    def __exit__(self, *exc: Any) -> None:
        if self._saved is not None:
            os.dup2(self._saved, 2)
            os.close(self._saved)


def _scan_header(path: Path) -> tuple[str | None, str | None]:
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


def _unzstd(path: Path) -> Path:
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
            plain = fh.read(4) in _REPORT_MAGIC
    except (OSError, zstandard.ZstdError):
        plain = False
    if not plain:
        shutil.rmtree(tmpdir, ignore_errors=True)
        return path
    atexit.register(shutil.rmtree, tmpdir, True)
    return target


# ncu_report keeps every result it has opened in memory for as long as the process lives (about 7 MB for a result
# with the analysis sections; freeing the report does not return it). Reports with more results than
# IN_PROCESS_MAX are therefore read in short-lived worker processes, CHUNK results each, at most WORKERS at a time:
# memory stays bounded and both cores work.
IN_PROCESS_MAX = 64
CHUNK = 64
WORKERS = 2
# The same for the deep data (per-instruction metrics, source lines, NCU's rule results) of the results the analysis
# looks at closely, one per distinct kernel: a whole-model report has hundreds. Resolving source lines loads the
# module's line tables and SASS (up to ~400 MB for PyTorch's kernels), so the chunks are smaller.
DETAIL_IN_PROCESS_MAX = 16
DETAIL_CHUNK = 16


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


def _worker_actions(path: str, items: list[tuple]) -> Iterator[tuple[tuple, Any]]:
    """Worker side: open the report and give each item (result id, range, action, ...) with its action."""
    ctx = _import_ncu_report().load_report(path)
    ranges: dict[int, Any] = {}
    for item in items:
        r, a = item[1], item[2]
        rng = ranges.get(r) or ranges.setdefault(r, ctx.range_by_idx(r))
        yield item, rng.action_by_idx(a)


def _read_rows(task: tuple[str, list[tuple[int, int, int]], list[str]]) -> list[dict[str, Any]]:
    """Worker: open the report, read the rows of the given (result id, range, action) triples."""
    path, items, metrics = task
    ncu = _import_ncu_report()
    return [_row(ncu, action, rid, r, a, metrics) for (rid, r, a), action in _worker_actions(path, items)]


def _deep_data(action: Any, per_instruction: list[str], file_names: bool) -> dict[str, Any]:
    """The deep data of one result as plain data: section identifiers, NCU's rule results, and per per-instruction
    metric the (pc, value) pairs of the instructions where it is non-zero; with `file_names`, the names of the
    source files the result embeds (their text is read only when a finding shows one of their lines)."""
    out: dict[str, Any] = {"sections": [], "per_instruction": {}, "ncu_rules": [], "files": []}
    try:
        out["sections"] = [s.identifier() for s in action.sections()]
    except Exception:
        pass
    for name in per_instruction:
        metric = action.metric_by_name(name)
        if metric is None or not metric.has_correlation_ids():
            continue
        pairs = []
        ids = metric.correlation_ids()
        for i in range(metric.num_instances()):
            try:
                value = float(metric.as_double(i))
                pc = int(ids.as_uint64(i))
            except Exception:
                continue
            if value == 0 or pc == 0:
                continue
            pairs.append((pc, value))
        out["per_instruction"][name] = pairs
    try:
        out["ncu_rules"] = [dict(x) for x in action.rule_results_as_dicts()]
    except Exception:
        pass
    if file_names and any(out["per_instruction"].values()):  # (only instructions lead to a file: see source_lookup)
        try:
            out["files"] = [str(k) for k in dict(action.source_files())]
        except Exception:
            pass
    return out


# ncu_report starts a thread the first time it disassembles (sass_by_pc); a process forked after that hangs when it
# disassembles in turn. Workers are forked only while this process has not disassembled (see _start_method).
_disassembled_here = False


def _resolve_pc(action: Any, pc: int) -> tuple[str | None, int | None, str | None]:
    """(file, line, SASS text) of one instruction (~0.25 ms: the reason this is done only for lines shown)."""
    global _disassembled_here
    _disassembled_here = True
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


def _read_deep(task: tuple[str, list[tuple[int, int, int]], list[str]]) -> list[tuple[int, dict[str, Any]]]:
    """Worker: the deep data (`_deep_data`) of the given (result id, range, action) triples."""
    path, items, per_instruction = task
    return [
        (item[0], _deep_data(action, per_instruction, file_names=True)) for item, action in _worker_actions(path, items)
    ]


def _read_locations(task: tuple[str, list[tuple[int, int, int, list[int], list[str]]]]) -> list[tuple]:
    """Worker: for each (result id, range, action, pcs, files): the location of every pc and the text of the files."""
    path, items = task
    out = []
    for (rid, _, _, pcs, files), action in _worker_actions(path, items):
        texts: dict[str, str | None] = {}
        if files:
            try:
                embedded = dict(action.source_files())
            except Exception:
                embedded = {}
            texts = {f: (str(embedded[f]) if f in embedded else None) for f in files}
        out.append((rid, {pc: _resolve_pc(action, pc) for pc in pcs}, texts))
    return out


def _worker_main(fn: Any, task: Any, conn: Any) -> None:
    try:
        reply = (True, fn(task))
    except BaseException as exc:  # sent to the parent as one line, never a traceback
        reply = (False, f"{type(exc).__name__}: {exc}")
    try:
        conn.send(reply)
    finally:
        conn.close()


def _start_method() -> str:
    """fork (no start-up cost) where available and safe; else forkserver (children forked from a fresh process that
    has only imported this module), else spawn."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and not _disassembled_here:
        return "fork"
    if "forkserver" in methods:
        multiprocessing.get_context("forkserver").set_forkserver_preload([__name__])
        return "forkserver"
    return "spawn"


def _in_workers(fn: Any, tasks: list[Any], failure: str) -> list[Any]:
    """fn(task) for every task, each in its own short-lived process (fork where available), at most WORKERS at a
    time; the results in task order. A task that raises, or a worker that dies (killed for memory, a crash in the
    native library), is an InputError that starts with `failure`."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context(_start_method())
    results: list[Any] = [None] * len(tasks)
    todo = list(reversed(list(enumerate(tasks))))
    running: dict[Any, tuple[int, Any]] = {}
    try:
        while todo or running:
            while todo and len(running) < WORKERS:
                i, task = todo.pop()
                receive, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker_main, args=(fn, task, send), daemon=True)
                proc.start()
                send.close()
                running[receive] = (i, proc)
            for conn in wait(list(running)):
                i, proc = running.pop(conn)
                try:
                    ok, payload = conn.recv()
                except (EOFError, OSError):
                    proc.join()
                    raise InputError(f"{failure} (a worker process died, exit code {proc.exitcode})") from None
                finally:
                    conn.close()
                proc.join()
                if not ok:
                    raise InputError(f"{failure} ({payload})")
                results[i] = payload
    finally:
        for conn, (_, proc) in running.items():
            proc.terminate()
            proc.join()
            conn.close()
    return results


class ReportReader:
    """An opened report. `results()` reads the scalar metrics of every result; `details()` the deep data of a few."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        check_report_path(self.path, compressed_ok=True)
        local = (
            _decompress(self.path)
            if self.path.suffix in COMPRESSED_SUFFIXES
            else _unzstd(self.path)
            if self.path.suffix == ".ncu-repz"
            else self.path
        )
        check_report_path(local)
        self._local = local
        self._ncu = _import_ncu_report()
        try:
            with _native_stderr_silenced():
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
        self._deferred: _Deferred | None = None
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
            rows = self._results_from_file(items, metrics)
            if rows is None:
                rows = self._results_in_workers(items, metrics)
        return pd.DataFrame(rows, columns=ID_COLUMNS + [m for m in metrics if m not in ID_COLUMNS])

    def _results_from_file(self, items: list[tuple[int, int, int]], metrics: list[str]) -> list[dict[str, Any]] | None:
        """The rows read straight from the report file (ncuadvisor/fastread.py, ~1 ms a result instead of ~15 ms
        through ncu_report), used only when they equal ncu_report's rows for the first and the last result and one
        result per kind of naming; the NVTX ranges (not decoded from the file) are read through ncu_report for the
        first launch of each kernel, the one whose ranges the analysis shows. None: read through ncu_report instead."""
        from ncuadvisor.fastread import read_rows

        if len(self._ranges) != 1:
            return None
        shape = [f"launch__{w}_dim_{c}" for w in ("grid", "block") for c in "xyz"] + ["launch__device_id"]
        fast = read_rows(self._local, metrics, shape)
        if fast is None or len(fast) != len(items):
            return None
        rows = []
        for (rid, r, a), f in zip(items, fast):
            name = f["name"] or f["demangled"] or f["mangled"]  # as _row: a missing name falls back
            row: dict[str, Any] = {
                "result_id": rid,
                "range_idx": r,
                "action_idx": a,
                "name": name,
                "demangled": f["demangled"] or name,
                "mangled": f["mangled"],
                "nvtx": "",
                "process": "",
                "grid": _dim3(*(f.get(f"launch__grid_dim_{c}") for c in "xyz")),
                "block": _dim3(*(f.get(f"launch__block_dim_{c}") for c in "xyz")),
                "device_id": f.get("launch__device_id"),
            }
            for m in metrics:
                row[m] = f.get(m)
            rows.append(row)
        # checked against ncu_report: the first and the last result, and the first result of each kind of naming
        # (which of the three names the file holds differs between nvcc kernels, cuBLAS kernels, ...)
        kinds: dict[tuple[bool, bool, bool], int] = {}
        for rid, f in enumerate(fast):
            kinds.setdefault((bool(f["name"]), bool(f["demangled"]), bool(f["mangled"])), rid)
        check = sorted({0, len(items) - 1, *kinds.values()})
        for rid, r, a in (items[k] for k in check):
            ref = _row(self._ncu, self._action(rid), rid, r, a, metrics)
            rows[rid]["nvtx"] = ref["nvtx"]
            if not all(_same(ref[k], rows[rid].get(k)) for k in ref):
                return None
        if any(f["has_nvtx"] for f in fast):
            procs = self.processes()
            pid = (lambda rid: procs[rid].pid) if procs and len(procs) == len(rows) else (lambda rid: 0)
            firsts: dict[tuple[Any, ...], int] = {}
            for row, f in zip(rows, fast):
                if f["has_nvtx"]:
                    firsts.setdefault(
                        (pid(row["result_id"]), row["demangled"], row["grid"], row["block"]), row["result_id"]
                    )
            want = sorted(set(firsts.values()) - set(check))
            if len(want) <= DETAIL_IN_PROCESS_MAX:
                for rid in want:
                    rows[rid]["nvtx"] = _nvtx(self._action(rid))
            else:
                for got in self._results_in_workers([items[rid] for rid in want], []):
                    rows[got["result_id"]]["nvtx"] = got["nvtx"]
        return rows

    def _results_in_workers(self, items: list[tuple[int, int, int]], metrics: list[str]) -> list[dict[str, Any]]:
        tasks = [(str(self._local), items[i : i + CHUNK], metrics) for i in range(0, len(items), CHUNK)]
        chunks = _in_workers(_read_rows, tasks, f"{self.path}: reading the results failed")
        return [row for chunk in chunks for row in chunk]

    def _layout(self) -> Any:
        """The report file's block layout (`processes.scan_blocks`: each result's process, where the file is cut
        short), walked once per report."""
        if not hasattr(self, "_blocks"):
            from ncuadvisor.processes import scan_blocks

            self._blocks = scan_blocks(self._local)
        return self._blocks

    def truncation(self) -> str | None:
        """Why the report file is cut short, None when it is whole (or not in the block layout this reads: another
        ncu version). ncu_report reads the results before the cut without complaint."""
        return self._layout().cut

    def processes(self) -> list[Any] | None:
        """The process of every result in file order; None when the file is not in the block layout (or cut)."""
        return self._layout().processes

    def device(self) -> dict[str, Any]:
        action = self._action(0)
        dev = {k: _value(action.metric_by_name(v)) for k, v in DEVICE_METRICS.items()}
        if dev.get("cc_major") is not None and dev.get("cc_minor") is not None:
            dev["compute_capability"] = f"{int(dev['cc_major'])}.{int(dev['cc_minor'])}"
        return dev

    # -- deep data --------------------------------------------------------------------------------------------
    def details(self, result_ids: Iterable[int], per_instruction: Iterable[str]) -> dict[int, ResultDetail]:
        """Deep data of the given results. Up to DETAIL_IN_PROCESS_MAX results (or results this process has opened
        anyway) are read here, and their instructions' source lines resolved on first use; more are read in worker
        processes, DETAIL_CHUNK results each, and what the analysis then asks for (source lines of instructions,
        embedded source files) is noted and fetched by `fetch_pending()` in another worker pass."""
        ids = list(dict.fromkeys(result_ids))
        per_instruction = list(dict.fromkeys(per_instruction))
        if len([rid for rid in ids if rid not in self._opened]) <= DETAIL_IN_PROCESS_MAX:
            self._deferred = None
            return {rid: self._detail_in_process(rid, per_instruction) for rid in ids}
        items = [(rid, *self._index[rid]) for rid in ids]
        tasks = [
            (str(self._local), items[i : i + DETAIL_CHUNK], per_instruction) for i in range(0, len(items), DETAIL_CHUNK)
        ]
        chunks = _in_workers(_read_deep, tasks, f"{self.path}: reading the per-instruction data failed")
        deep = dict(pair for chunk in chunks for pair in chunk)
        self._deferred = _Deferred(self, ids, {rid: deep[rid]["files"] for rid in ids})  # (see _deep_data)
        return {rid: _detail(rid, deep[rid], self._deferred.resolver(rid)) for rid in ids}

    def _detail_in_process(self, rid: int, per_instruction: list[str]) -> ResultDetail:
        action = self._action(rid)
        resolved: dict[int, tuple[str | None, int | None, str | None]] = {}

        def resolve(pc: int) -> tuple:
            if pc not in resolved:
                resolved[pc] = _resolve_pc(action, pc)
            return resolved[pc]

        return _detail(rid, _deep_data(action, per_instruction, file_names=False), resolve)

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
        file (each result's read costs ~25 ms, and most kernels share their module's files). After `details()` read
        in workers, it answers from what workers fetched and notes the files still to fetch."""
        if self._deferred is not None:
            return self._deferred.lookup
        pending = list(result_ids)
        found: dict[str, str] = {}

        def lookup(file: str) -> str | None:
            while file not in found and pending:
                found.update({k: v for k, v in self.source_files([pending.pop(0)]).items() if k not in found})
            return found.get(file)

        return lookup

    def fetch_pending(self) -> bool:
        """After `details()` read in workers: fetch, in workers, the source lines and files the analysis asked for
        since the last call. False when there was nothing to fetch (the analysis saw everything it asked for)."""
        return self._deferred.fetch() if self._deferred is not None else False


def _detail(rid: int, deep: dict[str, Any], resolve: Any) -> ResultDetail:
    return ResultDetail(
        result_id=rid,
        per_instruction={
            name: [SourceLine(pc=pc, value=value, resolve=resolve) for pc, value in pairs]
            for name, pairs in deep["per_instruction"].items()
        },
        ncu_rules=deep["ncu_rules"],
        sections=deep["sections"],
    )


class _Deferred:
    """Source lines and embedded files of results whose deep data was read in workers. A lookup the parent cannot
    answer yet returns "unknown" (SourceLine does not keep it) and is noted; `fetch()` reads every noted one in one
    worker pass. The analysis runs again until nothing new is noted, so it ends having seen exactly what it would
    have seen reading in-process, and the parent never opens these results."""

    def __init__(self, reader: ReportReader, ids: list[int], embedded: dict[int, list[str]]):
        self._reader = reader
        self._locations: dict[int, dict[int, tuple]] = {rid: {} for rid in ids}
        self._pcs: dict[int, set[int]] = {}
        # file -> the first result (in the order given, as the in-process lookup searches) that embeds it
        self._source_of: dict[str, int] = {}
        for rid in ids:
            for f in embedded.get(rid, []):
                self._source_of.setdefault(f, rid)
        self._texts: dict[str, str | None] = {}
        self._files: set[str] = set()

    def resolver(self, rid: int) -> Any:
        known = self._locations[rid]

        def resolve(pc: int) -> tuple | None:
            loc = known.get(pc)
            if loc is None:
                self._pcs.setdefault(rid, set()).add(pc)
            return loc

        return resolve

    def lookup(self, file: str) -> str | None:
        if file in self._texts:
            return self._texts[file]
        if file in self._source_of:
            self._files.add(file)
        return None

    def fetch(self) -> bool:
        if not self._pcs and not self._files:
            return False
        files: dict[int, list[str]] = {}
        for f in sorted(self._files):
            files.setdefault(self._source_of[f], []).append(f)
        rids = sorted(set(self._pcs) | set(files))
        index = self._reader._index
        items = [(rid, *index[rid], sorted(self._pcs.get(rid, ())), files.get(rid, [])) for rid in rids]
        tasks = [(str(self._reader._local), items[i : i + DETAIL_CHUNK]) for i in range(0, len(items), DETAIL_CHUNK)]
        chunks = _in_workers(_read_locations, tasks, f"{self._reader.path}: reading source lines failed")
        for rid, locations, texts in (x for chunk in chunks for x in chunk):
            self._locations[rid].update(locations)
            self._texts.update(texts)
        self._pcs.clear()
        self._files.clear()
        return True


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


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
    profile = Profile(
        path=str(path),
        results=frame,
        device=reader.device(),
        ncu_version=reader.ncu_version,
        command_line=reader.command_line,
        reader_version=reader.reader_version,
    )
    cut = reader.truncation()
    if cut:
        # the result the cut went through reads back without a name or metrics: it is dropped, not analysed as "nan"
        whole = frame["name"].notna() & (frame["name"].astype(str) != "")
        dropped = int((~whole).sum())
        if dropped and whole.any():
            frame = profile.results = frame[whole].reset_index(drop=True)
        profile.warnings.insert(
            0,
            f"partial: the report file is truncated ({cut}): this analyses the {len(frame)} "
            "whole results before the cut"
            + (f" ({dropped} cut through, left out)" if dropped else "")
            + "; the rest are lost",
        )
    _attach_processes(profile, reader)  # before choosing the results to look at closely: kernels differ per process
    ids = list(detail_ids(frame)) if detail_ids is not None else list(frame["result_id"])
    profile.details = reader.details(ids, per_instruction)
    # embedded sources are searched in the results with per-instruction data (a file is only ever asked for because
    # one of their instructions named it): listing a result's files loads its module's tables (~400 MB for PyTorch)
    profile.source_lookup = reader.source_lookup(
        [rid for rid in ids if any(profile.details[rid].per_instruction.values())]
    )
    profile.fetch_pending = reader.fetch_pending
    return profile


def _attach_processes(profile: Profile, reader: ReportReader) -> None:
    """Several processes in one report (ncu --target-processes all): the pid of each result goes into the `process`
    column (kernels are grouped per process) and the processes, with their ranks when `profile` recorded them, into
    `profile.processes`. One process: nothing changes."""
    from ncuadvisor.processes import describe, read_sidecar

    procs = reader.processes()
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
