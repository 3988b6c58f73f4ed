"""Scalar metrics of every result, read straight from the report file (no `ncu_report`).

`ncu_report` parses a whole result when it is opened: ~13 ms and ~7 MB (kept for the life of the process) for a
result with the analysis sections, so a 1,000-result report costs ~13 s of CPU before a single metric is read. What
the analysis needs of most results is small: the kernel's names, its launch shape, its duration and a few dozen
scalar metrics. They sit in the report file as protobuf: after the file header, blocks of a length-prefixed header
(1: number of sources, 2: number of results, 4: metric names, appended to a table that grows over the file,
5: payload size, 6: process) and a payload of length-prefixed messages, the results first. A result message holds
5: mangled name, 6: function name, 7: demangled name, 13: the metrics (1: index into the name table, 2: the value:
1 string, 2 float, 3 double, 4 uint32, 5 uint64), 15: its module ({1: id}), 21: its NVTX state. Parsing only those fields with the protobuf
library's C parser costs ~1 ms a result.

This reader is a shortcut, not a second source of truth: `load.ReportReader` compares its rows with `ncu_report`'s
on the first and last results of every report and uses it only when they agree to the last digit; anything it does
not understand (another ncu version's layout, a .ncu-repz that is not one zstd stream of this layout, a truncated
file, several ranges) returns None and the report is read through `ncu_report` as before. Verified row by row on
every fixture of ncu 2025.3.1 (tests/test_fastread.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ncuadvisor.reportfile.blocks import FileView, _fields, iter_blocks, u32

_CLASSES: tuple[Any, Any] | None = None


def _classes() -> tuple[Any, Any] | None:
    """The two message classes (metric-name table, result), built at run time from a minimal schema; None without the
    protobuf package."""
    global _CLASSES
    if _CLASSES is not None:
        return _CLASSES
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        return None
    F = descriptor_pb2.FieldDescriptorProto
    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    fdp = descriptor_pb2.FileDescriptorProto(name="ncuadvisor_fastread.proto", package="ncuadvisor_fastread")

    def message(name: str, fields: Iterable[tuple[int, str, int, int, str | None]]) -> None:
        m = fdp.message_type.add(name=name)
        for number, fname, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = ".ncuadvisor_fastread." + type_name

    message(
        "Value",
        [
            (1, "s", F.TYPE_STRING, opt, None),
            (2, "f", F.TYPE_FLOAT, opt, None),
            (3, "d", F.TYPE_DOUBLE, opt, None),
            (4, "u32", F.TYPE_UINT32, opt, None),
            (5, "u64", F.TYPE_UINT64, opt, None),
        ],
    )
    message("Metric", [(1, "name_id", F.TYPE_UINT32, opt, None), (2, "value", F.TYPE_MESSAGE, opt, "Value")])
    message("ModuleRef", [(1, "id", F.TYPE_UINT64, opt, None)])
    message(
        "Result",
        [
            (1, "tid", F.TYPE_UINT64, opt, None),
            (5, "mangled", F.TYPE_BYTES, opt, None),
            (6, "function", F.TYPE_BYTES, opt, None),
            (7, "demangled", F.TYPE_BYTES, opt, None),
            (13, "metrics", F.TYPE_MESSAGE, rep, "Metric"),
            (15, "module", F.TYPE_MESSAGE, opt, "ModuleRef"),
            (21, "nvtx", F.TYPE_BYTES, opt, None),
        ],
    )
    message("Names", [(1, "name", F.TYPE_STRING, rep, None)])
    try:
        pool = descriptor_pool.DescriptorPool()
        pool.Add(fdp)

        def get(n):
            return message_factory.GetMessageClass(pool.FindMessageTypeByName("ncuadvisor_fastread." + n))

        _CLASSES = (get("Names"), get("Result"))
    except Exception:  # pragma: no cover - an incompatible protobuf
        return None
    return _CLASSES


def _number(v: Any) -> Any:
    """A metric value as ncu_report's as_double()/as_string() would give it (numbers as floats)."""
    if v.HasField("d"):
        return v.d
    if v.HasField("u64"):
        return float(v.u64)
    if v.HasField("s"):
        return v.s
    if v.HasField("u32"):
        return float(v.u32)
    if v.HasField("f"):
        return float(v.f)
    return None


def nvtx_text(state: bytes, tid: int) -> str | None:
    """`load.native.nvtx`'s text of a result from its NVTX state (21) and its thread (1): for each domain (1: {1: id}),
    the push/pop ranges open on the result's thread (2: {1: thread, 2: {1: domain, 3: {1: name}}}), outermost first,
    then the domain's open start/end ranges (3: {1: domain, 3: {2: name}}), joined by " > ". None where a range has
    no plain name (a registered string) or names a domain not listed: the caller asks ncu_report instead."""
    if not state:
        return ""
    f = _fields(state, 0, len(state))
    domains = [int((_fields(state, *d).get(1) or [0])[0]) for d in f.get(1, [])]
    names: dict[int, list[str]] = {}
    for t in f.get(2, []):
        tf = _fields(state, *t)
        if int((tf.get(1) or [-1])[0]) != tid:
            continue
        for stack in tf.get(2, []):
            sf = _fields(state, *stack)
            for r in sf.get(3, []):
                name = _fields(state, *r).get(1)
                if not name:
                    return None
                names.setdefault(int((sf.get(1) or [0])[0]), []).append(state[slice(*name[0])].decode())
    started: dict[int, list[str]] = {}
    for d in f.get(3, []):
        df = _fields(state, *d)
        for r in df.get(3, []):
            name = _fields(state, *r).get(2)
            if not name:
                return None
            started.setdefault(int((df.get(1) or [0])[0]), []).append(state[slice(*name[0])].decode())
    if (set(names) | set(started)) - set(domains):
        return None
    return " > ".join(n for dom in domains for n in names.get(dom, []) + started.get(dom, []))


def _nvtx_or_none(state: bytes, tid: int) -> str | None:
    try:
        return nvtx_text(state, tid)
    except (ValueError, IndexError, UnicodeDecodeError):
        return None


def read_rows(
    path: str | os.PathLike[str], metrics: Iterable[str], extra: Iterable[str] = (), part: tuple[int, int] | None = None
) -> list[dict[str, Any]] | None:
    """One dict per result in file order: names (`name`, `demangled`, `mangled`), `has_nvtx`, `nvtx_text` (its NVTX
    ranges as `load.native.nvtx` writes them, None when `nvtx_text` cannot tell), `module_id`, and the value of every
    metric of `metrics` and `extra` the result holds (absent metrics are absent keys); with `part` (first, stop),
    only the results of that range of indices. None when the file is not in the layout described above or protobuf
    is missing."""
    classes = _classes()
    if classes is None:
        return None
    Names, Result = classes
    wanted_names = list(dict.fromkeys([*metrics, *extra]))
    try:
        with open(path, "rb") as fh:
            mm = FileView(fh)  # not an mmap: its touched pages would all count as resident memory
            names: list[str] = []
            wanted: dict[int, str] = {}
            rows: list[dict[str, Any]] = []
            first, stop = part if part is not None else (0, -1)
            index = 0
            for block in iter_blocks(mm):
                h = block.header
                if h.get(4):  # metric names, appended to the table
                    s, e = h[4][0]
                    start = len(names)
                    names.extend(Names.FromString(mm[s:e]).name)
                    for k in range(start, len(names)):
                        if names[k] in wanted_names:
                            wanted[k] = names[k]
                j, end = block.payload_start, block.payload_end
                for _ in range(int((h.get(2) or [0])[0])):
                    if j + 4 > end:
                        return None
                    n = u32(mm, j)
                    if j + 4 + n > end:
                        return None
                    index += 1
                    if not first <= index - 1 < (stop if stop >= 0 else index):
                        j += 4 + n
                        continue
                    r = Result.FromString(mm.view(j + 4, n))
                    j += 4 + n
                    row: dict[str, Any] = {
                        "name": r.function.decode("utf-8", "replace"),
                        "demangled": r.demangled.decode("utf-8", "replace"),
                        "mangled": r.mangled.decode("utf-8", "replace"),
                        "has_nvtx": bool(r.nvtx),
                        "nvtx_text": _nvtx_or_none(r.nvtx, r.tid),
                        # the module the result names (15: {1: id}), as `modules.module_facts` reads it; None: none
                        "module_id": int(r.module.id) if r.HasField("module") and r.module.HasField("id") else None,
                    }
                    for m in r.metrics:
                        key = wanted.get(m.name_id)
                        if key is not None and m.HasField("value"):
                            row[key] = _number(m.value)
                    rows.append(row)
            return rows
    except Exception:  # a layout this reader does not know: the caller falls back to ncu_report
        return None


def read_rows_task(task: tuple[str, list[str], list[str], tuple[int, int]]) -> list[dict[str, Any]] | None:
    """Worker: `read_rows` of one range of results (path, metrics, extra, (first, stop))."""
    path, metrics, extra, part = task
    return read_rows(path, metrics, extra, part)
