"""Performance models the rules share: time after a fix, latency and throughput, access widths, stalls, SASS.

Each function takes a kernel's context (or its roofline) and returns a number a rule turns into an estimated speedup;
none reads the report. Rule files import these, the contract and the SASS reader through `ncuadvisor.rulekit`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ncuadvisor.analysis.roofline import (
    ACTIVE_CYCLE_RATIOS,
    LIMITER_FLOP_UNITS,
    LIMITER_INSTRUCTION_UNITS,
    LIMITER_MEMORY_UNITS,
    PRACTICAL_FRACTION,
    Roofline,
)
from ncuadvisor.analysis.roofline import limiter_side as limiter_side  # re-exported: rules read it here
from ncuadvisor.metrics import LaunchStats, MemoryWorkloadAnalysis, Occupancy, SourceCounters, WarpStateStats
from ncuadvisor.rulekit.sass import FLOW_BREAK, Instruction, access_bytes, data_register, opcode, parse, registers
from ncuadvisor.units import fmt_ns as _units_fmt_ns

if TYPE_CHECKING:  # annotations only: the context type is the contract's
    from ncuadvisor.rulekit.contract import KernelContext


def time_after(duration_ns: float, new_ns: float, floor_ns: float | None) -> float:
    """Fraction of time saved going from duration to new_ns, never below the floor reached in practice."""
    if not duration_ns or duration_ns <= 0:
        return 0.0
    if floor_ns:
        new_ns = max(new_ns, floor_ns / PRACTICAL_FRACTION)
    return max(0.0, min(1.0, 1.0 - new_ns / duration_ns))


# The units `roofline.limiter` names, by the side of the machine they belong to, and the side of a kernel's limiter:
# one definition in the analysis, which the result's bound word shows too.
MEMORY_UNITS = LIMITER_MEMORY_UNITS
FLOP_UNITS = LIMITER_FLOP_UNITS
INSTRUCTION_UNITS = LIMITER_INSTRUCTION_UNITS


UNIT_NAMES = {
    "dram": "DRAM",
    "l2": "L2",
    "l1": "L1",
    "shared": "shared memory",
    "lsu": "the load/store pipe",
    "issue": "instruction issue",
    "alu": "the integer ALU",
    "sfu": "the SFU (XU) pipe",
    "fma": "the FMA pipe",
    "fp64": "the FP64 pipe",
    "fp16": "the FP16 pipe",
    "tensor": "the tensor cores",
}


def limiter_phrase(r: Roofline) -> str:
    """The limiter as a finding says it: "limited by L2", "latency-bound", or the Speed Of Light word without one."""
    unit = r.limiter
    if unit in ("latency", "launch"):
        return f"{unit}-bound"
    if unit:
        return f"limited by {UNIT_NAMES.get(unit, unit)}"
    return f"{r.bound}-bound"


def kept_units_ns(r: Roofline, changed: frozenset[str]) -> float | None:
    """The time the units a fix leaves alone still need: the largest ceiling as executed (`r.ceilings`: each pipe's
    busy time at its peak, the floors of the needed work) among the units not in `changed`. A fix that only changes
    the sectors a kernel moves keeps its instructions, so it cannot run faster than their issue."""
    kept = [t for u, t in r.ceilings.items() if u not in changed and u != "launch"]  # the launch is in the floor
    return max(kept) if kept else None


def busiest_unit_pct(r: Roofline) -> float:
    """The busiest unit's share of the time at its peak, in %: Speed Of Light's memory and compute shares and each
    unit of the roofline (`busy_pct`: the pipes, L1, L2, DRAM). Speed Of Light's memory share can be DRAM's alone
    where L2 is busier: a pointer chase's one sector per dependent load keeps L2 at 55% and DRAM at 40% on an H100
    (48% and 28% on an H200)."""
    return max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0), *r.busy_pct.values(), 0.0)


def unit_floor_ns(k: KernelContext) -> float | None:
    """The time the busiest unit (`busiest_unit_pct`) needs for the kernel's current instructions and traffic, at the
    practical fraction of its peak: the limit of fixes that change neither (occupancy, grid size, latency hiding)."""
    r = k.roofline
    busy = busiest_unit_pct(r)
    if not r.duration_ns or busy <= 0:
        return None
    return r.duration_ns * busy / 100.0 / PRACTICAL_FRACTION


# -- the bytes a kernel must move, and the kernel after a fix ------------------------------------------------------


def compulsory_bytes(r: Roofline) -> float | None:
    """The bytes the kernel must move, the one definition every rule uses: loads + stores, each the smaller of what the
    threads needed (ideal L2 sectors × 32) and what moved for it (DRAM reads; the SMs' L2 writes), or what moved
    alone for a kernel that loads through TMA (`analysis/needed.py`). None where the report counts no bytes."""
    return r.compulsory_bytes


def compulsory_load_bytes(r: Roofline) -> float | None:
    """The loads of the compulsory bytes, where the report tells loads from stores; else all compulsory bytes."""
    return r.load_bytes if r.load_bytes is not None else r.compulsory_bytes


def compulsory_ns(r: Roofline, fraction: float = PRACTICAL_FRACTION) -> float | None:
    """The time the compulsory bytes take at `fraction` of DRAM's peak: the roofline's memory floor ÷ fraction (a
    report without DRAM byte counts: DRAM's busy time, else the compulsory bytes at the peak). None without any."""
    if r.memory_floor_ns:
        return r.memory_floor_ns / fraction
    if r.compulsory_bytes and r.peak_dram_bytes_per_s:
        return r.compulsory_bytes / (fraction * r.peak_dram_bytes_per_s) * 1e9
    return None


def fixed_kernel_ns(
    k: KernelContext, work_ns: float, changed: frozenset[str], waits: tuple[str, ...] | None = None
) -> float:
    """The modelled time of the kernel after a fix: the time its new code needs (`work_ns`), no less than the units the
    fix leaves alone need as executed (`kept_units_ns` of the units not in `changed`) and the compulsory bytes at 85%
    of DRAM's peak; bounded, when `waits` are given, by the stall time the fix removes (`stall_bounded_ns`: a fix
    removes the waits it addresses, not the others)."""
    r = k.roofline
    new_ns = max(work_ns, kept_units_ns(r, changed) or 0.0, compulsory_ns(r) or 0.0)
    return stall_bounded_ns(k, new_ns, waits) if waits else new_ns


def busy_scaled_ns(k: KernelContext, scale: dict[str, float]) -> float | None:
    """The time after a fix that scales the busy share of some units (`scale`: unit -> factor; the others keep theirs):
    the kernel keeps its busiest unit as busy as it is now, so the time follows that unit's work, duration × the
    largest new busy share ÷ the largest busy share now. None without units' busy shares."""
    r = k.roofline
    busy = {u: v for u, v in r.busy_pct.items() if u != "launch"}
    if not r.duration_ns or not busy or max(busy.values()) <= 0:
        return None
    new = {u: v * scale.get(u, 1.0) for u, v in busy.items()}
    return r.duration_ns * max(new.values()) / max(busy.values())


# the bytes of one output element of a tensor-core product, by its input type (a bf16 GEMM in PyTorch writes bf16;
# TF32 and FP64 write their own width; FP8 and INT8 products write at least 16 bits): an assumption the finding says
_OUTPUT_BYTES = {
    "tensor_fp16": 2,
    "tensor_bf16": 2,
    "tensor_tf32": 4,
    "tensor_fp64": 8,
    "tensor_fp8": 2,
    "tensor_int8": 4,
}


@dataclass(frozen=True)
class GemmShape:
    """A tensor-core product's shape as its launch and counters tell it, whatever the kernel's name: `outputs` the
    elements of C (M·N, from the bytes the SMs wrote at the product type's output width), `k` the depth (FLOPs ÷
    2·M·N), `tiles` the blocks of the grid, `tile_outputs` the outputs per tile, `epilogue_ratio` the bytes a tile
    writes ÷ the operand bytes its main loop reads (TMA or L1 loads): large when K is too short for the loads and
    math to outweigh each tile's prologue and epilogue."""

    outputs: float
    k: float
    tiles: float
    tile_outputs: float
    epilogue_ratio: float | None
    output_bytes: int


def gemm_shape(k: KernelContext) -> GemmShape | None:
    """`GemmShape` of a kernel whose work is tensor-core FLOPs; None without them, the SMs' writes or the grid."""
    r = k.roofline
    tensor = {p: v for p, v in r.flops_by_precision.items() if p.startswith("tensor") and v > 0}
    grid = k.m(LaunchStats.GRID_SIZE)
    written = r.store_bytes or r.sm_write_bytes
    if not tensor or not grid or not written:
        return None
    kind = max(tensor, key=lambda p: tensor[p])
    width = _OUTPUT_BYTES.get(kind, 2)
    outputs = written / width
    flops = sum(tensor.values())
    loaded = r.tma_bytes or None
    return GemmShape(
        outputs=outputs,
        k=flops / (2.0 * outputs),
        tiles=grid,
        tile_outputs=outputs / grid,
        epilogue_ratio=written / loaded if loaded else None,
        output_bytes=width,
    )


# The latency-plus-throughput model of a memory-bound kernel after a fix (Little's law with a queue):
#     time = read bytes per SM × DRAM_LATENCY_CYCLES / bytes in flight per SM  +  the roofline floor
# Each SM keeps (warps × loads in flight per warp × 32 lanes × bytes per load) in flight; a round trip takes the
# unloaded latency, and the throughput term (bytes at DRAM peak) is the queueing a busy HBM adds on top of it. That
# is X = N / (L + N / P): far below peak it is Little's law, near peak it is the bandwidth.
# DRAM_LATENCY_CYCLES is calibrated, once for every kernel, on the H200 fixture (fixtures/flaws.ncu-rep.xz): solving
# the model for L on the streaming kernels whose loads in flight the SASS tells and whose DRAM is 5-75% busy gives
# copy_scalar 491, scale_u8 778, stream_smem_fit 598, stream_smem_hog 1167, hist_shared_atomic 393, chase_pointer
# 553, chase_pointer_ilp 488, stream_full_grid 413 SM cycles: median 520 (~260 ns at 1.98 GHz), the order of the
# unloaded HBM latency that microbenchmarks of Hopper report (several hundred cycles). Not measured on other
# architectures (GDDR boards, other clocks): there the same cycles are assumed, an H200 calibration.
DRAM_LATENCY_CYCLES = 520.0

# The share of DRAM's peak a coalesced kernel reaches, by the bytes each lane loads (the floor of a kernel after a fix
# that leaves it streaming its compulsory bytes): the median of compulsory bytes at peak ÷ duration over the planted
# kernels the roofline finds DRAM-limited, with no more than 10% of their global sectors wasted and at least 40 µs
# long, in the H100 and H200 captures of flaws.cu and patterns.cu (fixtures/h100-planted-2026-12-06/, fixtures/):
# 4-byte loads (global load sectors per request 4) 0.757, over ten kernels from 0.66 (hist_shared_atomic, H100) to
# 0.86 (transpose_smem_padded, H100); 16-byte loads 0.908, over six, from 0.88 to 0.94 (copy_vec4, scale_u8x16,
# aos16_vec4 on both GPUs). tests/test_dram_fraction.py recomputes both. Wider loads reach more of the peak: the same
# bytes in a quarter of the requests. 8-byte loads are not measured: between the two, by log2 of the width; narrower
# loads than 4 bytes are given the 4-byte share, an upper bound (fewer bytes per request still).
ACHIEVABLE_DRAM_FRACTION = {4: 0.757, 16: 0.908}


def achievable_dram_fraction(width_bytes: float) -> float:
    """`ACHIEVABLE_DRAM_FRACTION` at a load width (bytes per lane): the 4-byte share at or below 4 bytes, the 16-byte
    one at or above 16, between them by log2 of the width."""
    lo, hi = ACHIEVABLE_DRAM_FRACTION[4], ACHIEVABLE_DRAM_FRACTION[16]
    if width_bytes <= 4:
        return lo
    if width_bytes >= 16:
        return hi
    return lo + (hi - lo) * (math.log2(width_bytes) - 2.0) / 2.0


# The share of L1's peak a stream of global loads that mostly hit L1 reaches, by the load requests each warp issues
# in its life (T): T / (T + L1_WARP_OVERHEAD_REQUESTS), at most PRACTICAL_FRACTION. A warp's loads cost L1 about
# 15 request slots more than their number (its start, the wait for its last loads, the arithmetic and the store after
# them, which the other resident warps cover only in part), so few loads per warp leave L1 far below its peak and
# many approach the practical fraction. Measured on the H100 with workloads/cuda/l1rate.cu
# (fixtures/l1rate-2026-12-06/): the vertical stencil at 9, 33 and 65 loads per warp in blocks of 4, 8 and 32 rows
# (6-40% of the sectors missing, 54-94% occupancy) solves to 12.4-18.9 slots, mean 15.4 (L1 at 34-42%, 63-68%,
# 81-84% of its peak); the L1 rate follows the loads per warp, not the miss share. Checked on kernels outside the
# fit: conv9_global (81 loads a warp: 12.5 slots), conv5_global (25: 10.7), blur_global_hoisted (25: 11.1, H200
# 10.6), vstencil_tiles and _tiles8 (33: 17.4-19.3, on the H100 and the H200). Kernels limited by issue (the window
# kernels of l1rate.cu, blur_global) are not L1 streams and are left out. tests/test_l1_rate.py recomputes it.
L1_WARP_OVERHEAD_REQUESTS = 15.0


def global_loads_per_warp(k: KernelContext) -> float | None:
    """Global load requests each warp of the grid issues in its life (`l1tex__t_requests_pipe_lsu_mem_global_op_ld`
    ÷ the grid's warps), None without the counters."""
    from ncuadvisor.metrics import MemoryTables

    requests = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS)
    grid, block = k.m(LaunchStats.GRID_SIZE), k.block_size
    if not (requests and grid and block):
        return None
    return requests / (grid * math.ceil(block / 32))


def l1_stream_fraction(loads_per_warp: float) -> float:
    """The share of L1's peak a global-load stream of `loads_per_warp` requests per warp reaches (model above
    L1_WARP_OVERHEAD_REQUESTS)."""
    return min(PRACTICAL_FRACTION, loads_per_warp / (loads_per_warp + L1_WARP_OVERHEAD_REQUESTS))


def l1_load_stream(k: KernelContext) -> tuple[float, float] | None:
    """(global loads per warp, the share of L1's peak they reach: `l1_stream_fraction`) of a kernel, None without the
    counters. A rule whose estimate uses the share calls `note_sm90_calibration(k, L1_STREAM_CALIBRATION)`."""
    loads = global_loads_per_warp(k)
    return None if loads is None else (loads, l1_stream_fraction(loads))


L1_STREAM_CALIBRATION = (
    f"L1 reaching T ÷ (T + {L1_WARP_OVERHEAD_REQUESTS:.0f}) of its peak at T global loads a warp, measured on an H100"
)


def note_sm90_calibration(k: KernelContext, calibration: str) -> None:
    """Note, for the estimate's card, a model constant measured on an H100 or H200 (sm_90) that this kernel's
    estimate rests on, where the kernel ran on another architecture."""
    arch = str(k.device.get("compute_capability") or "")
    if arch and arch != "9.0":
        k.calibrations.add(calibration)


def sm_active_share(k: KernelContext) -> float | None:
    """The SMs' active cycles ÷ their elapsed cycles (the cycle counters, else the instructions executed per elapsed and
    per active cycle: `roofline.ACTIVE_CYCLE_RATIOS`), None where the report tells neither."""
    for active, elapsed in ACTIVE_CYCLE_RATIOS:
        a, e = k.m(active), k.m(elapsed)
        if a is not None and e:
            return min(1.0, max(0.0, a / e))
    return None


def warps_per_sm(k: KernelContext) -> float | None:
    """Achieved resident warps per SM (Occupancy section), None without it."""
    pct = k.m(Occupancy.ACHIEVED_PCT)
    if pct is None:
        return None
    return pct / 100.0 * float(k.device.get("max_warps_per_sm") or 64)


def streaming_ns(
    k: KernelContext, bytes_in_flight_per_warp: float, warps: float | None = None, blocks: float | None = None
) -> float | None:
    """The latency-plus-throughput time of the kernel's compulsory bytes (model above DRAM_LATENCY_CYCLES): the read
    share of them per SM × DRAM latency ÷ bytes in flight per SM, plus the roofline floor. `warps` per SM defaults
    to the achieved ones, `blocks` (which set how many SMs share the bytes) to the grid's. None when the report lacks
    bytes, clocks or occupancy."""
    r = k.roofline
    warps = warps if warps is not None else warps_per_sm(k)
    if not (r.compulsory_bytes and r.sm_clock_hz and r.theoretical_ns and warps and bytes_in_flight_per_warp):
        return None
    read, write = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_READ), k.m(MemoryWorkloadAnalysis.DRAM_BYTES_WRITE)
    read_share = read / (read + (write or 0.0)) if read else 1.0
    grid = blocks or k.m(LaunchStats.GRID_SIZE) or float("inf")
    sms = min(float(k.sm_count or 0) or grid, grid)
    if not sms or sms == float("inf"):
        return None
    in_flight = warps * bytes_in_flight_per_warp
    note_sm90_calibration(k, f"a DRAM latency of {DRAM_LATENCY_CYCLES:.0f} SM cycles measured on an H200")
    latency_cycles = r.compulsory_bytes * read_share / sms * DRAM_LATENCY_CYCLES / in_flight
    return latency_cycles / r.sm_clock_hz * 1e9 + r.theoretical_ns


@dataclass(frozen=True)
class DramInFlight:
    """What the SMs of a kernel keep in flight against what DRAM's latency × bandwidth needs (Little's law), from the
    SASS (`loads_in_flight_by_pass`) and the achieved warps (`bytes_in_flight`, `dram_in_flight`)."""

    loads_per_warp: float  # global loads a warp keeps in flight (per pass over memory, bytes-weighted)
    bytes_per_warp: float  # their bytes, 32 lanes
    warps_per_sm: float  # achieved resident warps
    per_sm: float  # warps × bytes_per_warp
    needed_per_sm: float  # DRAM_LATENCY_CYCLES × DRAM's peak bytes per SM cycle
    dram_share: float  # DRAM's achieved bytes per second ÷ its peak
    long_scoreboard_share: float  # the warps' stalls waiting on global loads

    @property
    def width_bytes(self) -> float:
        """The bytes per lane of the loads in flight (their bytes ÷ 32 lanes ÷ their number)."""
        return self.bytes_per_warp / max(self.loads_per_warp, 1e-9) / 32.0

    def short(self) -> bool:
        """Limited by the bytes in flight: fewer of them per SM than DRAM's latency × bandwidth needs (Little's law),
        and DRAM moving less of its peak than streams of the same load width reach (`achievable_dram_fraction`:
        0.757 at 4 bytes). The second half is what the bytes in flight achieve, measured: the needed bytes rest on
        the H200's latency, and on a board it was not measured on (a T4's GDDR6) 4-byte copies hold 0.84-0.94 of
        them while DRAM moves 82-83% of its peak, more than 4-byte streams reach on the H100 and H200, so no fix of
        the width or the loads in flight is shown to have room there; the H100 scalar copy holds 0.89 at 70.5% and
        its float4 twin is 19.5% faster. Whatever the DRAM share, not a fixed one: a kernel of 16-byte loads below
        0.908 and one of 4-byte loads below 0.757."""
        return self.per_sm < self.needed_per_sm and self.dram_share < achievable_dram_fraction(self.width_bytes)

    def latency_bound(self, min_long_scoreboard_share: float) -> bool:
        """Latency-bound on memory: short of bytes in flight (`short`) and at least `min_long_scoreboard_share` of
        the stalls on global loads."""
        return self.short() and self.long_scoreboard_share >= min_long_scoreboard_share


def bytes_in_flight(k: KernelContext) -> DramInFlight | None:
    """`DramInFlight` of a kernel whose SASS shows its global loads and whose report has the occupancy, the clocks,
    DRAM's peak and the stall counters, whatever its limiter; None otherwise."""
    r = k.roofline
    if not _global_loads(k)[1]:
        return None
    warps, sms = warps_per_sm(k), float(k.sm_count or 0)
    shares = stall_shares(k)
    if not (warps and sms and shares and r.peak_dram_bytes_per_s and r.sm_clock_hz):
        return None
    loads, per_warp = loads_in_flight_by_pass(k)
    return DramInFlight(
        loads_per_warp=loads,
        bytes_per_warp=per_warp,
        warps_per_sm=warps,
        per_sm=warps * per_warp,
        needed_per_sm=DRAM_LATENCY_CYCLES * r.peak_dram_bytes_per_s / sms / r.sm_clock_hz,
        dram_share=(r.achieved_dram_bytes_per_s or 0.0) / r.peak_dram_bytes_per_s,
        long_scoreboard_share=shares.get("long_scoreboard", 0.0),
    )


def dram_in_flight(k: KernelContext) -> DramInFlight | None:
    """`bytes_in_flight` of a kernel whose roofline limiter is DRAM; None otherwise."""
    return bytes_in_flight(k) if k.roofline.limiter == "dram" else None


def in_flight_fix_ns(k: KernelContext, flight: DramInFlight, gain: float) -> float | None:
    """The time after a fix that puts `gain` × the bytes in flight per warp (wider loads, or the loads of `gain`
    iterations issued before their first use): `streaming_ns` at those bytes, never below what removing every
    long-scoreboard stall leaves (`stall_bounded_ns`); None without the bytes or clocks `streaming_ns` needs."""
    after = streaming_ns(k, gain * flight.bytes_per_warp)
    return None if after is None else stall_bounded_ns(k, after, ("long_scoreboard",))


@dataclass(frozen=True)
class RowMapping:
    """A kernel that gives each thread a row and walks it in a per-thread loop (the warp's lanes are rows, so every
    load of a warp touches ~32 sectors), and the grid after the fix its coalescing advises, lanes along the row: a
    warp per row, 32× the threads in blocks of the same size. `warps_per_sm` and `sms` are what the new grid keeps
    resident (the occupancy limit of today's block and registers, the grid's warps spread over the SMs)."""

    sectors_per_request: float
    loads_per_warp: float
    blocks_after: float
    sms: float
    warps_per_sm: float


# a load's base register and immediate offset: `LDG.E R25, desc[UR4][R4.64+-0x8]` -> R4, -0x8
_BASE_AND_OFFSET = re.compile(r"\[(R\d+)(?:\.64)?\s*(?:\+\s*(-?0x[0-9a-fA-F]+))?\s*\]")


def walks_along(listing: list[tuple[int, float, str]]) -> bool:
    """Whether the hot global loads of a SASS listing [(pc, times executed, instruction)] walk along memory, element
    by element, in each thread: two or more of them from one base register at offsets one access apart
    (`[R4.64+-0x8]`, `[R4.64+-0x4]`, `[R4.64]`, `+0x4`: a loop unrolled along a row), or a base register the loop
    advances by an immediate (`IADD3 R4, P3, R4, 0x40, RZ`). A loop whose every load takes an address computed
    from a run-time stride (`IMAD.WIDE R12, R13, 0x2, R6` after `LEA R13, R5, R10, 0x5`: down a column, 32 rows a
    step) does not. Hot: executed at least half as often as the most executed global load."""
    entries = [(pc, v, parse(sass)) for pc, v, sass in listing]
    loads = [(v, ins) for _, v, ins in entries if ins.opcode.startswith("LDG")]
    if not loads:
        return False
    hot = max(v for v, _ in loads) / 2
    bases: dict[str, list[tuple[int, int]]] = {}
    for v, ins in loads:
        m = _BASE_AND_OFFSET.search(" ".join(ins.operands[1:]).replace("desc[", "["))
        if v >= hot and m:
            width = access_bytes(ins.opcode) or 4
            bases.setdefault(m.group(1), []).append((int(m.group(2) or "0", 16), width))
    for found in bases.values():
        offsets = sorted({o for o, _ in found})
        if len(offsets) >= 2 and all(b - a == found[0][1] for a, b in zip(offsets, offsets[1:])):
            return True
    for _, v, ins in entries:
        dest = ins.destination
        if v < hot or dest not in bases or not ins.opcode.startswith(("IADD3", "VIADD", "IADD")):
            continue
        steps = [ins.immediate(i) for i in range(len(ins.operands))]
        if dest in ins.operands[1:] and any(x is not None and 0 < x <= 64 * bases[dest][0][1] for x in steps):
            return True
    return False


def row_per_thread(
    k: KernelContext, min_sectors_per_request: float, min_loads_per_warp: float, lanes: int = 32
) -> RowMapping | None:
    """`RowMapping` of a kernel whose warps' global loads touch at least `min_sectors_per_request` sectors per request
    (each lane in its own sectors) and whose warps each issue at least `min_loads_per_warp` load instructions (a loop
    per thread, not one strided access), with a grid that does not fill one wave (fewer blocks than SMs, or
    `launch__waves_per_multiprocessor` below 1), and, where the report has the SASS, loads that walk along the row
    in each thread (`walks_along`): the remapped kernel then also has `lanes`× the warps. None otherwise, or
    without the counters."""
    from ncuadvisor.metrics import InstructionStats, MemoryTables

    requests = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS)
    sectors = k.m(MemoryTables.GLOBAL_LOAD_SECTORS)
    loads = k.m(InstructionStats.GLOBAL_LOAD_INST)
    grid, block = k.m(LaunchStats.GRID_SIZE), k.block_size
    sms, waves = float(k.sm_count or 0), k.m(LaunchStats.WAVES_PER_SM)
    theo = k.m(Occupancy.THEORETICAL_PCT)
    if not (requests and sectors and loads and grid and block and sms and theo):
        return None
    warps_now = grid * math.ceil(block / 32)
    per_request, per_warp = sectors / requests, loads / warps_now
    under_filled = grid < sms or (waves is not None and waves < 1.0)
    if per_request < min_sectors_per_request or per_warp < min_loads_per_warp or not under_filled:
        return None
    listing = [(e.pc, e.value, e.sass) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass]
    if listing and not walks_along(listing):
        return None  # the loop strides by a row pitch (a column walk): lanes along the row would not add warps
    warps_after = warps_now * lanes
    blocks_after = math.ceil(warps_after / math.ceil(block / 32))
    sms_after = min(sms, blocks_after)
    resident = theo / 100.0 * float(k.device.get("max_warps_per_sm") or 64)
    return RowMapping(per_request, per_warp, blocks_after, sms_after, min(resident, warps_after / sms_after))


def parallelism_ns(k: KernelContext, gain: float) -> float | None:
    """The time after a fix that multiplies the work in flight by `gain` (more resident warps, more independent loads
    per warp), in the same latency-plus-throughput model as `streaming_ns`: the measured time splits into a throughput
    term, the busiest unit's work at its peak (duration × its Speed Of Light %), which the fix keeps, and a latency
    term, the rest, which Little's law divides by the gain: new = duration × (busy + (1 − busy) / gain). Such a fix
    keeps the kernel's instructions and traffic, so the new time is not below what its busiest unit needs for them
    at the practical fraction of its peak (`unit_floor_ns`, L2 included), nor above the duration: a chase whose loads
    keep L2 busier than DRAM meets L2's ceiling once its chains overlap (the planted chase_serial's interleaved twin
    ran L2 at 76% of its peak on an H100, 78% on an H200)."""
    r = k.roofline
    if not r.duration_ns or gain <= 0:
        return None
    new = latency_split_ns(r.duration_ns, max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0)), gain)
    return min(r.duration_ns, max(new, unit_floor_ns(k) or 0.0))


def latency_split_ns(duration_ns: float, busy_pct: float, gain: float) -> float:
    """`parallelism_ns` on numbers (a program rule reads kernel entries, not contexts): of `duration_ns`, the busiest
    unit's share (`busy_pct`, its Speed Of Light %) stays and the rest divides by the gain in work in flight."""
    busy = min(1.0, max(0.0, busy_pct / 100.0))
    return duration_ns * (busy + (1.0 - busy) / gain)


# The share of the tensor peak a library GEMM reaches, for the time of a matrix product after it moves to cuBLAS,
# cuBLASLt or CUTLASS: the median, 0.815, of achieved tensor FLOP/s ÷ the report's tensor peak (the product's
# precision at the report's clock) over the distinct cuBLAS/nvjet kernels of this project's H200 captures with at
# least 20 GFLOP of tensor work: torch_gemm_conv's TF32 `sm90_xmma_gemm_..._tf32f32` 0.88, torch_cast_copy's two
# bf16 `nvjet_sm90_tst_128x128` splitK 0.81 and 0.82, torch_eager's bf16 `nvjet_sm90_tst_256x128` 0.71
# (tests/test_tensor_efficiency.py recomputes it). Smaller products reach less (4.3 GFLOP: 0.19; 8.6: 0.56), their
# few tiles filling few waves: for them the estimate is optimistic.
LIBRARY_TENSOR_EFFICIENCY = 0.815
LIBRARY_TENSOR_MIN_FLOPS = 20e9  # the products the efficiency was measured on
# the units a product's move to the tensor cores changes: the FMA work moves to the tensor pipe, with the
# instructions, loads and shared-memory traffic of its tiles; DRAM keeps its bytes
MOVES_TO_TENSOR = frozenset({"fma", "fp16", "tensor", "issue", "alu", "lsu", "sfu", "l1", "shared", "l2"})


# A matrix product tiled at both levels (tiles of both operands in shared memory, an r×r tile of outputs per thread in
# registers): each step of its k-loop reads r values of each operand from shared memory for r² FMAs, 2/r reads per
# FMA, one wavefront per warp read on conflict-free rows (a 16-byte read carries 4 values in 4 wavefronts: the same
# count). Checked on the project's own tiled products, each at the wavefronts it executes (tests/test_tiled_product.py).
FLOPS_PER_WARP_FMA = 64.0  # 32 lanes × 2 FLOPs


def register_tile_wavefronts(side: float, operands: float = 2.0) -> float:
    """Shared-memory wavefronts per warp FMA of a product whose threads each hold a `side`×`side` tile of outputs in
    registers: `operands` values read per k step and row or column of the tile (2: both factors come from shared
    memory; 1: the other is a constant or a register), each feeding `side` FMAs."""
    return operands / max(1.0, side)


def tiled_product_ns(
    fma_flops: float, fp32_peak_flops_per_s: float, sm_count: float, sm_clock_hz: float, wavefronts_per_warp_fma: float
) -> float | None:
    """The time of a tiled matrix product's main loop: its FMAs at the FP32 peak plus its shared-memory wavefronts at
    one per cycle per SM, added rather than overlapped (a hand-written tiled kernel's warps wait for the shared loads
    of a k step before the FMAs that use them: short-scoreboard stalls, few warps per SM at 128 registers a thread).
    On a GPU of 128 FP32 lanes per SM (sm_86 to sm_90: four warp FMAs per cycle) an 8×8 tile's 0.25 wavefronts per warp
    FMA take as long as its FMAs: half the FP32 peak. None without the peak, the SMs or the clock."""
    if fma_flops <= 0 or not fp32_peak_flops_per_s or not sm_count or not sm_clock_hz:
        return None
    fma_s = fma_flops / fp32_peak_flops_per_s
    shared_s = fma_flops / FLOPS_PER_WARP_FMA * wavefronts_per_warp_fma / (sm_count * sm_clock_hz)
    return (fma_s + shared_s) * 1e9


def shared_fed_ns(r: Roofline, sm_count: float, wavefronts: float) -> float | None:
    """The time of a loop whose FP32 arithmetic reads its operands from shared memory: its FP32 lane operations at the
    peak (the roofline's `fma` floor: FADD and FMUL lanes cost as much as FFMA lanes) plus its shared-memory
    wavefronts at one per cycle per SM, added rather than overlapped, as in `tiled_product_ns` (a warp waits for its
    shared reads before the arithmetic that uses them). None without the SMs or the clock."""
    if not sm_count or not r.sm_clock_hz:
        return None
    return (r.floors.get("fma") or 0.0) + wavefronts / (sm_count * r.sm_clock_hz) * 1e9


def fma_and_tensor_flops(r: Roofline) -> tuple[float, float]:
    """FLOPs on the FMA pipes (FP32 + packed FP16) and on the tensor cores, from the roofline's per-precision work."""
    fma = r.flops_by_precision.get("fp32", 0.0) + r.flops_by_precision.get("fp16", 0.0)
    tensor = sum(v for p, v in r.flops_by_precision.items() if p.startswith("tensor"))
    return fma, tensor


# -- warp stalls -----------------------------------------------------------------------------------------------------

# Warp stall reasons of the Warp State Statistics section, as ncu names them.
STALL_REASONS = WarpStateStats.STALL_REASONS


def stall_metric(reason: str) -> str:
    """The metric of one stall reason: cycles warps spent stalled for it, per issued instruction."""
    return WarpStateStats.stall(reason)


def stall_total(k: KernelContext) -> float:
    """Sum of all stall reasons (per issued instruction): the denominator of a reason's share."""
    return sum(k.m(stall_metric(s)) or 0.0 for s in STALL_REASONS)


def stall_shares(k: KernelContext) -> dict[str, float]:
    """Each stall reason's share of the warps' cycles (the reasons' sum, `selected` included), largest first; empty
    when the report has no Warp State Statistics."""
    total = stall_total(k)
    if total <= 0:
        return {}
    shares = {s: (k.m(stall_metric(s)) or 0.0) / total for s in STALL_REASONS}
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def stall_bounded_ns(k: KernelContext, new_ns: float, reasons: tuple[str, ...]) -> float:
    """The modelled time of the fixed kernel `new_ns`, never below what removing every stall of `reasons` leaves:
    duration × (1 − their share of the warps' cycles). A fix removes the waits it addresses, not the others (the
    attribution of GPA, CGO'21: a stall's time is what its fix can save). Without stall data, `new_ns` as given."""
    r = k.roofline
    shares = stall_shares(k)
    if not r.duration_ns or not shares:
        return new_ns
    removable = min(1.0, sum(shares.get(s, 0.0) for s in reasons))
    return max(new_ns, r.duration_ns * (1.0 - removable))


def load_chains(k: KernelContext) -> tuple[float, float]:
    """(share of the warps' stalls spent waiting on global loads (long scoreboard), global load requests per warp):
    both high, each warp walks a chain of loads that wait for each other (a pointer chase, a dependent gather)."""
    from ncuadvisor.metrics import MemoryTables

    total = stall_total(k)
    share = (k.m(stall_metric("long_scoreboard")) or 0.0) / total if total > 0 else 0.0
    warps = (k.m(LaunchStats.GRID_SIZE) or 0) * max(1.0, (k.m(LaunchStats.BLOCK_SIZE) or 32) / 32)
    return share, (k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0) / max(warps, 1)


@dataclass(frozen=True)
class LoadChain:
    """The global loads of a kernel's hot loop whose address comes from their own earlier result: a dependent-load
    chain (a linked-list walk, a tree descent, a pointer chase). `loads` the hot global loads executed, `chained`
    those of them on a chain, `chains` the independent chains a thread walks at a time (each chain's loads wait for
    one another; different chains' do not), `pcs` the chained loads' addresses."""

    loads: float
    chained: float
    chains: int
    pcs: tuple[int, ...]

    @property
    def share(self) -> float:
        return self.chained / self.loads if self.loads else 0.0


_CHAIN_DEPTH = 4  # loads in a row, each addressed by the one before, that make a chain without a loop
_SAME_RATE = 0.9  # a load before it in the row runs at least this share of its count: a step of the same walk
_BRANCH_TARGET = re.compile(r"(0x[0-9a-f]+)")


def _loops(entries: list[tuple[int, float, Instruction]]) -> list[tuple[int, int]]:
    """The loops of a listing in address order: (target, pc) of each backward branch (its body is target..pc)."""
    loops = []
    for pc, _, ins in entries:
        target = _branch_target(ins)
        if target is not None and target <= pc:
            loops.append((target, pc))
    return loops


def _branch_target(ins: Instruction) -> int | None:
    """The address a branch (`BRA`) jumps to, or None for any other instruction."""
    found = _BRANCH_TARGET.search(" ".join(ins.operands)) if ins.opcode.startswith("BRA") else None
    return int(found.group(1), 16) if found else None


_PREDICATE = re.compile(r"!?U?P(T|\d)")
_PLAIN_REG = re.compile(r"R\d+")


def _is_global_load(op: str) -> bool:
    return op.startswith(("LDG", "LD.", "LD ")) and not op.startswith("LDGSTS") or op == "LD"


def load_chain_of(listing: list[tuple[int, float, str]]) -> LoadChain:
    """`LoadChain` of a SASS listing [(pc, times executed, instruction)], from register dataflow in address order.

    Every register carries the set of global loads its value derives from (through any arithmetic, selects and
    shuffles). Each loop (a backward branch and its target) is read twice: once in program order from the start, then
    its body again, which sees what the back edge carries. A load of the body whose address derives from its own
    earlier result is on a chain; loads that derive from each other form one chain. Straight code (a walk unrolled
    completely) is a chain where a load's address derives from `_CHAIN_DEPTH` loads in a row, each executed (about) as
    often as the next: a load inside a loop whose base an outer loop's loads compute (a cell's range, then its list,
    then a point's row, then the loop over the row) pays that row of loads once per loop, not once per load. A gather
    (`x[idx[i]]`: the address from another load whose own address is the loop index) and a streaming load (the
    address from the index alone) are not. Control dependences (a branch on a loaded value) are not followed."""
    entries = sorted((pc, v, parse(s)) for pc, v, s in listing if s)
    executed = {pc: v for pc, v, ins in entries if _is_global_load(ins.opcode)}
    if not executed or max(executed.values()) <= 0:
        return LoadChain(0.0, 0.0, 0, ())
    loops = _loops(entries)
    address_of: dict[int, frozenset[int]] = {}  # load pc -> the loads its address derives from, back edges included
    depth: dict[int, int] = {}  # load pc -> the loads in a row its address derives from, in straight code
    _flow(entries, {}, address_of, depth)
    for top, bottom in loops:
        feeds: dict[int, frozenset[int]] = {}
        _flow([e for e in entries if e[0] <= bottom], feeds, {}, {})
        seen: dict[int, frozenset[int]] = {}
        _flow([e for e in entries if top <= e[0] <= bottom], feeds, seen, {})
        for pc, deps in seen.items():
            address_of[pc] = address_of.get(pc, frozenset()) | deps
    chained = sorted(pc for pc, deps in address_of.items() if pc in deps or depth.get(pc, 0) >= _CHAIN_DEPTH)
    # the chains in flight at a time: those of the loop (innermost around each chained load) that runs the most
    # chained loads; loops one after another (four walks in turn) are one chain at a time
    inner: dict[tuple[int, int], list[int]] = {}
    for pc in chained:
        around = [lp for lp in loops if lp[0] <= pc <= lp[1]]
        inner.setdefault(min(around, key=lambda lp: lp[1] - lp[0]) if around else (0, -1), []).append(pc)
    busiest = max(inner.values(), key=lambda pcs: sum(executed[pc] for pc in pcs), default=[])
    groups: list[set[int]] = []  # loads whose addresses derive from one another: one chain
    for pc in busiest:
        mine = {q for q in busiest if q in address_of[pc] or pc in address_of[q]} | {pc}
        joined = [g for g in groups if g & mine]
        for g in joined:
            groups.remove(g)
            mine |= g
        groups.append(mine)
    return LoadChain(sum(executed.values()), sum(executed[pc] for pc in chained), len(groups), tuple(chained))


def _flow(
    entries: list[tuple[int, float, Instruction]],
    feeds: dict[int, frozenset[int]],
    address_of: dict[int, frozenset[int]],
    depth: dict[int, int],
) -> None:
    """One pass of `load_chain_of`'s dataflow over `entries`: `feeds` (register -> the loads its value derives from)
    updated in place, each global load's address dependences recorded in `address_of` and its depth in `depth`."""
    runs = {pc: n for pc, n, _ in entries}
    for pc, n, ins in entries:
        op = ins.opcode
        load = _is_global_load(op)
        ops, dest = ins.operands, ins.destination
        if ins.writes and len(ops) > 1 and _PREDICATE.fullmatch(ops[0]) and _PLAIN_REG.fullmatch(ops[1]):
            ops, dest = ops[1:], ops[1]  # `SHFL.IDX PT, R8, R7, RZ, 0x1f`: a predicate, then the register written
        sources = ops[1:] if ins.writes else ops
        read = registers(ops[1]) if load and len(ops) > 1 else set().union(*(registers(o) for o in sources))
        derived: frozenset[int] = frozenset().union(*(feeds.get(r, frozenset()) for r in read))
        if load:
            address_of[pc] = derived
            # a load executed less often (an outer loop's, setting an inner loop's base) is paid once per many
            depth[pc] = 1 + max(
                (depth.get(q, 0) for q in derived if q != pc and runs.get(q, 0.0) >= _SAME_RATE * n), default=0
            )
        if dest is None:
            continue
        if load:
            width = max(1, (access_bytes(op) or 4) // 4)
            derived = derived | {pc}
        else:
            width = 2 if (".WIDE" in op or ".64" in op) else 1
        first = int(dest[1:])
        for r in range(first, first + width):
            feeds[r] = derived


def dependent_loads(k: KernelContext) -> LoadChain | None:
    """The kernel's `LoadChain` from `inst_executed` and its SASS; None without per-instruction data."""
    listing = [(e.pc, e.value, e.sass) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass]
    return load_chain_of(listing) if listing else None


@dataclass(frozen=True)
class SerialSection:
    """A loop of global loads that few of a kernel's warps run, closed by a barrier where the others wait: one warp
    of each block polling a flag or walking back over its predecessors (a scan's decoupled look-back, a spin lock)
    while the rest of the block waits. `entries` the times the loop is entered (its fall-through predecessor's
    count), `warps` the kernel's warps, `loads` the loop's global loads' pcs, `barrier` the barrier's pc, `held` the
    share of the kernel's sampled barrier stalls that wait at that barrier."""

    entries: float
    warps: float
    loads: tuple[int, ...]
    barrier: int
    held: float


_AFTER_BARRIER = 0x20  # a warp stalled at a barrier is sampled at the instruction after it


def serial_section_of(
    listing: list[tuple[int, float, str]],
    warps: float,
    waits: dict[int, float],
    max_entry_share: float,
    min_held: float,
) -> SerialSection | None:
    """`SerialSection` of a SASS listing [(pc, times executed, instruction)] of a kernel of `warps` warps, with the
    barrier stalls sampled per pc (`waits`): the loop (a backward branch and its target) with a global load, entered
    fewer than `max_entry_share` × `warps` times, whose next block-wide barrier (`BAR.SYNC`) holds at least
    `min_held` of the sampled barrier stalls. None where no loop is one."""
    entries = sorted((pc, v, parse(s)) for pc, v, s in listing if s)
    bars = [pc for pc, _, ins in entries if ins.opcode.startswith("BAR.SYNC") or ins.opcode == "BAR"]
    total = sum(waits.values())
    if warps <= 0 or total <= 0:
        return None
    for top, bottom in _loops(entries):
        loads = tuple(pc for pc, _, ins in entries if top <= pc <= bottom and _is_global_load(ins.opcode))
        before = [v for pc, v, _ in entries if pc < top]
        after = [pc for pc in bars if pc > bottom]
        if not loads or not before or not after or before[-1] >= max_entry_share * warps:
            continue
        held = sum(v for pc, v in waits.items() if after[0] < pc <= after[0] + _AFTER_BARRIER) / total
        if held >= min_held:
            return SerialSection(before[-1], warps, loads, after[0], held)
    return None


def serial_section(k: KernelContext, max_entry_share: float, min_held: float) -> SerialSection | None:
    """The kernel's `SerialSection` from `inst_executed`, the sampled barrier stalls, its SASS and its launch; None
    without them or without one."""
    listing = [(e.pc, e.value, e.sass) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass]
    waits = {e.pc: e.value for e in k.per_instruction(SourceCounters.SAMPLED_STALL_BARRIER)}
    warps = (k.m(LaunchStats.GRID_SIZE) or 0) * max(1.0, math.ceil((k.m(LaunchStats.BLOCK_SIZE) or 32) / 32))
    return serial_section_of(listing, warps, waits, max_entry_share, min_held) if listing else None


# the pipe an instruction issues to, for the share of a pipe's work a fix removes (ncu's pipe names): the FMA pipe runs
# the FP32 arithmetic and the integer multiplies (IMAD, IMUL); the ALU the other integer, logic, compare and select
# instructions; uniform-datapath instructions (ULDC, UIADD3), moves and special registers neither
_FMA_PIPE = ("FFMA", "FADD", "FMUL", "IMAD", "IMUL", "IDP", "HFMA2", "HADD2", "HMUL2")
_ALU_PIPE = (
    "I",
    "LEA",
    "LOP",
    "SHF",
    "SEL",
    "FSEL",
    "FSETP",
    "FMNMX",
    "VIMNMX",
    "VIADD",
    "PLOP3",
    "PRMT",
    "P2R",
    "R2P",
)
_NO_ALU = ("IMAD", "IMUL", "IDP", "I2F", "I2I")  # the FMA pipe's, or the XU's conversions
_MEMORY_OPS = ("LD", "ST", "ATOM", "RED", "TEX", "TLD", "SULD", "SUST")


@dataclass(frozen=True)
class AddressWork:
    """The instructions of a kernel whose results feed only the addresses of its global loads (the clamps, 64-bit
    index products and pointer sums of a tap loaded from global memory): what goes with those loads when a fix reads
    the data elsewhere at constant offsets (a shared-memory tile, unrolled). Counts are times executed: `executed` all
    instructions, `address` the address-only ones outside loops (a rolled loop's pointer steps stay with the loop),
    `alu`/`fma` the instructions issued to the ALU and the FMA pipe, `address_alu`/`address_fma` the address-only
    ones among them."""

    executed: float
    address: float
    alu: float
    address_alu: float
    fma: float
    address_fma: float

    @property
    def share(self) -> float:
        return self.address / self.executed if self.executed else 0.0


def _pipe(op: str) -> str:
    """The pipe one opcode issues to: "fma", "alu", or "" for another pipe or none."""
    if op.startswith(_FMA_PIPE):
        return "fma"
    if op.startswith(_ALU_PIPE) and not op.startswith(_NO_ALU):
        return "alu"
    return ""


def address_work_of(listing: list[tuple[int, float, str]]) -> AddressWork:
    """`AddressWork` of a SASS listing [(pc, times executed, instruction)], from backward register liveness.

    Each register live after an instruction is live for an address (read, maybe through more arithmetic, only as the
    address of global loads) or for anything else (data that is computed on or stored, a store's address, a branch's
    operand). An instruction that writes registers live for addresses alone is address-only. Branches join the
    liveness of their target (iterated until it settles, so a loop's back edge counts); a predicated write does not
    end its register's liveness; predicates and uniform registers are not followed (what they feed counts as other:
    a compare that steers a branch is not an address)."""
    entries = sorted((pc, v, parse(s)) for pc, v, s in listing if s)
    # a rolled loop keeps its address steps in the fixed kernel (it still walks the tile): only straight-line code
    # (an unrolled window) reads the tile at constant offsets
    loops = _loops(entries)
    address_only = {pc for pc in address_only_pcs(entries) if not any(top <= pc <= bottom for top, bottom in loops)}
    executed = sum(v for _, v, _ in entries)
    alu = sum(v for _, v, ins in entries if _pipe(ins.opcode) == "alu")
    fma = sum(v for _, v, ins in entries if _pipe(ins.opcode) == "fma")
    mine = [(v, ins) for pc, v, ins in entries if pc in address_only]
    return AddressWork(
        executed,
        sum(v for v, _ in mine),
        alu,
        sum(v for v, ins in mine if _pipe(ins.opcode) == "alu"),
        fma,
        sum(v for v, ins in mine if _pipe(ins.opcode) == "fma"),
    )


def address_only_pcs(entries: list[tuple[int, float, Instruction]]) -> set[int]:
    """The addresses of `address_work_of`'s address-only instructions in a parsed listing sorted by address."""
    index = {pc: i for i, (pc, _, _) in enumerate(entries)}
    live_in: list[tuple[frozenset[int], frozenset[int]]] = [(frozenset(), frozenset())] * len(entries)
    address_only: set[int] = set()
    for _ in range(8):  # a few passes reach the fixed point of a kernel's loops
        changed = False
        other: set[int] = set()
        addr: set[int] = set()
        address_only = set()
        for i in range(len(entries) - 1, -1, -1):
            pc, _, ins = entries[i]
            op = ins.opcode
            target = _branch_target(ins)
            if target is not None and target in index:
                t_other, t_addr = live_in[index[target]]
                other |= t_other
                addr |= t_addr
            ops = ins.operands
            dest = registers(ops[0]) if ins.writes and ops else set()
            if dest and (".WIDE" in op or ".64" in op) and len(dest) == 1:
                dest = {min(dest), min(dest) + 1}
            if _is_global_load(op) and dest:
                width = max(1, (access_bytes(op) or 4) // 4)
                dest = set(range(min(dest), min(dest) + width))
            read = list(ops[1:] if ins.writes else ops)
            if ".WIDE" in op and read:  # `IMAD.WIDE R8, R3, 0x2008, R4`: the addend is the pair R4, R5
                read[-1] = read[-1] + ".64" if _PLAIN_REG.fullmatch(read[-1]) else read[-1]
            sources: set[int] = set().union(*(registers(o) for o in read))
            if _is_global_load(op):
                addr_sources, other_sources = sources, set[int]()
            elif dest and not (dest & other) and dest & addr and not op.startswith(_MEMORY_OPS):
                address_only.add(pc)
                addr_sources, other_sources = sources, set()
            elif dest and not (dest & (other | addr)) and not op.startswith(_MEMORY_OPS):
                # read by nothing yet: a later pass sees what a back edge carries (a loop's pointer step)
                addr_sources, other_sources = set(), set()
            else:
                addr_sources, other_sources = set(), sources
            if not ins.predicate:
                other -= dest
                addr -= dest
            other |= other_sources
            addr |= addr_sources
            new = (frozenset(other), frozenset(addr - other))
            if new != live_in[i]:
                live_in[i], changed = new, True
        if not changed:
            break
    return address_only


def address_work(k: KernelContext) -> AddressWork | None:
    """The kernel's `AddressWork` from `inst_executed` and its SASS; None without per-instruction data."""
    listing = tuple((e.pc, e.value, e.sass) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass)
    return _address_work_cached(listing) if listing else None


@functools.lru_cache(maxsize=8)
def _address_work_cached(listing: tuple[tuple[int, float, str], ...]) -> AddressWork:
    """`address_work_of` once per listing: a rule asks for it while modelling the fix and again for its words."""
    return address_work_of(list(listing))


# opcodes of the uniform datapath that compute a warp-wide value (a constant-bank load, a loop bound, a uniform
# offset), not the TMA or bulk copies that also start with U
_UNIFORM_COPIES = ("UTMA", "UBLKCP", "UBLKRED", "UBLKPF")


def uniform_share_of(listing: list[tuple[float, str]]) -> float | None:
    """The share of a SASS listing [(times executed, instruction)] that runs on the uniform datapath (`ULDC`,
    `UIADD3`, `UMOV`, ...: one value for the whole warp, such as a filter weight read from the constant bank); None
    for an empty listing."""
    executed = sum(v for v, _ in listing)
    if not executed:
        return None
    uniform = 0.0
    for v, sass in listing:
        op = opcode(sass)
        if op.startswith("U") and not op.startswith(_UNIFORM_COPIES):
            uniform += v
    return uniform / executed


def uniform_share(k: KernelContext) -> float | None:
    """`uniform_share_of` the kernel's executed SASS: work that is the same for every output a thread computes, so a
    thread that computes several outputs runs it once for all. None without the SASS."""
    return uniform_share_of([(e.value, e.sass) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass])


@dataclass(frozen=True)
class SharedTree:
    """The loops of a kernel that exchange values through shared memory round by round (a tree reduction or scan):
    their instructions (`pcs`), what those executed (`executed`) and what the whole kernel executed (`total`)."""

    pcs: frozenset[int]
    executed: float
    total: float
    loops: int

    @property
    def share(self) -> float:
        return self.executed / self.total if self.total else 0.0


def _halves(ins: Instruction) -> bool:
    """A right shift by one (`SHF.R.S32.HI R8, RZ, 0x1, R4`, `USHF.R.U32.HI`): the stride of a tree halved."""
    return ins.opcode.startswith(("SHF.R", "USHF.R")) and "0x1" in ins.operands


def shared_tree_of(listing: list[tuple[int, float, str]]) -> SharedTree:
    """`SharedTree` of a SASS listing [(pc, times executed, instruction)]: each loop (a backward branch and its
    target) whose body waits at a barrier (`BAR.SYNC`), loads and stores shared memory (`LDS`, `STS`), halves a
    value (a right shift by one: the stride) and touches no global memory. A tiled loop that stages global data
    through shared memory loads global memory in its body, so it is not one; a tree unrolled completely (a block
    size known at compile time) has no loop and is not seen."""
    entries = sorted((pc, v, parse(s)) for pc, v, s in listing if s)
    total = sum(v for _, v, _ in entries)
    pcs: set[int] = set()
    loops = 0
    for top, bottom in _loops(entries):
        body = [e for e in entries if top <= e[0] <= bottom]
        ops = [b[2].opcode for b in body]
        if (
            any(o.startswith("BAR.SYNC") or o == "BAR" for o in ops)
            and any(o.startswith("LDS") and not o.startswith("LDSM") for o in ops)
            and any(o.startswith("STS") and not o.startswith("STSM") for o in ops)
            and not any(
                o.startswith(("LDG", "STG", "LD.", "ST.", "ATOM", "RED", "LDGSTS", "UTMA", "UBLKCP")) for o in ops
            )
            and any(_halves(b[2]) for b in body)
        ):
            pcs.update(b[0] for b in body)
            loops += 1
    executed = sum(v for pc, v, _ in entries if pc in pcs)
    return SharedTree(frozenset(pcs), executed, total, loops)


def shared_tree(k: KernelContext) -> SharedTree | None:
    """The kernel's `SharedTree` from `inst_executed` and its SASS; None without per-instruction data."""
    listing = [(e.pc, e.value, e.sass) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass]
    return shared_tree_of(listing) if listing else None


# -- per-instruction data and SASS -----------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class FmaStream:
    """What a kernel's fused multiply-adds compute, from its instruction stream (executions weighted by
    `inst_executed`, in the hot loop): `fma` the FFMA/HFMA2/DFMA/IDP executed; `products` those that multiply two loaded values (factors
    no FMA produced) and add a register (`acc += a × b`; not `x × 0.9999 + 1e-4`, nor `acc = acc × v + w`);
    `mufu` the special-function instructions (reciprocal square root, exponential, ...) executed beside them;
    `uniform` the FMAs one of whose loaded factors is the same value in every thread of the grid (read from an address
    no thread or block index reaches: a filter's weight, `grid_uniform_loads`), which `products` leaves out.
    Integer dot products (`IDP.4A`: four int8 products summed into an int32 accumulator; `IDP.2A`: two) are
    multiply-adds of the same shape, `acc += dot(a, b)`, and are counted among them; `dot_ops` is their work in
    integer operations (a thread's `IDP.4A` 4 multiply-adds, 8 ops; `IDP.2A` 4 ops), every execution counted (the
    setup's and the tail's too), and `dot_lanes` their thread instructions, each taking the lane of the FMA pipe an
    `FFMA` takes (GA100 issues them at its FFMA rate: panjd123's int8 reference GEMM, 4 IDP.4A and one IMAD.X a
    loop step, shows the FMA pipe 0.83% busy where full rate says 0.80% and half rate 1.3%). Both count full warps (32 lanes an
    executed warp instruction); `IMAD` is not a dot product: the index arithmetic multiplies registers that no FMA
    produced too (`IMAD R7, R6, R13, R7`, a convolution's row offset) and would read as one."""

    fma: float
    products: float
    mufu: float
    uniform: float = 0.0
    dot_ops: float = 0.0
    dot_lanes: float = 0.0

    @property
    def product_share(self) -> float:
        return self.products / self.fma if self.fma else 0.0

    @property
    def mufu_per_fma(self) -> float:
        return self.mufu / self.fma if self.fma else 0.0


_FMA_OPCODES = ("FFMA", "HFMA2", "DFMA", "IDP")
# integer operations per thread of an integer dot product (a multiply and an add per pair of factors)
_DOT_OPS = {"IDP.4A": 8.0, "IDP.2A": 4.0}
# a token of register dataflow: a register, a uniform register or a predicate (RZ, URZ, PT are constants)
_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(U?R|U?P)(\d+)(\.64|\.128)?")
_PREDICATE_OUT = re.compile(r"U?P(\d+|T)")
# instructions whose result differs between the threads whatever their sources: special registers (thread and block
# indices, lane, clock), lane exchanges and votes, and reads of memory private to a thread or a block
_VARYING_OPCODES = ("S2R", "S2UR", "CS2R", "SHFL", "VOTE", "MATCH", "REDUX", "ATOM", "LDS", "LDL", "LDSM", "TLD", "TEX")


def _tokens(operand: str, width: int = 1) -> set[str]:
    """The dataflow tokens an operand names (`R4.64` -> R4, R5; `[R2.64+0x4]` -> R2, R3); `width`: the registers a
    plain register stands for (a 64-bit pair's low half: `IMAD.WIDE`'s destination and addend, a `.64` load's)."""
    out: set[str] = set()
    for m in _TOKEN.finditer(operand):
        kind, n = m.group(1), int(m.group(2))
        size = {".64": 2, ".128": 4}.get(m.group(3) or "", width if kind.endswith("R") else 1)
        out.update(f"{kind}{i}" for i in range(n, n + size))
    return out


def grid_uniform_loads(entries: list[Any]) -> set[int]:
    """The pcs of the global loads (LDG, LD) whose address is the same in every thread of the grid: computed from the
    kernel's parameters (the constant bank), immediates and loop counters alone, with no thread or block index
    (`S2R SR_TID`, `SR_CTAID`), lane exchange or value read from shared or local memory on its way (a value loaded from
    a grid-uniform address is uniform too). Register dataflow over the listing in address order, twice: the second
    pass sees what a loop's back edge carries; at a forward branch's target what varies on the path that jumped there
    joins what varies on the path that falls through, and a predicated write never makes a register uniform; an
    address varying on either pass is varying, so a load is called uniform only when no thread-dependent value
    reaches its address; none in a listing that never reads a thread's or
    a block's index (a part of the kernel). `entries`: SASS entries with `pc` and `sass`."""
    listing = sorted((e for e in entries if getattr(e, "sass", None)), key=lambda e: e.pc)
    if not any(opcode(e.sass).startswith(("S2R", "S2UR")) for e in listing):
        return set()  # a listing that never reads a thread's or block's index is not the whole kernel: nothing known
    varying: set[str] = set()
    address_varies: dict[int, bool] = {}
    for _ in range(2):
        joins: dict[int, set[str]] = {}  # a forward branch's target -> what varies on the paths that jump there
        for e in listing:
            varying |= joins.pop(e.pc, set())
            ins = parse(e.sass)
            op = ins.opcode
            if op.startswith("BRA") and ins.operands:
                target = _BRANCH_TARGET.fullmatch(ins.operands[-1])
                if target and int(target.group(1), 16) > e.pc:
                    joins.setdefault(int(target.group(1), 16), set()).update(varying)
            wide = 2 if ".WIDE" in op else 1
            rest = list(ins.operands)
            dests: set[str] = set()
            if ins.writes and rest:
                loaded = max(1, (access_bytes(op) or 4) // 4) if op.startswith(("LD", "ULD")) else 1
                dests |= _tokens(rest[0], max(wide, loaded))
                rest = rest[1:]
                while rest and _PREDICATE_OUT.fullmatch(rest[0].lstrip("!")):  # predicate outputs: carry, compare
                    dests |= _tokens(rest[0])
                    rest = rest[1:]
            sources = set().union(set(), *(_tokens(o, wide if i == len(rest) - 1 else 1) for i, o in enumerate(rest)))
            guard = _tokens(ins.predicate)
            if op.startswith(("LDG", "LD.")) or op == "LD":
                varies = bool(set().union(set(), *(_tokens(o) for o in rest if "[" in o)) & varying)
                address_varies[e.pc] = address_varies.get(e.pc, False) or varies
                result = varies or bool(guard & varying)
            elif op.startswith(_VARYING_OPCODES):
                result = not (op.startswith("CS2R") and "SRZ" in e.sass)
            else:
                result = bool((sources | guard) & varying)
            # a predicated write may not happen: it can make a register vary, never make it uniform
            varying = varying | dests if result else (varying if ins.predicate else varying - dests)
    return {pc for pc, varies in address_varies.items() if not varies}


def fma_stream(k: KernelContext) -> FmaStream | None:
    """The kernel's FMA stream (`FmaStream`) from `inst_executed` and its SASS; None without per-instruction data.

    A matrix product (a GEMM, a convolution, a batched small product) is a stream of `acc += a × b` whose factors
    are loaded values, with nothing nonlinear between the FMAs, each varying across the grid's outputs: a factor
    loaded from an address no thread or block index reaches (`grid_uniform_loads`: a filter's weight, a vector every
    thread of a matrix-vector product reads) is the same in every thread, and its FMAs are counted apart (`uniform`). A recurrence (`acc = acc × v + w`, Horner: a factor
    is an earlier FMA's result) or a sum of nonlinear terms (N-body: `MUFU.RSQ` per interaction) is not, and the
    tensor cores cannot run it. Which instruction produced a factor is read from the listing in program order, twice:
    the second pass, over the instructions executed at least half as often as the hottest FMA (the loop), sees the
    producers the loop's back edge carries (an accumulator an FMA wrote in the previous iteration)."""
    entries = sorted((e for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass), key=lambda e: e.pc)
    if not entries:
        return None
    parsed = [(e.value, parse(e.sass), e.pc) for e in entries]
    hot = max((v for v, ins, _ in parsed if ins.opcode.split(".")[0] in _FMA_OPCODES), default=0.0)
    from_fma: dict[str, bool] = {}  # register -> whether its latest producer (in program order) is an FMA
    uniform_loads = grid_uniform_loads(entries)
    from_uniform: dict[str, bool] = {}  # register -> whether its latest producer is a grid-uniform load
    fma = products = mufu = uniform = 0.0
    dot_lanes = {op: sum(32 * v for v, ins, _ in parsed if ins.opcode.startswith(op)) for op in _DOT_OPS}
    dot_ops = sum(_DOT_OPS[op] * lanes for op, lanes in dot_lanes.items())
    for second in (False, True):
        for value, ins, pc in parsed:
            base = ins.opcode.split(".")[0]
            is_fma = base in _FMA_OPCODES and not ins.opcode.startswith("HFMA2.MMA")  # HFMA2.MMA -RZ, RZ: a move
            if second and value < hot / 2:
                continue  # the second pass is the loop's back edge: code outside the hot loop (its setup) is not on it
            if second and base == "MUFU":
                mufu += value
            if is_fma and second:
                fma += value
                if len(ins.operands) >= 4:
                    factors = [data_register(ins.operands[1]), data_register(ins.operands[2])]
                    loaded = all(f is not None and not from_fma.get(f, False) for f in factors)
                    if loaded and data_register(ins.operands[3]) is not None:
                        # a factor the whole grid shares (a filter's weight) is not a product's operand
                        if any(from_uniform.get(f, False) for f in factors if f is not None):
                            uniform += value
                        else:
                            products += value
            dest = ins.destination
            if dest is not None:
                width = max(1, (access_bytes(str(ins.opcode)) or 4) // 4) if base.startswith("LD") else 1
                first = int(dest[1:])
                for r in range(first, first + width):
                    from_fma[f"R{r}"] = is_fma
                    from_uniform[f"R{r}"] = pc in uniform_loads
    return FmaStream(
        fma=fma, products=products, mufu=mufu, uniform=uniform, dot_ops=dot_ops, dot_lanes=sum(dot_lanes.values())
    )


@dataclass(frozen=True)
class PipeShares:
    """Speed Of Light's busy shares (% of the elapsed time at the pipe's peak) that a product on the FMA pipes shows."""

    fma: float
    tensor: float
    lsu: float
    xu: float


def product_on_fma_pipes(r: Roofline, t: Mapping[str, float]) -> PipeShares | None:
    """The weakest evidence of a matrix product or convolution on the FMA pipes (no FLOPs counted, no SASS metrics:
    ncu's basic set), as TEN001 and TEN002 read it: the FMA pipe at least `min_fma_pct_weak` busy, the tensor pipe at
    most `max_tensor_pct_weak`, the load/store pipe at least `min_lsu_pct_weak` (the factors come from memory: a
    recurrence on registers leaves it idle) and the XU at most `max_xu_per_fma_weak` of the FMA pipe (no nonlinear
    term per product); None otherwise."""
    busy = r.busy_pct
    shares = PipeShares(
        fma=busy.get("fma") or 0.0,
        tensor=busy.get("tensor") or 0.0,
        lsu=busy.get("lsu") or 0.0,
        xu=busy.get("sfu") or 0.0,
    )
    if shares.fma < t["min_fma_pct_weak"] or shares.tensor > t["max_tensor_pct_weak"]:
        return None
    if shares.lsu < t["min_lsu_pct_weak"] or shares.xu > t["max_xu_per_fma_weak"] * shares.fma:
        return None
    return shares


def table_peak(k: KernelContext, path: str) -> tuple[float, str] | None:
    """A FLOP peak the report lacks (ncu's basic set records none), from the device's row of the architecture table
    (`analysis.archfacts`) at the SM clock measured: "fp32" (FP32 lanes × 2 FLOPs) or a tensor path ("tensor_tf32",
    "tensor_bf16", "tensor_fp16": dense FLOPs per SM per clock with an FP32 accumulator), × the SMs. With its source
    ("table: sm_80"); the report's own peak first when it has one ("report")."""
    from ncuadvisor.analysis import archfacts

    r = k.roofline
    if r.peak_flops_per_s.get(path):
        return r.peak_flops_per_s[path], "report"
    arch = archfacts.arch_of(k.device)
    sms = k.sm_count
    if arch is None or not sms or not r.sm_clock_hz:
        return None
    if path == "fp32":
        per_sm = arch.fp32_lanes * 2.0
    else:
        per_sm = archfacts.tensor_rates(k.device, arch).get(path.removeprefix("tensor_") + ".fp32") or 0.0
    return (per_sm * sms * r.sm_clock_hz, archfacts.table_source(arch)) if per_sm else None


def unread_fma_ceiling(k: KernelContext) -> bool:
    """User code at its FMA (or FP16) ceiling whose instructions the report does not hold (`fma_stream` is None): its
    FMAs may be a matrix product, whose real floor is the tensor roof, so the FMA roof is no reason to leave it. With
    the SASS, TEN001 has read the stream."""
    r = k.roofline
    return k.language == "cuda" and r.limiter in ("fma", "fp16") and fma_stream(k) is None


def own_work_floor(k: KernelContext) -> bool:
    """The kernel's floor is the instructions it issues (`roofline.reads_no_global_memory`: a library kernel that reads
    no global memory, whose every instruction is its own algorithm's work): none of them is overhead to cut."""
    r = k.roofline
    return bool(r.floors) and max(r.floors, key=lambda u: r.floors[u]) == "issue"


def _pending_loads(entries: list, tracked: Callable[[int], bool]) -> Iterator[tuple[int, int, float, int] | None]:
    """Register dataflow over a SASS listing in address order: for each tracked global load (LDG), (its pc, the loads
    then pending including it, their bytes for 32 lanes, its width per thread); None at each branch or barrier and at
    the end (every pending load waited for). A use of a load's register waits for it and every earlier load."""
    pending: list[tuple[set[int], int]] = []  # (destination registers, bytes per thread), in issue order
    for e in entries:
        ins = parse(e.sass or "")
        if ins.opcode.startswith(FLOW_BREAK):
            pending = []
            yield None
            continue
        used = ins.registers_read()
        hit = [i for i, (regs, _) in enumerate(pending) if regs & used]
        if hit:
            pending = pending[max(hit) + 1 :]
        if tracked(e.pc):
            width = access_bytes(e.sass or "") or 4
            first = min(registers(ins.operands[0]) or {0}) if ins.operands else 0
            pending.append((set(range(first, first + max(1, width // 4))), width))
            yield e.pc, len(pending), 32.0 * sum(w for _, w in pending), width
    yield None


def _global_loads(k: KernelContext) -> tuple[list, dict[int, float]]:
    """The SASS entries in address order and the global loads among them (pc -> executions), LDGSTS left out."""
    entries = sorted((e for e in k.per_instruction("inst_executed") if e.sass), key=lambda e: e.pc)
    loads = {e.pc: e.value for e in entries if opcode(e.sass).startswith("LDG") and opcode(e.sass) != "LDGSTS"}
    return entries, loads


def global_loads_in_flight(k: KernelContext) -> tuple[float, float]:
    """(loads, bytes) a warp keeps in flight: the most global loads (LDG) of the kernel's hot path that its SASS issues
    before it must wait for one of them, from register dataflow over the listing in address order (a use of a load's
    register waits for it and every earlier load; a branch or barrier waits for all). Hot loads are those executed at
    least half as often as the most executed one. Bytes: 32 lanes × the width of those loads. (1, 128) without SASS."""
    entries, loads = _global_loads(k)
    if not loads:
        return 1.0, 128.0
    hot_min = 0.5 * max(loads.values())
    best_n, best_bytes = 0, 0.0
    for step in _pending_loads(entries, lambda pc: loads.get(pc, -1.0) >= hot_min):
        if step is not None and step[1] > best_n:
            best_n, best_bytes = step[1], step[2]
    return (float(best_n), best_bytes) if best_n else (1.0, 128.0)


def loads_in_flight_by_pass(k: KernelContext) -> tuple[float, float]:
    """(loads, bytes) a warp keeps in flight over the whole kernel, each pass over memory with its own: the SASS read
    as in `global_loads_in_flight`, but per stretch of straight code between branches and barriers (a loop body, one
    pass), each stretch's most loads pending before one is used. A latency-bound stream takes the bytes of each pass ÷
    that pass's bytes in flight, so the kernel's are the bytes-weighted harmonic mean over the stretches (weight: the
    stretch's loads executed × 32 lanes × their width). A softmax written a thread per row keeps 16 loads in flight
    in its max pass (the loop unrolled) and 1 in its exp pass (each load feeds an exp and a store): 341 bytes a warp,
    not the 2,048 of the max pass alone. A forward branch inside a loop body ends a stretch too, although the loads
    issued before it may stay in flight across it: there the count is a lower bound. (1, 128) without SASS."""
    entries, loads = _global_loads(k)
    if not loads:
        return 1.0, 128.0
    stretches: list[tuple[float, int, float]] = []  # (bytes the stretch's loads move, most loads, most bytes in flight)
    moved, most_n, most_bytes = 0.0, 0, 0.0
    for step in _pending_loads(entries, lambda pc: pc in loads):
        if step is None:
            if moved > 0:
                stretches.append((moved, most_n, most_bytes))
            moved, most_n, most_bytes = 0.0, 0, 0.0
            continue
        pc, n, in_flight, width = step
        moved += loads[pc] * 32.0 * width
        most_n, most_bytes = max(most_n, n), max(most_bytes, in_flight)
    total = sum(m for m, _, _ in stretches)
    if total <= 0:
        return 1.0, 128.0
    return total / sum(m / n for m, n, _ in stretches), total / sum(m / b for m, _, b in stretches)


# -- formatting for finding messages ---------------------------------------------------------------------------------


def count(n: float, noun: str, plural: str = "") -> str:
    """A count with its noun: count(1, "load") -> '1 load', count(4, "load") -> '4 loads'."""
    return f"{n:.0f} {noun}" if round(n) == 1 else f"{n:.0f} {plural or noun + 's'}"


def cut(weight: float, frac: float, r: Roofline) -> str:
    """A time cut of weight × frac in words: 'the time falls by 78%'; with a weight under 1, how it comes about:
    'the time falls by 39% (half of 78%: a kernel limited by the FMA pipe spends only part of its time on this)'."""
    text = f"the time falls by {weight * frac:.0%}"
    if weight != 1:
        part = "half" if weight == 0.5 else f"{weight:.0%}"
        text += f" ({part} of {frac:.0%}: a kernel {limiter_phrase(r)} spends only part of its time on this)"
    return text


def fmt_ns(ns: float | None) -> str:
    """1234 -> '1.2 µs' ('?' when unknown), for finding messages."""
    return _units_fmt_ns(ns, missing="?", seconds=False)


def fmt_bytes(b: float | None) -> str:
    """1.5e6 -> '1.5 MB' ('?' when unknown), for finding messages."""
    if b is None:
        return "?"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


ATOMIC_OPCODES = ("RED", "ATOM", "ATOMG")


def atomic_lines(k: KernelContext) -> Any:
    """The source lines of the kernel's atomic instructions (RED, ATOM), most executed first: where contention is."""
    return k.top_lines(
        SourceCounters.INST_EXECUTED,
        limit=3,
        min_share=0.0,
        sass_filter=lambda s: s.startswith(ATOMIC_OPCODES),
        memory_only=True,
    )
