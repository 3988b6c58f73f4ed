"""Reading Nsight Compute reports through `ncu_report`: the scalar metrics of every result, and the deep data
(per-instruction metrics, SASS, source lines) of the few results the analysis looks at closely.

Metrics are read once, by name, for the names the analysis asks for (reading one metric costs ~25 µs, so reading
every metric of a full-set report would dominate the run time). Each read is a call the pipeline makes in turn
(`ncuadvisor.pipeline.analyze`): the loader never calls back into the analysis.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ncuadvisor.errors import InputError
from ncuadvisor.load import deep, native
from ncuadvisor.load.inlining import Inlining
from ncuadvisor.load.native import import_ncu_report, native_stderr_silenced
from ncuadvisor.load.workers import (
    WORKERS,
    Helper,
    disassembled,
    in_workers,
    rows_in_parts,
    share_loaded,
    spare_cores,
    start_worker,
    worker_context,
)
from ncuadvisor.model import ID_COLUMNS, ResultDetail, Table
from ncuadvisor.reportfile.integrity import Integrity, check_report
from ncuadvisor.reportfile.sniff import clocks_locked, drop_private, held, local_copy, scan_header, whole_copy

# ncu_report keeps every result it has opened in memory for as long as the process lives (about 7 MB for a result
# with the analysis sections; freeing the report does not return it). Reports with more results than
# IN_PROCESS_MAX are therefore read in short-lived worker processes, CHUNK results each: memory stays bounded and
# both cores work.
IN_PROCESS_MAX = 64
CHUNK = 64
# The same for the deep data of the results the analysis looks at closely, one per distinct kernel: a whole-model
# report has hundreds. Resolving instructions loads the module's line tables and SASS (up to ~400 MB for PyTorch's
# kernels), so the chunks are smaller. A worker forked from the reader starts at once (it inherits the loaded report,
# `workers.share_loaded`): from a few results on, two workers read half each, both cores at work (opening 14 results
# of 1,010 and disassembling them: 0.7 s in this process, 0.53 s in two workers).
DETAIL_IN_PROCESS_MAX = 4
DETAIL_CHUNK = 16
# The scalar rows are read from the report file (`reportfile.fastread`, checked against ncu_report on every run) for
# every report size; False reads them through ncu_report only (the reference the tests compare with).
FILE_READER = True
# From this many results on, the file reader parses them in worker processes, a range each, while this process loads
# the library ncu_report needs next (`native.preload_library`).
FILE_SPLIT_MIN = 200
# The launch shape read with every row.
SHAPE = [f"launch__{w}_dim_{c}" for w in ("grid", "block") for c in "xyz"] + ["launch__device_id"]

Location = deep.Location


class RowsDisagree(Exception):
    """The deferred check (`ReportReader.confirm`) found the file's rows different from ncu_report's."""


def _file_row(item: tuple[int, int, int], f: dict[str, Any], metrics: list[str]) -> dict[str, Any]:
    """A result's row (as `native.row` makes it) from what the report file holds of it (`fastread.read_rows`), with no
    NVTX ranges yet."""
    rid, r, a = item
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
        "grid": native.dim3(*(f.get(f"launch__grid_dim_{c}") for c in "xyz")),
        "block": native.dim3(*(f.get(f"launch__block_dim_{c}") for c in "xyz")),
        "device_id": f.get("launch__device_id"),
    }
    for m in metrics:
        row[m] = f.get(m)
    return row


class ReportReader:
    """An opened report: `results()` reads the scalar metrics of every result; `details()` and `locations()` the deep
    data of a few, in this process or, for many, in worker processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        metrics: Iterable[str] | None = None,
        defer_check: bool = False,
        sass_later: bool = False,
    ):
        """`metrics`: the scalar metrics `results` will be asked for, when known: a big report's rows are then read
        (in workers) while its results are checked, each result parsed once (`_checked`). `defer_check`: the rows
        read from the file are checked against ncu_report's in a worker while the caller goes on (`confirm`).
        `sass_later`: the caller may ask for the SASS of a few results once the analysis has decided which
        (`add_sass`): the worker of the deferred check then starts ncu_report's disassembler meanwhile, and reads it."""
        self.path = Path(path)
        self._defer_check = defer_check
        self._sass_later = sass_later
        # the worker of the deferred check, kept to read the SASS of `add_sass` (`workers.Helper`), until then
        self._helper: Helper | None = None
        self._pending: tuple[Any, list[int], dict[int, dict[str, Any]], dict[int, Any]] | None = None
        local = local_copy(self.path)
        if local != self.path:  # a private decompressed copy: gone with this reader (`drop_private`)
            weakref.finalize(self, drop_private, local.parent, os.getpid())
        if local == self.path:  # the user's file itself: read through one descriptor, never by its name again
            local, fd = held(local)
            if fd is not None:
                weakref.finalize(self, os.close, fd)
        self._prefetched: tuple[list[str], list[dict[str, Any]]] | None = None
        # the deferred check's worker, started before the rows are read: it loads the report through ncu_report
        # meanwhile (~0.06 s for 160 MB), and is told which results to check once they are (`_results_from_file`)
        self._early: Helper | None = None
        self._checker: Helper | None = None  # that worker where it does not go on to read SASS: ended by `confirm`
        if defer_check and metrics is not None and FILE_READER:
            self._early = self._check_worker(local, sass_later)
        # every result whole and parsed, or left out and counted, before the native library sees the file
        self.integrity = self._checked(local, metrics)
        if not self.integrity.not_layout and self.integrity.whole == 0:
            why = self.integrity.summary() or "it holds no kernel result"
            raise InputError(f"{self.path}: no whole kernel result in the report: {why}")
        if self.integrity.needs_copy:
            local = whole_copy(local, self.integrity)
            weakref.finalize(self, drop_private, local.parent, os.getpid())
        self._local = local
        # ncu_report's module and context of the report (`_load`), and its ranges
        self._library: tuple[Any, Any, list[Any]] | None = None
        # (range, action) of every result; an action is opened only when its data is read (see IN_PROCESS_MAX)
        self._index: list[tuple[int, int]] = []
        self.reader_version: str | None = None
        # the rows came from the file and their check is deferred: the check's worker loads the report through
        # ncu_report, and so does this process only when it opens a result (`_load`: ~0.06 s for 160 MB, which a
        # report whose deep data all comes from the file never pays); meanwhile the results are those of the file,
        # in one range, as `confirm` (or `_load`) checks
        self._index_from_file = defer_check and self._prefetched is not None
        if self._index_from_file:
            assert self._prefetched is not None
            self._index = [(0, a) for a in range(len(self._prefetched[1]))]
        else:
            self._load()
        if sass_later and spare_cores() >= 1 and not disassembled():
            self._helper = self._sass_worker(local)
        self._opened: dict[int, Any] = {}
        # per result read by `details`: the location of every listed instruction and the text of their files
        self._located: dict[int, tuple[dict[int, Location], dict[str, str | None]]] = {}
        self._deep_in_workers = False
        self._inlining: Inlining | None = None
        self.unreadable: set[int] = set()  # results whose deep data ncu_report could not parse (see `details`)
        self._no_lines: set[int] = set()  # `without_lines`: results known to have no line information
        self._lines_known: set[int] = set()  # the results `without_lines` has looked at
        self._module: dict[int, int | None] = {}  # `without_lines`: the module id each result names, from the file
        self._size: dict[int, int] = {}  # `without_lines`: the size of each result's message in the file
        self._debug_modules: dict[int, bool] | None = None  # `without_lines`: `modules.debug_modules` of the file
        # the module id each result names, read with the rows from the file (`fastread.read_rows`); None: not read
        self._file_modules: list[int | None] | None = None
        self.ncu_version, self.command_line = scan_header(local)
        self.clocks_locked = clocks_locked(local)  # ncu's clock control: True base (its default), False none

    def _check_worker(self, local: Path, sass_later: bool) -> Helper:
        """The deferred check's worker, started before the rows are read: it loads the report through ncu_report
        meanwhile, and warms the disassembler where it goes on to read the SASS (no worker of its own does)."""
        warm = sass_later and not (spare_cores() >= 1 and not disassembled())
        early = Helper(
            deep.check_rows_task,
            None,
            deep.warm_sass if warm else deep.nothing_to_prepare,
            deep.read_sass_task,
            f"{self.path}: reading the results failed",
            preload=partial(worker_context, str(local)),
        )
        weakref.finalize(self, early.close)
        return early

    def _sass_worker(self, local: Path) -> Helper:
        """A core to spare: the disassembler starts now, in a worker of its own (see `add_sass`)."""
        first: list[tuple[int, int, int]] = [(0, *self._index[0])]
        helper = Helper(
            None,
            (str(local), first, []),
            deep.warm_sass,
            deep.read_sass_task,
            f"{self.path}: reading the results failed",
        )
        weakref.finalize(self, helper.close)
        return helper

    def _load(self) -> tuple[Any, Any, list[Any]]:
        """ncu_report's module, its context of the report and the report's ranges, loaded on first use; workers forked
        from then on use the context (`workers.share_loaded`). The results taken from the file (`_index_from_file`)
        must be ncu_report's, else RowsDisagree (the caller starts again, loading at once)."""
        if self._library is not None:
            return self._library
        ncu = import_ncu_report()
        try:
            with native_stderr_silenced():
                ctx = ncu.load_report(str(self._local))
            n_ranges = ctx.num_ranges() if ctx is not None else None
            if n_ranges:
                share_loaded(str(self._local), ctx)
        except Exception as exc:  # the native library raises its own exception types
            raise InputError(f"{self.path}: not a readable Nsight Compute report ({exc})") from exc
        if not n_ranges:
            raise InputError(f"{self.path}: not a readable Nsight Compute report (truncated or corrupt)")
        ranges = [ctx.range_by_idx(r) for r in range(n_ranges)]
        index = [(r, a) for r, rng in enumerate(ranges) for a in range(rng.num_actions() or 0)]
        if not index:
            raise InputError(f"{self.path}: the report holds no kernel results")
        if self._index_from_file and index != self._index:
            raise RowsDisagree(f"{self.path}: ncu_report reads other results than the file holds")
        self._index = index
        try:
            self.reader_version = str(ctx.get_version())
        except Exception:  # pragma: no cover - older ncu_report
            self.reader_version = None
        self._library = (ncu, ctx, ranges)
        return self._library

    @property
    def _ncu(self) -> Any:
        return self._load()[0]

    @property
    def _ranges(self) -> list[Any]:
        return self._load()[2]

    def _one_range(self) -> bool:
        """Whether the report holds one range (the file's results, until ncu_report is loaded: `_index_from_file`)."""
        return self._library is None or len(self._library[2]) == 1

    def _checked(self, local: Path, metrics: Iterable[str] | None) -> Integrity:
        """`check_report` of the file. With `metrics`, a report whose layout walks clean has its results parsed by
        the row reader (`fastread.read_rows`; in workers from FILE_SPLIT_MIN results on) instead of by the walk: the
        same parse of the same bytes (protobuf's C parser, the same schema), and a result that does not parse or
        names no kernel sends the file through the whole walk as before. The rows are kept for `results`."""
        from ncuadvisor.reportfile.fastread import read_rows

        if metrics is not None and FILE_READER:
            found = check_report(local, parse_results=False)
            if not found.damaged and not found.not_layout and found.whole:
                wanted = list(dict.fromkeys(metrics))
                fast = (
                    rows_in_parts(local, found.whole, wanted, SHAPE, meanwhile=native.preload_library)
                    if found.whole >= FILE_SPLIT_MIN
                    else read_rows(local, wanted, SHAPE)
                )
                if (
                    fast is not None
                    and len(fast) == found.whole
                    and all(f["name"] or f["demangled"] or f["mangled"] for f in fast)
                ):
                    self._prefetched = (wanted, fast)
                    found.results_parsed = True
                    return found
        return check_report(local)

    def __len__(self) -> int:
        return len(self._index)

    def _action(self, rid: int) -> Any:
        if rid not in self._opened:
            r, a = self._index[rid]
            with native_stderr_silenced():  # ncu_report logs "Can't parse message" on a result it cannot parse
                self._opened[rid] = self._ranges[r].action_by_idx(a)
        return self._opened[rid]

    # -- scalar metrics -------------------------------------------------------------------------------------
    def results(self, metrics: Iterable[str]) -> Table:
        """One row per result with the identity columns and the requested metrics (a gap where absent: NaN among
        numbers, see `model.table`)."""
        with native_stderr_silenced():
            return self._results(metrics)

    def _results(self, metrics: Iterable[str]) -> Table:
        metrics = list(dict.fromkeys(metrics))
        items = [(rid, r, a) for rid, (r, a) in enumerate(self._index)]
        # the report file first, whatever the number of results: opening a result through ncu_report costs ~15 ms
        # and ~7 MB kept for the life of the process, so even a 50-result report reads ~10x faster from the file
        rows = self._results_from_file(items, metrics) if FILE_READER else None
        if self._early is not None:  # the check was not deferred: its worker has nothing to do
            early, self._early = self._early, None
            early.close()
        if rows is None:
            if len(items) <= IN_PROCESS_MAX:
                rows = [native.row(self._ncu, self._action(rid), rid, r, a, metrics) for rid, r, a in items]
            else:
                rows = self._results_in_workers(items, metrics)
        return Table(rows, ID_COLUMNS + [m for m in metrics if m not in ID_COLUMNS])

    def _results_from_file(self, items: list[tuple[int, int, int]], metrics: list[str]) -> list[dict[str, Any]] | None:
        """The rows read straight from the report file (ncuadvisor/reportfile/fastread.py, ~1 ms a result instead of ~15 ms
        through ncu_report), used only when they equal ncu_report's rows for the first and the last result and one
        result per kind of naming. The NVTX ranges are kept for the first launch of each kernel (the one whose ranges the
        analysis shows): decoded from the file when every result's decodes and the checked rows agree with
        ncu_report's, else read through ncu_report. None: read through ncu_report instead."""
        from ncuadvisor.reportfile.fastread import read_rows

        if not self._one_range():
            return None
        fast = None
        if self._prefetched is not None and self._prefetched[0] == metrics:
            fast = self._prefetched[1]  # read while the results were checked (`_checked`)
        elif len(items) >= FILE_SPLIT_MIN:
            fast = rows_in_parts(self._local, len(self._index), metrics, SHAPE)
        else:
            fast = read_rows(self._local, metrics, SHAPE)
        self._prefetched = None
        if fast is None or len(fast) != len(items):
            return None
        self._file_modules = [f["module_id"] for f in fast]  # for `without_lines`: no second read of the results
        rows = [_file_row(item, f, metrics) for item, f in zip(items, fast)]
        # checked against ncu_report: the first and the last result, and the first result of each kind of naming
        # (which of the three names the file holds differs between nvcc kernels, cuBLAS kernels, ...)
        kinds: dict[tuple[bool, bool, bool], int] = {}
        for rid, f in enumerate(fast):
            kinds.setdefault((bool(f["name"]), bool(f["demangled"]), bool(f["mangled"])), rid)
        check = sorted({0, len(items) - 1, *kinds.values()})
        decoded = all(f["nvtx_text"] is not None for f in fast)
        if self._defer_check and decoded and len(items) < FILE_SPLIT_MIN:
            # checked in a worker while the analysis goes on (`confirm`): a small report's check is the first results
            # this process would open (0.1 s with the library ncu_report loads then), and nothing else opens them
            for rid in check:
                rows[rid]["nvtx"] = fast[rid]["nvtx_text"]
            task = (str(self._local), [items[k] for k in check], metrics)
            failure = f"{self.path}: reading the results failed"
            early, self._early = self._early, None
            if early is not None:  # started with the reader, the report loaded there meanwhile
                early.begin(task)
                result = early.first
                if self._sass_later and self._helper is None:
                    self._helper = early  # then the disassembler's start-up, as below
                else:
                    self._checker = early
            elif self._sass_later and self._helper is None:
                # the same check, then the disassembler's start-up (~0.5 s of ncu_report, paid once per process)
                # while the analysis goes on: the SASS `add_sass` asks for then costs only its own reading
                helper = Helper(deep.check_rows_task, task, deep.warm_sass, deep.read_sass_task, failure)
                weakref.finalize(self, helper.close)
                self._helper, result = helper, helper.first
            else:
                result = start_worker(deep.check_rows_task, task, failure)
            self._pending = (result, check, {rid: dict(rows[rid]) for rid in check}, {rid: fast[rid] for rid in check})
            check = []
        for rid, r, a in (items[k] for k in check):
            ref = native.row(self._ncu, self._action(rid), rid, r, a, metrics)
            rows[rid]["nvtx"] = ref["nvtx"]
            decoded = decoded and fast[rid]["nvtx_text"] == ref["nvtx"]
            if not all(native.same(ref[k], rows[rid].get(k)) for k in ref):
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
            if decoded:  # the ranges as the file holds them, checked against ncu_report's on the rows above
                for rid in want:
                    rows[rid]["nvtx"] = fast[rid]["nvtx_text"]
            elif len(want) <= DETAIL_IN_PROCESS_MAX:
                for rid in want:
                    rows[rid]["nvtx"] = native.nvtx(self._action(rid))
            else:
                for got in self._results_in_workers([items[rid] for rid in want], []):
                    rows[got["result_id"]]["nvtx"] = got["nvtx"]
        return rows

    def _results_in_workers(self, items: list[tuple[int, int, int]], metrics: list[str]) -> list[dict[str, Any]]:
        self._load()  # before the workers are forked, as in `_each`
        tasks = [(str(self._local), items[i : i + CHUNK], metrics) for i in range(0, len(items), CHUNK)]
        chunks = in_workers(deep.read_rows_task, tasks, f"{self.path}: reading the results failed")
        return [row for chunk in chunks for row in chunk]

    def _layout(self) -> Any:
        """The report file's block layout (`reportfile.blocks.scan_blocks`: each result's process, where the file is cut
        short), walked once per report."""
        if not hasattr(self, "_blocks"):
            from ncuadvisor.reportfile.blocks import scan_blocks

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
        """The device attributes of the first result; {} while the rows' check is deferred (`confirm` gives them)."""
        if self._pending is not None:
            return {}
        with native_stderr_silenced():
            return native.device_of(self._action(0))

    @property
    def check_pending(self) -> bool:
        return self._pending is not None

    def confirm(self) -> dict[str, Any]:
        """The deferred check of the rows read from the file (`defer_check`): the device attributes when they equal
        ncu_report's on the results checked, as `results` would have checked them, and ncu_report reads the results
        the file holds (`reader_version` is then known); RowsDisagree otherwise (the caller starts again without
        deferring: the rows are then read through ncu_report)."""
        assert self._pending is not None
        result, check, rows, fast = self._pending
        self._pending = None
        try:
            refs, device, (counts, version) = result()
        except InputError as exc:  # the worker failed: checked again at once, where its failure shows as before
            raise RowsDisagree(str(exc)) from exc
        finally:
            if self._checker is not None:  # its answer is in, and nothing else is asked of it
                checker, self._checker = self._checker, None
                checker.close()
        if self._library is None:  # the results taken from the file (`_index_from_file`) are ncu_report's
            if [(r, a) for r, n in enumerate(counts) for a in range(n)] != self._index:
                self.close_helper()
                raise RowsDisagree(f"{self.path}: ncu_report reads other results than the file holds")
            self.reader_version = version
        for ref in refs:
            rid = ref["result_id"]
            if fast[rid]["nvtx_text"] != ref["nvtx"] or not all(native.same(ref[k], rows[rid].get(k)) for k in ref):
                self.close_helper()
                raise RowsDisagree(f"{self.path}: the rows read from the file differ from ncu_report's")
        if len(refs) != len(check) or not device:
            self.close_helper()
            raise RowsDisagree(f"{self.path}: the deferred check did not cover the results")
        return device

    def close_helper(self) -> None:
        """End the worker kept for `add_sass` (`sass_later`), if any, whatever it is doing."""
        if self._helper is not None:
            helper, self._helper = self._helper, None
            helper.close()

    # -- deep data ------------------------------------------------------------------------------------------------
    def details(
        self,
        result_ids: Iterable[int],
        per_instruction: Iterable[str],
        sass_for: deep.SassFor | None = None,
        unread: Iterable[int] = (),
        only: Mapping[int, Sequence[str]] | None = None,
    ) -> dict[int, ResultDetail]:
        """Deep data of the given results (`deep.deep_data`), without source lines; with the SASS text of their listed
        instructions for the results `sass_for(result id, first file)` picks (read in the same pass: opening a result
        again costs as much as reading it); the results of `unread` without their per-instruction data (no rule reads
        it), and those of `only` that are read from the file (no source lines) with the per-instruction metrics it
        maps them to alone (the rules of their language read no others). Up to DETAIL_IN_PROCESS_MAX results (or
        results this process has opened anyway) are read here, more in worker processes, DETAIL_CHUNK results each;
        `locations()` then reads the same way."""
        ids = list(dict.fromkeys(result_ids))
        metrics = list(dict.fromkeys(per_instruction))
        no_lines, skip, narrow = self.without_lines(ids), frozenset(unread), only or {}
        # a result without source lines whose SASS is not read needs its per-instruction data (none for `unread`), its
        # sections and NCU's rule results: read from the report file, it is not opened at all
        light = [rid for rid in ids if rid in no_lines and not (sass_for and sass_for(rid, None))]
        got: dict[int, dict[str, Any]] = self._light_details(
            {rid: [] if rid in skip else list(narrow.get(rid, metrics)) for rid in light}
        )
        todo = [rid for rid in ids if rid not in got]
        self._deep_in_workers = len([rid for rid in todo if rid not in self._opened]) > DETAIL_IN_PROCESS_MAX
        # the module of each result, where the file names it: the results of one module share the SASS read
        modules = {rid: mod for rid in todo if (mod := self._module.get(rid)) is not None}
        args = (metrics, sass_for, no_lines & set(todo), skip, modules)
        items = self._module_chunks(dict.fromkeys(todo, ()), modules, self._deep_in_workers)
        failure = "reading the per-instruction data failed"
        got.update(self._each(deep.deep_of, deep.read_deep_task, items, args, failure, self._deep_in_workers))
        for rid in ids:
            if got[rid].pop("unreadable", False):
                self.unreadable.add(rid)
            if "where" in got[rid]:
                self._located[rid] = (got[rid].pop("where"), got[rid].pop("texts"))
        return {rid: deep.detail_of(rid, got[rid]) for rid in ids}

    def add_sass(self, details: dict[int, ResultDetail], result_ids: Iterable[int]) -> None:
        """The SASS text of the listed instructions of the given results, read after `details` (which read none for
        them), set on their `Instruction`s; in this process for up to DETAIL_IN_PROCESS_MAX results not opened here,
        else in worker processes like `details`; the results of one module share the text read."""
        wanted = {rid: sorted({e.pc for es in details[rid].per_instruction.values() for e in es}) for rid in result_ids}
        wanted = {rid: pcs for rid, pcs in wanted.items() if pcs}
        helper, self._helper = self._helper, None
        if not wanted:
            if helper is not None:
                helper.close()
            return
        modules = {rid: mod for rid in wanted if (mod := self._module.get(rid)) is not None}
        split = len([rid for rid in wanted if rid not in self._opened]) > DETAIL_IN_PROCESS_MAX
        items = self._module_chunks({rid: (pcs,) for rid, pcs in wanted.items()}, modules, split)
        failure = "reading the instructions failed"
        got: dict[int, Any] | None = None
        if helper is not None and not split and not disassembled():
            # what this process would read, read by the worker whose disassembler has started meanwhile; where it
            # fails (a result it cannot open, a crash of the native library), read here as before
            try:
                got = dict(helper.ask((str(self._local), items[0], modules), f"{self.path}: {failure}"))
            except InputError:
                got = None
        elif helper is not None:
            helper.close()
        if got is None:
            got = dict(self._each(deep.sass_each, deep.read_sass_task, items, (modules,), failure, split))
        for rid, sass in got.items():
            for entries in details[rid].per_instruction.values():
                for e in entries:
                    e.sass = sass.get(e.pc)

    def _module_chunks(
        self, extra: dict[int, tuple[Any, ...]], modules: dict[int, int], split: bool
    ) -> list[list[Any]]:
        """The items (result id, range, action, *extra) of the results `extra` names, one module's side by side (they
        share the SASS read); `split`: for workers, as many chunks as workers or more (DETAIL_CHUNK results at most),
        of about as many bytes of the file each where the results' sizes are known (opening a result costs with its
        size), else of as many results. Without `split`: one chunk of them all, read in this process."""
        order = {mod: i for i, mod in enumerate(dict.fromkeys(modules.get(rid) for rid in extra))}
        items = [(rid, *self._index[rid], *extra[rid]) for rid in sorted(extra, key=lambda r: order[modules.get(r)])]
        if not split or not items:
            return [items]
        chunks = min(len(items), max(WORKERS, -(-len(items) // DETAIL_CHUNK)))
        size = -(-len(items) // chunks)
        even = [items[i : i + size] for i in range(0, len(items), size)]
        weights = [self._size.get(item[0]) for item in items]
        if any(w is None for w in weights):
            return even
        total, cuts, running = float(sum(w or 0 for w in weights)), [0], 0.0
        for i, w in enumerate(weights):
            # cut before this result where the chunk so far is nearer its share than with it
            share = total * len(cuts) / chunks
            if len(cuts) < chunks and i > cuts[-1] and abs(running - share) <= abs(running + (w or 0) - share):
                cuts.append(i)
            running += w or 0
        cuts.append(len(items))
        balanced = [items[a:b] for a, b in zip(cuts, cuts[1:])]
        return balanced if len(balanced) == chunks and max(map(len, balanced)) <= DETAIL_CHUNK else even

    def _each(
        self, here: Any, task: Any, chunks: list[list[Any]], args: tuple[Any, ...], failure: str, split: bool
    ) -> list[Any]:
        """`here(pairs of (item, action), *args)` over every item of the chunks: in this process, or with `split` each
        chunk in a worker process (`task((report path, chunk, *args))`, the same function over the worker's actions);
        what it gives, in chunk order."""
        if not split:
            with native_stderr_silenced():
                return [x for chunk in chunks for x in here(((item, self._action(item[0])) for item in chunk), *args)]
        self._load()  # before the workers are forked: they use this process's context (`workers.share_loaded`)
        tasks = [(str(self._local), chunk, *args) for chunk in chunks]
        return [x for chunk in in_workers(task, tasks, f"{self.path}: {failure}") for x in chunk]

    def _light_details(self, wanted: dict[int, list[str]]) -> dict[int, dict[str, Any]]:
        """`deep.deep_and_sass`'s data of results without source lines whose SASS is not read, from the report file
        (`reportfile.instances`), each with the per-instruction metrics `wanted` maps it to; those it cannot read are
        left out (opened through ncu_report by the caller), and so is every one of a damaged file or of several
        ranges."""
        if not wanted or not FILE_READER or not self._one_range() or self.integrity.damaged:
            return {}
        from ncuadvisor.reportfile.instances import read_deep

        found = read_deep(self._local, wanted) or {}
        return {rid: deep.from_file(data) for rid, data in found.items() if data is not None and rid < len(self._index)}

    def debug_built(self, result_ids: Iterable[int]) -> frozenset[int]:
        """Those of the results whose module is a debug build (`nvcc -G`: `reportfile.modules.debug_modules`)."""
        from ncuadvisor.reportfile.modules import debug_modules

        ids = set(result_ids)
        self.without_lines(ids)  # the module of each result, read from the file, and (the same walk) the debug builds
        debug = self._debug_modules if self._debug_modules is not None else (debug_modules(self._local) or {})
        return frozenset(rid for rid in ids if debug.get(self._module.get(rid) or -1, False))

    def without_lines(self, result_ids: Iterable[int]) -> frozenset[int]:
        """Those of the results whose module is known, from the report file, to carry no source-line information:
        their instructions are at no file and no line without asking `ncu_report` (whose first lookup of a result
        loads its module's line tables, 0.15-0.45 s, to find them empty). Only these results' payloads are read, and
        none where the rows were read from the file (the module each result names was read with them)."""
        from ncuadvisor.reportfile.modules import module_facts

        ids = set(result_ids)
        todo = ids - self._lines_known
        if todo:
            # the results' modules, where they were read with the rows: the walk then reads the modules alone
            read = self._file_modules if self._file_modules and len(self._file_modules) == len(self._index) else None
            found = module_facts(self._local, set() if read is not None else todo)
            if found is not None and len(found[0]) == len(self._index):
                module_of, lines, sizes, self._debug_modules = found
                if read is not None:
                    module_of = read
                for rid in todo:
                    mod = module_of[rid]
                    self._module[rid] = mod
                    self._size[rid] = sizes[rid]
                    if mod is not None and not lines.get(mod, True):
                        self._no_lines.add(rid)
            self._lines_known |= todo
        return frozenset(self._no_lines & ids)

    def locations(
        self, wanted: dict[int, tuple[list[int], list[str]]]
    ) -> dict[int, tuple[dict[int, Location], dict[str, str | None]]]:
        """For each result, the (file, line) of the given pcs and the embedded text of the given files and of the
        files those lines are in: {result id: ({pc: (file, line)}, {file: text or None})}."""
        todo = {rid: (sorted(set(p)), sorted(set(f))) for rid, (p, f) in wanted.items() if p or f}
        # answered from what `details` located in its pass, where it covers every pc and file asked for
        done: dict[int, tuple[dict[int, Location], dict[str, str | None]]] = {}
        for rid, (p, f) in list(todo.items()):
            known = self._located.get(rid)
            if known is None or not all(pc in known[0] for pc in p):
                continue
            where = {pc: known[0][pc] for pc in p}
            files = set(f) | {loc[0] for loc in where.values() if loc[0]}
            if all(name in known[1] for name in files):
                done[rid] = (where, {name: known[1][name] for name in sorted(files)})
                del todo[rid]
        for rid, (p, f) in list(todo.items()):
            if rid in self._no_lines and not f:  # no line information: nothing to look up
                done[rid] = (dict.fromkeys(p, (None, None)), {})
                del todo[rid]
        if not todo:
            return done
        if not self._deep_in_workers:
            with native_stderr_silenced():
                return done | {rid: deep.locations_of(self._action(rid), p, f) for rid, (p, f) in todo.items()}
        items = [(rid, *self._index[rid], p, f) for rid, (p, f) in todo.items()]
        return done | {
            rid: (where, texts)
            for rid, where, texts in self._chunked(deep.read_locations_task, items, "reading source lines failed")
        }

    def call_chains(
        self, wanted: dict[int, tuple[str | None, list[int], dict[int, Location]]]
    ) -> dict[int, dict[int, dict[str, Any]]]:
        """For each result: {result id: (the kernel's mangled name, pcs, {pc: (file, line)} of those pcs)}, the call
        chain of each pc whose line is in a library file (`Inlining.chains`), read from the modules the report
        embeds; the lines `details` read for every listed instruction check where the module's table starts."""
        if self._inlining is None:
            self._inlining = Inlining(self._local)
        out = {}
        for rid, (mangled, pcs, where) in wanted.items():
            known = {**self._located.get(rid, ({}, {}))[0], **where}
            chains = self._inlining.chains(mangled, pcs, known)
            if chains:
                out[rid] = chains
        return out

    def _chunked(self, task: Any, items: list[Any], failure: str) -> list[Any]:
        self._load()  # before the workers are forked, as in `_each`
        tasks = [(str(self._local), items[i : i + DETAIL_CHUNK]) for i in range(0, len(items), DETAIL_CHUNK)]
        return [x for chunk in in_workers(task, tasks, f"{self.path}: {failure}") for x in chunk]
