"""The roofline bound of a kernel, from the report's own metrics: work, bytes, floor time, headroom and bound.

Peaks are computed per report from the device's own peak-per-cycle metrics times the clocks measured during the
kernel (ncu locks the SM clock at base by default; `--clock-control none` leaves it free, `sources["clock_control"]`
says which). Where the report lacks a peak (ncu's default set has no FLOP peaks) it comes from the machine model
of the device's architecture (`archfacts`: its lanes per SM × SMs × the SM clock), and the DRAM peak of a GDDR or
LPDDR board from its device attributes (memory clock × bus width × 2), not from a clock measured during a short
kernel. `sources` says where each came from ("report", "report: ...", "table: sm_XX").

A kernel measured more than 5% faster than its floor shows a defect of the model (`model_wrong`; within 5% it is at
its floor, `sources["floor"]`); a report that counts neither the bytes nor the FLOPs a kernel needs has no floor of
its work (`headroom_unknown`), unless a compute pipe is the busiest unit: its busy time is then the floor. Either way theoretical_ns and headroom are None where no floor holds.

Two floors. The floor ("theoretical minimum time", `theoretical_ns`) is the largest ceiling of the work the kernel
needs (`ceilings.py`): FP32 lane operations by instruction mix, FP64, FP16, tensor FLOPs by type, SFU transcendentals,
the compulsory bytes at the DRAM peak, and the launch floor; headroom, ROOF001 and every estimate cap use it. A
library kernel (PyTorch's ATen, cuBLAS, ...: `library_code`) that reads no global memory computes what it writes from
its index and arguments alone (torch.randn's Philox and Box-Muller): every instruction it issues is its algorithm's
work, none the user's to cut, so its instruction issue time (4 warp instructions per clock per SM) is a floor too. The
executed floor (`executed_floor_ns`) is the largest ceiling of the kernel as it ran: every pipe's busy time (issue at
4 warp instructions per clock per SM, ALU, LSU, the FMA pipe's warp instructions) and each memory level's traffic as
moved; its unit is the `limiter` unless no unit is half busy. Index arithmetic, spills, untiled loads and divergence
raise the executed floor, not the needed one: where the executed floor is well above the needed one, the room is in
executing less, and `executed_reason` says so beside the limiter.

Compulsory bytes are loads + stores, each the smaller of what the threads needed (ideal L2 sectors × 32) and what
moved for it: DRAM's read bytes for loads, the L2 write sectors from the SMs for stores (`needed.py`: an output still
dirty in L2 when the kernel ends never reaches `dram__bytes_write`). Loads and stores are told apart by the SASS of
the per-instruction ideal sectors; without them only their sum is known. A kernel that keeps DRAM busy moving sectors
its threads do not use then shows large headroom, not "near its bound". A report without byte counts (`--set basic`)
gets its memory floor from DRAM utilization: duration × DRAM % of peak.

FLOPs are executed operations from the thread-instruction counters (FFMA 2, FADD/FMUL 1, HFMA2 4, ...): a LayerNorm
executes more than its textbook FLOPs (reciprocals, polynomial erf). Packed-half counters also count the
`HFMA2.MMA Rd, -RZ, RZ, imm, imm` moves the compiler uses to load constants; those run on the tensor pipe, never on
the FMA pipe's fp16 type, so a kernel whose FMA pipe ran no fp16 instruction has no fp16 FLOPs.

Every ceiling is computed at the SM clock measured during the kernel (`sm__cycles_elapsed.avg.per_second`), DRAM's
at the DRAM clock (`dram__cycles_elapsed.avg.per_second`), L2's at the L2 clock (`lts__cycles_elapsed.avg.per_second`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ncuadvisor.analysis import archfacts as _archfacts
from ncuadvisor.analysis import ceilings as _ceilings
from ncuadvisor.analysis import needed as _needed
from ncuadvisor.analysis.ceilings import FLOP_PEAKS as _FLOP_PEAKS
from ncuadvisor.analysis.ceilings import LAUNCH_FLOOR_NS, LAUNCH_FLOOR_SOURCE, level_floors
from ncuadvisor.analysis.roofline_words import (
    EXECUTED_GAP,
    executed_words,
    floor_words,
    limiter_words,
    own_work_words,
    unit_words,
)
from ncuadvisor.model import num
from ncuadvisor.units import fmt_ns, fmt_pct

SECTOR_BYTES = 32

# Thresholds of the bound classification (named so the docs and the JSON can show them).
LAUNCH_BOUND_NS = 5_000.0  # shorter than this, launch overhead (~2-5 µs) is the same order as the work
LATENCY_SOL_PCT = 50.0  # neither memory nor compute above this % of peak: latency-bound
GRID_FILL_FRACTION = 0.5  # fewer blocks than this × SMs: the grid cannot fill the GPU
FP32_LANES, SFU_LANES = 128.0, 16.0  # per SM per clock: FP32 lanes and XU (MUFU) lanes
# The share of a peak that the best kernels reach in practice (H200: a float4 copy 86% of DRAM peak, an FMA chain
# 83% of the FP32 peak). No estimate promises a time below theoretical_ns / PRACTICAL_FRACTION.
PRACTICAL_FRACTION = 0.85
# A kernel measured this close under its floor is at it: the floor's peak and measured clock carry a few percent, and
# bytes a producer left in L2 come back faster than DRAM's. Further under, the model is wrong for it (`model_wrong`).
AT_FLOOR_TOLERANCE = 0.05

# name -> (thread-instruction metric, FLOPs per instruction)
_FLOP_TERMS: dict[str, list[tuple[str, float]]] = {
    "fp32": [
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 2.0),
        ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", 1.0),
        ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 1.0),
    ],
    "fp64": [
        ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed", 2.0),
        ("smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed", 1.0),
        ("smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed", 1.0),
    ],
    "fp16": [  # packed half2 instructions: 2 lanes
        ("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed", 4.0),
        ("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed", 2.0),
        ("smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed", 2.0),
    ],
}
# name -> (peak instructions per cycle metric, FLOPs per instruction)
# Tensor-core work by source type, in the tensor path's own ops (FLOPs). The peak_sustained of a path without the
# `_sparsity_off` suffix is the 2:4-sparse rate, twice the dense one: SPARSE_PEAK_PATHS are halved.
TENSOR_PATHS = {
    "tensor_fp16": "sm__ops_path_tensor_src_fp16",
    "tensor_bf16": "sm__ops_path_tensor_src_bf16_dst_fp32",
    "tensor_tf32": "sm__ops_path_tensor_src_tf32_dst_fp32",
    "tensor_fp64": "sm__ops_path_tensor_src_fp64",
    "tensor_fp8": "sm__ops_path_tensor_src_fp8_sparsity_off",
    "tensor_int8": "sm__ops_path_tensor_src_int8",
}

SPARSE_PEAK_PATHS = {"tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_int8"}

# Sectors the SMs wrote to L2 (stores and reductions that left the SM; 32 bytes each).
SM_WRITE_SECTORS = "lts__t_sectors_srcunit_tex_op_write.sum"
FP16_PIPE = "sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_elapsed"
THREADS_PER_INST = "smsp__thread_inst_executed_per_inst_executed.ratio"
SOL_METRICS = {
    "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "compute_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
}
# The two Speed Of Light percentages are each the maximum over a breakdown of many sub-unit counters, which costs
# ncu replay passes of their own (on the H200: the duration with both, 10 passes; with the tensor pipe or the DRAM
# bytes, 1). Where a report lacks them they are derived (`derive_sol`) from single counters of the same breakdowns:
# compute = the busiest SM pipe, instruction issue or the address-divergence unit (shuffles, branches); memory = the
# busiest of DRAM, L1/shared, L2's tag lookups and the crossbar into and out of L2 (`lts__throughput` also counts
# sub-units that NCU's memory percentage leaves out: 78% against 51% on a pointer chase, so it is the fallback only).
DERIVED_SOL = (SOL_METRICS["memory_pct"], SOL_METRICS["compute_pct"])  # read when a report has them, else derived
# L1's throughput is a breakdown maximum too (5 replay passes alone on the H200); on every kernel of the fixtures it
# equals one of these two single counters (117 of 117: LSU data-pipe wavefronts, or L1's requests to the crossbar)
L1_UNITS = [
    "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
    "l1tex__m_l1tex2xbar_req_cycles_active.avg.pct_of_peak_sustained_elapsed",
]
# The SM clock where a report lacks its rate (`--set basic` has neither sm__cycles_elapsed.avg.per_second nor the
# FLOP peaks): the GPC clock (the SMs' clock domain), else the SM cycles ÷ the duration. Read, never collected.
SM_CLOCK_FALLBACKS = ("gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg")
# A custom set of ComputeWorkloadAnalysis alone records the pipes' and the issue slots' busy shares over the SM's
# active cycles (`.pct_of_peak_sustained_active`), not the elapsed ones the ceilings read: each elapsed share is the
# active one × the SM's active ÷ elapsed cycles, from the cycle counters where the report has both, else from one
# rate per cycle of each kind (the instructions executed per active and per elapsed cycle). Read, never collected.
ACTIVE_CYCLE_RATIOS = (
    ("sm__cycles_active.avg", "sm__cycles_elapsed.avg"),
    ("sm__inst_executed.avg.per_cycle_elapsed", "sm__inst_executed.avg.per_cycle_active"),
)
ACTIVE_SHARES = {
    m: m.removesuffix("_elapsed") + "_active"
    for m in (
        *_ceilings.PIPE_PCT.values(),
        *_ceilings.PIPE_PCT_FALLBACK.values(),
        "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_elapsed",
    )
}
# read where a report has them, never collected for the roofline (`profile` collects the elapsed shares themselves)
ACTIVE_FALLBACKS = (
    *ACTIVE_SHARES.values(),
    *[m for pair in ACTIVE_CYCLE_RATIOS for m in pair if m not in SM_CLOCK_FALLBACKS],
)
# Whether a kernel reads global memory at all: the sectors L2 sends L1 (Speed Of Light's L1 breakdown, in ncu's default
# set) or, where a report has the memory tables instead, the global load sectors; read where a report has them.
GLOBAL_READS = (
    "l1tex__m_xbar2l1tex_read_sectors.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
)
# the breakdown maxima `ncuadvisor profile` does not collect (read when a report has them, derived otherwise), and the
# L2 -> L1 read sectors (`profile` collects the global load sectors instead)
NOT_COLLECTED = (*DERIVED_SOL, SOL_METRICS["l1_pct"], *SM_CLOCK_FALLBACKS, GLOBAL_READS[0])
SOL_COMPUTE_UNITS = [*_ceilings.PIPE_PCT.values(), "sm__inst_executed_pipe_adu.avg.pct_of_peak_sustained_elapsed"]
SOL_L2_UNITS = [
    "lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed",
    "lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed",
]

METRICS: list[str] = [
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    "dram__bytes.sum.peak_sustained",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum.per_second",
    "memory_l2_theoretical_sectors_global",
    "memory_l2_theoretical_sectors_global_ideal",
    "derived__memory_l2_theoretical_sectors_global_excessive",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    SM_WRITE_SECTORS,
    "smsp__inst_executed.sum",
    FP16_PIPE,
    THREADS_PER_INST,
    *_ceilings.METRICS,
    *_ceilings.HIERARCHY_METRICS,
    "launch__grid_size",
    "launch__block_size",
    "launch__waves_per_multiprocessor",
    "device__attribute_multiprocessor_count",
    *[m for terms in _FLOP_TERMS.values() for m, _ in terms],
    *[m for m, _ in _FLOP_PEAKS.values()],
    *[p + ".sum" for p in TENSOR_PATHS.values()],
    *[p + ".sum.peak_sustained" for p in TENSOR_PATHS.values()],
    *SOL_METRICS.values(),
    *SOL_COMPUTE_UNITS,
    *SOL_L2_UNITS,
    *L1_UNITS,
    *SM_CLOCK_FALLBACKS,
    *ACTIVE_FALLBACKS,
    GLOBAL_READS[0],
]


@dataclass
class Roofline:
    duration_ns: float | None
    flops: float = 0.0
    flops_by_precision: dict[str, float] = field(default_factory=dict)
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    dram_bytes: float | None = None
    ideal_bytes: float | None = None
    compulsory_bytes: float | None = None
    load_bytes: float | None = None  # of the compulsory bytes: loads (when the report tells loads from stores)
    store_bytes: float | None = None  # of the compulsory bytes: stores
    tma_bytes: float | None = None  # bytes loaded through the tensor memory accelerator (L2 -> SM)
    intensity: float | None = None  # FLOP per compulsory byte
    peak_dram_bytes_per_s: float | None = None
    memory_floor_ns: float | None = None
    compute_floor_ns: float | None = None
    theoretical_ns: float | None = None
    headroom: float | None = None  # measured ÷ theoretical
    bound: str = "unknown"  # memory | compute | latency | launch | unknown
    bound_reason: str = ""
    achieved_flops_per_s: float | None = None
    achieved_dram_bytes_per_s: float | None = None
    sol: dict[str, float] = field(default_factory=dict)
    sol_derived: list[str] | None = None  # the keys of `sol` derived from unit counters (derive_sol), when any
    sm_clock_hz: float | None = None
    dram_clock_hz: float | None = None
    limiting_precision: str | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    # per-unit ceilings (ns at the unit's peak), the units' busy % of peak, and the unit that sets the floor
    ceilings: dict[str, float] = field(default_factory=dict)
    busy_pct: dict[str, float] = field(default_factory=dict)
    limiter: str | None = None
    limiter_reason: str = ""
    limiter_share: float | None = None  # the limiter's busy time at its peak ÷ the duration
    floors: dict[str, float] = field(default_factory=dict)  # the ceilings of needed work: theoretical_ns is the largest
    floor_reason: str = ""  # the floor in words: the unit, its work and its rate
    executed_floor_ns: float | None = None  # the largest ceiling as executed (memory levels' traffic as moved too)
    executed_floor_unit: str | None = None  # the unit that sets it
    executed_reason: str = ""  # both floors in words, when the executed floor is well above the needed one
    sm_write_bytes: float | None = None  # bytes the SMs wrote to L2
    instructions: float | None = None  # warp instructions executed
    hierarchy: list[dict[str, Any]] = field(default_factory=list)  # per memory level: bytes, intensity, roof
    clock: str = "SM clock measured during the kernel (sm__cycles_elapsed.avg.per_second)"
    launch_floor_source: str | None = None  # where the launch floor (floors["launch"]) comes from
    # where each number of the machine model comes from: "report" (or "report: <what>") or "table: sm_XX"
    # (`archfacts`), for the peaks (fp32_peak, fp64_peak, fp16_peak, dram_peak) and the clock
    sources: dict[str, str] = field(default_factory=dict)
    # the kernel ran faster than its modelled floor (headroom below 1): a defect of the model, said here; the floor
    # and headroom are then unknown (None) so that no verdict or estimate rests on them
    model_wrong: str | None = None
    # the report counts neither the bytes nor the FLOPs the kernel needs (ncu's default set): no floor of needed work,
    # so theoretical_ns and headroom are None; said here, with the sections that would settle it
    headroom_unknown: str | None = None
    # the device's FP64 rate ÷ its FP32 rate (1/2 on A100 and H100, 1/32 to 1/64 on GeForce, T4, L4, A10, A40, H800),
    # from the report's peaks, else the machine model's (its source in `sources["fp64_ratio"]`)
    fp64_ratio: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in (
            "load_bytes",
            "store_bytes",
            "launch_floor_source",
            "model_wrong",
            "headroom_unknown",
            "fp64_ratio",
        ):  # optional in the result: written only when known
            if out[key] is None:
                del out[key]
        if out["sol_derived"] is None:
            del out["sol_derived"]
        if not out["sources"]:
            del out["sources"]
        return out


def hfma_kinds_matter(row: Mapping[str, Any]) -> bool:
    """Whether `compute` reads what the HFMA2 instructions compute (`facts.hfma_kinds`) for this row: HFMA2 thread
    instructions counted, and the fp16 pipe not idle (an idle pipe zeroes the fp16 work whatever they computed)."""
    return bool(num(row.get(_FLOP_TERMS["fp16"][0][0]))) and num(row.get(FP16_PIPE)) != 0.0


Reader = Callable[[str], float | None]  # a metric of the row by name, None when the report lacks it


def compute(
    row: Mapping[str, Any],
    sm_count: float | None = None,
    facts: _needed.InstructionFacts | None = None,
    launch_floor: tuple[float, str] | None = None,
    dram_peak_bytes_per_s: float | None = None,
    model: _archfacts.Machine | None = None,
    library_code: bool = False,
) -> Roofline:
    """The roofline of one result (a row of Profile.results). `facts`: what its per-instruction data tells
    (`needed.instruction_facts`): the load/store split of the compulsory bytes and the needed share of the XU work.
    `launch_floor`: (ns, source) of the device's launch floor (`ceilings.launch_floor`; the H200's by default).
    `dram_peak_bytes_per_s`: the device's DRAM peak (`ceilings.DRAM_PEAKS`), used when the row lacks its own.
    `model`: the device's machine model (`archfacts.machine`): the DRAM peak of GDDR and LPDDR boards from the
    device attributes, and the FP peaks a report lacks (its lanes per SM × SMs × the SM clock), each with its source
    in `sources`. `library_code`: the kernel is a library's (PyTorch's ATen, cuBLAS, ...), not the user's: where it
    reads no global memory, its instructions are its own algorithm's work (`reads_no_global_memory`)."""
    g, l1_derived, active_ratio, from_active = _reader(row)
    duration_ns = g("gpu__time_duration.sum")
    r = Roofline(duration_ns=duration_ns)
    r.thresholds = {
        "launch_bound_ns": LAUNCH_BOUND_NS,
        "latency_sol_pct": LATENCY_SOL_PCT,
        "grid_fill_fraction": GRID_FILL_FRACTION,
        "executed_gap": EXECUTED_GAP,
    }
    seconds = duration_ns * 1e-9 if duration_ns else None
    cycles = _clocks(r, g, seconds, model)
    lanes, tensor_ops = _work(r, g, cycles, facts)
    _fp_peaks(r, g, model)
    _bytes(r, g, seconds, facts)
    _dram_peak(r, g, model, dram_peak_bytes_per_s)
    for key, metric in SOL_METRICS.items():
        v = g(metric)
        if v is not None:
            r.sol[key] = v
    r.sol_derived = (["l1_pct"] if l1_derived else []) + derive_sol(r.sol, g) or None

    # Floors: every unit's ceiling; the floor is the largest.
    # the compulsory bytes are a floor only where DRAM's bytes were counted: the ideal sectors alone count every
    # access, cache hits included (a self-join re-reading its points from L1/L2), an upper bound of what DRAM must move
    bytes_counted = r.compulsory_bytes is not None and r.dram_bytes is not None
    pipes, lane_share = _floors(r, g, lanes, tensor_ops, facts, bytes_counted)
    if library_code and pipes.get("issue") and reads_no_global_memory(g):
        r.floors["issue"] = pipes["issue"]  # the library's algorithm: every instruction it issues is needed work
    if from_active:
        r.sources["pipe_shares"] = (
            "report: busy over the active cycles × active ÷ elapsed cycles"
            if active_ratio is not None
            else "report: busy over the active cycles (the report has no active ÷ elapsed cycles: an upper bound)"
        )
    measured = r.dram_bytes is not None or r.compulsory_bytes is not None or r.flops_by_precision or r.busy_pct
    if not measured:
        return _finish(r, row, sm_count)  # a duration-only report: no floor to measure headroom against
    r.floors["launch"], r.launch_floor_source = launch_floor or (LAUNCH_FLOOR_NS, LAUNCH_FLOOR_SOURCE)
    r.theoretical_ns = max(r.floors.values())
    compute_side = [t for u, t in r.floors.items() if u not in ("dram", "launch")]
    r.compute_floor_ns = max(compute_side) if compute_side else None
    r.floor_reason = floor_words(r, lanes)
    # Ceilings of the kernel as executed: the floors and every pipe's busy time (issue, ALU, LSU, ...).
    r.ceilings = dict(r.floors)
    for unit, t in pipes.items():
        r.ceilings[unit] = max(r.ceilings.get(unit, 0.0), t)
    if duration_ns:
        r.headroom = duration_ns / r.theoretical_ns
        memory_side = (r.sol.get("memory_pct") or 0.0) >= (r.sol.get("compute_pct") or 0.0)
        if not bytes_counted and (not any(r.flops_by_precision.values()) or memory_side):
            _headroom_unknown(r, pipes, lane_share, duration_ns)
        elif r.headroom < 1.0:
            _under_the_floor(r, duration_ns)
    if r.compulsory_bytes:
        r.intensity = r.flops / r.compulsory_bytes
    if seconds:
        r.achieved_flops_per_s = r.flops / seconds if r.flops else 0.0
        if r.dram_bytes is not None:
            r.achieved_dram_bytes_per_s = r.dram_bytes / seconds
    _limiter(r, g, duration_ns, facts)
    return _finish(r, row, sm_count)


def _reader(row: Mapping[str, Any]) -> tuple[Reader, bool, float | None, list[str]]:
    """The metric reader of one row, (reader, whether L1's throughput is derived, the active ÷ elapsed cycles, the
    names read from their active-cycle share): L1's throughput from its single counters where the Speed Of Light %
    is missing, and a busy share over the active cycles as a share of the elapsed ones where the elapsed one is."""
    l1_derived = num(row.get(SOL_METRICS["l1_pct"])) is None and any(num(row.get(m)) is not None for m in L1_UNITS)
    active_ratio = _active_ratio(row)
    from_active: list[str] = []

    def g(name: str) -> float | None:
        if name == SOL_METRICS["l1_pct"] and l1_derived:  # L1's throughput from its single counters
            return max(v for v in (num(row.get(m)) for m in L1_UNITS) if v is not None)
        v = num(row.get(name))
        if v is None and name in ACTIVE_SHARES and (active := num(row.get(ACTIVE_SHARES[name]))) is not None:
            # the busy share over the active cycles, as a share of the elapsed ones (as it is without their ratio)
            from_active.append(name)
            return active * (active_ratio if active_ratio is not None else 1.0)
        return v

    return g, l1_derived, active_ratio, from_active


def _active_ratio(row: Mapping[str, Any]) -> float | None:
    """The SM's active cycles ÷ its elapsed cycles (`ACTIVE_CYCLE_RATIOS`), None when the report tells neither."""
    for active, elapsed in ACTIVE_CYCLE_RATIOS:
        a, e = num(row.get(active)), num(row.get(elapsed))
        if a is not None and e:
            return min(1.0, max(0.0, a / e))
    return None


def _clocks(r: Roofline, g: Reader, seconds: float | None, model: _archfacts.Machine | None) -> float | None:
    """The SM and DRAM clocks measured during the kernel (the SM's from the GPC clock or the SM cycles where the
    report lacks it, said in `sources`), into `r`; returns the SM cycles the kernel ran, None when unknown."""
    sm_hz = g("sm__cycles_elapsed.avg.per_second")
    dram_hz = g("dram__cycles_elapsed.avg.per_second")
    if sm_hz is None:
        gpc_hz, sm_cycles = (g(m) for m in SM_CLOCK_FALLBACKS)
        sm_hz = gpc_hz or (sm_cycles / seconds if (sm_cycles and seconds) else None)
        if sm_hz:
            r.sources["sm_clock"] = "report: " + (
                "gpc__cycles_elapsed.avg.per_second" if gpc_hz else "SM cycles ÷ duration"
            )
    r.sm_clock_hz, r.dram_clock_hz = sm_hz, dram_hz
    if model is not None and "clock_control" in model.sources:
        r.sources["clock_control"] = model.sources["clock_control"]
    return sm_hz * seconds if (sm_hz and seconds) else None


def _work(
    r: Roofline, g: Reader, cycles: float | None, facts: _needed.InstructionFacts | None
) -> tuple[dict[str, float], float]:
    """Work, by precision (executed operations), into `r.flops_by_precision`, `r.flops` and `r.instructions`; returns
    the lane operations of each FP pipe and the tensor pipe's operations."""
    lanes: dict[str, float] = {}
    fp16_pipe_pct = g(FP16_PIPE)
    kinds = facts.hfma_kinds if facts else None
    if cycles:
        for prec, terms in _FLOP_TERMS.items():
            total, lane_ops, seen = 0.0, 0.0, False
            for metric, flops_per_inst in terms:
                v = g(metric)
                if v is not None:
                    seen = True
                    per_inst, work = flops_per_inst, 1.0
                    if "op_hfma" in metric and kinds and (n := sum(kinds.values())):
                        # by operands: HFMA2 also issues adds (× 1), multiplies (+ 0) and constant moves (0 × 0)
                        per_inst = sum(_needed.HFMA_FLOPS[k] * c for k, c in kinds.items()) / n
                        work = 1.0 - kinds["move"] / n
                    total += v * cycles * per_inst
                    lane_ops += v * cycles * work
            if prec == "fp16" and fp16_pipe_pct == 0.0:
                # only immediate-only HFMA2.MMA moves (constant loads): no packed-half arithmetic ran
                total, lane_ops = 0.0, 0.0
            if seen:
                r.flops_by_precision[prec] = total
                lanes[prec] = lane_ops
    tensor_ops = 0.0
    idle = g(_ceilings.PIPE_PCT["tensor"]) == 0.0
    for name, path in TENSOR_PATHS.items():
        v = g(path + ".sum")
        if v is None and idle and g(path + ".sum.peak_sustained") is not None:
            v = 0.0  # the count left out (`profile` phase 2 when phase 1 saw the pipe idle): an idle pipe did no work
        if v is not None:
            r.flops_by_precision[name] = v
            tensor_ops += v
    r.flops = sum(r.flops_by_precision.values())
    r.instructions = g("smsp__inst_executed.sum")
    return lanes, tensor_ops


def _fp_peaks(r: Roofline, g: Reader, model: _archfacts.Machine | None) -> None:
    """The FP and tensor peaks at the SM clock measured (the machine model's lanes where the report lacks a peak of
    work it counted), and the FP64 rate ÷ the FP32 rate, into `r`, each with its source."""
    sm_hz = r.sm_clock_hz
    if sm_hz:
        for prec, (metric, per_inst) in _FLOP_PEAKS.items():
            v = g(metric)
            lanes_key = "fp16x2" if prec == "fp16" else prec
            if v:
                r.peak_flops_per_s[prec] = v * per_inst * sm_hz
                r.sources[f"{prec}_peak"] = "report"
            elif r.flops_by_precision.get(prec) and model and model.sm_count and (per_sm := model.lanes.get(lanes_key)):
                # work counted, its peak missing from the report: the lanes per SM of the machine model
                r.peak_flops_per_s[prec] = per_sm * model.sm_count * per_inst * sm_hz
                r.sources[f"{prec}_peak"] = model.sources.get(f"{lanes_key}_lanes", "table")
        for name, path in TENSOR_PATHS.items():
            v = g(path + ".sum.peak_sustained")
            if v:
                r.peak_flops_per_s[name] = v * sm_hz / (2.0 if name in SPARSE_PEAK_PATHS else 1.0)

    p64, p32 = r.peak_flops_per_s.get("fp64"), r.peak_flops_per_s.get("fp32")
    if p64 and p32:
        r.fp64_ratio = p64 / p32
        tables = sorted(r.sources[k] for k in ("fp64_peak", "fp32_peak") if r.sources.get(k, "report") != "report")
        r.sources["fp64_ratio"] = tables[0] if tables else "report"
    elif model is not None and model.fp64_ratio:
        r.fp64_ratio = model.fp64_ratio
        r.sources["fp64_ratio"] = model.sources.get("fp64_lanes", "table")


def _bytes(r: Roofline, g: Reader, seconds: float | None, facts: _needed.InstructionFacts | None) -> None:
    """Bytes, into `r`: what DRAM moved, what the threads needed (ideal sectors), what the SMs wrote and TMA read,
    and the compulsory bytes: loads (the smaller of what the threads needed and what DRAM read) + stores (what left
    the SMs)."""
    dram_read, dram_write = g("dram__bytes_read.sum"), g("dram__bytes_write.sum")
    if dram_read is not None or dram_write is not None:
        r.dram_bytes = (dram_read or 0.0) + (dram_write or 0.0)
    elif (dram_rate := g("dram__bytes.sum.per_second")) is not None and seconds:
        r.dram_bytes = dram_rate * seconds
    ideal = g("memory_l2_theoretical_sectors_global_ideal")
    if ideal is not None:
        r.ideal_bytes = ideal * SECTOR_BYTES
    sm_write = g(SM_WRITE_SECTORS)
    if sm_write is not None:
        r.sm_write_bytes = sm_write * SECTOR_BYTES
    r.tma_bytes = g("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum")
    # The ideal sectors count per-thread (LSU) accesses only: a kernel that loads through TMA (cuBLAS, CUTLASS on
    # Hopper) moves its operands outside them, so only what moved is complete. TMA copies whole tiles: no waste.
    need = _needed.needed_bytes(
        ideal_sectors=ideal,
        split=facts.ideal_split if facts else None,
        dram_read=dram_read,
        dram_write=dram_write,
        dram_bytes=r.dram_bytes,
        sm_write_bytes=r.sm_write_bytes,
        uses_tma=bool(r.tma_bytes),
    )
    r.compulsory_bytes, r.load_bytes, r.store_bytes = need.total, need.loads, need.stores


def _dram_peak(r: Roofline, g: Reader, model: _archfacts.Machine | None, dram_peak_bytes_per_s: float | None) -> None:
    """The DRAM peak, into `r` with its source: a GDDR or LPDDR board's from its attributes, else the report's peak
    per cycle × the DRAM clock measured, else the attributes', else the device's known peak."""
    peak_bpc = g("dram__bytes.sum.peak_sustained")
    dram_hz = r.dram_clock_hz
    attrs_peak = model.dram_peak_bytes_per_s if model is not None else None
    if attrs_peak and model is not None and model.memory in ("GDDR", "LPDDR"):
        # a GDDR clock measured during a short kernel reads low (an A40: 497-547 GB/s against its 696): the
        # device's own memory clock × bus width
        r.peak_dram_bytes_per_s = attrs_peak
        r.sources["dram_peak"] = model.sources["dram_peak"]
    elif peak_bpc and dram_hz:
        r.peak_dram_bytes_per_s = peak_bpc * dram_hz
        r.sources["dram_peak"] = "report: dram__bytes.sum.peak_sustained × the DRAM clock measured"
    elif attrs_peak and model is not None:
        r.peak_dram_bytes_per_s = attrs_peak
        r.sources["dram_peak"] = model.sources["dram_peak"]
    elif dram_peak_bytes_per_s:
        r.peak_dram_bytes_per_s = dram_peak_bytes_per_s  # the device's known peak: the report lacks its own
        r.sources["dram_peak"] = "table: the device's measured DRAM peak (ceilings.DRAM_PEAKS)"


def _floors(
    r: Roofline,
    g: Reader,
    lanes: Mapping[str, float],
    tensor_ops: float,
    facts: _needed.InstructionFacts | None,
    bytes_counted: bool,
) -> tuple[dict[str, float], float]:
    """The floors of the work the kernel needs, into `r.floors` (and the memory floor, the limiting precision and
    the pipes' busy shares): FP lanes by instruction mix (thread-level, so divergence and predication do not count),
    tensor FLOPs, SFU operations, compulsory DRAM bytes. Returns every pipe's busy time and the active lanes' share
    of a warp instruction."""
    duration_ns = r.duration_ns
    if bytes_counted and r.peak_dram_bytes_per_s:
        assert r.compulsory_bytes is not None
        r.memory_floor_ns = r.compulsory_bytes / r.peak_dram_bytes_per_s * 1e9
    elif r.sol.get("dram_pct") and duration_ns:
        # No byte counts (e.g. --set basic): DRAM's own utilization says how long its bytes take at its peak.
        r.memory_floor_ns = duration_ns * r.sol["dram_pct"] / 100.0
    compute_floor = None
    for prec, flops in r.flops_by_precision.items():
        peak = r.peak_flops_per_s.get(prec)
        if not (flops and peak):
            continue
        # FP pipes take one lane per instruction whatever its FLOPs: FADD/FMUL lanes cost as much as FFMA lanes
        t = lanes[prec] / (peak / _FLOP_PEAKS[prec][1]) * 1e9 if prec in lanes else flops / peak * 1e9
        if compute_floor is None or t > compute_floor:
            compute_floor, r.limiting_precision = t, prec
        unit = {"fp32": "fma", "fp64": "fp64", "fp16": "fp16"}.get(prec, "tensor")
        r.floors[unit] = max(r.floors.get(unit, 0.0), t)
    pipes, r.busy_pct = _ceilings.pipe_ceilings(g, duration_ns)
    if not tensor_ops and "tensor" in pipes:
        # no matrix instruction ran: the tensor pipe ran HFMA2.MMA, packed-half FMAs when the FMA pipe ran fp16
        # work too, else only the immediate-only moves that load constants (no arithmetic: no floor)
        hmma = pipes.pop("tensor")
        if g(FP16_PIPE):
            pipes["fp16"] = max(pipes.get("fp16", 0.0), hmma)
    # A pipe's busy time counts warp instructions; × the active threads per instruction ÷ 32 it counts lanes, so
    # divergence does not raise the floor.
    active = g(THREADS_PER_INST)
    lane_share = min(1.0, active / 32.0) if active else 1.0
    for unit in _ceilings.NEEDED_PIPES:
        if unit not in pipes:
            continue
        xu_share = facts.xu_needed_share if facts else None
        if unit == "sfu" and xu_share is not None:
            # by opcode: the transcendentals' share of the XU busy time (conversions, integer division are not needed)
            if xu_share > 0:
                r.floors["sfu"] = pipes["sfu"] * xu_share * lane_share
            continue
        if unit == "sfu" and (
            r.flops_by_precision.get("fp64") or r.floors.get("fma", 0.0) * FP32_LANES < pipes[unit] * SFU_LANES
        ):
            # Without SASS: XU also converts float <-> double and runs integer division's reciprocal, so its busy
            # time counts as needed only in FP code with at least as many FP32 lane operations as XU operations
            continue
        if unit != "sfu" and r.flops_by_precision.get(unit) and unit in lanes:
            continue  # counted from thread instructions above
        r.floors[unit] = max(r.floors.get(unit, 0.0), pipes[unit] * lane_share)
    if r.memory_floor_ns:
        r.floors["dram"] = r.memory_floor_ns
    return pipes, lane_share


def _limiter(r: Roofline, g: Reader, duration_ns: float | None, facts: _needed.InstructionFacts | None) -> None:
    """The memory hierarchy's roofs, the limiter (the busiest unit, "latency" when none is half busy) and the
    executed floor (the largest ceiling of the instruction stream and the memory traffic as they ran), each with its
    words, into `r`."""
    r.hierarchy = _ceilings.hierarchy(g, r.flops, r.dram_bytes, r.peak_dram_bytes_per_s)
    r.limiter, r.limiter_share = _ceilings.limiter_of(r.ceilings, level_floors(r), duration_ns)
    if r.limiter is not None and r.limiter_share is not None and r.limiter_share < LATENCY_SOL_PCT / 100:
        r.limiter = "latency"  # no unit (nor the launch) would take half the time at its peak: the kernel waits
    r.limiter_reason = limiter_words(r)
    first = r.model_wrong or r.headroom_unknown
    if first:
        r.limiter_reason = f"{first}; {r.limiter_reason}" if r.limiter_reason else first
    executed = {**r.ceilings}
    for level, t in level_floors(r).items():
        executed[level] = max(executed.get(level, 0.0), t)
    r.executed_floor_unit = max(executed, key=lambda u: executed[u])
    r.executed_floor_ns = executed[r.executed_floor_unit]
    clocks = {"SM": r.sm_clock_hz, "L1": g(_ceilings.L1_CLOCK), "L2": g(_ceilings.L2_CLOCK), "DRAM": r.dram_clock_hz}
    xu_share, xu_ops = (facts.xu_needed_share, facts.xu_opcodes) if facts else (None, ())
    r.executed_reason = executed_words(r, xu_share, clocks, xu_ops)


# A kernel reads no global memory when L2 sends its L1 no sector (or its global loads touch none): at most this %.
NO_READS_PCT = 0.001


def reads_no_global_memory(g: Reader) -> bool:
    """The kernel loads nothing from global memory (`GLOBAL_READS`): what it writes is computed from its index and
    its arguments alone (a random-number generator, `arange`, a fill). False where the report records neither."""
    pct, sectors = (g(m) for m in GLOBAL_READS)
    if pct is not None:
        return pct <= NO_READS_PCT and not sectors
    return sectors is not None and sectors == 0


# The sections that count what a kernel needs: its FLOPs (thread instructions by type), the bytes DRAM moved and the
# bytes its threads asked for (ideal sectors)
COUNTING_SECTIONS = ("SpeedOfLight_RooflineChart", "MemoryWorkloadAnalysis", "SourceCounters")
# the pipes whose busy share stands for the compute floor where the work is not counted (the default set); not the
# XU (SFU): it also runs conversions and bit operations (__ffs, popc), which are executed work, not needed work
UTILISATION_PIPES = ("fma", "fp64", "fp16", "tensor")


def _headroom_unknown(r: Roofline, pipes: Mapping[str, float], lane_share: float, duration_ns: float) -> None:
    """A report that counts neither the bytes nor the FLOPs the kernel needs (ncu's default set, `--set basic`). Its
    DRAM floor would be DRAM's busy time, re-reads and wasted sectors included, so a DRAM-busy kernel would look near
    its floor whatever its algorithm needs (a naive GEMM re-reading its tiles): no floor. The compute floor is the
    busiest compute pipe's busy time at its peak (SpeedOfLight's pipe utilisation); where that pipe is busier than
    DRAM and longer than the launch, it is the floor (a cuBLAS SGEMM with its FMA pipe 97% busy: 1.03× its floor),
    said as coming from the utilisation; otherwise the floor and the headroom are unknown."""
    busy = {u: pipes[u] * lane_share for u in UTILISATION_PIPES if pipes.get(u)}
    if r.floors.get("issue"):
        busy["issue"] = r.floors["issue"]  # a library kernel reading no memory: its issue time is its work (counted)
    unit = max(busy, key=lambda u: busy[u]) if busy else None
    r.compute_floor_ns = busy[unit] if unit else None
    r.floors.pop("dram", None)  # DRAM's busy time is not the time of the bytes the kernel needs
    if unit and busy[unit] >= (r.memory_floor_ns or 0.0) and busy[unit] >= r.floors.get("launch", 0.0):
        r.floors[unit] = max(r.floors.get(unit, 0.0), busy[unit])
        r.theoretical_ns = max(r.floors.values())
        r.headroom = duration_ns / r.theoretical_ns
        if unit == "issue":
            r.floor_reason = own_work_words(r)
            r.sources["floor"] = "report: instructions issued (a library kernel that reads no memory)"
            return
        r.floor_reason = (
            f"the {unit_words(unit)} pipe, {fmt_pct(busy[unit] / duration_ns)} busy, takes {fmt_ns(busy[unit])} at "
            "its peak (SpeedOfLight's pipe utilisation: the report counts no work)"
        )
        r.sources["floor"] = "report: pipe utilisation"
        return
    r.headroom_unknown = (
        "headroom unknown: this report counts neither the bytes nor the FLOPs the kernel needs (ncu's default set), "
        f"and DRAM or the launch is busier than any compute pipe; the sections {', '.join(COUNTING_SECTIONS)} "
        "(or `ncu --set full`) would settle it"
    )
    r.theoretical_ns = r.headroom = None
    r.floor_reason = ""


def _under_the_floor(r: Roofline, duration_ns: float) -> None:
    """A kernel measured under its modelled floor: within `AT_FLOOR_TOLERANCE` it is at its floor (the floor then at
    most its measured time, headroom 1, said in `sources["floor"]`); further under, the model is wrong for it."""
    assert r.theoretical_ns is not None and r.headroom is not None
    if r.headroom < 1.0 - AT_FLOOR_TOLERANCE:
        _model_wrong(r, duration_ns)
        return
    r.sources["floor"] = (
        f"measured {1.0 - r.headroom:.1%} under the modelled floor of {fmt_ns(r.theoretical_ns)}, within "
        f"{AT_FLOOR_TOLERANCE:.0%} (the peak's and the clock's precision; inputs a producer left in L2): at its floor, "
        "which is at most the measured time"
    )
    r.theoretical_ns, r.headroom = duration_ns, 1.0


def _model_wrong(r: Roofline, duration_ns: float) -> None:
    """A kernel measured faster than its modelled floor: the model (a peak, the launch floor, a count of work) is
    wrong for it. Said in `model_wrong`; its floor and headroom become unknown, so that nothing ("leave it", an
    estimate capped at the floor) rests on them. `floors` keeps what the model said."""
    assert r.theoretical_ns is not None
    r.model_wrong = (
        f"faster than its modelled floor: the model is wrong here (measured {fmt_ns(duration_ns)} against a floor of "
        f"{fmt_ns(r.theoretical_ns)}: {r.floor_reason or 'the largest of its floors'})"
    )
    r.theoretical_ns = r.headroom = None


def derive_sol(sol: dict[str, float], g: Callable[[str], float | None]) -> list[str]:
    """Fill in the Speed Of Light percentages a report lacks from single unit counters (in place): `compute_pct` as
    the busiest of `SOL_COMPUTE_UNITS`, `memory_pct` as the busiest of DRAM, L1/shared and `SOL_L2_UNITS` (L2's own
    throughput where the report has neither of those). Returns the keys derived. Checked against the measured percentages on
    every full-section report at hand: `benchmarks/derived_sol.py`."""
    derived = []
    # only from a collection of the units: instruction issue for compute, DRAM and L1 for memory (phase 1 of
    # `profile` has the tensor pipe alone, which says nothing of the other pipes)
    if "compute_pct" not in sol and g(_ceilings.PIPE_PCT["issue"]) is not None:
        sol["compute_pct"] = max(v for v in (g(m) for m in SOL_COMPUTE_UNITS) if v is not None)
        derived.append("compute_pct")
    if "memory_pct" not in sol and "dram_pct" in sol and "l1_pct" in sol:
        l2 = [v for v in (g(m) for m in SOL_L2_UNITS) if v is not None]
        if not l2 and "l2_pct" in sol:
            l2 = [sol["l2_pct"]]
        sol["memory_pct"] = max([sol["dram_pct"], sol["l1_pct"], *l2])
        derived.append("memory_pct")
    return derived


def _finish(r: Roofline, row: Mapping[str, Any], sm_count: float | None) -> Roofline:
    r.bound, r.bound_reason = classify(r, row, sm_count)
    return r


# The units `Roofline.limiter` names, by the side of the machine they belong to. LSU counts with memory: its busy
# time is load/store instructions, which coalescing, vector width and spills change.
LIMITER_MEMORY_UNITS = frozenset({"dram", "l2", "l1", "shared", "lsu"})
LIMITER_FLOP_UNITS = frozenset({"fma", "fp64", "fp16", "tensor"})
LIMITER_INSTRUCTION_UNITS = frozenset({"issue", "alu", "sfu"})  # busy with instructions that are not FLOPs


def limiter_side(r: Roofline) -> str:
    """memory | compute | latency | launch | unknown: the side of the unit that limits the kernel (`r.limiter`).

    Rules decide by this, not by the Speed Of Light word `r.bound`, and the result shows it as the kernel's bound: SM
    throughput is a maximum over sub-units, so an issue- or ALU-limited kernel at 1-2 FLOP/byte is "compute" there
    while its FP pipes idle, and a kernel whose L1 or L2 carries wasted sectors can be limited by that level while
    DRAM looks idle. A report without the metrics the limiter needs falls back to `r.bound`. A launch-bound kernel
    (`r.bound`: shorter than the launch overhead, or a grid that cannot fill the GPU) stays "launch": its units idle
    for want of work, not of a faster unit."""
    if r.bound == "launch":
        return "launch"
    return _unit_side(r.limiter) or (r.bound if r.bound in ("memory", "compute", "latency", "launch") else "unknown")


def _unit_side(unit: str | None) -> str | None:
    """memory | compute | latency | launch for a unit `Roofline.limiter` names, None for none."""
    if unit in LIMITER_MEMORY_UNITS:
        return "memory"
    if unit in LIMITER_FLOP_UNITS or unit in LIMITER_INSTRUCTION_UNITS:
        return "compute"
    if unit in ("latency", "launch"):
        return unit
    return None


def shown_bound(r: Roofline) -> tuple[str, str]:
    """The bound word a kernel's entry shows (its badge) and its reason: the limiter's side (`limiter_side`), the
    word the rules decide by; where Speed Of Light's word differs, the reason names the limiter and says both. "launch"
    is the launch overhead's word (a kernel shorter than `LAUNCH_BOUND_NS`): a longer kernel whose grid cannot fill the
    GPU shows its limiter's side (a 6.8 ms stream on 16 blocks: latency), the grid in the reason."""
    side = limiter_side(r)
    grid_side = _unit_side(r.limiter)
    if side == "launch" and (r.duration_ns or 0.0) >= LAUNCH_BOUND_NS and grid_side != "launch":
        if grid_side is not None:
            return grid_side, r.bound_reason  # the limiter's own words are `limiter_reason`, shown beside
        # no limiter named (a report without the units' counters): Speed Of Light's side, else not known
        word, why = _sol_side(r.sol)
        return word, f"{why}; {r.bound_reason}"
    if side == r.bound or side == "unknown":
        return r.bound, r.bound_reason
    why = r.limiter_reason or f"limited by {r.limiter}"
    return side, f"{why}; Speed Of Light alone says {r.bound}: {r.bound_reason}"


def _sol_side(sol: Mapping[str, float]) -> tuple[str, str]:
    """The side Speed Of Light's percentages give a kernel that no grid or duration settles, with its reason, or
    "unknown" where the report has neither percentage."""
    mem, comp = sol.get("memory_pct"), sol.get("compute_pct")
    if mem is None and comp is None:
        return "unknown", "the report counts no unit's throughput: what limits the kernel is not known"
    mem, comp = mem or 0.0, comp or 0.0
    if max(mem, comp) < LATENCY_SOL_PCT:
        return "latency", f"memory {_pct(mem)} and compute {_pct(comp)} of peak: both far below, it waits on latency"
    return ("memory", f"memory {_pct(mem)} of peak") if mem >= comp else ("compute", f"compute {_pct(comp)} of peak")


def classify(r: Roofline, row: Mapping[str, Any], sm_count: float | None) -> tuple[str, str]:
    """memory | compute | latency | launch, with the reason in words."""
    grid = num(row.get("launch__grid_size"))
    sms = sm_count or num(row.get("device__attribute_multiprocessor_count"))
    if r.duration_ns is not None and r.duration_ns < LAUNCH_BOUND_NS:
        return "launch", f"{r.duration_ns / 1e3:.1f} µs per launch: launch overhead is the same order as the work"
    if grid is not None and sms and grid < GRID_FILL_FRACTION * sms:
        return "launch", f"{int(grid)} blocks for {int(sms)} SMs: the grid cannot fill the GPU"
    mem, comp = r.sol.get("memory_pct"), r.sol.get("compute_pct")
    if mem is None and comp is None:
        if r.memory_floor_ns and r.compute_floor_ns:
            side = "memory" if r.memory_floor_ns >= r.compute_floor_ns else "compute"
            return side, "from the roofline floors only (no Speed Of Light data)"
        if r.duration_ns is None and not r.busy_pct and r.dram_bytes is None:
            return "unknown", "ncu recorded nothing for this result: no duration and no metric (it was not measured)"
        return "unknown", "the report has neither Speed Of Light nor roofline metrics"
    mem, comp = mem or 0.0, comp or 0.0
    if max(mem, comp) < LATENCY_SOL_PCT:
        return "latency", (
            f"memory {_pct(mem)} and compute {_pct(comp)} of peak: both far below, the kernel waits on latency"
        )
    units = memory_units(r.sol) or [(mem, "memory")]
    if mem >= comp:  # named by its busiest unit: "L1/shared throughput 86% of peak (L2 21%, DRAM <1%; compute 86%)"
        (top, name), rest = units[0], units[1:]
        others = "".join(f"{n} {_pct(v)}, " for v, n in rest)
        return "memory", f"{name} throughput {_pct(top)} of peak ({others}compute {_pct(comp)})"
    return "compute", f"compute throughput {_pct(comp)} of peak ({', '.join(f'{n} {_pct(v)}' for v, n in units)})"


# the memory units of Speed Of Light: the memory throughput is the busiest one's
MEMORY_UNITS = (("l1_pct", "L1/shared"), ("l2_pct", "L2"), ("dram_pct", "DRAM"))


def _pct(v: float) -> str:
    return fmt_pct(v / 100)


def memory_units(sol: Mapping[str, float]) -> list[tuple[float, str]]:
    """The memory units' throughputs (% of peak) with their names, busiest first; [] where the report has none."""
    return sorted(((sol[k], name) for k, name in MEMORY_UNITS if sol.get(k) is not None), key=lambda t: -t[0])
