"""The result of an analysis (schema_version 1): the typed form of the JSON that `ncuadvisor report` writes and every
renderer formats. `Result.to_dict()` is that JSON; `Result.from_dict()` reads it back (docs/usage.md, "Output formats").

Fields are in the order the JSON has them. The finding records (`FindingEntry`, `ProgramFindingEntry`, with their
`EvidenceEntry` and `SourceRefEntry`) are also what rules emit (`ncuadvisor.rulekit.contract` names them `Finding`,
`ProgramFinding`, `Evidence`, `SourceRef`), so they take their fields by position too. Optional ones (`optional()`) appear in some results only: per-process
fields in reports of several processes, `device_id` with several GPUs, the `profile` fields in the result of
`ncuadvisor profile`, the `torch_op`/`torch_module` pair with `--torch-ops` or ATen ranges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from ncuadvisor.result.helpers import shape_tagger
from ncuadvisor.result.host_info import HostTimeline
from ncuadvisor.result.origin import GraphReplay, ProcessRef, PythonLine, TorchContext  # noqa: F401
from ncuadvisor.result.profile_info import (  # noqa: F401  (named here too: the result's types in one place)
    Collection,
    LaunchMeasurement,
    ProfileFilters,
    ProfileInfo,
    ProfilePhase,
    Selection,
    SelectionRound,
)
from ncuadvisor.result.record import Record, flat, optional

SCHEMA_VERSION: Final = 1

Bound = Literal["memory", "compute", "latency", "launch", "unknown"]
Number = float | None
Ident = int | str  # a pid, or a rank as the launcher's environment wrote it


@dataclass(kw_only=True)
class Generator(Record):
    """The program that wrote the result."""

    name: str = "ncuadvisor"
    version: str


@dataclass(kw_only=True)
class Device(Record):
    """The GPU of the report (its first result's attributes) with the ceilings measured in it (medians over the
    kernels: clocks vary). Attributes the report lacks are null."""

    name: str | None = None
    chip: float | str | None = None
    cc_major: Number = None
    cc_minor: Number = None
    sm_count: Number = None
    l2_bytes: Number = None
    max_warps_per_sm: Number = None
    max_threads_per_sm: Number = None
    max_blocks_per_sm: Number = None
    max_registers_per_sm: Number = None
    max_shared_mem_per_sm: Number = None
    max_shared_mem_per_block_optin: Number = None
    memory_bus_width: Number = None
    max_gpu_frequency_khz: Number = None
    max_mem_frequency_khz: Number = None
    compute_capability: str | None = optional()
    peak_dram_bytes_per_s: Number = None
    peak_flops_per_s: dict[str, float | None] = field(default_factory=dict)
    sm_clock_hz: Number = None


@dataclass(kw_only=True)
class ProcessEntry(Record):
    """One process of a multi-process report, with its kernels and GPU time."""

    pid: Ident
    host: str = ""
    executable: str = ""
    rank: Ident | None = optional()
    local_rank: Ident | None = optional()
    world_size: Ident | None = optional()
    label: str  # "rank 1 (pid 4242)" or "pid 4242"
    kernels: int
    launches: int
    duration_ns: float


@dataclass(kw_only=True)
class LaunchInterval(Record):
    """The host's launch interval (CPU and driver: how long issuing one launch takes) that the program rules used,
    and where it came from: measured by `ncuadvisor profile` where the program ran, or given (`--launch-interval-us`).
    No ncu report holds it."""

    interval_ns: float
    source: str


@dataclass(kw_only=True)
class ReportInfo(Record):
    """The report that was analysed, its device and what it lacks."""

    path: str
    name: str
    ncu_version: str | None = None
    reader_version: str | None = None
    command_line: str | None = None
    device: Device
    results: int
    kernels: int
    total_duration_ns: float
    sections: list[str] = field(default_factory=list)
    missing_sections: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    processes: list[ProcessEntry] = field(default_factory=list)  # [] for one process
    devices: list[int] = field(default_factory=list)
    phase1_report: str | None = optional()
    profile: ProfileInfo | None = optional()
    launch_interval: LaunchInterval | None = optional()  # the host's launch interval the program rules used


@dataclass
class EvidenceEntry(Record):
    """A measured value a finding rests on, with the threshold it crossed."""

    metric: str
    value: float | str | None
    threshold: float | str | None = None
    label: str = ""
    unit: str = ""


@dataclass
class InlinedEntry(Record):
    """The library code (a CUDA header, Triton's language) a source line's instructions are in: the function the line
    calls, the library's file and line; `nearest` when the line is the user's closest one, not a recorded call."""

    function: str | None
    file: str | None
    line: int | None
    code: str | None = None
    nearest: bool = False


@dataclass
class SourceRefEntry(Record):
    """A source line a finding points at, with its share of the per-instruction metric."""

    file: str | None
    line: int | None
    code: str | None = None
    sass: str | None = None
    metric: str = ""
    value: float | None = None
    share: float | None = None
    inlined: InlinedEntry | None = optional()


@dataclass
class PredictionEntry(Record):
    """A counter the fix must move, and by how much: its value now, the value the fix's model expects, and the bound
    a measurement after the change must reach (`expect` "<=": at most, ">=": at least) for the fix to have done what
    it was for (`ncuadvisor diff` checks it). The counter is one of the kernel entries' `counters`."""

    metric: str
    label: str
    current: float | None
    predicted: float | None
    bound: float
    expect: Literal["<=", ">="] = "<="
    unit: str = ""
    # a program finding's `kernel_launches`: the kernels counted, when not all those the finding names
    kernel_ids: list[str] | None = optional()


@dataclass
class FindingEntry(Record):
    """What one rule found on a kernel: why it costs time, the fix, the estimated speedup and its evidence."""

    rule: str
    category: str
    title: str
    message: str
    fix: str
    fix_code: str = ""
    estimated_speedup: float = 0.0  # the fraction of the kernel's time the fix should save
    speedup_model: str = ""
    speedup_type: str = "local"
    confidence: str = "medium"
    evidence: list[EvidenceEntry] = field(default_factory=list)
    source: list[SourceRefEntry] = field(default_factory=list)
    changes_floor: bool = False
    # the counters the fix must move, and by how much (rules whose mechanism names a counter)
    predicts: list[PredictionEntry] | None = optional()

    @property
    def location(self) -> str | None:
        """`file:line` of the first source line that has both, None when none has."""
        for s in self.source:
            if s.file and s.line is not None:
                return f"{s.file}:{s.line}"
        return None


@dataclass(kw_only=True)
class SuppressedFinding(Record):
    """A finding left out, and why (the kernel is near its bound, or the saving is too small)."""

    rule: str
    title: str
    reason: str


@dataclass(kw_only=True)
class SkippedRule(Record):
    """A rule that did not run on a kernel, and why (the report lacks its metrics)."""

    rule: str
    reason: str


@dataclass(kw_only=True)
class NcuRuleEntry(Record):
    """One of Nsight Compute's own rule results that says something to act on."""

    rule: str
    name: str
    section: str
    title: str
    message: str
    type: str
    speedup_pct: float | None = None
    speedup_type: str | None = None


@dataclass(kw_only=True)
class SourceAnchor(Record):
    """The kernel's entry in its source: where a finding without a line of its own is shown."""

    file: str
    line: int
    code: str | None = None


@dataclass(kw_only=True)
class HierarchyLevel(Record):
    """One memory level of the hierarchical roofline: the bytes moved there, executed FLOP per byte, its roof."""

    level: str  # l1 | l2 | dram
    bytes: float
    intensity: Number = None
    peak_bytes_per_s: Number = None
    floor_ns: Number = None
    clock: str | None = None


@dataclass(kw_only=True)
class Roofline(Record):
    """The roofline of the kernel's representative launch: work, bytes, floors, headroom and bound."""

    duration_ns: float | None
    flops: float = 0.0
    flops_by_precision: dict[str, float] = field(default_factory=dict)
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    dram_bytes: Number = None
    ideal_bytes: Number = None
    compulsory_bytes: Number = None
    # of the compulsory bytes, loads and stores (each the smaller of what the threads needed and what moved), when
    # the report tells them apart
    load_bytes: Number = optional()
    store_bytes: Number = optional()
    tma_bytes: Number = None
    intensity: Number = None
    peak_dram_bytes_per_s: Number = None
    memory_floor_ns: Number = None
    compute_floor_ns: Number = None
    theoretical_ns: Number = None
    headroom: Number = None
    bound: Bound = "unknown"
    bound_reason: str = ""
    achieved_flops_per_s: Number = None
    achieved_dram_bytes_per_s: Number = None
    sol: dict[str, float] = field(default_factory=dict)
    # the keys of `sol` derived from the units' throughputs where the report lacks NCU's Speed Of Light percentages
    sol_derived: list[str] | None = optional()
    sm_clock_hz: Number = None
    dram_clock_hz: Number = None
    limiting_precision: str | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    ceilings: dict[str, float] = field(default_factory=dict)  # unit -> ns the unit needs at its peak, as executed
    busy_pct: dict[str, float] = field(default_factory=dict)  # unit -> % of its peak over the elapsed cycles
    # the busiest unit as executed: dram, l2, l1, fma, fp64, fp16, tensor, sfu, alu, lsu, issue, launch, latency
    limiter: str | None = None
    limiter_reason: str = ""  # the limiter in words
    limiter_share: Number = None  # the limiter's busy time at its peak ÷ the duration
    floors: dict[str, float] = field(default_factory=dict)  # the ceilings of needed work; theoretical_ns is the largest
    floor_reason: str = ""  # the floor in words: the unit, its work and its rate
    # the largest ceiling as executed (issue, ALU, LSU, the memory levels' traffic as moved), and its unit
    executed_floor_ns: Number = None
    executed_floor_unit: str | None = None
    # both floors in words when the executed floor is well above the needed one (thresholds' executed_gap), else ""
    executed_reason: str = ""
    sm_write_bytes: Number = None
    instructions: Number = None  # warp instructions executed
    # the memory levels of the hierarchical roofline: bytes, executed FLOP/byte, roof
    hierarchy: list[HierarchyLevel] = field(default_factory=list)
    clock: str | None = None  # the clock the ceilings are computed at
    launch_floor_source: str | None = optional()  # where the launch floor (`floors["launch"]`) comes from
    # where each number of the machine model comes from (fp32_peak, fp64_peak, fp16_peak, dram_peak, sm_clock):
    # "report" (or "report: <what>") or "table: sm_XX" (`analysis.archfacts`)
    sources: dict[str, str] | None = optional()
    # the kernel ran faster than its modelled floor: the model is wrong here (its floor and headroom are then None)
    model_wrong: str | None = optional()
    # the report counts neither the bytes nor the FLOPs the kernel needs: no floor, no headroom, and what would settle it
    headroom_unknown: str | None = optional()
    fp64_ratio: Number = optional()  # the device's FP64 rate ÷ its FP32 rate (its source in `sources`)


@dataclass(kw_only=True)
class Launch(Record):
    """The launch configuration and occupancy of the representative launch."""

    grid_size: Number = None
    block_size: Number = None
    registers_per_thread: Number = None
    shared_mem_static: Number = None
    shared_mem_dynamic: Number = None
    waves_per_sm: Number = None
    theoretical_occupancy_pct: Number = None
    achieved_occupancy_pct: Number = None
    stream: Number = None


@dataclass(kw_only=True)
class VariantEntry(Record):
    """Launches of a kernel group of another size than its representative's: their time, and their bound and
    findings when one of them was analysed (`profiled`); otherwise they were timed only."""

    launches: int
    duration_ns: float
    per_launch_ns: float
    time_share: float
    launch_range_ns: list[float | None]
    launch_ns: float | None = None
    profiled: bool
    bound: Bound = "unknown"
    bound_reason: str | None = None
    headroom: Number = None
    theoretical_ns: Number = None
    findings: list[FindingEntry] = field(default_factory=list)
    suppressed: list[SuppressedFinding] = field(default_factory=list)
    result_ids: list[int] = field(default_factory=list)


@dataclass(kw_only=True)
class NoRuleVerdict(Record):
    """What is known of a kernel group holding a large share of the time on which no rule fired: its bound, headroom,
    limiter and NCU's top rule, and that no rule of ours applies."""

    message: str
    bound: str | None = None
    headroom: Number = None
    limiter: str | None = None
    ncu_top_rule: str | None = None
    program_rule: str | None = optional()  # a program finding that speaks to this kernel (ATM004's chain, …)

    @property
    def is_gap(self) -> bool:
        """The kernel has room (headroom at least GAP_MIN_HEADROOM) and no rule named its cause: a gap in the rule
        set, never a verdict on the kernel."""
        return self.headroom is not None and self.headroom >= GAP_MIN_HEADROOM


# a kernel this far above its floor has room: without a finding, the rule set has a gap (ROOF001's bar)
GAP_MIN_HEADROOM: Final = 1.6


@dataclass(kw_only=True)
class KernelEntry(Record):
    """One kernel group (the launches of one kernel with one launch shape, in one process): its time, the roofline
    and findings of its representative launch, and its variants (launches of other sizes)."""

    id: str
    name: str
    demangled: str
    mangled: str = ""
    display_name: str | None = optional()  # what tells ATen's generic kernels apart: `CUDAFunctor_add<BFloat16>`
    language: str
    launches: int
    grid: str
    block: str
    nvtx: str = ""
    process: ProcessRef | None = optional()
    process_label: str | None = optional()
    device_id: int | None = optional()
    duration_ns: float
    per_launch_ns: float
    launch_range_ns: list[float | None]
    launch_note: str | None = None
    analysed_launches: int
    analysed_duration_ns: float
    variants: list[VariantEntry] = field(default_factory=list)
    time_share: float
    bound: Bound
    bound_reason: str
    headroom: Number = None
    roofline: Roofline
    launch: Launch
    findings: list[FindingEntry] = field(default_factory=list)
    no_rule: NoRuleVerdict | None = optional()  # a large kernel group no rule spoke to: what is known
    suppressed: list[SuppressedFinding] = field(default_factory=list)
    skipped_rules: list[SkippedRule] = field(default_factory=list)
    source_anchor: SourceAnchor | None = None
    ncu_rules: list[NcuRuleEntry] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    result_ids: list[int] = field(default_factory=list)
    # `ncuadvisor profile`: whether the kernel was profiled in depth, and from which report
    profiled: bool | None = optional()
    deep_report: str | None = optional()
    deep_result_ids: list[int] | None = optional()
    deep_launches: int | None = optional()
    # the measured values of the counters fixes predict (`rulekit.counters`), for `diff` to check a prediction against
    counters: dict[str, float] | None = optional()
    torch: TorchContext | None = flat()
    python_line: PythonLine | None = optional()  # `profile --python-lines`: the line that launched it

    def findings_with_time(self) -> list[tuple[list[FindingEntry], float, int | None]]:
        """The kernel's findings with the GPU time they speak for: its own over the launches it analysed, then each
        variant's over that variant's launches, with the variant's index: [(findings, ns, None), (findings, ns, 0)]."""
        parts: list[tuple[list[FindingEntry], float, int | None]] = [
            (self.findings, float(self.analysed_duration_ns), None)
        ]
        parts += [(v.findings, float(v.duration_ns), i) for i, v in enumerate(self.variants)]
        return parts

    def savings_by_rule(self) -> dict[str, tuple[FindingEntry, float, int | None]]:
        """Rule code -> (the rule's first finding, the time it saves in ns over every size of the kernel, the variant
        it was first found on: None for the kernel's own launches); at-roofline verdicts are left out."""
        out: dict[str, tuple[FindingEntry, float, int | None]] = {}
        for findings, ns, variant in self.findings_with_time():
            for f in findings:
                if f.category == "at-roofline" or not f.rule:
                    continue
                first, total, where = out.get(f.rule, (f, 0.0, variant))
                out[f.rule] = (first, total + ns * f.estimated_speedup, where)
        return out

    @property
    def at_roofline(self) -> bool:
        """Whether the analysis found the kernel at its bound (its at-roofline verdict)."""
        return any(f.category == "at-roofline" for f in self.findings)


@dataclass
class ProgramFindingEntry(Record):
    """A finding about the program as a whole (several kernels, or many launches)."""

    rule: str
    category: str
    title: str
    message: str
    fix: str
    kernels: list[str] = field(default_factory=list)  # kernel names involved, in launch order
    kernel_ids: list[str] = field(default_factory=list)
    estimated_saving_ns: float = 0.0
    saving_model: str = ""
    speedup_type: str = "global"
    confidence: str = "medium"
    evidence: list[EvidenceEntry] = field(default_factory=list)
    fix_code: str = ""
    # the counters the fix must move, and by how much: the launches of the kernels it names (`kernel_launches`)
    predicts: list[PredictionEntry] | None = optional()


@dataclass(kw_only=True)
class FollowUp(Record):
    """A further fix on the kernel of a "where to start" entry, costed on the time left after the fixes before it."""

    rule: str
    category: str
    title: str
    estimated_saving_ns: float
    program_fraction: float
    variant: int | None = optional()


@dataclass(kw_only=True)
class TopAction(Record):
    """One entry of "where to start": a finding (kernel or program level) ranked by the time it saves."""

    kernel: str
    kernel_id: str | None = None
    rule: str
    category: str
    title: str
    estimated_saving_ns: float
    program_fraction: float
    scope: Literal["kernel", "program"]
    # the launches and GPU time the saving is over: every size of the kernel the first fix was found on (kernel entries)
    launches: int | None = optional()
    duration_ns: float | None = optional()
    variant: int | None = optional()  # the variant (index) the finding was found on
    # the kernel's other fixes, each costed on the time left after the previous one (kernel entries only)
    follow_ups: list[FollowUp] | None = optional()
    # the kernels an entry speaks for (program entries: a program finding's, or the kernels one setting fixes)
    kernel_ids: list[str] | None = optional()
    # with a host timeline: the wall time the fix saves per report window, the measured timeline replayed
    estimated_wall_saving_ns: float | None = optional()


@dataclass(kw_only=True)
class Result(Record):
    """The analysis of one report: the report, every kernel group by total time, program findings, where to start."""

    schema_version: Literal[1] = SCHEMA_VERSION
    generator: Generator
    created: str
    report: ReportInfo
    kernels: list[KernelEntry] = field(default_factory=list)
    program_findings: list[ProgramFindingEntry] = field(default_factory=list)
    top_actions: list[TopAction] = field(default_factory=list)
    host_timeline: HostTimeline | None = optional()  # `--host-trace` / `--host-time`: the measured host timeline

    def kernel(self, kernel_id: str | None) -> KernelEntry | None:
        """The kernel entry of an id (`k3`), None when there is none."""
        return next((k for k in self.kernels if k.id == kernel_id), None) if kernel_id is not None else None

    def shape_tags(self) -> dict[str, str]:
        """Kernel id -> what tells it from the other kernel groups of its name ('grid (8, 8, 1)'), for the kernels
        whose name others share (`helpers.shape_tagger`): a model's gemm is many groups, one per launch shape."""
        tag = shape_tagger(self.kernels, lambda k: k.name or k.demangled, lambda k: (k.grid or "–", k.block or "–"))
        return {k.id: t for k in self.kernels if (t := tag(k))}
