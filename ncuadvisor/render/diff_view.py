"""The view of a diff (`ncuadvisor.diff.diff_results`, its JSON contract): plain objects with every default filled.

As `render.view` does for a report: whatever the diff dict lacks becomes an empty list, a zero count, an empty side
(`present` False) or None, once, and what the renderers would otherwise compute (the lists by status, the new
findings by saving, the shape tags, the findings cell, the total's change as text) is computed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ncuadvisor.render.view import Generator, as_list, as_map, as_maps, generator_of, pick
from ncuadvisor.result import shape_tagger
from ncuadvisor.units import finite, fmt_change, fmt_delta_ns

STATUSES = ("regressed", "improved", "unchanged", "added", "removed")


@dataclass(frozen=True)
class Side:
    """One report of the two, as the diff describes it."""

    name: Any
    path: Any
    ncu_version: Any
    device: Any
    kernels: Any
    results: Any
    total_duration_ns: Any
    created: Any


@dataclass(frozen=True)
class Total:
    before_ns: Any
    after_ns: Any
    change_ns: Any
    change: Any
    status: Any
    before_scaled_ns: Any
    change_text: str  # '+7.93 ms, +227.6%', per result in per-launch mode


@dataclass(frozen=True)
class Summary:
    regressed: int
    improved: int
    unchanged: int
    added: int
    removed: int
    new_findings: int
    resolved_findings: int


@dataclass(frozen=True)
class Noise:
    threshold: Any
    min_change_ns: Any
    threshold_source: Any


@dataclass(frozen=True)
class FirstFix:
    rule: Any
    category: Any
    kernel: Any
    kernel_id: Any
    kernel_shape: Any
    title: Any
    estimated_saving_ns: Any
    program_fraction: Any


@dataclass(frozen=True)
class Finding:
    rule: Any
    category: Any
    title: Any
    estimated_speedup: Any
    estimated_saving_ns: Any
    before_saving_ns: Any
    fix: Any
    location: Any
    measured_saving_ns: Any  # resolved: the kernel's time saved, measured
    measured_fraction: Any  # resolved: measured ÷ predicted


@dataclass(frozen=True)
class Findings:
    new: list[Finding]
    resolved: list[Finding]
    unchanged: list[Finding]
    cell: str  # 'new MEM001; resolved MEM002; 1 unchanged', '–' for none


@dataclass(frozen=True)
class KernelSide:
    """A kernel entry's measurements in one report; `present` is False where the kernel is not in that report."""

    present: bool
    duration_ns: Any
    launches: Any
    per_launch_ns: Any
    time_share: Any
    bound: Any
    headroom: Any
    at_roofline: Any
    grid: Any
    block: Any


@dataclass(frozen=True)
class ProcessSide:
    pid: Any
    rank: Any


@dataclass(frozen=True)
class Process:
    """The process a kernel entry belongs to (per-process matching only)."""

    key: Any
    label: Any
    before: ProcessSide | None
    after: ProcessSide | None


@dataclass(frozen=True)
class Entry:
    """One kernel of either report, matched or not."""

    name: Any
    demangled: Any
    shown_name: Any  # the name, else the demangled name
    full_name: Any  # the demangled name, else the name
    shape_tag: str
    status: Any
    match: Any
    match_note: Any
    launches_note: Any
    change_ns: Any
    change: Any
    process: Process | None
    process_label: Any
    before: KernelSide
    after: KernelSide
    findings: Findings
    has_detail: bool  # changed, or its findings did, or it was matched by name only


@dataclass(frozen=True)
class ProgramFindings:
    new: list[Finding]
    resolved: list[Finding]
    unchanged: list[Finding]


@dataclass(frozen=True)
class Diff:
    schema_version: Any
    generator: Generator
    created: Any
    verdict: Any
    before: Side
    after: Side
    total: Total
    summary: Summary
    noise: Noise
    first_fix: FirstFix | None
    warnings: list[Any]
    kernels: list[Entry]
    program_findings: ProgramFindings
    by_status: dict[str, list[Entry]]  # status -> its entries, in the diff's order
    added_ns: float  # time after of the added kernels
    removed_ns: float  # time before of the removed kernels
    new_findings: list[tuple[Entry, Finding]]  # largest saving first
    predictions: list[tuple[Entry, Finding]]  # resolved findings with the saving measured, largest predicted first


def findings_cell(new: list[Finding], resolved: list[Finding], unchanged: list[Finding]) -> str:
    parts = []
    if new:
        parts.append("new " + ", ".join(str(f.rule or "?") for f in new))
    if resolved:
        parts.append("resolved " + ", ".join(str(f.rule or "?") for f in resolved))
    if unchanged:
        parts.append(f"{len(unchanged)} unchanged")
    return "; ".join(parts) if parts else "–"


def total_change_text(t: Mapping[str, Any]) -> str:
    """The program total's change: '+7.93 ms, +227.6%', and in per-launch mode '+205.5 µs, +1.8% per result: 3.22×
    the results'."""
    text = fmt_delta_ns(t.get("change_ns")) + (f", {fmt_change(t['change'])}" if t.get("change") is not None else "")
    scaled, before = finite(t.get("before_scaled_ns")), finite(t.get("before_ns"))
    if scaled is not None and before:
        text += f" per result: {scaled / before:.2f}× the results"
    return text


def _findings(raw: Mapping[str, Any]) -> tuple[list[Finding], list[Finding], list[Finding]]:
    new, resolved, unchanged = (
        [pick(Finding, f) for f in as_maps(raw.get(n))] for n in ("new", "resolved", "unchanged")
    )
    return new, resolved, unchanged


def _side(raw: Any) -> KernelSide:
    side = as_map(raw)
    return pick(KernelSide, side, present=bool(side))


def _process(raw: Any) -> Process | None:
    p = as_map(raw)
    if not p:
        return None
    sides = {n: (pick(ProcessSide, as_map(p.get(n))) if as_map(p.get(n)) else None) for n in ("before", "after")}
    return pick(Process, p, **sides)


def _entry(raw: Mapping[str, Any], tag: str) -> Entry:
    new, resolved, unchanged = _findings(as_map(raw.get("findings")))
    process = _process(raw.get("process"))
    return pick(
        Entry,
        raw,
        shown_name=raw.get("display_name") or raw.get("name") or raw.get("demangled"),
        full_name=raw.get("demangled") or raw.get("name"),
        shape_tag=tag,
        process=process,
        process_label=process.label if process else None,
        before=_side(raw.get("before")),
        after=_side(raw.get("after")),
        findings=Findings(new, resolved, unchanged, findings_cell(new, resolved, unchanged)),
        has_detail=raw.get("status") != "unchanged" or bool(new or resolved) or raw.get("match") == "name",
    )


def _shape_tags(entries: list[Mapping[str, Any]]) -> list[str]:
    """Each entry's shape tag among the diff's entries ('grid (8, 8, 1)' where other entries share its name;
    per-process entries are already told apart by their process), from the after side, else the before side."""

    def side(e: Mapping[str, Any]) -> Mapping[str, Any]:
        return as_map(e.get("after") or e.get("before"))

    tag = shape_tagger(
        entries,
        lambda e: (str(e.get("name") or e.get("demangled") or ""), str(as_map(e.get("process")).get("label") or "")),
        lambda e: (str(side(e).get("grid") or "–"), str(side(e).get("block") or "–")),
    )
    return [tag(e) for e in entries]


def diff_view(diff: Mapping[str, Any]) -> Diff:
    """The view of a diff dict (the JSON contract, schema_version 1)."""
    diff = as_map(diff)
    raw_entries = as_maps(diff.get("kernels"))
    entries = [_entry(e, tag) for e, tag in zip(raw_entries, _shape_tags(raw_entries))]
    by_status = {s: [e for e in entries if e.status == s] for s in STATUSES}
    news = [(e, f) for e in entries for f in e.findings.new]
    news.sort(key=lambda ef: -(finite(ef[1].estimated_saving_ns) or 0.0))
    predictions = [(e, f) for e in entries for f in e.findings.resolved if finite(f.measured_saving_ns) is not None]
    predictions.sort(key=lambda ef: -(finite(ef[1].estimated_saving_ns) or 0.0))
    summary = as_map(diff.get("summary"))
    total = as_map(diff.get("total"))
    first_fix = as_map(diff.get("first_fix"))
    program = _findings(as_map(diff.get("program_findings")))
    return pick(
        Diff,
        diff,
        generator=generator_of(diff.get("generator")),
        before=pick(Side, as_map(diff.get("before"))),
        after=pick(Side, as_map(diff.get("after"))),
        total=pick(Total, total, change_text=total_change_text(total)),
        summary=Summary(**{n: summary.get(n) or 0 for n in Summary.__dataclass_fields__}),
        noise=pick(Noise, as_map(diff.get("noise"))),
        first_fix=pick(FirstFix, first_fix) if first_fix else None,
        warnings=as_list(diff.get("warnings")),
        kernels=entries,
        program_findings=ProgramFindings(*program),
        by_status=by_status,
        added_ns=sum(finite(e.after.duration_ns) or 0.0 for e in by_status["added"]),
        removed_ns=sum(finite(e.before.duration_ns) or 0.0 for e in by_status["removed"]),
        new_findings=news,
        predictions=predictions,
    )
