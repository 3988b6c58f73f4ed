import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ncuadvisor.rulekit import (
    COUNTERS,
    MEMORY_UNITS,
    PRACTICAL_FRACTION,
    Evidence,
    Finding,
    Fix,
    InstructionStats,
    KernelContext,
    LaunchStats,
    MemoryTables,
    MemoryWorkloadAnalysis,
    Occupancy,
    OlderMemoryTables,
    Prediction,
    RowMapping,
    Rule,
    SourceCounters,
    SpeedOfLight,
    access_bytes,
    achievable_dram_fraction,
    address_base,
    compulsory_ns,
    count,
    cut,
    fmt_ns,
    kept_units_ns,
    limiter_side,
    loads_in_flight_by_pass,
    opcode,
    parse,
    predict,
    row_per_thread,
    stall_bounded_ns,
    streaming_ns,
    time_after,
    warps_per_sm,
)

_LIMITS = {
    "registers": Occupancy.LIMIT_REGISTERS,
    "shared memory": Occupancy.LIMIT_SHARED_MEM,
    "warps (block size)": Occupancy.LIMIT_WARPS,
    "blocks per SM": Occupancy.LIMIT_BLOCKS,
}
_ADDRESS_OPS = ("IMAD.WIDE", "LEA", "IADD3", "IMAD.SHL", "IMAD.IADD", "SHF.L", "LDG", "LD.")


def _stream(k: KernelContext) -> list:
    """Every instruction the per-instruction metrics name (SASS known), once each, in program order."""
    seen: dict[int, Any] = {}
    for name in (
        SourceCounters.INST_EXECUTED,
        SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD,
        SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,
    ):
        for e in k.per_instruction(name):
            if e.sass:
                seen.setdefault(e.pc, e)
    return sorted(seen.values(), key=lambda e: e.pc)


def _last_def(stream: list, reg: str | None, pc: int) -> Any:
    """The last instruction before `pc` that writes `reg` (None when none is seen)."""
    if reg is None:
        return None
    for e in reversed(stream):
        if e.pc < pc and parse(e.sass).destination == reg:
            return e
    return None


# a load's base register and immediate offset: `LDG.E R5, desc[UR6][R12.64+0x4]` -> R12, 0x4
_BASE_OFFSET = re.compile(r"\[(R\d+)(?:\.64)?\s*(?:\+\s*(-?0x[0-9a-fA-F]+|-?\d+))?\s*\]")


def sibling_excess(k: KernelContext, max_l1_miss_over_ideal: float, max_lines_over_abutting: float) -> float:
    """The excess sectors of global loads that, with their siblings, read a whole contiguous record: two or more
    loads from one base register (`[R12.64]`, `[R12.64+0x4]`, `+0x8`, `+0xc`: a float4 read as four floats) whose
    offsets tile a span with no gap, each wasting exactly the share of the span it does not read. Each touches the
    record's sectors and the next finds them in L1: the bytes moved are the bytes needed (the cost is in requests,
    one vector load instead of four: MEM003), so these are not uncoalesced. Only where the sectors L1 sent on to L2
    are at most `max_l1_miss_over_ideal` × the ideal ones (L1 did serve the siblings: on a T4 matrix add two such
    loads sent 1.7× the ideal sectors on, and DRAM moved 48% more than the one-element version). And only where the
    warp's records abut: each load's L1 tag lookups per executed instruction (`memory_l1_tag_requests_global`, one per
    128-byte line a request touches) at most `max_lines_over_abutting` × the lines of 32 abutting records of that span
    (a float4 read as four floats: 4 lines a request). Lanes a row pitch apart that each walk along their own row
    (`row = ... + threadIdx.x`, the loop over a filter's columns unrolled: `[R6.64-0x8]` … `+0x14`, a 32-byte span)
    touch 32 lines a request, the fix is the thread mapping, and L1's tag stage pays for every one (convmap.cu's
    strided 11×11, H100: 32 lines a request where abutting records would touch 8; coalesced, 5× faster)."""
    from_l1 = k.m(MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1)
    ideal = k.m(SourceCounters.L2_SECTORS_GLOBAL_IDEAL)
    if from_l1 is None or not ideal or from_l1 > max_l1_miss_over_ideal * ideal:
        return 0.0
    groups: dict[str, list[tuple[int, int, float, float, int]]] = defaultdict(list)
    totals = {e.pc: e.value for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL)}
    lines = {e.pc: e.value for e in k.per_instruction(SourceCounters.L1_TAG_REQUESTS_GLOBAL)}
    runs = {e.pc: e.value for e in k.per_instruction(SourceCounters.INST_EXECUTED)}
    for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE):
        if not opcode(e.sass).startswith("LDG") or not totals.get(e.pc):
            continue
        m = _BASE_OFFSET.search((e.sass or "").split(" ", 1)[-1].replace("desc[", "d["))
        width = access_bytes(e.sass or "")
        if m is None or not width:
            continue
        groups[m.group(1)].append((int(m.group(2) or "0", 0), width, e.value, totals[e.pc], e.pc))
    covered = 0.0
    for loads in groups.values():
        if len(loads) < 2:
            continue
        spans = sorted((off, off + width) for off, width, _, _, _ in loads)
        if any(b[0] != a[1] for a, b in zip(spans, spans[1:])):
            continue  # a gap or an overlap: not one record read whole
        span = spans[-1][1] - spans[0][0]
        abutting = max(1.0, 32 * span / 128)  # the 128-byte lines of a warp's 32 records side by side
        if any(lines.get(pc, 0.0) > max_lines_over_abutting * abutting * runs.get(pc, 0.0) > 0 for *_, pc in loads):
            continue  # the lanes' records lie far apart: each request touches more lines than its records fill
        if all(abs(value / total - (1 - width / span)) <= 0.05 for _, width, value, total, _ in loads):
            covered += sum(value for _, _, value, _, _ in loads)
    return covered


# a transpose staged through a padded shared tile: both global sides row by row
TRANSPOSE_TILE = (
    "__shared__ float tile[32][33];\n"
    "tile[threadIdx.y][threadIdx.x] = in[(by * 32 + threadIdx.y) * n + bx * 32 + threadIdx.x];\n"
    "__syncthreads();\n"
    "out[(bx * 32 + threadIdx.y) * n + by * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];"
)


@dataclass(frozen=True)
class _FixedKernel:
    """The coalesced kernel's modelled time (ns), its floor, and what the model's words name."""

    new_ns: float
    floor_ns: float | None
    stream_ns: float | None  # the latency-plus-throughput time of the compulsory bytes, when that model explains it
    kept_ns: float | None  # the busy time of the pipes coalescing keeps
    loads: float
    weight: float  # the sector model's effect: half where a pipe limits
    rows: RowMapping | None = None  # a thread per row in an under-filled grid: the fix also multiplies the warps
    bytes_ns: float | None = None  # the compulsory bytes at the DRAM share coalesced kernels of this load width reach
    dram_fraction: float = 0.0  # that share
    width: float = 4.0  # bytes per lane of the loads in flight


# The largest L2 sector peak per slice and cycle (`lts__t_sectors.avg.peak_sustained`) recorded in any report file of
# the foreign corpus's mirrored repositories (72 of 117 record it, 2026-12-06): 1 on sm_70/75/86, 2 on sm_89 and on the
# A100 with ncu 2022.2, 3 on sm_90 and on the same A100 with ncu 2025.1. ncu's default set does not record it: on weak
# evidence, the sectors per L2 request are bounded with this one, and an sm_89 board (peak 2) reads 1.5× too many.
LARGEST_L2_SECTOR_PEAK = 3.0


# the situation of a kernel whose every spread access is strided the same way: its thread mapping is swapped
SWAPPED = "one thread mapping strides every access"

# the stall reasons a coalescing fix removes (the waits on the memory system's sectors, queues and wavefronts)
MEMORY_WAITS = ("long_scoreboard", "short_scoreboard", "lg_throttle", "mio_throttle", "tex_throttle", "drain")


class UncoalescedGlobal(Rule):
    """Global loads or stores touch many more 32-byte sectors than the threads need (uncoalesced access).

    What it detects:
        The share of global-memory L2 sectors that are excessive: `derived__memory_l2_theoretical_sectors_global_excessive`
        over `memory_l2_theoretical_sectors_global` (Memory Workload Analysis tables, Source Counters), with the
        source lines that cause it. Weaker evidence (a report without Source Counters, e.g. ncu's "Load/Store"
        metrics or the memory tables alone): the bytes the threads used of each 32-byte sector they touched
        (`smsp__sass_average_data_bytes_per_sector_mem_global_op_ld/st`, 32 when coalesced; a `.pct` before ncu
        2024) weighted by the global load and store sectors; the finding is then low confidence, without source
        lines, and the SourceCounters section would confirm it and place it. The weakest (ncu's default set, Speed Of
        Light's breakdown alone): the L2's tag lookups (`lts__t_tag_requests`, one per request) at least
        `min_l2_tag_pct_weak` % busy and far busier than its sectors (`lts__t_sectors`), each % of its own peak:
        tag % ÷ sector % × the sector peak per slice and cycle is the sectors each L2 request carries, at most
        `max_l2_sectors_per_request_weak` (a coalesced 4-byte warp access carries 4, 3 on average on the H100 and
        H200, whose L2 halves count a request twice; a strided one about 1). The default set does not record that
        peak, and it is not a fact of the board (1 on sm_70/75/86, 2 on sm_89, 3 on sm_90, 2 or 3 on the same A100 by
        ncu version, across the 72 report files that record it): the rule takes the report's where it has it, else
        the largest recorded, 3, which bounds the sectors per request from above (an sm_89 board's 1.1 reads 1.6).
        On the planted kernels read as default-set reports (H100 and H200): the strided copies and naive transposes
        carry 1.0-1.2 sectors per request, every coalesced copy, stream and shared-memory transpose 3.0-3.1.

    Why it costs time:
        A warp whose 32 threads read 32 consecutive floats needs four 32-byte sectors; with a stride of 32 floats it
        needs 32 sectors and uses 4 bytes of each: up to 8× the traffic for 4-byte accesses (32× for single bytes),
        through L1, L2 and often DRAM.

    Example:
        out[i] = in[(i % rows) * cols + i / rows];   // consecutive threads walk down a column

    Use instead:
        Make threadIdx.x the fastest-moving index of every global access. For a transpose or column walk, stage a
        tile through shared memory: read rows coalesced into `__shared__ float tile[32][33]`, then write the
        transposed tile out row by row. A thread that walks a row of its own (a row reduction, a layer norm or
        softmax written a thread per row): put the lanes along the row, a warp per row (lane i reads elements i,
        i + 32, …, the lanes' results combined with `__shfl_xor_sync`) or a block per row; the grid gets 32× the warps.
        Where every access whose lanes spread over more than `min_spread_sectors_per_request` sectors' worth of
        addresses per request (ideal sectors per executed instruction: a broadcast is not one), a load and a store
        among them, wastes at least `min_swapped_waste` of its sectors, nothing is coalesced with today's thread
        mapping (a 2-D kernel with `row = ... + threadIdx.x`, a thread's elements side by side): give consecutive
        lanes consecutive elements, threadIdx.x along the contiguous index, a thread's elements a warp apart, and
        every access coalesces, no tile needed. A transpose's other side and a strided copy's store are coalesced
        today: swapping would move the waste there, and the tile stays.

    Speedup estimate:
        The modelled time of the fixed kernel:

            the time of the fixed kernel = max(its stream, its compulsory bytes at the DRAM share its load width
            reaches, the roofline floor at 85%, the busy time of the pipes it keeps)

        Its stream, for a kernel limited by a memory level (`roofline.limiter`: DRAM, L2, L1, shared, LSU) or
        latency-bound: the latency-plus-throughput time of its compulsory bytes with the loads in flight it has
        now, coalesced (read bytes per SM × DRAM latency ÷ (warps × bytes in flight per warp) + the roofline floor;
        `DRAM_LATENCY_CYCLES` in ncuadvisor/rulekit/models.py), bounded by the stall time the fix removes (duration
        × (1 − the share of the warps' cycles in memory waits: long and short scoreboard, LG/MIO/TEX throttle,
        drain)). Each pass over memory keeps its own loads in flight (`loads_in_flight_by_pass`: per stretch of
        straight code between branches and barriers, the most loads pending before one is used), and the stream
        takes each pass's bytes ÷ its bytes in flight: a softmax written a thread per row keeps 16 loads in flight
        in its unrolled max pass and 1 in its exp pass (each load feeds an exp and a store), 341 bytes a warp over
        the kernel, not the 2,048 of the max pass (the model until 2026-12-06). The fixed kernel loses more than the
        wasted sectors: the strided warp's extra L1 wavefronts, replays and their latency go too, so the time scaled
        by the sectors moved (time × ideal / actual sectors), the model until 2026-12-05, under-estimated every such
        fix (a naive transpose: 4.5× against 6.4× measured). Where that latency model takes as long as the kernel
        does now, it does not explain the kernel (one held by DRAM's throughput, not its loads in flight: a T4
        matrix add at 91% of DRAM moving 1.5× its bytes): the time scaled by the sectors moved. For a kernel a pipe
        limits, the sector model at half effect.

        Its compulsory bytes at the DRAM share its load width reaches (`achievable_dram_fraction`): coalesced
        kernels do not stream at DRAM's peak, nor at the roofline's 85%. On the planted captures (H100 and H200,
        `ACHIEVABLE_DRAM_FRACTION`, recomputed by tests/test_dram_fraction.py) the DRAM-limited kernels with no more
        than 10% of their sectors wasted reach a median 75.7% of the peak with 4-byte loads (ten kernels, 66% to
        86%) and 90.8% with 16-byte loads (six, 88% to 94%). The width is that of the loads in flight; narrower
        loads take the 4-byte share. Before 2026-12-06 the fixed kernel was allowed 85% whatever its loads: a naive
        transpose (flaws, H200) was estimated 7.15× against 6.39× measured, now 6.51×.

        The busy time of the pipes it keeps: issue, ALU, FMA, the load/store pipe, ...: coalescing keeps the
        instructions.

        A thread per row in a grid that does not fill the GPU: the warp's lanes are rows and each thread loops along
        its row, so a load request touches at least `min_row_sectors_per_request` sectors (32 for 4-byte elements:
        each lane in a sector of its own) and each warp issues at least `min_row_loads_per_warp` load instructions (a
        loop per thread, not one strided access), with fewer blocks than SMs or under one wave
        (`launch__waves_per_multiprocessor`), and, where the report has the SASS, hot loads that walk along memory in
        each thread (`walks_along`: two or more from one base register one access apart, `[R4.64+0x4]`, `+0x8`, …,
        or a base the loop advances by an immediate; a column walk, its addresses from a run-time stride, is not one,
        and lanes along its row would not add warps: llm.c's `matmul_backward_bias_kernel2`). The fix, lanes along
        the row (a warp per row), also multiplies the warps by 32: 32× the threads in blocks of the same size, spread
        over up to every SM, each holding at most the warps today's block and registers allow (theoretical
        occupancy). Its stream is then the latency-plus-throughput time with those warps and each pass's loads in
        flight as the SASS shows them now, coalesced (a memory-waits bound does not apply: the new warps hide the
        other waits too); the finding's model text says it assumes the warp-per-row mapping. On the llm.c exam
        twins (H100, plain times, 2026-12-06): `layernorm_forward_kernel1` 26.2× against 21.5× measured (+22%; 28.9×
        between the two profiled durations: the twin's 20.4 µs kernel times 27.1 µs in the program's loop, a single
        launch between events after an L2-flushing memset), `softmax_forward_online_kernel1` 16.0× against 15.4×
        (+4%), `softmax_forward_kernel1` 12.6× against 12.8× (−2%) for version 1's kernel with this code (a warp
        per row; 8.1×, +56%, for llm.c's block-per-row version 2, which moves 20% more bytes, four reads and two
        writes of each row against three and two, at 60% of DRAM's peak; 8.8× for version 1's kernel as a block per
        row, whose stride blockDim.x leaves fewer loads in flight: a warp per row is the form to write). Before
        the passes and the DRAM share (earlier on 2026-12-06): 29.4×, 19.6×, 14.2×; before the new warps were
        counted, the memory-waits bound alone: 7.2×, 8.0×, 8.0×.

        The fix follows the access pattern of the instruction with the most excess sectors: a store stays a store
        (its opcode read with the predicate `@!P0` stripped); a load whose address was computed from a value still
        loading (an address-forming instruction stalled on `long_scoreboard` writes its base register: a gather or a
        pointer chase) gets data reordering and memory-level parallelism, not a transpose tile, and a pointer chase
        (the scattered loads' own values form the next addresses) is left to LAT001 (loads in flight); a load whose
        address is the thread's index scaled by an immediate wider than the access, up to `max_record_bytes`
        (`LEA R4, P0, R2, UR4, 0x5`: 32-byte records, a field of an array of structs, `p[i].x`) gets a structure of
        arrays or one vector load of the record; a run-time stride (a row pitch) keeps the transpose tile.

        Loads that with their siblings read a whole record (`[R12.64]`, `+0x4`, `+0x8`, `+0xc` from one base: a
        float4 read as four floats, each wasting exactly the part of the record it does not read) are not counted as
        waste where L1 did serve them (the sectors it sent on to L2 at most `max_l1_miss_over_ideal` × the ideal):
        the next load finds the sectors in L1, and the bytes moved are the bytes needed. Only where the warp's records
        abut: each load's L1 tag lookups per executed instruction (`memory_l1_tag_requests_global`, one per 128-byte
        line a request touches) at most `max_record_lines_over_abutting` × the lines of 32 abutting records of that
        span (a float4 read as four floats: 4). An unrolled loop that walks each lane's own row, the lanes a row
        apart (a 2-D kernel with `row = ... + threadIdx.x`), looks the same from the offsets, but its requests touch
        32 lines each, and L1's tag stage pays for every one: convmap.cu's strided 11×11 convolution (H100), 32 lines
        a request where abutting 32-byte records would touch 8, is uncoalesced (−80% estimated, its coalesced twin
        measured −79%); until 2026-12-06 its waste was taken for siblings' and it got GEN001.

        On the weakest evidence (the default set) an upper bound: the time of the fixed kernel = max(the bytes DRAM
        moves today at the share of its peak coalesced 4-byte loads reach, the busy time of the pipes it keeps), no
        faster than the roofline floor at 85%. Today's DRAM bytes stand in for the compulsory ones the set does not
        count (wasted sectors that reach DRAM would go too: the estimate is then short of the saving), and the
        latency of the accesses the kernel keeps is not counted (the estimate is then beyond it). The planted kernels
        read as default-set reports, against their coalesced twins (benchmark medians): the strided copy −68% against
        −57% measured (H200), −63% against −59% (H100); the naive transpose −83% against −84% (H200), −78% against
        −83% (H100); Lashi0812's naive transpose on an RTX 4090, −74% against −72% for its author's shared-memory
        version (ncu durations). Where DRAM is the busiest unit (a strided store whose wasted sectors reach DRAM, DRAM
        82% busy) the bound leaves nothing to save and the finding is not shown.

    False positives:
        Gathers through an index array (embedding lookups, sparse matrices) are uncoalesced by nature; sort or
        bucket the indices, or accept it. On the default set the few sectors per L2 request may also be elements of
        1-2 bytes, atomics or a pointer chase (each a request of one sector), or local memory: the finding says so.
        On a board whose sector peak is 1 (sm_70/75/86) and a report that does not record it, the bound (3× the
        ratio) is never low enough: silent there.
    """

    code = "MEM001"
    slug = "uncoalesced-global"
    category = "coalescing"
    title = "Uncoalesced global memory access"
    requires = (SourceCounters.L2_SECTORS_GLOBAL, SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE)
    optional = (
        SourceCounters.L2_SECTORS_GLOBAL_IDEAL,
        Occupancy.THEORETICAL_PCT,
        *_LIMITS.values(),
        MemoryTables.GLOBAL_LOAD_SECTORS,
        MemoryTables.GLOBAL_STORE_SECTORS,
        MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1,
        MemoryTables.GLOBAL_LOAD_REQUESTS,
        InstructionStats.GLOBAL_LOAD_INST,
        LaunchStats.WAVES_PER_SM,
        SpeedOfLight.L2_TAG_REQUESTS_PCT,
        MemoryWorkloadAnalysis.L2_SECTORS_PEAK_PER_SLICE_CYCLE,
    )
    weak_evidence = (
        MemoryTables.GLOBAL_LOAD_BYTES_PER_SECTOR,
        MemoryTables.GLOBAL_STORE_BYTES_PER_SECTOR,
        OlderMemoryTables.GLOBAL_LOAD_BYTES_PER_SECTOR_PCT,
        OlderMemoryTables.GLOBAL_STORE_BYTES_PER_SECTOR_PCT,
        SpeedOfLight.L2_SECTORS_PCT,
    )
    per_instruction = (
        SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,
        SourceCounters.L2_SECTORS_GLOBAL,
        SourceCounters.L2_SECTORS_GLOBAL_IDEAL,
        SourceCounters.L1_TAG_REQUESTS_GLOBAL,
        SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD,
        SourceCounters.INST_EXECUTED,
    )
    thresholds = {
        "min_excess_fraction": 0.3,
        "max_record_bytes": 64.0,
        "max_l1_miss_over_ideal": 1.1,
        # a record read whole by sibling loads: each request touches at most this many times the lines of abutting ones
        "max_record_lines_over_abutting": 1.5,
        "min_row_sectors_per_request": 16.0,
        "min_row_loads_per_warp": 8.0,
        "min_spread_sectors_per_request": 1.5,
        "min_swapped_waste": 0.5,
        # the weakest evidence (Speed Of Light's L2 breakdown): the L2 tag lookups at least this busy (% of peak) ...
        "min_l2_tag_pct_weak": 40.0,
        # ... and at most this many sectors per L2 request (a coalesced 4-byte warp access: 4, 3 with H100's fabric)
        "max_l2_sectors_per_request_weak": 1.8,
    }
    # {kind}: "loads" or "stores", the kind of the instruction with the most excess sectors
    fixes = {
        "cuda": Fix(
            text=(
                "Global {kind} at the lines below are uncoalesced: consecutive threads (threadIdx.x) must touch "
                "consecutive addresses. For a column walk or transpose, stage a 32×32 tile through shared memory "
                "(padded to 33 columns to avoid bank conflicts) and read/write global memory row by row."
            ),
            code=TRANSPOSE_TILE,
        ),
        "triton": Fix(
            text=(
                "The {kind} of this Triton kernel are strided: make the contiguous (stride-1) dimension the last "
                "axis of the offsets, e.g. `offs = rows[:, None] * stride_row + cols[None, :]`, and load 2-D tiles "
                "with `tl.make_block_ptr(..., order=(1, 0))`; for a transpose, load the tile coalesced and "
                "`tl.trans` it in registers."
            ),
            code="ptrs = base + rows[:, None] * stride_row + cols[None, :]  # cols: the stride-1 axis",
        ),
    }

    fixes_when = {
        SWAPPED: {
            "cuda": Fix(
                text=(
                    "Every global access of this kernel whose lanes read different addresses is strided, loads and "
                    "stores alike: none is coalesced with today's mapping of threads to elements, so no tile is "
                    "needed, only another mapping. Give consecutive lanes consecutive elements: in a 2-D kernel, "
                    "threadIdx.x along the contiguous index (`col = blockIdx.x * blockDim.x + threadIdx.x`, not the "
                    "row); a thread that handles several elements takes them a warp apart, not side by side."
                ),
                code=(
                    "int col = blockIdx.x * blockDim.x + threadIdx.x;   // threadIdx.x along the contiguous index\n"
                    "int row = blockIdx.y * blockDim.y + threadIdx.y;\n"
                    "out[row * width + col] = f(in, row, col);\n"
                    "// several elements per thread: a warp apart, e.g. i = base + lane + 32 * j"
                ),
            ),
        },
        "a thread per row": {
            "cuda": Fix(
                text=(
                    "Each thread walks a row of its own: the warp's 32 lanes are 32 rows, so every load touches "
                    "~{per_request:.0f} sectors for 32 useful elements, and the {grid:.0f} blocks of {block} threads "
                    "leave most SMs idle. Put the lanes along the row instead: a warp per row (lane i reads elements "
                    "i, i + 32, …; combine the lanes' partial results with __shfl_xor_sync), or a block per row. That "
                    "coalesces the loads and gives the grid 32× the warps ({blocks:.0f} blocks of {block})."
                ),
                code=(
                    "int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;  // a warp per row\n"
                    "float sum = 0.f;\n"
                    "for (int i = lane; i < C; i += 32) sum += x[row * C + i];   // lanes along the row: coalesced\n"
                    "for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);\n"
                    "// launch: <<<ceil(rows * 32 / block), block>>>"
                ),
            ),
        },
        "the address comes from a load": {
            "cuda": Fix(
                text=(
                    "The addresses of these loads come from values loaded just before (a gather through an index "
                    "array, or a pointer chase): no thread mapping coalesces them. Reorder the data instead: sort "
                    "or bucket the indices (or the records) so neighbouring threads read neighbouring elements; "
                    "and keep more independent loads in flight per warp (unroll, several chains or elements per "
                    "thread){limiter}."
                ),
                code=(
                    "// sort the (index, position) pairs once, then gather in index order: neighbours read neighbours\n"
                    "thrust::sort_by_key(idx, idx + n, pos);\n"
                    "out[pos[i]] = in[idx[i]];"
                ),
            ),
        },
        "the L2's requests": {
            "cuda": Fix(
                text=(
                    "Find the global accesses whose consecutive threads (threadIdx.x) touch addresses far apart (a "
                    "column walk, a transpose's writes, a stride of a row pitch, a field of an array of structs) and "
                    "make threadIdx.x the fastest-moving index; for a transpose, stage a 32×32 tile through shared "
                    "memory (padded to 33 columns) and read and write global memory row by row. Profile with "
                    "`--section SourceCounters --section MemoryWorkloadAnalysis_Tables` to see which lines waste sectors."
                ),
                code=TRANSPOSE_TILE,
            ),
            "triton": Fix(
                text=(
                    "Make the contiguous (stride-1) dimension the last axis of every load's and store's offsets "
                    "(`offs = rows[:, None] * stride_row + cols[None, :]`); for a transpose, load the tile coalesced "
                    "and `tl.trans` it in registers. Profile with `--section SourceCounters` to see which lines "
                    "waste sectors."
                ),
                code="ptrs = base + rows[:, None] * stride_row + cols[None, :]  # cols: the stride-1 axis",
            ),
        },
        "a field of an array of structs": {
            "cuda": Fix(
                text=(
                    "Each thread loads {width} bytes out of every ~{stride:.0f}-byte record (a field of an array of "
                    "structs, p[i].x): store that field in its own array (structure of arrays) so a warp reads "
                    "contiguous bytes, or, when the kernel uses the whole record, load it with one vector load "
                    "(a 16-byte aligned struct, float4) instead of one field at a time."
                ),
                code=(
                    "struct Particles { float *x, *y, *z, *w; };   // SoA: x[i] for consecutive i is contiguous\n"
                    "float xi = P.x[i];"
                ),
            ),
        },
    }

    def _one_mapping(self, k: KernelContext) -> bool:
        """Whether every global access whose lanes touch more than one sector's worth of addresses (ideal sectors per
        executed instruction above `min_spread_sectors_per_request`: a broadcast is not one), a load and a store at
        least among them, wastes at least `min_swapped_waste` of its sectors: nothing is coalesced with today's thread
        mapping, so swapping it coalesces them all (a transpose's other side, a strided copy's store are coalesced:
        swapping would move the waste there)."""
        t = self.thresholds
        ideal = {e.pc: e.value for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL_IDEAL)}
        total = {e.pc: (e.value, e.sass) for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL)}
        runs = {e.pc: e.value for e in k.per_instruction(SourceCounters.INST_EXECUTED)}
        spread = [
            (pc, sectors, sass)
            for pc, (sectors, sass) in total.items()
            if runs.get(pc) and sectors and ideal.get(pc, 0.0) > t["min_spread_sectors_per_request"] * runs[pc]
        ]
        kinds = {"store" if opcode(sass).startswith(("STG", "ST.", "ST")) else "load" for _, _, sass in spread}
        return kinds == {"load", "store"} and all(
            1.0 - ideal[pc] / sectors >= t["min_swapped_waste"] for pc, sectors, _ in spread
        )

    def _occupancy(self, k: KernelContext) -> str:
        """`; occupancy is 50% (limit: registers)`: what caps the warps that could keep more loads in flight."""
        theo = k.m(Occupancy.THEORETICAL_PCT)
        limits = {n: k.m(m) for n, m in _LIMITS.items()}
        known = {n: v for n, v in limits.items() if v is not None and v > 0}
        if theo is None:
            return ""
        if theo >= 99 or not known:
            return f"; occupancy is already {theo:.0f}%, so the loads in flight must come from each thread"
        return f"; more warps also help: occupancy is {theo:.0f}%, limited by {min(known, key=lambda n: known[n])}"

    def _pattern(self, k: KernelContext, sass: str, frac: float) -> tuple[str, dict]:
        """The situation of the instruction with the most excess sectors (`fixes_when`) and its template fields; "a
        pointer chase" when the scattered loads' own values form the next addresses."""
        if not opcode(sass).startswith(("LD", "LDG")):
            return "", {}
        excess = [
            e for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE) if opcode(e.sass).startswith("LD")
        ]
        stream = _stream(k)  # every instruction seen, by pc: definitions are looked up in program order
        stalled = [
            e
            for e in k.per_instruction(SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD)
            if e.value > 0 and opcode(e.sass).startswith(_ADDRESS_OPS)
        ]
        scattered = {e.pc for e in excess}
        dependent = chase = 0.0
        for load in excess:
            feeder = _last_def(stream, address_base(load.sass), load.pc)
            if feeder is None or feeder.pc not in {x.pc for x in stalled}:
                continue
            # the address math waited on a load: which load wrote the register it read?
            sources = [_last_def(stream, r, feeder.pc) for r in parse(feeder.sass).source_registers]
            loads = [d for d in sources if d is not None and opcode(d.sass).startswith(("LDG", "LD."))]
            if loads:
                dependent += load.value
                chase += load.value if any(d.pc in scattered for d in loads) else 0.0
        if dependent >= 0.5 * sum(e.value for e in excess):
            if chase >= 0.5 * dependent:  # the scattered loads' own values form the next addresses
                return "a pointer chase", {}
            return "the address comes from a load", {"limiter": self._occupancy(k)}
        stride = self._record_stride(k, excess)
        width = access_bytes(sass) or 4
        if stride is not None and width < stride <= self.thresholds["max_record_bytes"]:
            return "a field of an array of structs", {"width": width, "stride": stride}
        return "", {}

    @staticmethod
    def _record_stride(k: KernelContext, excess: list) -> int | None:
        """The constant stride between threads of the load with the most excess sectors, when its address is the
        thread's index scaled by an immediate (`LEA R4, P0, R2, UR4, 0x5`: 32 bytes; `IMAD.WIDE R4, R2, 0x20, R4`):
        records of that size. A stride computed at run time (a row pitch: `IMAD.WIDE.U32 R6, R0, R7, R8`) is not."""
        top = max(excess, key=lambda e: e.value, default=None)
        base = address_base(top.sass) if top is not None else None
        if top is None or base is None:
            return None
        before = [e for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.pc < top.pc]
        for e in sorted(before, key=lambda e: -e.pc):
            ins = parse(e.sass)
            if ins.destination != base:
                continue
            shift, scale = ins.immediate(-1), ins.immediate(2)
            if ins.opcode.startswith("LEA") and not ins.opcode.startswith("LEA.HI") and shift is not None:
                return 1 << shift
            if ins.opcode.startswith("IMAD.WIDE") and scale is not None:
                return scale
            return None
        return None

    def _predicts(self, k: KernelContext, frac: float, kind: str) -> list[Prediction]:
        """Coalesced, the kernel moves only the sectors its threads need (the rule fires again above the bound);
        loads keep their requests, so their sectors per request fall by the wasted share."""
        most = 1 / (1 - self.thresholds["min_excess_fraction"])
        out = [predict("l2_sectors_per_needed_sector", 1 / max(1e-9, 1 - frac), 1.0, most)]
        per_request = COUNTERS["global_load_sectors_per_request"].value(k.metrics)
        if kind == "loads" and per_request is not None:
            out.append(
                predict(
                    "global_load_sectors_per_request",
                    per_request,
                    per_request * (1 - frac),
                    per_request * (1 - frac) * most,
                )
            )
        return out

    def _sector_use(self, k: KernelContext) -> tuple[float, float, str, list[Evidence]]:
        """The weaker evidence: (sectors, wasted sectors, "loads" or "stores": the kind that wastes more, evidence)
        from the bytes used per sector of global loads and stores and their sector counts."""
        total = excess = 0.0
        wasted: dict[str, float] = {}
        evidence = []
        for kind, sectors, ratio, pct in (
            (
                "loads",
                MemoryTables.GLOBAL_LOAD_SECTORS,
                MemoryTables.GLOBAL_LOAD_BYTES_PER_SECTOR,
                OlderMemoryTables.GLOBAL_LOAD_BYTES_PER_SECTOR_PCT,
            ),
            (
                "stores",
                MemoryTables.GLOBAL_STORE_SECTORS,
                MemoryTables.GLOBAL_STORE_BYTES_PER_SECTOR,
                OlderMemoryTables.GLOBAL_STORE_BYTES_PER_SECTOR_PCT,
            ),
        ):
            n, per_sector, share = k.m(sectors), k.m(ratio), k.m(pct)
            used = per_sector / 32 if per_sector is not None else (share / 100 if share is not None else None)
            if not n or used is None:
                continue
            used = min(1.0, max(0.0, used))
            total += n
            excess += n * (1 - used)
            wasted[kind] = n * (1 - used)
            metric = ratio if k.m(ratio) is not None else pct
            evidence.append(Evidence(metric, k.m(metric), None, f"bytes used per sector ({kind})"))
        kind = max(wasted, key=lambda w: wasted[w]) if wasted else "loads"
        return total, excess, kind, evidence

    def _sectors(self, k: KernelContext) -> tuple[float, float, str, list[Evidence]]:
        """(sectors, wasted sectors, the kind that wastes more, the weak evidence): from Source Counters, less the
        sibling loads that read a whole record; from the bytes used per sector on weak evidence."""
        if k.weak:
            return self._sector_use(k)
        total = k.m(SourceCounters.L2_SECTORS_GLOBAL) or 0.0
        excess = max(
            0.0,
            (k.m(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE) or 0.0)
            - sibling_excess(
                k, self.thresholds["max_l1_miss_over_ideal"], self.thresholds["max_record_lines_over_abutting"]
            ),
        )
        return total, excess, "", []

    def _fixed_ns(self, k: KernelContext, frac: float) -> _FixedKernel:
        """The fixed kernel's time: its compulsory bytes streamed with the loads in flight it keeps, bounded by the
        memory waits the fix removes; without that model (a pipe limits), the time scaled by the sectors moved."""
        r = k.roofline
        side = limiter_side(r)
        weight = 0.5 if side == "compute" else 1.0
        sector_ns = (r.duration_ns or 0) * (1 - weight * frac)
        # Coalescing keeps the loads and their count: each now brings 32 lanes × its width of useful bytes. Each pass
        # over memory keeps its own loads in flight (an unrolled max pass 16, an exp pass that feeds each load to an
        # exp and a store 1): the stream's time is the sum of each pass's bytes ÷ its bytes in flight.
        loads, inflight = loads_in_flight_by_pass(k)
        assumed = set(k.calibrations)
        t = self.thresholds
        rows = (
            row_per_thread(k, t["min_row_sectors_per_request"], t["min_row_loads_per_warp"])
            if side in ("memory", "latency", "launch")  # an under-filled grid is "launch"-bound
            else None
        )
        if rows is not None:
            # lanes along the row: the same loads, coalesced, from 32× the warps spread over the SMs
            stream_ns = streaming_ns(k, inflight, warps=rows.warps_per_sm, blocks=rows.blocks_after)
        else:
            stream_ns = streaming_ns(k, inflight) if side in ("memory", "latency") else None
        if stream_ns and r.duration_ns and stream_ns >= r.duration_ns:
            # the latency model does not explain today's time (a kernel held by DRAM's throughput, not by the loads
            # in flight): the sectors it moves do, and what the latency model assumes is not said
            stream_ns, rows = None, None
            k.calibrations = assumed
        if stream_ns and rows is not None:
            new_ns = stream_ns  # the new warps hide the other waits too: no stall share bounds it
        else:
            new_ns = stall_bounded_ns(k, stream_ns, MEMORY_WAITS) if stream_ns else sector_ns
        # the coalesced kernel streams its compulsory bytes at most at the share of DRAM's peak that coalesced kernels
        # of its load width reach (4-byte loads 76%, 16-byte 91%: measured on the planted captures), not at 85%
        width = inflight / (32.0 * max(loads, 1.0))
        fraction = achievable_dram_fraction(width)
        bytes_ns = compulsory_ns(r, fraction)
        if bytes_ns and bytes_ns >= new_ns and str(k.device.get("compute_capability") or "9.0") != "9.0":
            k.calibrations.add(f"a {fraction:.0%} share of DRAM's peak measured on H100 and H200")
        new_ns = max(new_ns, bytes_ns or 0.0)
        # coalescing changes the sectors, not the instructions: issue, ALU, the load/store pipe (one instruction per
        # access either way) and the other pipes keep their time
        kept_ns = kept_units_ns(r, MEMORY_UNITS - {"lsu"})
        floor_ns = max(r.theoretical_ns or 0.0, kept_ns or 0.0) or None
        return _FixedKernel(new_ns, floor_ns, stream_ns, kept_ns, loads, weight, rows, bytes_ns, fraction, width)

    def _bytes_floor(self, fixed: _FixedKernel) -> str:
        """'; its compulsory bytes at the 76% of DRAM's peak that coalesced 4-byte loads reach: 22.5 µs'."""
        if not fixed.bytes_ns:
            return ""
        return (
            f"; its compulsory bytes at the {fixed.dram_fraction:.0%} of DRAM's peak that coalesced "
            f"{fixed.width:.0f}-byte loads reach: {fmt_ns(fixed.bytes_ns)}"
        )

    def _speedup_model(self, k: KernelContext, fixed: _FixedKernel, frac: float) -> str:
        """How the fixed kernel's time was modelled, in words: the time of the fixed kernel = the largest of its
        stream (or the time scaled by the sectors it moves), its compulsory bytes at the DRAM share its load width
        reaches, the roofline floor and the busy time of the pipes it keeps."""
        rows = fixed.rows
        rest = (
            self._bytes_floor(fixed)
            + (
                f"; the roofline floor at {PRACTICAL_FRACTION:.0%}, {fmt_ns(k.roofline.theoretical_ns / PRACTICAL_FRACTION)}"
                if k.roofline.theoretical_ns
                else ""
            )
            + (
                f"; the {fmt_ns(fixed.kept_ns)} its busiest pipe needs for the same instructions"
                if fixed.kept_ns
                else ""
            )
            + "."
        )
        if rows is not None and fixed.stream_ns:
            return (
                f"A thread walks each row ({rows.sectors_per_request:.0f} sectors per load request, "
                f"{rows.loads_per_warp:,.0f} loads per warp) in a grid that does not fill the GPU; the estimate "
                f"assumes the warp-per-row mapping the fix advises: lanes along the row, {rows.blocks_after:,.0f} "
                f"blocks, {rows.warps_per_sm:.0f} warps on each of {rows.sms:.0f} SMs instead of "
                f"{warps_per_sm(k) or 0:.0f} on {min(k.m(LaunchStats.GRID_SIZE) or 0, k.sm_count or 0):.0f}. "
                "The time of the fixed kernel is the largest of: its compulsory bytes streamed by those warps, each "
                f"pass over the row with the loads in flight it has now ({count(fixed.loads, 'coalesced load')} a "
                f"warp, weighted by the bytes of each pass), {fmt_ns(fixed.stream_ns)} (latency + throughput)" + rest
            )
        if fixed.stream_ns:
            return (
                "The time of the fixed kernel is the largest of: its compulsory bytes streamed with "
                f"{count(fixed.loads, 'coalesced load')} in flight per warp (each pass over memory with its own, "
                f"weighted by its bytes), {fmt_ns(fixed.stream_ns)} (latency + throughput: the wasted sectors' extra "
                "wavefronts, replays and latency gone), and at least the time its memory waits do not cover, "
                f"{fmt_ns(stall_bounded_ns(k, 0.0, MEMORY_WAITS))}" + rest
            )
        return (
            f"Time scales with the sectors moved: without the {frac:.0%} that its threads do not need, "
            + cut(fixed.weight, frac, k.roofline)
            + ". The time of the fixed kernel is the largest of that"
            + rest
        )

    def _from_l2_requests(self, k: KernelContext) -> Finding | None:
        """The weakest evidence, ncu's default set: the L2's tag lookups (one per request) far busier than its sectors
        bound the sectors each request carries, whatever the board's sector peak, and the L2 busy with them."""
        tag, sectors = k.m(SpeedOfLight.L2_TAG_REQUESTS_PCT), k.m(SpeedOfLight.L2_SECTORS_PCT)
        t = self.thresholds
        if not tag or sectors is None or tag < t["min_l2_tag_pct_weak"]:
            return None
        recorded = k.m(MemoryWorkloadAnalysis.L2_SECTORS_PEAK_PER_SLICE_CYCLE)
        peak = recorded or LARGEST_L2_SECTOR_PEAK
        per_request = peak * sectors / tag
        if per_request > t["max_l2_sectors_per_request_weak"]:
            return None
        r = k.roofline
        # the fixed kernel streams today's DRAM bytes (the needed ones are not counted: at most these) at the share of
        # DRAM's peak coalesced 4-byte loads reach, and keeps its pipes' busy time
        fraction = achievable_dram_fraction(4.0)
        bytes_ns = compulsory_ns(r, fraction) or 0.0
        kept_ns = kept_units_ns(r, MEMORY_UNITS - {"lsu"}) or 0.0
        if str(k.device.get("compute_capability") or "9.0") != "9.0":
            k.calibrations.add(f"a {fraction:.0%} share of DRAM's peak measured on H100 and H200")
        bound = "" if recorded else f"at most (with the largest sector peak recorded, {LARGEST_L2_SECTOR_PEAK:.0f})"
        peak_words = (
            f"the report's sector peak, {recorded:.0f} per slice and cycle"
            if recorded
            else f"the largest sector peak any report records, {LARGEST_L2_SECTOR_PEAK:.0f} per slice and cycle"
        )
        kind = "accesses"
        return self.finding(
            title=f"Uncoalesced global {kind}: L2 requests carry {'at most ' if not recorded else ''}"
            f"{per_request:.1f} sectors",
            message=(
                f"The L2's tag lookups are {tag:.0f}% busy and its sectors {sectors:.0f}%: with {peak_words}, each L2 "
                f"request carries {'at most ' if not recorded else ''}{per_request:.1f} of a 128-byte line's 4 sectors, "
                "where a warp's coalesced 4-byte access fills all 4. Consecutive threads touch addresses far apart "
                "(a stride, a transpose's writes, a field of a record), or the elements are 1-2 bytes, or the "
                "accesses are gathers or atomics: the default set cannot tell these apart, nor loads from stores."
            ),
            fix=self.fix_for(k, "the L2's requests", kind=kind),
            estimated_speedup=time_after(r.duration_ns or 0, max(bytes_ns, kept_ns), r.theoretical_ns),
            speedup_model=(
                "At most, an upper bound: the fixed kernel streams the bytes DRAM moves today (the default set counts "
                f"no needed bytes; the wasted ones that reach DRAM would go too) at the {fraction:.0%} of DRAM's peak "
                f"that coalesced 4-byte loads reach, {fmt_ns(bytes_ns)}"
                + (
                    f", and keeps the {fmt_ns(kept_ns)} its busiest pipe needs for the same instructions"
                    if kept_ns
                    else ""
                )
                + "; the latency of the loads and stores it keeps is not counted."
            ),
            evidence=[
                Evidence(SpeedOfLight.L2_TAG_REQUESTS_PCT, tag, t["min_l2_tag_pct_weak"], "L2 tag lookups, % of peak"),
                Evidence(SpeedOfLight.L2_SECTORS_PCT, sectors, None, "L2 sectors, % of peak"),
                Evidence(
                    "l2_sectors_per_request",
                    round(per_request, 2),
                    t["max_l2_sectors_per_request_weak"],
                    f"sectors per L2 request {bound}".strip(),
                ),
            ],
        )

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak and not any(k.m(m) is not None for m in self.weak_evidence if m != SpeedOfLight.L2_SECTORS_PCT):
            return self._from_l2_requests(k)  # no bytes used per sector either: ncu's default set
        total, excess, weak_kind, weak_evidence = self._sectors(k)
        if total <= 0:
            return None
        frac = excess / total
        if frac < self.thresholds["min_excess_fraction"]:
            return None
        r = k.roofline
        fixed = self._fixed_ns(k, frac)
        lines = k.top_lines(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE)
        top = max(k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE), key=lambda e: e.value, default=None)
        top_sass = (top.sass or "") if top is not None else ""
        stores = opcode(top_sass).startswith(("STG", "ST.", "ST"))  # `@!P0 STG.E` is a store
        kind = weak_kind if k.weak else ("stores" if stores else "loads")
        situation, fields = self._pattern(k, top_sass, frac)
        if situation == "a pointer chase":
            return None  # scattered by nature, no thread mapping or sort coalesces it: LAT001 speaks (loads in flight)
        if fixed.rows is None and not situation and not k.weak and self._one_mapping(k):
            situation = SWAPPED
        if fixed.rows is not None and not situation:
            situation = "a thread per row"
            fields = {
                "per_request": fixed.rows.sectors_per_request,
                "grid": k.m(LaunchStats.GRID_SIZE) or 0.0,
                "block": k.block_size,
                "blocks": fixed.rows.blocks_after,
            }
        return self.finding(
            title=(
                f"Gathered loads (addresses loaded just before): {frac:.0%} of sectors wasted"
                if situation == "the address comes from a load"
                else f"Uncoalesced global {kind}: {frac:.0%} of sectors wasted"
            ),
            message=(
                f"{frac:.0%} of the global-memory sectors this kernel moves are not needed by its threads "
                f"({excess:,.0f} of {total:,.0f}); the memory system carries {1 / max(1e-9, 1 - frac):.1f}× the "
                "useful traffic."
            ),
            fix=self.fix_for(k, situation or (), kind=kind, **fields),
            estimated_speedup=time_after(r.duration_ns or 0, fixed.new_ns, fixed.floor_ns),
            speedup_model=self._speedup_model(k, fixed, frac),
            confidence="high" if frac >= 0.5 else "medium",
            evidence=[
                *(
                    weak_evidence
                    or [
                        Evidence(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE, excess, None, "excessive sectors"),
                        Evidence(SourceCounters.L2_SECTORS_GLOBAL, total, None, "sectors"),
                    ]
                ),
                Evidence("excess_fraction", round(frac, 3), self.thresholds["min_excess_fraction"], "wasted share"),
            ],
            predicts=self._predicts(k, frac, kind),
            source=lines,
        )
