"""The per-instruction data of a result, read straight from the report file (no `ncu_report`).

The deep data of a result whose module carries no source lines and whose SASS nobody reads (an ATen kernel no gated
rule admits) is its per-instruction metrics, its counts per opcode, its instructions' memory access types, its
sections and NCU's rule results: all in the result's message. Opening the result through `ncu_report` for them costs
7-17 ms and a worker process for many (the training step's 20 ATen kernels: 0.2 s of two workers); parsing the few
metrics asked for costs ~4 ms. A metric entry of the result (13) is {1: index into the name table, 2: its value,
3: its instances}; an instance is {1: its correlation id, 2: its value}, each a value message as in
`reportfile.fastread` (1 string, 2 float, 3 double, 4 uint32, 5 uint64). An instanced metric's instances, in file
order, are `ncu_report`'s (`num_instances`, `correlation_ids().as_uint64(i)` / `as_string(i)`, `as_double(i)`).

A metric named twice, an instance without a correlation id or with a kind of value this reader does not convert the
way `ncu_report` does (text where a number is read, a number where text is), or anything else not seen on the
fixtures answers None for that result, and the caller opens it through `ncu_report` as before. Held to `ncu_report`
on every fixture (tests/test_instances.py).
"""

from __future__ import annotations

import os
from typing import Any

from ncuadvisor.reportfile import ncurules
from ncuadvisor.reportfile.blocks import FileView, iter_blocks, partial_message, u32

# read with the per-instruction data, as `load.deep` reads them through ncu_report
OPCODE_COUNTS = "sass__inst_executed_per_opcode_with_modifier_all"
ACCESS_TYPE = "memory_access_type"

_VALUE = [("s", 1, "string"), ("f", 2, "float"), ("d", 3, "double"), ("u32", 4, "uint32"), ("u64", 5, "uint64")]


def _classes() -> tuple[Any, Any, Any] | None:
    """(metric-name table, result parts, instanced metric) message classes; None without protobuf."""
    names = partial_message("ncuadvisor_instances_names", {"Names": [("name", 1, "string*")]})
    parts = partial_message(
        "ncuadvisor_instances_parts",
        {
            # a section (17) parsed to its identifier (1) alone: the rest of it (~650 KB a result of a full-set
            # report, the sections' own descriptions) is skipped by protobuf's parser, not copied and walked here
            "Section": [("identifier", 1, "bytes*")],
            "ResultParts": [
                ("function", 6, "bytes"),
                ("metrics", 13, "bytes*"),
                ("sections", 17, "Section*"),
                ("rules", 19, "bytes*"),
            ],
        },
    )
    metric = partial_message(
        "ncuadvisor_instances_metric",
        {
            "Value": _VALUE,
            "Instance": [("id", 1, "Value"), ("value", 2, "Value")],
            "Metric": [("name_id", 1, "uint64"), ("instances", 3, "Instance*")],
        },
    )
    return None if names is None or parts is None or metric is None else (names, parts, metric)


class _Unknown(Exception):
    """What this reader does not know: the result is opened through ncu_report."""


def _number(v: Any) -> float:
    """An instance's value as `as_double(i)` gives it."""
    has = v.HasField
    if has("d"):
        return float(v.d)
    if has("u64"):
        return float(v.u64)
    if has("u32"):
        return float(v.u32)
    if has("f"):
        return float(v.f)
    raise _Unknown("a value that is not a number")


def _pairs(metric: Any, text_ids: bool = False) -> list[tuple[Any, float]] | None:
    """(correlation id, value) of each instance of an instanced metric, in file order, as `as_uint64(i)` (or, with
    `text_ids`, `as_string(i)`) and `as_double(i)` give them; None where it has no instance (no correlation ids:
    `deep_data` skips it). An instance without either, or with a kind of value not converted the way ncu_report does,
    raises _Unknown. One loop over the instances, the conversions written out: a training step's 42 analysed results
    hold ~75,000 instances."""
    instances = metric.instances
    if not instances:
        return None
    out: list[tuple[Any, float]] = []
    append = out.append
    for inst in instances:
        ident = inst.id
        if text_ids:
            if not ident.HasField("s"):
                raise _Unknown("an opcode that is not text")
            key: Any = ident.s
        else:
            has = ident.HasField
            if has("u64"):
                key = int(ident.u64)
            elif has("u32"):
                key = int(ident.u32)
            else:
                raise _Unknown("a correlation id that is not a number")
        append((key, _number(inst.value)))
    return out


def deep_of_result(entries: dict[str, Any], per_instruction: list[str]) -> dict[str, Any]:
    """`load.deep.deep_data`'s per-instruction part of one result without source lines, from its instanced metrics
    (`entries`: name -> parsed metric): "per_instruction" ({name: [(pc, value) where neither is 0]}, the names
    that have instances), and with `per_instruction` "opcodes" and "access_types"."""
    out: dict[str, Any] = {"per_instruction": {}}
    for name in per_instruction:
        found = _pairs(entries[name]) if name in entries else None
        if found is None:
            continue
        out["per_instruction"][name] = [(pc, v) for pc, v in found if v != 0 and pc != 0]
    if per_instruction:
        counts = _pairs(entries[OPCODE_COUNTS], text_ids=True) if OPCODE_COUNTS in entries else None
        opcodes: dict[str, float] | None = None
        if counts is not None:
            opcodes = {}
            for op, v in counts:
                opcodes[op] = opcodes.get(op, 0.0) + v
        out["opcodes"] = opcodes
        types = _pairs(entries[ACCESS_TYPE]) if ACCESS_TYPE in entries else None
        listed = {pc for pairs in out["per_instruction"].values() for pc, _ in pairs}
        out["access_types"] = None if types is None else {pc: v for pc, v in types if pc in listed}
    return out


def read_deep(path: str | os.PathLike[str], wanted: dict[int, list[str]]) -> dict[int, dict[str, Any] | None] | None:
    """{result id: `load.deep.deep_and_sass`'s data of the result read without source lines and without SASS, or
    None where it holds what this reader does not know} for the results `wanted` names (indices in file order), each
    with the per-instruction metrics it maps to (none: sections and NCU's rule results only); None when the file is
    not in the layout this reader knows."""
    classes = _classes()
    if classes is None:
        return None
    Names, Parts, Metric = classes
    from google.protobuf.message import DecodeError  # a section that does not parse: that result is opened instead

    out: dict[int, dict[str, Any] | None] = {}
    try:
        with open(path, "rb") as fh:
            mm = FileView(fh)
            names: list[str] = []
            index = 0
            for block in iter_blocks(mm):
                h = block.header
                if h.get(4):  # metric names, appended to the table
                    s, e = h[4][0]
                    names.extend(Names.FromString(mm[s:e]).name)
                j, end = block.payload_start, block.payload_end
                for _ in range(int((h.get(2) or [0])[0])):
                    if j + 4 > end:
                        return None
                    n = u32(mm, j)
                    if j + 4 + n > end:
                        return None
                    if index in wanted:
                        try:
                            out[index] = _result(Parts.FromString(mm.view(j + 4, n)), names, wanted[index], Metric)
                        except (_Unknown, ncurules._Unknown, ValueError, IndexError, UnicodeDecodeError, DecodeError):
                            out[index] = None
                    j += 4 + n
                    index += 1
    except Exception:  # a layout this reader does not know: every result is opened through ncu_report
        return None
    return out if set(out) == set(wanted) else None


def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _section_ids(sections: Any) -> list[str]:
    """`ncurules.sections` of a result's sections parsed to their identifiers (1): in the order ncu_report lists
    them; a section naming two raises _Unknown."""
    out = []
    for section in sections:
        ids = section.identifier
        if len(ids) > 1:
            raise _Unknown("a section with two identifiers")
        out.append(ncurules._text(ids[0] if ids else b""))
    return sorted(out)


def _result(r: Any, names: list[str], per_instruction: list[str], Metric: Any) -> dict[str, Any]:
    wanted = set(per_instruction) | ({OPCODE_COUNTS, ACCESS_TYPE} if per_instruction else set())
    # an entry names its metric first (1: the index into the name table, as every entry of the fixtures does): the
    # wanted ones are told by their first bytes, without parsing the thousands of others
    heads = {b"\x08" + _varint_bytes(k): name for k, name in enumerate(names) if name in wanted}
    sizes = sorted({len(h) for h in heads})
    entries: dict[str, Any] = {}
    for raw in r.metrics:
        if raw[:1] != b"\x08":
            raise _Unknown("a metric entry that does not start with its name")
        for size in sizes:
            name = heads.get(raw[:size])
            if name is not None:
                if name in entries:
                    raise _Unknown(f"{name} twice")
                entries[name] = Metric.FromString(raw)
                break
    out = deep_of_result(entries, per_instruction)
    out["sections"] = _section_ids(r.sections)
    out["ncu_rules"] = ncurules.rule_results(r.rules)
    out["unreadable"] = not r.function
    return out
