"""The contract between the engine and a rule file (ours in rules/, or a user's own folder).

A rule file defines one subclass of `Rule`. It declares the metrics it needs as data; the engine reads them once
for every kernel, skips the rule (and says why) when the report lacks them, and calls `check` with a
`KernelContext`. The class docstring is the rule's documentation, in the sections of `DOC_SECTIONS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from ncuadvisor.analysis.roofline import PRACTICAL_FRACTION, Roofline
from ncuadvisor.model import Instruction, Kernel, num
from ncuadvisor.units import fmt_ns as _units_fmt_ns

CATEGORIES = (
    "at-roofline",
    "coalescing",
    "bank-conflicts",
    "vectorize",
    "tiling",
    "tensor-cores",
    "occupancy",
    "launch-config",
    "divergence",
    "atomics",
    "warp-primitives",
    "local-memory",
    "latency",
    "launch-overhead",
    "fusion",
    "dynamic-shapes",
    "precision",
    "cache",
    "instruction-overhead",
)

DOC_SECTIONS = (
    "What it detects",
    "Why it costs time",
    "Example",
    "Use instead",
    "Speedup estimate",
    "False positives",
)

CODE_RE = re.compile(r"^[A-Z]{2,5}\d{3}$")


@dataclass
class Evidence:
    metric: str
    value: float | str | None
    threshold: float | str | None = None
    label: str = ""
    unit: str = ""


@dataclass
class SourceRef:
    file: str | None
    line: int | None
    code: str | None = None
    sass: str | None = None
    metric: str = ""
    value: float | None = None
    share: float | None = None  # this line's share of the metric's total


@dataclass
class SourceSelection:
    """The source lines a finding points at, chosen by a rule (`KernelContext.top_lines`) and placed after the rules
    ran (`ncuadvisor.analysis.locate`): the instructions that qualify, their metric and its total over the kernel;
    their lines are those with the largest share of the total (instructions merged per line), at least `min_share`
    of it, at most `limit` of them. Iterating gives the instructions, largest value first."""

    metric: str
    total: float
    candidates: list[Instruction]
    limit: int = 3
    min_share: float = 0.05

    def _by_value(self) -> list[Instruction]:
        return sorted(self.candidates, key=lambda e: -e.value)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self._by_value())

    def __getitem__(self, index: Any) -> Any:
        return self._by_value()[index]

    def __len__(self) -> int:
        return len(self.candidates)


@dataclass
class Finding:
    rule: str
    category: str
    title: str
    message: str  # why it costs time, for this kernel, in one or two sentences
    fix: str  # what to change, for this kernel
    fix_code: str = ""  # a concrete code change (CUDA C++ or Triton)
    estimated_speedup: float = 0.0  # fraction of this kernel's time the fix should save, 0..1
    speedup_model: str = ""  # how the estimate was made
    speedup_type: str = "local"  # local to the kernel (NCU's "local"), as opposed to global to the program
    confidence: str = "medium"  # low | medium | high
    evidence: list[Evidence] = field(default_factory=list)
    source: list[SourceRef] | SourceSelection = field(default_factory=list)  # lines, placed after the rules ran
    changes_floor: bool = False  # the fix lowers the floor itself (tensor cores, precision), so no headroom cap

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class KernelContext:
    """What a rule sees of one kernel: its representative result's metrics, its roofline and its source data."""

    def __init__(
        self,
        kernel: Kernel,
        metrics: dict[str, Any],
        roofline: Roofline,
        device: dict[str, Any],
        per_instruction: dict[str, list[Instruction]],
        language: str,
        time_share: float,
        sections: Iterable[str] = (),
    ):
        self.kernel = kernel
        self.metrics = metrics
        self.roofline = roofline
        self.device = device
        self._per_instruction = per_instruction
        self.language = language  # "cuda" | "triton" | "library"
        self.time_share = time_share
        self.sections = set(sections)

    def m(self, name: str) -> float | None:
        """A metric of the representative result as a float, None when the report lacks it."""
        return num(self.metrics.get(name))

    def has(self, *names: str) -> bool:
        return all(self.m(n) is not None for n in names)

    def per_instruction(self, name: str) -> list[Instruction]:
        return self._per_instruction.get(name, [])

    @property
    def is_triton(self) -> bool:
        return self.language == "triton"

    @property
    def sm_count(self) -> int:
        return int(self.device.get("sm_count") or self.m("device__attribute_multiprocessor_count") or 0)

    @property
    def block_size(self) -> int:
        return int(self.m("launch__block_size") or 0)

    def top_lines(
        self,
        name: str,
        limit: int = 3,
        min_share: float = 0.05,
        sass_filter: Any = None,
        memory_only: bool = False,
        pcs: set[int] | None = None,
    ) -> SourceSelection:
        """The source lines with the largest share of a per-instruction metric, instructions merged per line (placed
        after the rules ran: `SourceSelection`). `memory_only` looks only at load/store/atomic instructions (the
        `memory_type` metric's)."""
        entries = self.per_instruction(name)
        total = sum(e.value for e in entries) or 0.0
        if memory_only:
            memory = {e.pc for e in self.per_instruction("memory_type")}
            entries = [e for e in entries if e.pc in memory]
        if pcs is not None:
            entries = [e for e in entries if e.pc in pcs]
        if sass_filter is not None:
            entries = [e for e in entries if sass_filter(e.sass or "")]
        if total <= 0:
            entries = []
        return SourceSelection(metric=name, total=total, candidates=entries, limit=limit, min_share=min_share)


class Rule:
    """Base class of a per-kernel rule. Subclasses set the class attributes and implement `check`."""

    code: ClassVar[str] = ""
    slug: ClassVar[str] = ""
    category: ClassVar[str] = ""
    title: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()  # metrics that must be present, else the rule is skipped
    optional: ClassVar[tuple[str, ...]] = ()  # metrics read when present
    per_instruction: ClassVar[tuple[str, ...]] = ()  # per-instruction metrics for source lines
    thresholds: ClassVar[dict[str, float]] = {}
    aliases: ClassVar[tuple[str, ...]] = ()  # old codes of a renamed rule
    # kernel languages the rule's advice applies to: a code change is no advice for a cuBLAS or ATen kernel
    languages: ClassVar[tuple[str, ...]] = ("cuda", "triton")
    origin: str = "builtin"  # set by the engine: "builtin" or the user folder the rule came from

    def check(self, k: KernelContext) -> Finding | list[Finding] | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def finding(self, **kw: Any) -> Finding:
        """A Finding with this rule's code, category and title filled in."""
        kw.setdefault("title", self.title)
        return Finding(rule=self.code, category=self.category, **kw)

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        return parse_doc(cls.__doc__ or "")


def parse_doc(doc: str) -> dict[str, str]:
    """Split a rule docstring into its sections ('What it detects:' ... ), keyed by section title."""
    sections: dict[str, str] = {}
    current = "summary"
    lines: list[str] = []
    pattern = re.compile(r"^\s*(" + "|".join(re.escape(s) for s in DOC_SECTIONS) + r")\s*:\s*$")
    for raw in doc.expandtabs().splitlines():
        match = pattern.match(raw)
        if match:
            sections[current] = _dedent("\n".join(lines))
            current, lines = match.group(1), []
        else:
            lines.append(raw)
    sections[current] = _dedent("\n".join(lines))
    return {k: v for k, v in sections.items() if v}


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip()


def time_after(duration_ns: float, new_ns: float, floor_ns: float | None) -> float:
    """Fraction of time saved going from duration to new_ns, never below the floor reached in practice."""
    if not duration_ns or duration_ns <= 0:
        return 0.0
    if floor_ns:
        new_ns = max(new_ns, floor_ns / PRACTICAL_FRACTION)
    return max(0.0, min(1.0, 1.0 - new_ns / duration_ns))


def unit_floor_ns(k: KernelContext) -> float | None:
    """The time the busiest unit (Speed Of Light) needs for the kernel's current instructions and traffic, at the
    practical fraction of its peak: the limit of fixes that change neither (occupancy, grid size, latency hiding)."""
    r = k.roofline
    busy = max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0))
    if not r.duration_ns or busy <= 0:
        return None
    return r.duration_ns * busy / 100.0 / PRACTICAL_FRACTION


# The latency-plus-throughput model of a memory-bound kernel after a fix (Little's law with a queue):
#     time = read bytes per SM × DRAM_LATENCY_CYCLES / bytes in flight per SM  +  the roofline floor
# Each SM keeps (warps × loads in flight per warp × 32 lanes × bytes per load) in flight; a round trip takes the
# unloaded latency, and the throughput term (bytes at DRAM peak) is the queueing a busy HBM adds on top of it. That
# is X = N / (L + N / P): far below peak it is Little's law, near peak it is the bandwidth.
# DRAM_LATENCY_CYCLES is calibrated, once for every kernel, on the H200 fixture (fixtures/flaws.ncu-rep.xz): solving
# the model for L on the streaming kernels whose loads in flight the SASS tells and whose DRAM is 5-75% busy gives
# copy_scalar 491, scale_u8 778, stream_smem_fit 598, stream_smem_hog 1167, hist_shared_atomic 393, chase_pointer
# 553, chase_pointer_ilp 488, stream_full_grid 413 SM cycles: median 520 (~260 ns at 1.98 GHz), the order of the
# unloaded HBM latency that microbenchmarks of Hopper report (several hundred cycles).
DRAM_LATENCY_CYCLES = 520.0
_FLOW_BREAK = ("BRA", "EXIT", "RET", "BAR", "BSYNC", "WARPSYNC", "CALL", "JMP", "BRX", "JMX")
_NO_DEST = (
    "ST",
    "RED",
    "BRA",
    "EXIT",
    "RET",
    "BAR",
    "BSYNC",
    "BSSY",
    "WARPSYNC",
    "CALL",
    "JMP",
    "MEMBAR",
    "NOP",
    "DEPBAR",
    "ERRBAR",
    "CCTL",
    "YIELD",
    "BPT",
    "BRX",
    "JMX",
    "ARRIVES",
)
_REG_RE = re.compile(r"(?<![A-Za-z0-9_])R(\d+)(\.64|\.128)?")


def _regs(operand: str) -> set[int]:
    out: set[int] = set()
    for m in _REG_RE.finditer(operand):
        base, width = int(m.group(1)), {".64": 2, ".128": 4}.get(m.group(2) or "", 1)
        out.update(range(base, base + width))
    return out


def global_loads_in_flight(k: KernelContext) -> tuple[float, float]:
    """(loads, bytes) a warp keeps in flight: the most global loads (LDG) of the kernel's hot path that its SASS issues
    before it must wait for one of them, from register dataflow over the listing in address order (a use of a load's
    register waits for it and every earlier load; a branch or barrier waits for all). Hot loads are those executed at
    least half as often as the most executed one. Bytes: 32 lanes × the width of those loads. (1, 128) without SASS."""
    entries = sorted((e for e in k.per_instruction("inst_executed") if e.sass), key=lambda e: e.pc)
    loads = {e.pc: e.value for e in entries if _opcode(e.sass).startswith("LDG") and _opcode(e.sass) != "LDGSTS"}
    if not loads:
        return 1.0, 128.0
    hot_min = 0.5 * max(loads.values())
    pending: list[tuple[set[int], int]] = []  # (destination registers, bytes per thread), in issue order
    best_n, best_bytes = 0, 0.0
    for e in entries:
        op = _opcode(e.sass)
        if op.startswith(_FLOW_BREAK):
            pending = []
            continue
        text = e.sass.strip().rstrip(";").strip()
        if text.startswith("@"):
            text = text.split(None, 1)[1] if " " in text else ""
        operands = [o.strip() for o in text.split(None, 1)[1].split(",")] if " " in text else []
        has_dest = not op.startswith(_NO_DEST)
        used = set().union(*(_regs(o) for o in (operands[1:] if has_dest else operands)))
        hit = [i for i, (regs, _) in enumerate(pending) if regs & used]
        if hit:
            pending = pending[max(hit) + 1 :]
        if loads.get(e.pc, -1.0) >= hot_min:
            width = access_bytes(e.sass) or 4
            first = min(_regs(operands[0]) or {0}) if operands else 0
            pending.append((set(range(first, first + max(1, width // 4))), width))
            if len(pending) > best_n:
                best_n, best_bytes = len(pending), 32.0 * sum(w for _, w in pending)
    return (float(best_n), best_bytes) if best_n else (1.0, 128.0)


def _opcode(sass: str) -> str:
    parts = (sass or "").strip().split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def warps_per_sm(k: KernelContext) -> float | None:
    """Achieved resident warps per SM (Occupancy section), None without it."""
    pct = k.m("sm__warps_active.avg.pct_of_peak_sustained_active")
    if pct is None:
        return None
    return pct / 100.0 * float(k.device.get("max_warps_per_sm") or 64)


def streaming_ns(k: KernelContext, bytes_in_flight_per_warp: float, warps: float | None = None) -> float | None:
    """The latency-plus-throughput time of the kernel's compulsory bytes (model above DRAM_LATENCY_CYCLES): the read
    share of them per SM × DRAM latency ÷ bytes in flight per SM, plus the roofline floor. `warps` per SM defaults
    to the achieved ones. None when the report lacks bytes, clocks or occupancy."""
    r = k.roofline
    warps = warps if warps is not None else warps_per_sm(k)
    if not (r.compulsory_bytes and r.sm_clock_hz and r.theoretical_ns and warps and bytes_in_flight_per_warp):
        return None
    read, write = k.m("dram__bytes_read.sum"), k.m("dram__bytes_write.sum")
    read_share = read / (read + (write or 0.0)) if read else 1.0
    grid = k.m("launch__grid_size") or float("inf")
    sms = min(float(k.sm_count or 0) or grid, grid)
    if not sms or sms == float("inf"):
        return None
    in_flight = warps * bytes_in_flight_per_warp
    latency_cycles = r.compulsory_bytes * read_share / sms * DRAM_LATENCY_CYCLES / in_flight
    return latency_cycles / r.sm_clock_hz * 1e9 + r.theoretical_ns


def parallelism_ns(k: KernelContext, gain: float) -> float | None:
    """The time after a fix that multiplies the work in flight by `gain` (more resident warps, more independent loads
    per warp), in the same latency-plus-throughput model as `streaming_ns`: the measured time splits into a throughput
    term, the busiest unit's work at its peak (duration × its Speed Of Light %), which the fix keeps, and a latency
    term, the rest, which Little's law divides by the gain: new = duration × (busy + (1 − busy) / gain)."""
    r = k.roofline
    busy = max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0)) / 100.0
    if not r.duration_ns or gain <= 0:
        return None
    busy = min(1.0, max(0.0, busy))
    return r.duration_ns * (busy + (1.0 - busy) / gain)


def fmt_ns(ns: float | None) -> str:
    """1234 -> '1.2 µs' ('?' when unknown), for finding messages."""
    return _units_fmt_ns(ns, missing="?", seconds=False)


def fmt_bytes(b: float | None) -> str:
    if b is None:
        return "?"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


def per_pc(ctx: KernelContext, key: str, *others: str) -> dict[int, dict[str, Any]]:
    """Join per-instruction metrics by pc, for the instructions that have `key`:
    {pc: {"file", "line", "sass", key: value, other: value, ...}}."""
    out: dict[int, dict[str, Any]] = {}
    for e in ctx.per_instruction(key):
        out[e.pc] = {"file": e.file, "line": e.line, "sass": e.sass or "", key: e.value}
    for name in others:
        for e in ctx.per_instruction(name):
            if e.pc in out:
                out[e.pc][name] = e.value
    return out


@dataclass
class ProgramFinding:
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
    evidence: list[Evidence] = field(default_factory=list)
    fix_code: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProgramContext:
    """What a program rule sees: every kernel entry (with roofline and findings) and every launch in order."""

    def __init__(
        self, kernels: list[dict[str, Any]], launches: list[dict[str, Any]], device: dict[str, Any], total_ns: float
    ):
        self.kernels = kernels  # result kernel entries (dicts), by total time
        self.by_id = {k["id"]: k for k in kernels}
        # one dict per result in launch order: {"result_id", "kernel_id", "stream", "duration_ns",
        #                                       "dram_read_bytes", "dram_write_bytes"}
        self.launches = launches
        self.device = device
        self.total_ns = total_ns


class ProgramRule:
    """Base class of a program-level rule: `check_program` returns ProgramFindings."""

    code: ClassVar[str] = ""
    slug: ClassVar[str] = ""
    category: ClassVar[str] = ""
    title: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()  # metrics read for every result (may be absent: rules degrade)
    optional: ClassVar[tuple[str, ...]] = ()
    per_instruction: ClassVar[tuple[str, ...]] = ()
    thresholds: ClassVar[dict[str, float]] = {}
    aliases: ClassVar[tuple[str, ...]] = ()
    origin: str = "builtin"

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def finding(self, **kw: Any) -> ProgramFinding:
        kw.setdefault("title", self.title)
        return ProgramFinding(rule=self.code, category=self.category, **kw)

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        return parse_doc(cls.__doc__ or "")


_WIDTH = ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1))


def access_bytes(sass: str, size_type: float | None = None) -> int | None:
    """Bytes per thread of a load/store instruction, from its SASS (`LDG.E.128` -> 16, `LDG.E.U8` -> 1, `LDG.E` -> 4);
    `memory_access_size_type` is an enumeration that only matches bits for 32 and up, so the SASS decides."""
    op = (sass or "").split(" ")[0]
    if op.startswith(("LD", "ST", "RED", "ATOM")):
        for suffix, width in _WIDTH:
            if suffix in op:
                return width
        return 4
    if size_type and size_type >= 8:
        return int(size_type) // 8
    return None


# Warp stall reasons of the Warp State Statistics section, as ncu names them.
STALL_REASONS = (
    "long_scoreboard",
    "barrier",
    "mio_throttle",
    "lg_throttle",
    "short_scoreboard",
    "math_pipe_throttle",
    "wait",
    "not_selected",
    "selected",
    "membar",
    "drain",
    "no_instruction",
    "dispatch_stall",
    "tex_throttle",
    "branch_resolving",
    "imc_miss",
    "misc",
    "sleeping",
)


def stall_metric(reason: str) -> str:
    """The metric of one stall reason: cycles warps spent stalled for it, per issued instruction."""
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def stall_total(k: KernelContext) -> float:
    """Sum of all stall reasons (per issued instruction): the denominator of a reason's share."""
    return sum(k.m(stall_metric(s)) or 0.0 for s in STALL_REASONS)


def fma_and_tensor_flops(r: Roofline) -> tuple[float, float]:
    """FLOPs on the FMA pipes (FP32 + packed FP16) and on the tensor cores, from the roofline's per-precision work."""
    fma = r.flops_by_precision.get("fp32", 0.0) + r.flops_by_precision.get("fp16", 0.0)
    tensor = sum(v for p, v in r.flops_by_precision.items() if p.startswith("tensor"))
    return fma, tensor
