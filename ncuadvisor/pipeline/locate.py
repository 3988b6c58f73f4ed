"""Placing findings in the source, after the rules ran: the lines of each finding's `SourceSelection` and the
kernel's entry line, read for all kernels in one batch (`ReportReader.locations`) and turned into `SourceRef`s.

An instruction whose line is a library's (CUDA's `device_atomic_functions.hpp`, Triton's `standard.py`) is placed on
the user's line that called it, read from the module's inlining record (`ReportReader.call_chains`), or where the
report has none, on the user's nearest line in program order; the library's line and function go with it
(`SourceRef.inlined`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ncuadvisor.load.reader import Location
from ncuadvisor.model.sources import in_library, short_name
from ncuadvisor.result.types import SourceAnchor
from ncuadvisor.rulekit.contract import Finding, Inlined, SourceRef, SourceSelection

# {result id: ({pc: (file, line)}, {file: text or None})}, as `ReportReader.locations` returns it
Located = dict[int, tuple[dict[int, Location], dict[str, str | None]]]
# {result id: {pc: {"frames": [(file, line, function)], "nearest": (file, line) or None}}}: `ReportReader.call_chains`
Chains = dict[int, dict[int, dict[str, Any]]]


def wanted(
    findings: Iterable[tuple[int, Finding]], entries: Iterable[tuple[int, str | None]]
) -> dict[int, tuple[list[int], list[str]]]:
    """What to read: per result, the pcs of the findings' selections and the files of the kernels' entry lines."""
    out: dict[int, tuple[list[int], list[str]]] = {}
    for rid, f in findings:
        if isinstance(f.source, SourceSelection):
            out.setdefault(rid, ([], []))[0].extend(e.pc for e in f.source.candidates)
    for rid, file in entries:
        if file:
            out.setdefault(rid, ([], []))[1].append(file)
    return out


def source_line(texts: dict[str, str | None], file: str | None, line: int | None) -> str | None:
    """The text of `file`:`line` when the report embeds the file (ncu --import-source yes)."""
    if not file or not line:
        return None
    text = texts.get(file)
    if text is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


_PY_DEF = re.compile(r"\s*def\s+(\w+)")


def python_function(texts: dict[str, str | None], file: str | None, line: int | None) -> str | None:
    """The `def` a line of an embedded Python file is in (Triton's library functions: `welford_combine`)."""
    text = texts.get(file or "")
    if not text or not line:
        return None
    lines = text.splitlines()[: max(0, line)]
    return next((m.group(1) for ln in reversed(lines) if (m := _PY_DEF.match(ln))), None)


def user_line(
    file: str | None, line: int | None, chain: dict[str, Any] | None, texts: dict[str, str | None]
) -> tuple[str | None, int | None, Inlined | None]:
    """Where an instruction belongs for the user: its own line, or, for a library's line with a call chain, the user's
    line that called the library (and the library's function and line), or the user's nearest line."""
    if not chain or not in_library(file):
        return file, line, None
    frames = chain.get("frames") or []
    mine = next((i for i, fr in enumerate(frames) if not in_library(fr[0])), None)
    if mine:
        called = short_name(frames[mine - 1][2])
        return frames[mine][0], frames[mine][1], Inlined(called, file, line, source_line(texts, file, line))
    nearest = chain.get("nearest")
    if nearest:
        code = source_line(texts, file, line)
        if frames and frames[-1][2]:
            return nearest[0], nearest[1], Inlined(short_name(frames[-1][2]), file, line, code, nearest=True)
        named = python_function(texts, file, line)
        call = python_call(texts, nearest[0], nearest[1], file, named)
        if call is not None:
            return nearest[0], call, Inlined(named, file, line, code)
        return nearest[0], nearest[1], Inlined(named, file, line, code, nearest=True)
    return file, line, None


def python_call(
    texts: dict[str, str | None], kernel: str | None, near: int | None, library: str | None, function: str | None
) -> int | None:
    """The line of a Triton kernel's file that calls the library's `function` (`tl.sum(`, `triton_helpers.welford(`),
    directly or through one function of the same library file that names it (`welford` reduces with
    `welford_combine`); of several such lines, the one closest to `near`. Triton records no inlining, so the call is
    found by name in the embedded texts."""
    body, lib = texts.get(kernel or ""), texts.get(library or "")
    if not body or not function or not near:
        return None
    names = {function}
    if lib:
        current = None
        for ln in lib.splitlines():
            m = _PY_DEF.match(ln)
            if m:
                current = m.group(1)
            elif current and current != function and re.search(rf"\b{re.escape(function)}\b", ln):
                names.add(current)
    calls = re.compile(r"\.(" + "|".join(re.escape(n) for n in sorted(names)) + r")\(")
    lines = [i for i, ln in enumerate(body.splitlines(), 1) if calls.search(ln) and not _PY_DEF.match(ln)]
    return min(lines, key=lambda i: (abs(i - near), i)) if lines else None


def place(
    selection: SourceSelection,
    where: dict[int, Location],
    texts: dict[str, str | None],
    chains: dict[int, dict[str, Any]] | None = None,
) -> list[SourceRef]:
    """The lines of a selection: its instructions merged per line (the user's line, for a library's code inlined
    there), largest share first, at least `min_share` of the metric's total, at most `limit` of them."""
    if not selection.candidates or selection.total <= 0:
        return []
    by_line: dict[Location, list[tuple[Any, Inlined | None]]] = {}
    for e in selection.candidates:
        file, line = where.get(e.pc, (None, None))
        file, line, inlined = user_line(file, line, (chains or {}).get(e.pc), texts)
        by_line.setdefault((file, line), []).append((e, inlined))
    refs = []
    for (file, line), group in by_line.items():
        value = sum(e.value for e, _ in group)
        top = max(group, key=lambda p: p[0].value)[0]
        via = [p for p in group if p[1] is not None]
        refs.append(
            SourceRef(
                file=file,
                line=line,
                code=source_line(texts, file, line),
                sass=top.sass,
                metric=selection.metric,
                value=value,
                share=value / selection.total,
                inlined=max(via, key=lambda p: p[0].value)[1] if via else None,
            )
        )
    refs.sort(key=lambda r: -(r.value or 0))
    # instructions the report gives no line (a library built without -lineinfo) are no place in the source: their
    # sum would rank one of them (`S2R R3, SR_CTAID.X`) as the cause at "-:?"; the finding shows no line instead
    refs = [r for r in refs if r.file is not None or r.line is not None]
    return [r for r in refs if (r.share or 0) >= selection.min_share][: selection.limit]


def selected(
    findings: Iterable[tuple[int, Finding]], located: Located, mangled: dict[int, str | None]
) -> dict[int, tuple[str | None, list[int], dict[int, Location]]]:
    """What `ReportReader.call_chains` is asked: per result, its kernel's mangled name, the pcs of its findings'
    selections and their lines."""
    out: dict[int, tuple[str | None, list[int], dict[int, Location]]] = {}
    for rid, f in findings:
        if isinstance(f.source, SourceSelection):
            where = located.get(rid, ({}, {}))[0]
            entry = out.setdefault(rid, (mangled.get(rid), [], {}))
            for e in f.source.candidates:
                entry[1].append(e.pc)
                entry[2][e.pc] = where.get(e.pc, (None, None))
    return out


def resolve(findings: Iterable[tuple[int, Finding]], located: Located, chains: Chains | None = None) -> None:
    """Replace each finding's selection by the lines it names."""
    for rid, f in findings:
        if isinstance(f.source, SourceSelection):
            where, texts = located.get(rid, ({}, {}))
            f.source = place(f.source, where, texts, (chains or {}).get(rid))


def anchor(entry: tuple[str, int] | None, texts: dict[str, str | None]) -> SourceAnchor | None:
    """The kernel's entry in its source (the line of its first instruction), where a finding with no line of its own
    (a launch configuration, an occupancy limit) can be shown: code scanning needs a line."""
    if entry is None:
        return None
    file, line = entry
    return SourceAnchor(file=file, line=int(line), code=source_line(texts, file, line))
