"""The deep data of single results, read from their `ncu_report` actions as plain data: per-instruction metrics,
NCU's rule results and section list, the SASS text of instructions, and the source lines of instructions.

Each reader is one function over an action, run in this process for a few results or in worker processes
(`ncuadvisor.load.workers`) for many; the worker tasks at the end take (report path, items) and return plain data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ncuadvisor.load.native import device_of, import_ncu_report, row
from ncuadvisor.load.workers import note_disassembly, worker_actions, worker_context
from ncuadvisor.model import Instruction, ResultDetail

Location = tuple[str | None, int | None]

# read with the per-instruction data: executed warp instructions per opcode with its modifiers (an instanced metric,
# one instance per opcode), and each instruction's kind of memory access
OPCODE_COUNTS = "sass__inst_executed_per_opcode_with_modifier_all"
ACCESS_TYPE = "memory_access_type"


def deep_data(action: Any, per_instruction: list[str], lines: bool = True) -> dict[str, Any]:
    """Section identifiers, NCU's rule results, and per per-instruction metric the (pc, value) pairs of the
    instructions where it is non-zero, in the report's order; plus the source file of the first instruction listed
    (it tells a Triton kernel's generated Python from CUDA code) and the location of the kernel's entry (the lowest
    pc of its longest list: the line a finding with no line of its own is shown at). `lines` False: the result's
    module is known to carry no line information (`reportfile.modules`): no lookup, no file, no line."""
    out: dict[str, Any] = {"sections": [], "per_instruction": {}, "ncu_rules": [], "first_file": None, "entry": None}
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
    if per_instruction:
        out["opcodes"] = opcode_counts(action)
        listed = {pc for pairs in out["per_instruction"].values() for pc, _ in pairs}
        out["access_types"] = access_types(action, listed)
    try:
        out["ncu_rules"] = [dict(x) for x in action.rule_results_as_dicts()]
    except Exception:
        pass
    lists = [pairs for pairs in out["per_instruction"].values() if pairs]
    if lists:
        out["first_file"] = location(action, lists[0][0][0])[0] if lines else None
        out["entry_pc"] = entry_pc = _entry_pc(lists)
        out["entry"] = location(action, entry_pc) if lines else (None, None)
    return out


def _entry_pc(lists: list[list[tuple[int, float]]]) -> int:
    """The kernel's entry: the lowest pc of its longest list of instructions."""
    return min(pc for pc, _ in max(lists, key=len))


def from_file(data: dict[str, Any]) -> dict[str, Any]:
    """`deep_and_sass`'s data of a result whose module carries no source lines, without SASS, from what the report
    file holds of it (`reportfile.instances.read_deep`: its per-instruction data, counts per opcode and access
    types, sections, NCU's rule results, whether ncu_report can parse it): every instruction at no file and no line."""
    out = {"first_file": None, "entry": None, **data}
    lists = [pairs for pairs in data["per_instruction"].values() if pairs]
    if lists:
        out["entry_pc"], out["entry"] = _entry_pc(lists), (None, None)
    pcs = sorted({pc for pairs in lists for pc, _ in pairs})
    if pcs:
        out["where"], out["texts"] = dict.fromkeys(pcs, (None, None)), {}
    return out


def _instanced(action: Any, name: str, key: Callable[[Any, int], Any]) -> list[tuple[Any, float]] | None:
    """(key of each instance, its value) of an instanced metric with correlation ids; None where the report has no
    such metric or an instance cannot be read."""
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_correlation_ids():
        return None
    ids = metric.correlation_ids()
    try:
        return [(key(ids, i), float(metric.as_double(i))) for i in range(metric.num_instances())]
    except Exception:
        return None


def opcode_counts(action: Any) -> dict[str, float] | None:
    """Executed warp instructions per SASS opcode with its modifiers ({"FFMA": 1.3e8, "MUFU.EX2": 2048.0, ...});
    None where the report has no such metric."""
    pairs = _instanced(action, OPCODE_COUNTS, lambda ids, i: str(ids.as_string(i)))
    if pairs is None:
        return None
    out: dict[str, float] = {}
    for op, value in pairs:
        out[op] = out.get(op, 0.0) + value
    return out


def access_types(action: Any, pcs: set[int]) -> dict[int, float] | None:
    """The memory access type of each of the instructions `pcs` that has one; None where the report has no such
    metric."""
    pairs = _instanced(action, ACCESS_TYPE, lambda ids, i: int(ids.as_uint64(i)))
    return None if pairs is None else {pc: value for pc, value in pairs if pc in pcs}


# Whether a result's instructions are disassembled along with its deep data: (result id, source file of its first
# instruction) -> bool. A module-level function or a functools.partial of one, so that it reaches worker processes.
SassFor = Callable[[int, str | None], bool]


def every_result(rid: int, first_file: str | None) -> bool:
    """The `SassFor` that disassembles every result."""
    return True


def deep_and_sass(
    rid: int,
    action: Any,
    per_instruction: list[str],
    sass_for: SassFor | None,
    lines: bool = True,
    sass_known: dict[int, str | None] | None = None,
) -> dict[str, Any]:
    """`deep_data`, and under "sass" the SASS text of every instruction listed (`sass_of`) when `sass_for` says so:
    one pass over the result instead of opening it again to disassemble. `lines` False: no source lookups (the
    result's module carries no line information: every instruction is at no file and no line). `sass_known`: the
    SASS already read of the result's module, by address (another launch of the same code), added to."""
    out = deep_data(action, per_instruction, lines)
    # a result ncu_report cannot parse (a required field of its own schema missing: damage the strict walk, which
    # knows the fields ncuadvisor reads, cannot see) opens with no name and no data: said by the caller
    out["unreadable"] = not action.name()
    pcs = sorted({pc for pairs in out["per_instruction"].values() for pc, _ in pairs})
    if sass_for is not None and sass_for(rid, out.get("first_file")):
        out["sass"] = sass_of(action, pcs, sass_known)
    if pcs and not lines:
        out["where"], out["texts"] = dict.fromkeys(pcs, (None, None)), {}
    elif pcs:
        # the first source lookup of a result loads its module's line tables (0.2-1 s); every later one costs ~15 µs:
        # the locations of every listed instruction, and the embedded text of their files, are read now, so that
        # the findings' lines need not open the result again (`ReportReader.locations` answers from them)
        where, texts = locations_of(
            action, pcs, [f for f in (out.get("first_file"), (out.get("entry") or [None])[0]) if f]
        )
        out["where"], out["texts"] = where, texts
    return out


def location(action: Any, pc: int) -> Location:
    """(file, line) of one instruction (~0.1-1 ms: the reason it is read only for the lines shown)."""
    note_disassembly()
    try:
        info = action.source_info(pc)
        if info is not None:
            return info.file_name() or None, int(info.line()) or None
    except Exception:
        pass
    return None, None


def sass_of(action: Any, pcs: list[int], known: dict[int, str | None] | None = None) -> dict[int, str | None]:
    """The SASS text of each instruction; from `known` where it holds the address (the result's module, read for
    another result: ncu_report loads a result's module again for each result, 50-150 ms, the first time it is asked),
    and added to it."""
    note_disassembly()
    out: dict[int, str | None] = {}
    for pc in pcs:
        if known is not None and pc in known:
            out[pc] = known[pc]
            continue
        try:
            out[pc] = (action.sass_by_pc(pc) or "").strip() or None
        except Exception:
            out[pc] = None
        if known is not None:
            known[pc] = out[pc]
    return out


def locations_of(action: Any, pcs: list[int], files: list[str]) -> tuple[dict[int, Location], dict[str, str | None]]:
    """The location of each instruction, and the text of the source files named (by `files` or by a location), when
    the report embeds them (ncu --import-source yes)."""
    where = {pc: location(action, pc) for pc in pcs}
    wanted = set(files) | {f for f, _ in where.values() if f}
    texts: dict[str, str | None] = {}
    if wanted:
        try:
            embedded = dict(action.source_files())
        except Exception:
            embedded = {}
        texts = {f: (str(embedded[f]) if f in embedded else None) for f in sorted(wanted)}
    return where, texts


# -- worker tasks: (report path, items, arguments) -> plain data ----------------------------------------------------


def read_rows_task(task: tuple[str, list[tuple[int, int, int]], list[str]]) -> list[dict[str, Any]]:
    """Worker: the scalar rows (`native.row`) of the given (result id, range, action) triples."""
    path, items, metrics = task
    ncu = import_ncu_report()
    return [row(ncu, action, rid, r, a, metrics) for (rid, r, a), action in worker_actions(path, items)]


DeepArgs = tuple[list[str], "SassFor | None", frozenset[int], frozenset[int], dict[int, int]]


def deep_of(pairs: Iterable[tuple[tuple[Any, ...], Any]], *args: Any) -> list[tuple[int, dict[str, Any]]]:
    """`deep_and_sass` of each (item, action), an item (result id, ...); `args` (`DeepArgs`): the per-instruction
    metrics, `sass_for`, the result ids known to have no source lines, those whose per-instruction data is not read,
    and the module of each result where the report file names it (results of one module share the SASS read,
    `sass_of`). The same code in this process and in a worker (`read_deep_task`)."""
    per_instruction, sass_for, no_lines, unread, modules = args
    known: dict[int, dict[int, str | None]] = {}
    return [
        (
            item[0],
            deep_and_sass(
                item[0],
                action,
                [] if item[0] in unread else per_instruction,
                sass_for,
                item[0] not in no_lines,
                known.setdefault(modules[item[0]], {}) if item[0] in modules else None,
            ),
        )
        for item, action in pairs
    ]


def sass_each(pairs: Iterable[tuple[tuple[Any, ...], Any]], modules: dict[int, int]) -> list[tuple[int, Any]]:
    """`sass_of` for each (item, action), an item (result id, range, action, pcs); `modules`: the module of each
    result where the report file names it (results of one module share the SASS read). The same code in this process
    and in a worker (`read_sass_task`)."""
    known: dict[int, dict[int, str | None]] = {}
    return [
        (item[0], sass_of(action, item[3], known.setdefault(modules[item[0]], {}) if item[0] in modules else None))
        for item, action in pairs
    ]


# the report as ncu_report loads it: (the number of results of each range, the library's version)
ReportShape = tuple[list[int], str | None]


def check_rows_task(
    task: tuple[str, list[tuple[int, int, int]], list[str]],
) -> tuple[list[dict[str, Any]], dict[str, Any], ReportShape]:
    """Worker: the rows (`native.row`) of the given (result id, range, action) triples, the first of which is the
    report's first result, the device attributes of that result (`native.device_of`), and the report as ncu_report
    loads it (`ReportShape`)."""
    path, items, metrics = task
    ncu = import_ncu_report()
    ctx = worker_context(path)
    try:
        version: str | None = str(ctx.get_version())
    except Exception:  # pragma: no cover - older ncu_report
        version = None
    shape = ([ctx.range_by_idx(r).num_actions() or 0 for r in range(ctx.num_ranges() or 0)], version)
    rows, device = [], {}
    for (rid, r, a), action in worker_actions(path, items):
        rows.append(row(ncu, action, rid, r, a, metrics))
        if rid == 0:
            device = device_of(action)
    return rows, device, shape


def read_deep_task(task: tuple[Any, ...]) -> list[tuple[int, dict[str, Any]]]:
    """Worker: `deep_of` the (result id, range, action) triples of a task (report path, items, *`DeepArgs`)."""
    path, items, *args = task
    return deep_of(worker_actions(path, items), *args)


# instanced metrics whose correlation ids are instruction addresses, tried in turn for one address to disassemble
WARM_METRICS = ("inst_executed", "smsp__pcsamp_sample_count")


def warm_sass(task: tuple[str, list[tuple[int, int, int]], list[str]]) -> None:
    """Worker (`workers.Helper`, after `check_rows_task` of the same task): disassemble one instruction of the task's
    first result, so that this process has paid ncu_report's start-up of its disassembler (~0.5 s, whatever the
    module or the report) before it is asked for the SASS of other results (`read_sass_task`)."""
    path, items, _ = task
    for _item, action in worker_actions(path, items[:1]):
        for name in WARM_METRICS:
            metric = action.metric_by_name(name)
            if metric is not None and metric.num_instances():
                note_disassembly()
                action.sass_by_pc(metric.correlation_ids().as_uint64(0))
                return


def nothing_to_prepare(task: Any) -> None:
    """Worker (`workers.Helper`): the check's worker of a report whose SASS is not asked for prepares nothing."""


def read_sass_task(task: tuple[Any, ...]) -> list[tuple[int, Any]]:
    """Worker: `sass_each` of the (result id, range, action, pcs) items of a task (report path, items, modules)."""
    path, items, modules = task
    return sass_each(worker_actions(path, items), modules)


def read_locations_task(
    task: tuple[str, list[tuple[int, int, int, list[int], list[str]]]],
) -> list[tuple[int, dict[int, Location], dict[str, str | None]]]:
    """Worker: `locations_of` for each (result id, range, action, pcs, files)."""
    path, items = task
    return [(item[0], *locations_of(action, item[3], item[4])) for item, action in worker_actions(path, items)]


def detail_of(rid: int, data: dict[str, Any]) -> ResultDetail:
    """A result's deep data as read (`deep_and_sass`, or from the report file) -> its `ResultDetail`."""
    entry = data.get("entry")
    sass = data.get("sass") or {}
    return ResultDetail(
        result_id=rid,
        per_instruction={
            name: [Instruction(pc=pc, value=v, sass=sass.get(pc)) for pc, v in pairs]
            for name, pairs in data["per_instruction"].items()
        },
        ncu_rules=data["ncu_rules"],
        sections=data["sections"],
        first_file=data.get("first_file"),
        entry=(entry[0], int(entry[1])) if entry and entry[0] and entry[1] else None,
        entry_pc=data.get("entry_pc"),
        opcodes=data.get("opcodes"),
        access_types=data.get("access_types"),
    )
