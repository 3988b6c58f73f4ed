"""The view of a result: plain, frozen objects with every default filled, which the renderers and templates read.

`report_view(result)` takes the typed result (`ncuadvisor.result.Result`), as the pipeline builds it or as
`ncuadvisor.saved.validate.load_saved` reads a saved JSON, so that a saved JSON renders the same as a fresh
analysis; the type guarantees each part's shape, so no renderer or template guards a lookup, and a template that
names a field the view does not have fails (jinja2's StrictUndefined) instead of printing nothing. Values are the
result's own (numbers stay numbers: the templates format them through the filters of `ncuadvisor.units`); what a
renderer would otherwise compute (a finding's saving in ns, a kernel's shape tag, the first finding, a program
finding's links) is computed here; `take` fills a view object from a typed record's fields of the same names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, overload

from ncuadvisor.render import METRIC_WORDS, Prose
from ncuadvisor.render.host_view import HostView, host_view, wall_words
from ncuadvisor.render.view_source import CitedLine, PythonLine, SourceLine, cited_lines, take  # noqa: F401  (the view's types in one place)
from ncuadvisor.render.view_source import python_line as _python_line
from ncuadvisor.render.view_source import source as _source
from ncuadvisor.result import shape_tags
from ncuadvisor.result import types as rt
from ncuadvisor.units import compact_name, compress_chain, counted, finite, fmt_ns, fmt_num, number

AT_ROOFLINE = "at-roofline"
SOL_BARS: tuple[tuple[str, str], ...] = (
    ("memory_pct", "Memory SOL"),
    ("compute_pct", "Compute SOL"),
    ("dram_pct", "DRAM"),
    ("l2_pct", "L2"),
    ("l1_pct", "L1"),
)


def times(a: object, b: object) -> float | None:
    """a × b for a display value (a time saved), None when either is not a number."""
    fa, fb = number(a), number(b)
    return None if fa is None or fb is None else fa * fb


# -- the report's parts ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Generator:
    name: str
    version: str


@dataclass(frozen=True)
class Device:
    name: str | None
    sm_count: float | None
    peak_dram_bytes_per_s: float | None
    peak_flops_per_s: Mapping[str, float | None]
    sm_clock_hz: float | None  # the clock the device's ceilings are computed at (the kernels' median)


@dataclass(frozen=True)
class Process:
    label: str
    pid: int | str
    executable: str
    kernels: int
    launches: int
    duration_ns: float


@dataclass(frozen=True)
class Report:
    name: str
    path: str
    ncu_version: str | None
    command_line: str | None
    kernels: int  # the count of kernel groups the report holds
    results: int
    total_duration_ns: float
    device: Device
    warnings: list[Prose]
    missing_sections: list[str]
    processes: list[Process]


@dataclass(frozen=True)
class Evidence:
    label: str  # words: the rule's label, else the metric's name in words
    metric: str
    value: float | str | None
    unit: str
    threshold: float | str | None
    kind: str  # how the value reads: "pct" (a 0..1 fraction), "pct100" (already in %), "x" (a ratio), "num"


def _no_rule_label(v: rt.NoRuleVerdict | None, covered_by: str | None = None) -> str:
    """A kernel's table cell when it has no finding: its no-rule verdict ("no rule applies", "gap in the rule set" for
    a kernel with room, "headroom unknown" where the report counts too little for a floor, or the program finding
    that covers it), else the program finding that names it (a kernel under the verdict's share: PYT005's loss
    kernels, a fusion chain's), else nothing."""
    if v is None:
        return f"see {covered_by} (program)" if covered_by else ""
    if v.program_rule:
        return f"see {v.program_rule} (program)"
    if v.message.startswith("Headroom unknown"):  # the report counts too little for a floor (`headroom_unknown_words`)
        return "headroom unknown"
    return "gap in the rule set" if v.is_gap else "no rule applies"


@dataclass(frozen=True)
class Finding:
    rule: str
    title: str
    category: str
    message: Prose
    fix: Prose
    fix_code: str
    estimated_speedup: float
    confidence: str
    speedup_model: str
    evidence: list[Evidence]
    source: list[SourceLine]
    at_roofline: bool
    saving_ns: float | None  # the time the finding saves over the launches it speaks for
    must_move: str = ""  # the counters the fix must move: "shared wavefronts per wavefront needed 16.5 → ≤ 1.25"


@dataclass(frozen=True)
class Sol:
    memory_pct: float | None
    compute_pct: float | None
    dram_pct: float | None
    l2_pct: float | None
    l1_pct: float | None


@dataclass(frozen=True)
class Roofline:
    duration_ns: float | None
    theoretical_ns: float | None
    memory_floor_ns: float | None
    compute_floor_ns: float | None
    dram_bytes: float | None
    compulsory_bytes: float | None
    load_bytes: (
        float | None
    )  # of the compulsory bytes, loads and stores (None when the report does not tell them apart)
    store_bytes: float | None
    ideal_bytes: float | None
    tma_bytes: float | None  # loaded through TMA: not among the ideal sectors (per-thread accesses only)
    flops: float
    intensity: float | None
    achieved_dram_bytes_per_s: float | None
    peak_dram_bytes_per_s: float | None
    achieved_flops_per_s: float | None
    limiting_precision: str | None
    limiting_peak_flops_per_s: float | None  # the peak of the limiting precision, None when the report lacks it
    sm_clock_hz: float | None  # the SM clock measured during the kernel
    limiter: (
        str | None
    )  # the unit that limits the kernel ('dram', 'l2', 'fma', 'issue', 'sfu', ...) when the result names it
    limiter_reason: Prose  # the same, in words
    executed_floor_ns: float | None  # the largest ceiling as executed (issue, ALU, LSU, memory traffic as moved)
    executed_floor_unit: str | None
    executed_reason: str  # both floors in words when the executed floor is well above the needed one, else ""
    hierarchy: list[Mapping[str, Any]]  # per memory level (l1, l2, dram): bytes, intensity, peak_bytes_per_s
    sol: Sol
    sol_bars: list[tuple[str, float | None]]  # (label, percentage) in display order


@dataclass(frozen=True)
class Launch:
    registers_per_thread: float | None
    shared_mem_static: float | None
    shared_mem_dynamic: float | None
    waves_per_sm: float | None
    theoretical_occupancy_pct: float | None
    achieved_occupancy_pct: float | None


@dataclass(frozen=True)
class Variant:
    """Launches of a kernel whose duration sets them apart, analysed on their own (or timed only)."""

    launches: int
    launch_range_ns: tuple[float | None, float | None]
    duration_ns: float
    time_share: float
    profiled: bool
    bound: str
    headroom: float | None
    findings: list[Finding]


@dataclass(frozen=True)
class NcuRule:
    rule: str
    type: str
    title: str
    message: str
    speedup_pct: float | None
    speedup_type: str | None


@dataclass(frozen=True)
class RuleNote:
    """A rule suppressed or skipped on a kernel, and why."""

    rule: str
    title: str | None
    reason: str


@dataclass(frozen=True)
class Kernel:
    index: int  # counted from 1, as every list of the report is
    anchor: str  # the HTML id: the kernel's id, else k<position in the result, from 0>
    id: str
    name: str
    demangled: str
    mangled: str
    shown_name: str  # the display name (the op of an ATen generic kernel), else the name, else the demangled name
    label: str  # its short name (`kernel_labels`): no two kernels of the report read the same with their shape tags
    full_name: str  # the demangled name, else the name
    shape_tag: str  # what tells it from other kernels of its name ('grid (8, 8, 1)'), else ""
    no_rule: str | None  # a large kernel group no rule spoke to: what is known of it (its message), else None
    no_rule_label: str  # its table cell: "no rule applies", "gap in the rule set", or the covering program finding
    language: str
    grid: str
    block: str
    launches: int
    analysed_launches: int
    duration_ns: float
    analysed_duration_ns: float
    per_launch_ns: float
    time_share: float
    launch_note: str | None
    bound: str
    bound_reason: Prose
    headroom: float | None
    nvtx: str
    device_id: int | None
    process_label: str | None
    executable: str | None  # of the kernel's process
    source_anchor: SourceLine  # its first instruction's line (empty when the report has none)
    python_line: PythonLine | None  # the Python line that launched it (profile --python-lines), else None
    roofline: Roofline
    launch: Launch
    findings: list[Finding]
    first_finding: Finding | None
    variants: list[Variant]
    ncu_rules: list[NcuRule]
    suppressed: list[RuleNote]
    skipped_rules: list[RuleNote]
    finding_groups: list[tuple[list[Finding], float, int | None]]  # findings, the ns they speak for, the variant
    cited_lines: list[CitedLine] = field(default_factory=list)  # the source lines its findings cite, each once


@dataclass(frozen=True)
class Action:
    """One line of "where to start"."""

    scope: str
    kernel: str
    kernel_id: str | None
    shape_tag: str
    rule: str
    category: str
    title: str
    estimated_saving_ns: float
    program_fraction: float
    fix: str = ""  # the fix of the finding the entry speaks of (a program finding's, else the kernel's)
    kernel_label: str = ""  # the kernel's short name as the kernel table shows it; for several kernels, theirs
    covers: str = ""  # the launches and time the saving is over ('6 launches, 112.4 µs'), else ""
    follow_ups: list[FollowUp] = field(default_factory=list)  # the kernel's further fixes, on the time left
    python_line: PythonLine | None = None  # the Python line that launched the kernel (profile --python-lines)
    wall: str = ""  # with a host timeline: the wall time the entry saves, in words (`host_view.wall_words`)
    wall_only: bool = False  # its saving is wall time, not GPU time (CUDA graphs): no share of the GPU time


@dataclass(frozen=True)
class FollowUp:
    """A further fix under a "where to start" entry."""

    rule: str
    title: str
    estimated_saving_ns: float
    program_fraction: float


@dataclass(frozen=True)
class ProgramFinding:
    rule: str
    category: str
    title: str
    message: Prose
    fix: Prose
    fix_code: str
    estimated_saving_ns: float
    kernels: list[str]  # names, each once, with how often the finding names it ('a ×100')
    kernel_links: list[tuple[str, str | None]]  # (name, kernel id or None)
    labels: list[str] = field(default_factory=list)  # its kernels' short names, as the kernel table shows them (×n)
    must_move: str = ""  # the counters the fix must move: "launches of the kernels it names 4 → ≤ 2"


@dataclass(frozen=True)
class Result:
    report: Report
    generator: Generator
    created: str
    kernels: list[Kernel]
    top_actions: list[Action]
    program_findings: list[ProgramFinding]
    host: HostView | None = None  # the measured host timeline's facts (`--host-trace`)


# -- building ----------------------------------------------------------------------------------------------------


def _evidence(e: rt.EvidenceEntry) -> Evidence:
    slug = str(e.metric or "")
    kind = "pct" if slug.endswith(("_share", "_fraction", "fraction_of_peak")) and not e.unit else "num"
    kind = "x" if slug == "headroom" and not e.unit else kind
    kind = "pct100" if e.unit == "%" else kind
    words = e.label or METRIC_WORDS.get(slug) or slug.replace("_", " ")
    return take(Evidence, e, label=words, kind=kind)


def _command_line(text: str | None) -> str | None:
    """The ncu command line as the report holds it, without the lone quote ncu leaves at its end."""
    if isinstance(text, str) and text.rstrip().endswith('"') and text.count('"') % 2:
        return text.rstrip()[:-1].rstrip()
    return text


@overload
def prose(text: str) -> Prose: ...
@overload
def prose(text: None) -> None: ...
def prose(text: str | None) -> Prose | None:
    """A text of the result written as prose (`Prose`: its `code` spans shown as code in the HTML); None stays."""
    return None if text is None else Prose(text)


def _finding(f: rt.FindingEntry, duration_ns: float | None) -> Finding:
    return take(
        Finding,
        f,
        message=prose(f.message),
        fix=prose(f.fix),
        evidence=[_evidence(e) for e in f.evidence],
        source=[_source(s) for s in f.source],
        at_roofline=f.category == AT_ROOFLINE,
        saving_ns=times(duration_ns, f.estimated_speedup),
        must_move="; ".join(_must_move(p) for p in f.predicts or []),
    )


def _must_move(p: rt.PredictionEntry) -> str:
    unit = "%" if p.unit == "%" else ""
    value = lambda v: "–" if v is None else f"{fmt_num(v)}{unit}"  # noqa: E731
    return f"{p.label} {value(p.current)} → {'≤' if p.expect == '<=' else '≥'} {value(p.bound)}"


def _roofline(r: rt.Roofline) -> Roofline:
    sol = Sol(**{n.name: r.sol.get(n.name) for n in fields(Sol)})
    precision = r.limiting_precision
    return take(
        Roofline,
        r,
        sol=sol,
        # a percentage derived from the units (the report lacks NCU's own: `roofline.derive_sol`) says so
        sol_bars=[
            (label + (" (from units)" if key in (r.sol_derived or []) else ""), getattr(sol, key))
            for key, label in SOL_BARS
        ],
        hierarchy=[h.to_dict() for h in r.hierarchy],
        limiting_peak_flops_per_s=r.peak_flops_per_s.get(precision) if precision else None,
        limiter_reason=prose(r.limiter_reason),
    )


def _variant(v: rt.VariantEntry) -> Variant:
    bounds = list(v.launch_range_ns) + [None, None]
    return take(
        Variant,
        v,
        launch_range_ns=(bounds[0], bounds[1]),
        findings=[_finding(f, v.duration_ns) for f in v.findings],
    )


_WORD = re.compile(r"[A-Za-z_]\w*")
_PART = re.compile(r"[A-Za-z0-9]+")
TAG_MAX = 28  # a distinguishing word longer than this gives way to the part of it that differs


_TEMPLATE_ARGS = re.compile(r"\w<([^<>]*)>\(")  # a function's own template arguments: 'gemm_tiled<(int)0>('
_CAST = re.compile(r"\((?:unsigned |signed )?\w+\)")


def _template_args(full: str) -> str:
    """A kernel's template arguments without their casts ('gemm_tiled<(int)0>(…)' -> '0'), "" for none."""
    m = _TEMPLATE_ARGS.search(full)
    return _CAST.sub("", m.group(1)).strip() if m else ""


def _pieces(name: str) -> set[str]:
    """A name's parts ('tilesize128x128x8', 'nn') and its pairs of neighbouring parts ('execute_kernel')."""
    parts = _PART.findall(name)
    return set(parts) | {f"{x}_{y}" for x, y in zip(parts, parts[1:])}


def _distinct(full: str, others: list[str]) -> str:
    """What tells a kernel's full name from the others: the first word none of them holds
    ('unrolled_elementwise_kernel', 'BinaryOpScalarFunctor'); when that is long or there is none, the parts that set
    it apart from the most of them, single parts and the longest first ('tilesize256x128x8', then 'execute_kernel'
    for the one left); "" when nothing does."""
    theirs = {w for o in others for w in _WORD.findall(o)}
    words = [w for w in _WORD.findall(full) if w not in theirs]
    if words and len(words[0]) <= TAG_MAX:
        return words[0]
    parts = _PART.findall(full)
    candidates = [p for p in parts if not p.isdigit() and len(p) <= TAG_MAX]
    candidates += [f"{x}_{y}" for x, y in zip(parts, parts[1:]) if len(x) + len(y) < TAG_MAX]
    left = [_pieces(o) for o in others]
    chosen: list[str] = []
    while left and len(chosen) < 3:
        best = max(candidates, key=lambda c: (sum(c not in o for o in left), "_" not in c, len(c)), default="")
        if not best or all(best in o for o in left):
            break
        chosen.append(best)
        left = [o for o in left if best in o]
    return " ".join(chosen) if not left else ""


def distinct_labels(base: list[str], fulls: list[str]) -> list[str]:
    """Short names `base` of kernels whose full names are `fulls`, each with what tells it from the kernels of another
    full name that read the same: its template arguments ('gemm_tiled<0>'), else a word of its full name
    ('direct_copy · unrolled_elementwise_kernel'); kernels of one full name keep one name."""
    groups: dict[str, list[int]] = {}
    for i, b in enumerate(base):
        groups.setdefault(b, []).append(i)
    labels = list(base)
    for members in groups.values():
        for i in members:
            others = sorted({fulls[j] for j in members if fulls[j] != fulls[i]})
            args = _template_args(fulls[i])
            if others and args and len(args) <= TAG_MAX and all(_template_args(o) != args for o in others):
                labels[i] = f"{base[i]}<{args}>"  # one template of several instances: 'gemm_tiled<0>'
                continue
            tag = _distinct(fulls[i], others) if others else ""
            labels[i] = f"{base[i]} · {tag}" if tag else base[i]
    return labels


def kernel_labels(kernels: list[rt.KernelEntry], tags: Mapping[str, str]) -> list[str]:
    """Each kernel's short name (`compact_name` of the name shown), with what tells it from the other kernels of
    another full name that would read the same: its template arguments ('gemm_tiled<0>'), else a word of its full
    name ('direct_copy · unrolled_elementwise_kernel'):
    kernels of one full name are told apart by their shape tags; any still alike get their place ('#12')."""
    base = [compact_name(k.display_name or k.name or k.demangled) for k in kernels]
    labels = distinct_labels(base, [str(k.demangled or k.name or "") for k in kernels])

    def key(i: int) -> tuple[Any, ...]:
        k = kernels[i]
        return (labels[i], tags.get(str(k.id), ""), k.process_label, k.device_id)

    seen: dict[tuple[Any, ...], int] = {}
    for i in range(len(labels)):
        seen[key(i)] = seen.get(key(i), 0) + 1
    return [f"{labels[i]} #{i + 1}" if seen[key(i)] > 1 else labels[i] for i in range(len(labels))]


def _index_list(indices: list[int]) -> str:
    """'#1–#4, #7': kernel numbers, runs joined."""
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"#{r[0]}" if len(r) == 1 else f"#{r[0]}–#{r[-1]}" for r in runs)


def _kernels_label(ids: list[Any], by_id: Mapping[str, tuple[int, str, str]]) -> str:
    """Several kernels in one short text: their names as the table shows them (each once, three at most) and their
    numbers in the kernel table ('7 kernels: foreach multiplies, foreach LerpFunctor, … (#13–#15, #19–#24)')."""
    known = [by_id[str(i)] for i in ids if str(i) in by_id]
    if not known:
        return ""
    names: list[str] = []
    for _, label, _ in known:
        if label not in names:
            names.append(label)
    shown = ", ".join(names[:3]) + (f" and {counted(len(names) - 3, 'other')}" if len(names) > 3 else "")
    numbers = _index_list([n for n, _, _ in known])
    if len(known) == 1:
        return f"{shown} (#{known[0][0]})"
    return f"{len(known)} kernels: {shown}" + (f" ({numbers})" if numbers.count(",") < 6 else "")


def _kernel(
    index: int, k: rt.KernelEntry, tags: Mapping[str, str], covering: Mapping[str, str], label: str = ""
) -> Kernel:
    analysed = number(k.analysed_duration_ns)
    own_ns = analysed if analysed is not None else k.duration_ns
    findings = [_finding(f, own_ns) for f in k.findings]
    variants = [_variant(v) for v in k.variants]
    # the time each group of findings speaks for: the launches analysed, then each variant's (0 when unknown)
    groups: list[tuple[list[Finding], float, int | None]] = [(findings, finite(own_ns) or 0.0, None)]
    groups += [(v.findings, finite(v.duration_ns) or 0.0, i) for i, v in enumerate(variants)]
    return take(
        Kernel,
        k,
        index=index,
        anchor=str(k.id or f"k{index - 1}"),  # the result's ids count from 0
        shown_name=k.display_name or k.name or k.demangled,
        label=label or compact_name(k.display_name or k.name or k.demangled),
        full_name=k.demangled or k.name,
        shape_tag=tags.get(str(k.id), ""),
        bound_reason=prose(k.bound_reason),
        no_rule=prose(k.no_rule.message) if k.no_rule is not None else _covered_note(covering.get(str(k.id)), findings),
        no_rule_label=_no_rule_label(k.no_rule, covering.get(str(k.id))),
        executable=k.process.executable if k.process is not None else None,
        source_anchor=_source(k.source_anchor),
        roofline=_roofline(k.roofline),
        launch=take(Launch, k.launch),
        python_line=_python_line(k.python_line),
        findings=findings,
        first_finding=findings[0] if findings else None,
        variants=variants,
        ncu_rules=[take(NcuRule, n) for n in k.ncu_rules],
        suppressed=[take(RuleNote, n) for n in k.suppressed],
        skipped_rules=[take(RuleNote, n) for n in k.skipped_rules],
        finding_groups=groups,
        cited_lines=cited_lines(k.findings),
    )


def _covered_note(covered_by: str | None, findings: list[Finding]) -> str | None:
    """What a kernel's card says when it has no finding of its own but a program finding names it (its table row
    says "see PRG004 (program)"): that, instead of "No findings"."""
    if covered_by is None or findings:
        return None
    return f"No finding of its own: {covered_by} (program-wide) names this kernel; see it under Across the program."


def _program_finding(p: rt.ProgramFindingEntry, by_id: Mapping[str, tuple[int, str, str]]) -> ProgramFinding:
    names: list[Any] = list(p.kernels)
    ids: list[Any] = list(p.kernel_ids)
    if len(ids) != len(names):  # ids that do not line up with the names link nothing
        ids = [None] * len(names)
    # each kernel once, with how often the chain holds it; repeats in the text counted too ('a ×100 → b')
    counts: dict[Any, int] = {}
    first_id: dict[Any, Any] = {}
    for n, i in zip(names, ids):
        counts[n] = counts.get(n, 0) + 1
        first_id.setdefault(n, i)
    shown = [f"{n} ×{c}" if c > 1 else n for n, c in counts.items()]
    return take(
        ProgramFinding,
        p,
        title=compress_chain(p.title),
        message=prose(compress_chain(p.message)),
        fix=prose(p.fix),
        kernels=shown,
        kernel_links=[(s, first_id[n]) for s, n in zip(shown, counts)],
        labels=_counted_labels([by_id[str(i)][1] for i in p.kernel_ids if str(i) in by_id] or [str(n) for n in names]),
        must_move="; ".join(_must_move(x) for x in p.predicts or []),
    )


def _counted_labels(labels: list[str]) -> list[str]:
    """Each short name once, with how often it comes ('foreach multiplies · BinaryOpScalarFunctor ×2')."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{label} ×{c}" if c > 1 else label for label, c in counts.items()]


def _report(rep: rt.ReportInfo) -> Report:
    return take(
        Report,
        rep,
        device=take(Device, rep.device),
        command_line=_command_line(rep.command_line),
        warnings=[prose(w) for w in rep.warnings],
        missing_sections=list(rep.missing_sections),
        processes=[take(Process, p) for p in rep.processes],
    )


def _action_fix(a: rt.TopAction, result: rt.Result) -> str:
    """The fix text of the finding an entry of "where to start" speaks of: the program finding's, else the kernel's
    finding of that rule (and title), on its own launches or a launch size of its own."""
    if a.scope == "program":
        p = next((p for p in result.program_findings if p.rule == a.rule and p.title == a.title), None)
        p = p or next((p for p in result.program_findings if p.rule == a.rule), None)
        if p is not None and p.fix:
            return str(p.fix)
    k = next((k for k in result.kernels if k.id is not None and k.id == a.kernel_id), None)
    if k is None:
        return ""
    found = list(k.findings) + [f for v in k.variants for f in v.findings]
    f = next((f for f in found if f.rule == a.rule and (a.scope == "program" or f.title == a.title)), None)
    f = f or next((f for f in found if f.rule == a.rule), None)
    return str(f.fix or "") if f is not None else ""


def _action_label(a: rt.TopAction, by_id: Mapping[str, tuple[int, str, str]]) -> str:
    """An action's kernels as the kernel table names them: the kernel's short name, else its kernels' ('8 kernels:
    …'), else the result's own text."""
    if a.scope != "program" and str(a.kernel_id) in by_id:
        return by_id[str(a.kernel_id)][1]
    return _kernels_label(list(a.kernel_ids or []), by_id) or str(a.kernel or "")


def report_view(result: rt.Result) -> Result:
    """The view of a result (the typed JSON contract, schema_version 1)."""
    tags = shape_tags(result)
    covering: dict[str, str] = {}  # kernel id -> the first program finding (largest saving) that names it
    for f in sorted(result.program_findings, key=lambda f: -(finite(f.estimated_saving_ns) or 0.0)):
        for kid in f.kernel_ids:
            covering.setdefault(str(kid), str(f.rule))
    shown = {k.id: k.display_name for k in result.kernels if k.display_name}
    lines = {str(k.id): _python_line(k.python_line) for k in result.kernels}
    wall_only = {(p.rule, p.title) for p in result.program_findings if p.speedup_type == "wall"}
    labels = kernel_labels(result.kernels, tags)
    by_id = {str(k.id): (i, lab, tags.get(str(k.id), "")) for i, (k, lab) in enumerate(zip(result.kernels, labels), 1)}
    actions = [
        take(
            Action,
            a,
            shape_tag=tags.get(str(a.kernel_id), "") if a.scope != "program" else "",
            covers=f"{a.launches} launch{'es' * (a.launches != 1)}, {fmt_ns(a.duration_ns)}" if a.launches else "",
            **({"kernel": shown[a.kernel_id]} if a.kernel_id in shown and a.scope != "program" else {}),
            kernel_label=_action_label(a, by_id),
            fix=prose(_action_fix(a, result)),
            follow_ups=[take(FollowUp, u) for u in a.follow_ups or []],
            python_line=lines.get(str(a.kernel_id)) if a.scope != "program" else None,
            wall=wall_words(result.host_timeline, a.estimated_wall_saving_ns, (a.rule, a.title) in wall_only),
            wall_only=(a.rule, a.title) in wall_only,
        )
        for a in result.top_actions
    ]
    gen = result.generator
    return Result(
        report=_report(result.report),
        generator=Generator(name=str(gen.name or "ncuadvisor"), version=str(gen.version or "")),
        created=result.created,
        kernels=[_kernel(i, k, tags, covering, lab) for i, (k, lab) in enumerate(zip(result.kernels, labels), start=1)],
        top_actions=actions,
        program_findings=[_program_finding(p, by_id) for p in result.program_findings],
        host=host_view(result.host_timeline),
    )
