"""Placing findings in the source, after the rules ran: the lines of each finding's `SourceSelection` and the
kernel's entry line, read for all kernels in one batch (`ReportReader.locations`) and turned into `SourceRef`s."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ncuadvisor.load.reader import Location
from ncuadvisor.result.types import SourceAnchor
from ncuadvisor.rules_api import Finding, SourceRef, SourceSelection

# {result id: ({pc: (file, line)}, {file: text or None})}, as `ReportReader.locations` returns it
Located = dict[int, tuple[dict[int, Location], dict[str, str | None]]]


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


def place(selection: SourceSelection, where: dict[int, Location], texts: dict[str, str | None]) -> list[SourceRef]:
    """The lines of a selection: its instructions merged per line, largest share first, at least `min_share` of the
    metric's total, at most `limit` of them."""
    if not selection.candidates or selection.total <= 0:
        return []
    by_line: dict[Location, list[Any]] = {}
    for e in selection.candidates:
        by_line.setdefault(where.get(e.pc, (None, None)), []).append(e)
    refs = []
    for (file, line), group in by_line.items():
        value = sum(e.value for e in group)
        top = max(group, key=lambda e: e.value)
        refs.append(
            SourceRef(
                file=file,
                line=line,
                code=source_line(texts, file, line),
                sass=top.sass,
                metric=selection.metric,
                value=value,
                share=value / selection.total,
            )
        )
    refs.sort(key=lambda r: -(r.value or 0))
    return [r for r in refs if (r.share or 0) >= selection.min_share][: selection.limit]


def resolve(findings: Iterable[tuple[int, Finding]], located: Located) -> None:
    """Replace each finding's selection by the lines it names."""
    for rid, f in findings:
        if isinstance(f.source, SourceSelection):
            where, texts = located.get(rid, ({}, {}))
            f.source = place(f.source, where, texts)


def anchor(entry: tuple[str, int] | None, texts: dict[str, str | None]) -> SourceAnchor | None:
    """The kernel's entry in its source (the line of its first instruction), where a finding with no line of its own
    (a launch configuration, an occupancy limit) can be shown: code scanning needs a line."""
    if entry is None:
        return None
    file, line = entry
    return SourceAnchor(file=file, line=int(line), code=source_line(texts, file, line))
