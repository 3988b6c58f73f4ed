"""The view of a diff (the typed `ncuadvisor.comparison.DiffResult`, as `compare` builds it or `load_saved` reads it): plain
objects with every default filled.

As `render.view` does for a report: a side the kernel is missing from is an empty side (`present` False), a missing
process or first fix None, once, and what the renderers would otherwise compute (the lists by status, the new
findings by saving, the shape tags, the findings cell, the total's change as text) is computed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ncuadvisor.comparison import types as dt
from ncuadvisor.render.view import Generator, distinct_labels, prose, take
from ncuadvisor.result import shape_tagger
from ncuadvisor.units import compact_name, finite, fmt_change, fmt_delta_ns

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
    label: str  # the short name every diff output shows (`units.compact_name`, told apart from another kernel's)
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
    has_detail: bool  # changed, or its findings did, or it was matched by name only or by role


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
    # the findings' counter predictions checked after the change: (kernel name, the check in words, met)
    counter_checks: list[tuple[str, str, bool | None]] = field(default_factory=list)


def findings_cell(new: list[Finding], resolved: list[Finding], unchanged: list[Finding]) -> str:
    parts = []
    if new:
        parts.append("new " + ", ".join(str(f.rule or "?") for f in new))
    if resolved:
        parts.append("resolved " + ", ".join(str(f.rule or "?") for f in resolved))
    if unchanged:
        parts.append(f"{len(unchanged)} unchanged")
    return "; ".join(parts) if parts else "–"


def total_change_text(t: dt.TotalChange) -> str:
    """The program total's change: '+7.93 ms, +227.6%', and in per-launch mode '+205.5 µs, +1.8% per result: 3.22×
    the results'."""
    text = fmt_delta_ns(t.change_ns) + (f", {fmt_change(t.change)}" if t.change is not None else "")
    scaled, before = finite(t.before_scaled_ns), finite(t.before_ns)
    if scaled is not None and before:
        text += f" per result: {scaled / before:.2f}× the results"
    return text


def _findings(changes: dt.FindingChanges) -> tuple[list[Finding], list[Finding], list[Finding]]:
    return (
        [take(Finding, f, fix=prose(f.fix)) for f in changes.new],
        [take(Finding, f, fix=prose(f.fix)) for f in changes.resolved],
        [take(Finding, f, fix=prose(f.fix)) for f in changes.unchanged],
    )


def _side(side: dt.KernelSide | None) -> KernelSide:
    return take(KernelSide, side, present=side is not None)


def _process(p: dt.ProcessMatch | None) -> Process | None:
    if p is None:
        return None
    sides = {n: (take(ProcessSide, s) if (s := getattr(p, n)) is not None else None) for n in ("before", "after")}
    return take(Process, p, **sides)


def _entry(k: dt.KernelChange, tag: str, label: str) -> Entry:
    new, resolved, unchanged = _findings(k.findings)
    process = _process(k.process)
    return take(
        Entry,
        k,
        shown_name=k.name or k.demangled,
        label=label,
        full_name=k.demangled or k.name,
        shape_tag=tag,
        process=process,
        process_label=process.label if process else None,
        before=_side(k.before),
        after=_side(k.after),
        findings=Findings(new, resolved, unchanged, findings_cell(new, resolved, unchanged)),
        has_detail=k.status != "unchanged" or bool(new or resolved) or k.match in ("name", "role"),
    )


def _shape_tags(entries: list[dt.KernelChange]) -> list[str]:
    """Each entry's shape tag among the diff's entries ('grid (8, 8, 1)' where other entries share its name;
    per-process entries are already told apart by their process), from the after side, else the before side."""

    def shape(e: dt.KernelChange) -> tuple[str, str]:
        side = e.after or e.before
        return (str(side.grid or "–"), str(side.block or "–")) if side is not None else ("–", "–")

    tag = shape_tagger(
        entries,
        lambda e: (str(e.name or e.demangled or ""), str(e.process.label if e.process is not None else "")),
        shape,
    )
    return [tag(e) for e in entries]


def diff_view(diff: dt.DiffResult) -> Diff:
    """The view of a diff (the typed JSON contract, schema_version 1)."""
    # each kernel's short name, as the report's table writes it: two kernels of different full names never alike
    labels = distinct_labels(
        [compact_name(k.name or k.demangled) for k in diff.kernels],
        [str(k.demangled or k.name or "") for k in diff.kernels],
    )
    entries = [_entry(e, tag, lb) for e, tag, lb in zip(diff.kernels, _shape_tags(diff.kernels), labels)]
    by_status = {s: [e for e in entries if e.status == s] for s in STATUSES}
    news = [(e, f) for e in entries for f in e.findings.new]
    news.sort(key=lambda ef: -(finite(ef[1].estimated_saving_ns) or 0.0))
    predictions = [(e, f) for e in entries for f in e.findings.resolved if finite(f.measured_saving_ns) is not None]
    predictions.sort(key=lambda ef: -(finite(ef[1].estimated_saving_ns) or 0.0))
    gen = diff.generator
    return take(
        Diff,
        diff,
        generator=Generator(name=str(gen.name or "ncuadvisor"), version=str(gen.version or "")),
        before=take(Side, diff.before),
        after=take(Side, diff.after),
        total=take(Total, diff.total, change_text=total_change_text(diff.total)),
        summary=Summary(**{n: getattr(diff.summary, n) or 0 for n in Summary.__dataclass_fields__}),
        noise=take(Noise, diff.noise),
        first_fix=take(FirstFix, diff.first_fix) if diff.first_fix is not None else None,
        warnings=list(diff.warnings),
        kernels=entries,
        program_findings=ProgramFindings(*_findings(diff.program_findings)),
        by_status=by_status,
        added_ns=sum(finite(e.after.duration_ns) or 0.0 for e in by_status["added"]),
        removed_ns=sum(finite(e.before.duration_ns) or 0.0 for e in by_status["removed"]),
        new_findings=news,
        predictions=predictions,
        counter_checks=[(e.name, c.text, c.met) for e in diff.kernels for c in e.counter_checks or []]
        + [("program", c.text, c.met) for c in diff.program_counter_checks or []],
    )
