"""The view of a result: plain, frozen objects with every default filled, which the renderers and templates read.

`report_view(result)` takes the result as its JSON contract (the dict `ncuadvisor report -f json` writes, with
`schema_version` 1), so that a saved JSON renders the same as a fresh analysis. Whatever the dict lacks or holds in
the wrong shape becomes an empty list, an empty object or None here, once: no renderer or template guards a lookup,
and a template that names a field the view does not have fails (jinja2's StrictUndefined) instead of printing
nothing. Values are the result's own (numbers stay numbers: the templates format them through the filters of
`ncuadvisor.units`); what a renderer would otherwise compute (a finding's saving in ns, a kernel's shape tag, the
first finding, a program finding's links) is computed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from ncuadvisor.result import shape_tags
from ncuadvisor.units import compress_chain, finite, number

AT_ROOFLINE = "at-roofline"
SOL_BARS: tuple[tuple[str, str], ...] = (
    ("memory_pct", "Memory SOL"),
    ("compute_pct", "Compute SOL"),
    ("dram_pct", "DRAM"),
    ("l2_pct", "L2"),
    ("l1_pct", "L1"),
)

T = TypeVar("T")


def as_map(value: Any) -> Mapping[str, Any]:
    """A mapping, or an empty one for anything else (None, a list, text)."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    """A list's items, or none for anything else."""
    return list(value) if isinstance(value, (list, tuple)) else []


def as_maps(value: Any) -> list[Mapping[str, Any]]:
    """A list of mappings; an item that is not one reads as an empty mapping."""
    return [as_map(v) for v in as_list(value)]


def pick(cls: type[T], raw: Mapping[str, Any], **given: Any) -> T:
    """A `cls` whose fields are `raw`'s values of the same names (None when missing), except those `given`."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    return cls(**{n: given[n] if n in given else raw.get(n) for n in names})


def times(a: Any, b: Any) -> float | None:
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
    name: Any
    sm_count: Any
    peak_dram_bytes_per_s: Any
    peak_flops_per_s: Mapping[str, Any]
    sm_clock_hz: Any  # the clock the device's ceilings are computed at (the kernels' median)


@dataclass(frozen=True)
class Process:
    label: Any
    pid: Any
    executable: Any
    kernels: Any
    launches: Any
    duration_ns: Any


@dataclass(frozen=True)
class Report:
    name: Any
    path: Any
    ncu_version: Any
    command_line: Any
    kernels: Any  # the count of kernel groups the report holds
    results: Any
    total_duration_ns: Any
    device: Device
    warnings: list[Any]
    missing_sections: list[Any]
    processes: list[Process]


@dataclass(frozen=True)
class Evidence:
    label: Any  # words: the rule's label, else the metric's name in words
    metric: Any
    value: Any
    unit: Any
    threshold: Any
    kind: str  # how the value reads: "pct" (a 0..1 fraction), "pct100" (already in %), "x" (a ratio), "num"


@dataclass(frozen=True)
class SourceLine:
    file: Any
    line: Any
    code: Any
    sass: Any
    share: Any
    metric: Any
    toolkit: bool = False  # the file is one of the CUDA toolkit's headers, not the user's code


def in_toolkit(path: Any) -> bool:
    """Whether a source path is inside the CUDA toolkit's headers (device_atomic_functions.hpp and the like)."""
    p = str(path or "").replace("\\", "/")
    return "/include/" in p and ("/cuda" in p or "/targets/" in p)


@dataclass(frozen=True)
class PythonLine:
    """The Python line that launched a kernel (`profile --python-lines`)."""

    file: Any
    line: Any
    function: Any
    code: Any
    backward_of: Any

    @property
    def where(self) -> str:
        """`model.py:42`, with `, backward of GeluBackward0` for a kernel autograd ran in backward."""
        text = f"{str(self.file or '').replace(chr(92), '/').rsplit('/', 1)[-1]}:{self.line}"
        if self.backward_of and self.backward_of != "backward":
            return f"{text}, backward of {self.backward_of}"
        return f"{text}, in backward" if self.backward_of else text


def _python_line(raw: Mapping[str, Any]) -> PythonLine | None:
    return pick(PythonLine, raw) if raw.get("file") and raw.get("line") is not None else None


def _source(raw: Mapping[str, Any]) -> SourceLine:
    return pick(SourceLine, raw, toolkit=in_toolkit(raw.get("file")))


@dataclass(frozen=True)
class Finding:
    rule: Any
    title: Any
    category: Any
    message: Any
    fix: Any
    fix_code: Any
    estimated_speedup: Any
    confidence: Any
    speedup_model: Any
    evidence: list[Evidence]
    source: list[SourceLine]
    at_roofline: bool
    saving_ns: float | None  # the time the finding saves over the launches it speaks for


@dataclass(frozen=True)
class Sol:
    memory_pct: Any
    compute_pct: Any
    dram_pct: Any
    l2_pct: Any
    l1_pct: Any


@dataclass(frozen=True)
class Roofline:
    duration_ns: Any
    theoretical_ns: Any
    memory_floor_ns: Any
    compute_floor_ns: Any
    dram_bytes: Any
    compulsory_bytes: Any
    ideal_bytes: Any
    flops: Any
    intensity: Any
    achieved_dram_bytes_per_s: Any
    peak_dram_bytes_per_s: Any
    achieved_flops_per_s: Any
    limiting_precision: Any
    limiting_peak_flops_per_s: Any  # the peak of the limiting precision, None when the report lacks it
    sm_clock_hz: Any  # the SM clock measured during the kernel
    limiter: Any  # the unit that limits the kernel ('dram', 'l2', 'fma', 'issue', 'sfu', ...) when the result names it
    limiter_reason: Any  # the same, in words
    hierarchy: list[Mapping[str, Any]]  # per memory level (l1, l2, dram): bytes, intensity, peak_bytes_per_s
    sol: Sol
    sol_bars: list[tuple[str, Any]]  # (label, percentage) in display order


@dataclass(frozen=True)
class Launch:
    registers_per_thread: Any
    shared_mem_static: Any
    shared_mem_dynamic: Any
    waves_per_sm: Any
    theoretical_occupancy_pct: Any
    achieved_occupancy_pct: Any


@dataclass(frozen=True)
class Variant:
    """Launches of a kernel whose duration sets them apart, analysed on their own (or timed only)."""

    launches: Any
    launch_range_ns: tuple[Any, Any]
    duration_ns: Any
    time_share: Any
    profiled: Any
    bound: Any
    headroom: Any
    findings: list[Finding]


@dataclass(frozen=True)
class NcuRule:
    rule: Any
    type: Any
    title: Any
    message: Any
    speedup_pct: Any
    speedup_type: Any


@dataclass(frozen=True)
class RuleNote:
    """A rule suppressed or skipped on a kernel, and why."""

    rule: Any
    title: Any
    reason: Any


@dataclass(frozen=True)
class Kernel:
    index: int  # counted from 1, as every list of the report is
    anchor: str  # the HTML id: the kernel's id, else k<position in the result, from 0>
    id: Any
    name: Any
    demangled: Any
    mangled: Any
    shown_name: Any  # the display name (the op of an ATen generic kernel), else the name, else the demangled name
    full_name: Any  # the demangled name, else the name
    shape_tag: str  # what tells it from other kernels of its name ('grid (8, 8, 1)'), else ""
    no_rule: Any  # a large kernel group no rule spoke to: what is known of it (its message), else None
    language: Any
    grid: Any
    block: Any
    launches: Any
    analysed_launches: Any
    duration_ns: Any
    analysed_duration_ns: Any
    per_launch_ns: Any
    time_share: Any
    launch_note: Any
    bound: Any
    bound_reason: Any
    headroom: Any
    nvtx: Any
    device_id: Any
    process_label: Any
    executable: Any  # of the kernel's process
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


@dataclass(frozen=True)
class Action:
    """One line of "where to start"."""

    scope: Any
    kernel: Any
    kernel_id: Any
    shape_tag: str
    rule: Any
    category: Any
    title: Any
    estimated_saving_ns: Any
    program_fraction: Any
    follow_ups: list[FollowUp] = field(default_factory=list)  # the kernel's further fixes, on the time left
    python_line: PythonLine | None = None  # the Python line that launched the kernel (profile --python-lines)


@dataclass(frozen=True)
class FollowUp:
    """A further fix under a "where to start" entry."""

    rule: Any
    title: Any
    estimated_saving_ns: Any
    program_fraction: Any


@dataclass(frozen=True)
class ProgramFinding:
    rule: Any
    category: Any
    title: Any
    message: Any
    fix: Any
    fix_code: Any
    estimated_saving_ns: Any
    kernels: list[Any]  # names
    kernel_links: list[tuple[Any, Any]]  # (name, kernel id or None)


@dataclass(frozen=True)
class Result:
    report: Report
    generator: Generator
    created: Any
    kernels: list[Kernel]
    top_actions: list[Action]
    program_findings: list[ProgramFinding]


# -- building ----------------------------------------------------------------------------------------------------


# words for the metric names rules use without a label of their own
METRIC_WORDS = {
    "dram_fraction_of_peak": "DRAM throughput, of its peak",
    "time_share": "share of the program's GPU time",
    "headroom": "headroom (measured time ÷ roofline floor)",
    "fp64_flop_share": "FP64 share of the FLOPs",
    "long_scoreboard_share": "stalls on memory (long scoreboard), share",
    "exchange_stall_share": "stalls on shared-memory exchange, share",
    "overhead_instruction_share": "overhead instructions, share",
    "loads_per_warp": "loads per warp",
    "loads_per_fma": "loads per FMA",
    "atomic_per_load": "atomics per load",
    "shared_per_global_load": "shared-memory loads per global load",
    "shared_wavefronts_per_flop": "shared-memory wavefronts per FLOP",
    "global_load_bytes_per_flop": "global load bytes per FLOP",
}


def _evidence(raw: Mapping[str, Any]) -> Evidence:
    metric = raw.get("metric")
    slug = str(metric or "")
    kind = "pct" if slug.endswith(("_share", "_fraction", "fraction_of_peak")) and not raw.get("unit") else "num"
    kind = "x" if slug == "headroom" and not raw.get("unit") else kind
    kind = "pct100" if raw.get("unit") == "%" else kind
    words = raw.get("label") or METRIC_WORDS.get(slug) or slug.replace("_", " ")
    return pick(Evidence, raw, label=words, kind=kind)


def _command_line(text: Any) -> Any:
    """The ncu command line as the report holds it, without the lone quote ncu leaves at its end."""
    if isinstance(text, str) and text.rstrip().endswith('"') and text.count('"') % 2:
        return text.rstrip()[:-1].rstrip()
    return text


def _finding(raw: Mapping[str, Any], duration_ns: Any) -> Finding:
    return pick(
        Finding,
        raw,
        evidence=[_evidence(e) for e in as_maps(raw.get("evidence"))],
        source=[_source(s) for s in as_maps(raw.get("source"))],
        at_roofline=raw.get("category") == AT_ROOFLINE,
        saving_ns=times(duration_ns, raw.get("estimated_speedup")),
    )


def _roofline(raw: Mapping[str, Any]) -> Roofline:
    sol = pick(Sol, as_map(raw.get("sol")))
    peaks = as_map(raw.get("peak_flops_per_s"))
    precision = raw.get("limiting_precision")
    return pick(
        Roofline,
        raw,
        sol=sol,
        sol_bars=[(label, getattr(sol, key)) for key, label in SOL_BARS],
        hierarchy=as_maps(raw.get("hierarchy")),
        limiting_peak_flops_per_s=peaks.get(precision) if precision and isinstance(precision, str) else None,
    )


def _variant(raw: Mapping[str, Any]) -> Variant:
    bounds = as_list(raw.get("launch_range_ns")) + [None, None]
    return pick(
        Variant,
        raw,
        launch_range_ns=(bounds[0], bounds[1]),
        findings=[_finding(f, raw.get("duration_ns")) for f in as_maps(raw.get("findings"))],
    )


def _kernel(index: int, raw: Mapping[str, Any], tags: Mapping[str, str]) -> Kernel:
    analysed = number(raw.get("analysed_duration_ns"))
    own_ns = analysed if analysed is not None else raw.get("duration_ns")
    findings = [_finding(f, own_ns) for f in as_maps(raw.get("findings"))]
    variants = [_variant(v) for v in as_maps(raw.get("variants"))]
    kid = raw.get("id")
    # the time each group of findings speaks for: the launches analysed, then each variant's (0 when unknown)
    groups: list[tuple[list[Finding], float, int | None]] = [(findings, finite(own_ns) or 0.0, None)]
    groups += [(v.findings, finite(v.duration_ns) or 0.0, i) for i, v in enumerate(variants)]
    return pick(
        Kernel,
        raw,
        index=index,
        anchor=str(kid or f"k{index - 1}"),  # the result's ids count from 0
        shown_name=raw.get("display_name") or raw.get("name") or raw.get("demangled"),
        full_name=raw.get("demangled") or raw.get("name"),
        shape_tag=tags.get(str(kid), "") if kid is not None else "",
        no_rule=as_map(raw.get("no_rule")).get("message"),
        executable=as_map(raw.get("process")).get("executable"),
        source_anchor=_source(as_map(raw.get("source_anchor"))),
        python_line=_python_line(as_map(raw.get("python_line"))),
        roofline=_roofline(as_map(raw.get("roofline"))),
        launch=pick(Launch, as_map(raw.get("launch"))),
        findings=findings,
        first_finding=findings[0] if findings else None,
        variants=variants,
        ncu_rules=[pick(NcuRule, n) for n in as_maps(raw.get("ncu_rules"))],
        suppressed=[pick(RuleNote, s) for s in as_maps(raw.get("suppressed"))],
        skipped_rules=[pick(RuleNote, s) for s in as_maps(raw.get("skipped_rules"))],
        finding_groups=groups,
    )


def _program_finding(raw: Mapping[str, Any]) -> ProgramFinding:
    names = as_list(raw.get("kernels"))
    ids = as_list(raw.get("kernel_ids"))
    if len(ids) != len(names):  # ids that do not line up with the names link nothing
        ids = [None] * len(names)
    # each kernel once, with how often the chain holds it; repeats in the text counted too ('a ×100 → b')
    counts: dict[Any, int] = {}
    first_id: dict[Any, Any] = {}
    for n, i in zip(names, ids):
        counts[n] = counts.get(n, 0) + 1
        first_id.setdefault(n, i)
    shown = [f"{n} ×{c}" if c > 1 else n for n, c in counts.items()]
    return pick(
        ProgramFinding,
        raw,
        title=compress_chain(raw.get("title")) if raw.get("title") is not None else None,
        message=compress_chain(raw.get("message")) if raw.get("message") is not None else None,
        kernels=shown,
        kernel_links=[(s, first_id[n]) for s, n in zip(shown, counts)],
    )


def _report(raw: Mapping[str, Any]) -> Report:
    dev = as_map(raw.get("device"))
    return pick(
        Report,
        raw,
        device=pick(Device, dev, peak_flops_per_s=as_map(dev.get("peak_flops_per_s"))),
        command_line=_command_line(raw.get("command_line")),
        warnings=as_list(raw.get("warnings")),
        missing_sections=as_list(raw.get("missing_sections")),
        processes=[pick(Process, p) for p in as_maps(raw.get("processes"))],
    )


def generator_of(raw: Any) -> Generator:
    gen = as_map(raw)
    return Generator(name=str(gen.get("name") or "ncuadvisor"), version=str(gen.get("version") or ""))


def report_view(result: Mapping[str, Any]) -> Result:
    """The view of a result dict (the JSON contract, schema_version 1)."""
    result = as_map(result)
    tags = shape_tags(result)
    shown = {str(k.get("id")): k.get("display_name") for k in as_maps(result.get("kernels")) if k.get("display_name")}
    lines = {str(k.get("id")): _python_line(as_map(k.get("python_line"))) for k in as_maps(result.get("kernels"))}
    actions = [
        pick(
            Action,
            a,
            shape_tag=tags.get(str(a.get("kernel_id")), "") if a.get("scope") != "program" else "",
            **({"kernel": shown[str(a.get("kernel_id"))]} if str(a.get("kernel_id")) in shown else {}),
            follow_ups=[pick(FollowUp, u) for u in as_maps(a.get("follow_ups"))],
            python_line=lines.get(str(a.get("kernel_id"))) if a.get("scope") != "program" else None,
        )
        for a in as_maps(result.get("top_actions"))
    ]
    return Result(
        report=_report(as_map(result.get("report"))),
        generator=generator_of(result.get("generator")),
        created=result.get("created"),
        kernels=[_kernel(i, k, tags) for i, k in enumerate(as_maps(result.get("kernels")), start=1)],
        top_actions=actions,
        program_findings=[_program_finding(p) for p in as_maps(result.get("program_findings"))],
    )
