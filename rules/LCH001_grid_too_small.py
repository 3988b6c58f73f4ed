import math

from ncuadvisor.rulekit import (
    LAUNCH_BOUND_NS,
    PRACTICAL_FRACTION,
    Device,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    MemoryTables,
    MemoryWorkloadAnalysis,
    Occupancy,
    Rule,
    SchedulerStats,
    SpeedOfLight,
    TensorRooflineChart,
    fmt_ns,
    load_chains,
    parallelism_ns,
    predict,
    time_after,
)

TAIL = "a tail effect: the last wave is partial"
SMALL_GRID = "fewer blocks than SMs"
SMALL_GRID_TILED = "fewer blocks than SMs, in a tiled kernel"
PARTIAL_WAVE = "less than one wave of blocks"
PARTIAL_WAVE_TILED = "less than one wave of blocks, in a tiled kernel"

# split-K, for a tiled kernel whose grid is set by its output tiles (after the sentence that says what is wrong)
_SPLIT_K_TEXT = (
    "Give the grid at least {fill} blocks without cutting the work per thread: split the "
    "reduction loop across {splits} blocks per tile (split-K) and let the last block of each tile add "
    "the partial tiles (serial split-K: one kernel, a counter per tile), or a stream-K loop. Smaller tiles "
    "also add blocks, but each thread then reuses fewer loaded values. Split-K pays a reduction of the "
    "{splits} partial results: about {reduction} here, against the "
    "{saving} the fuller grid saves."
)
_SPLIT_K_CODE = (
    "// split-K: {splits} blocks per output tile, each over 1/{splits} of the K loop\n"
    "gemm<<<dim3(N / TILE, M / TILE, {splits}), threads>>>(A, B, partial, C, tile_counter);\n"
    "// in the kernel, after the K chunk: store the partial tile, __threadfence(), then\n"
    "// if (atomicAdd(&tile_counter[tile], 1) == {last_split}) { C = sum of the partial tiles; "
    "tile_counter[tile] = 0; }"
)
_PARTIAL_WAVE_SITUATION = (
    "{grid:.0f} blocks fill {waves:.0%} of one wave: the {sms} SMs hold {per_sm:.0f} blocks of "
    "{block} threads each, and get about {blocks_per_sm:.1f}"
)


class GridTooSmall(Rule):
    """The grid cannot fill the GPU: fewer blocks than SMs, or a last wave that leaves most SMs idle.

    What it detects:
        `launch__grid_size` below the SM count (`device__attribute_multiprocessor_count`); a partial wave: at least
        one block per SM but less than one full wave (`launch__waves_per_multiprocessor` below `max_partial_wave`),
        so a latency-bound kernel (busiest unit under `max_busy_pct` of its peak) runs with fewer warps per SM than
        fit (achieved occupancy under `max_achieved_fraction` of the theoretical); or a tail effect: between 1 and
        `max_waves_for_tail` waves whose last partial wave wastes more than `min_tail_loss` of the kernel's SM time.

    Why it costs time:
        A block runs on one SM. With 16 blocks on a 132-SM GPU, 116 SMs sit idle whatever the kernel does; with 1.1
        waves, the second wave runs 10% of the blocks while 90% of the GPU waits.

    Example:
        saxpy_grid_stride<<<16, 256>>>(n, a, x, y);
        gemm_tiled<<<dim3(N / 32, M / 32), dim3(32, 8)>>>(...);   // 256 blocks where 132 SMs hold 792

    Use instead:
        Launch at least one full wave: `blocks = sm_count * blocks_per_sm` (from
        `cudaOccupancyMaxActiveBlocksPerMultiprocessor`) for a grid-stride loop, or `ceil(n / block)` blocks. A
        tiled kernel (its loop's operands staged in shared memory), whose grid is set by its output tiles: split the
        reduction loop across blocks (split-K; serial split-K adds the partial tiles in the same kernel), keeping the
        work per thread. Smaller tiles add blocks too but lose reuse: on the H200 the planted 32×32-tile GEMM of
        workloads/cuda/wave.cu ran 61% slower in 16×16 tiles, one output per thread.

    Speedup estimate:
        Small grid and partial wave: latency plus throughput: the busiest unit's share of the time at its peak
        (Speed Of Light %) stays; the rest, waiting on latency, divides by the gain in warps in flight (Little's
        law), warps when every SM holds as many blocks as fit ÷ warps now (the grid's, or for a partial wave the
        achieved occupancy's). For a tiled kernel the model runs over the busiest SM's active cycles (launch ramp
        and drain stay), takes the busiest unit among L1/shared memory, issue, memory and compute, caps it at 85%,
        and adds split-K's reduction (one more ramp and drain, the partial results through L2). A partial wave whose
        warps stall on global loads for `chain_long_scoreboard_share` of their stalls with more than
        `chain_loads_per_warp` loads each (chains of loads that wait for each other, a pointer chase): the grid grows
        only by splitting those chains, so the gain in warps is at most `chain_gain`, the independent chains per warp
        LAT001's fix assumes. Tail: × waves /
        ceil(waves) of the busiest SM's active time, launch ramp and drain kept. The fix keeps the instructions and
        the traffic: never below the busiest unit's time at 85% of its peak, L2 included (`rulekit.unit_floor_ns`;
        Speed Of Light's memory share can be DRAM's alone, where a chase keeps L2 busier), nor below the roofline
        floor at 85% of peak.
        The counter the fix moves: small grid, blocks per SM to as many as fit (at least 1 after); partial wave and
        tail, the idle share of the last wave's block slots (1 − waves ÷ ⌈waves⌉) to 0 (at most 1 −
        `max_partial_wave` and `min_tail_loss` after).

    False positives:
        Kernels shorter than 5 µs are left to the launch-overhead rule (PRG001): their problem is the launch, not the
        grid. Kernels that are deliberately small (a reduction's last pass) and run for a few microseconds: the estimate
        is then small in absolute time, and the program ranking says so.
    """

    code = "LCH001"
    slug = "grid-too-small"
    category = "launch-config"
    title = "Grid too small to fill the GPU"
    requires = (LaunchStats.GRID_SIZE, LaunchStats.BLOCK_SIZE)
    optional = (
        LaunchStats.WAVES_PER_SM,
        Device.SM_COUNT,
        Occupancy.LIMIT_BLOCKS,
        Occupancy.LIMIT_REGISTERS,
        Occupancy.LIMIT_SHARED_MEM,
        Occupancy.LIMIT_WARPS,
        Occupancy.THEORETICAL_PCT,
        Occupancy.ACHIEVED_PCT,
        SpeedOfLight.ELAPSED_CYCLES_MAX,
        SpeedOfLight.SM_ACTIVE_CYCLES_MAX,
        SpeedOfLight.L1_MAX_ACTIVE_PCT,
        SchedulerStats.ISSUE_ACTIVE_MAX_PCT,
        LaunchStats.SHARED_MEM_STATIC,
        MemoryTables.GLOBAL_STORE_SECTORS,
        MemoryWorkloadAnalysis.L2_SECTORS_PEAK_PER_SLICE_CYCLE,
        MemoryWorkloadAnalysis.L2_SECTORS,
        MemoryWorkloadAnalysis.L2_SECTORS_PER_SLICE,
        TensorRooflineChart.L2_CLOCK_HZ,
    )
    thresholds = {
        "min_tail_loss": 0.2,
        "max_waves_for_tail": 4.0,
        "max_partial_wave": 0.5,
        "max_busy_pct": 60.0,
        "max_achieved_fraction": 0.5,
        # a partial wave whose warps wait on chains of dependent loads (LAT001's signature): the warps it can gain
        "chain_long_scoreboard_share": 0.5,
        "chain_loads_per_warp": 4.0,
        "chain_gain": 4.0,
    }
    fixes_when = {
        TAIL: {
            "cuda": Fix(
                text=(
                    "Make the block count a multiple of the blocks that fit at once (SMs × blocks per SM): "
                    "adjust the work per block, or use a persistent grid-stride loop with exactly one wave."
                ),
                code="int blocks = per_sm * sm_count;   // one full wave, grid-stride loop inside",
            ),
            "triton": Fix(
                text=(
                    "Pick BLOCK sizes so the number of programs is a multiple of the programs that fit at once "
                    "(SMs × programs per SM), or make the kernel persistent: launch one wave of programs that "
                    "loop over the tiles."
                ),
                code="grid = (min(triton.cdiv(n, BLOCK), NUM_SMS * PROGRAMS_PER_SM),)  # persistent loop inside",
            ),
        },
        SMALL_GRID: {
            "cuda": Fix(
                text=(
                    "{grid:.0f} blocks of {block} threads run on {grid:.0f} of {sms} SMs. Launch at least one full "
                    "wave: for a grid-stride loop, size the grid from the occupancy API."
                ),
                code=(
                    "int per_sm = 0;\n"
                    "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, {kernel}, {block}, 0);\n"
                    "{kernel}<<<per_sm * sm_count, {block}>>>(...);"
                ),
            ),
            "triton": Fix(
                text=(
                    "The launch grid has {grid:.0f} programs for {sms} SMs: use a smaller BLOCK_SIZE so "
                    "`triton.cdiv(n, BLOCK_SIZE)` ≥ 2 × SMs, or split the reduction axis (split-K)."
                ),
                code="grid = (triton.cdiv(n, BLOCK_SIZE),)  # with BLOCK_SIZE small enough for >= 2*SM programs",
            ),
        },
        SMALL_GRID_TILED: {
            "cuda": Fix(
                text=(
                    "{grid:.0f} blocks of {block} threads run on {grid:.0f} of {sms} SMs, which hold {fill} at once. "
                    + _SPLIT_K_TEXT
                ),
                code=_SPLIT_K_CODE,
            ),
        },
        PARTIAL_WAVE: {
            "cuda": Fix(
                text=(
                    _PARTIAL_WAVE_SITUATION + ". Give the grid at least {fill} blocks (less work per block, the grid "
                    "sized from the occupancy API); where the grid cannot grow, more independent work per thread."
                ),
                code=(
                    "// {fill} blocks fit at once: cut each block's share of the work so the grid has at least that "
                    "many\nint per_sm = 0;\n"
                    "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, {kernel}, {block}, 0);"
                ),
            ),
            "triton": Fix(
                text=(
                    "{grid:.0f} programs fill {waves:.0%} of one wave ({fill} programs fit at once): split the "
                    "reduction axis (split-K) across programs, or use smaller BLOCK_M/BLOCK_N (or BLOCK_SIZE) where "
                    "the loss of reuse per program is small, so the grid has at least a full wave."
                ),
                code="grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), SPLIT_K)  # program_id(1): a K chunk",
            ),
        },
        PARTIAL_WAVE_TILED: {
            "cuda": Fix(text=_PARTIAL_WAVE_SITUATION + ". " + _SPLIT_K_TEXT, code=_SPLIT_K_CODE),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        grid = k.m(LaunchStats.GRID_SIZE) or 0
        sms = k.sm_count
        if not grid or not sms or not r.duration_ns:
            return None
        if r.duration_ns < LAUNCH_BOUND_NS:
            return None  # a few microseconds of work: launch overhead (PRG001), not the grid, is the problem
        block = k.block_size
        if grid < sms:
            return self.small_grid(k, grid, sms, block)
        waves = k.m(LaunchStats.WAVES_PER_SM)
        partial = self.partial_wave(k, grid, sms, block, waves)
        if partial is not None:
            return partial
        if waves and 1.0 < waves < self.thresholds["max_waves_for_tail"]:
            full = math.ceil(waves)
            loss = 1.0 - waves / full
            if loss >= self.thresholds["min_tail_loss"]:
                # the SMs' active time shrinks to waves / full of itself; launch ramp and drain stay
                act_frac = self.active_fraction(k)
                new_ns = r.duration_ns * ((1.0 - act_frac) + act_frac * waves / full)
                return self.finding(
                    title=f"Tail effect: {waves:.2f} waves, the last one {waves - int(waves):.0%} full",
                    message=(
                        f"The grid runs in {waves:.2f} waves of blocks; during the last one "
                        f"{1 - (waves - int(waves)):.0%} of the SMs are idle."
                    ),
                    fix=self.fix_for(k, TAIL),
                    estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
                    speedup_model=(
                        f"The busiest SM's active time ({act_frac:.0%} of the kernel) × {waves:.2f} / {full} "
                        "(no partial last wave); launch ramp and drain stay; not below the floor."
                    ),
                    confidence="medium",
                    predicts=[predict("wave_idle_share", loss, 0.0, self.thresholds["min_tail_loss"])],
                    evidence=[Evidence(LaunchStats.WAVES_PER_SM, waves, None, "waves")],
                )
        return None

    def small_grid(self, k: KernelContext, grid: float, sms: int, block: int) -> Finding:
        """Fewer blocks than SMs: whole SMs idle for the whole kernel."""
        r = k.roofline
        # warps in flight now vs. once every SM holds as many blocks as fit (Little's law)
        per_sm = k.m(Occupancy.LIMIT_BLOCKS) or 1.0
        for limit in (Occupancy.LIMIT_REGISTERS, Occupancy.LIMIT_SHARED_MEM, Occupancy.LIMIT_WARPS):
            blocks = k.m(limit)
            if blocks:
                per_sm = min(per_sm, blocks)
        gain = sms * per_sm / grid
        fill = int(sms * per_sm)
        tiled = self.is_tiled(k) and not k.is_triton
        if tiled:
            splits, est = self.split_k_estimate(k, grid, sms, fill)
            new_ns = est["new_ns"]
            fix = self.fix_for(
                k, SMALL_GRID_TILED, grid=grid, block=block, sms=sms, fill=fill, **self.split_k(splits, est)
            )
            model = self.split_k_model(est, f"{fill} blocks in flight instead of {grid:.0f}")
        else:
            new_ns = parallelism_ns(k, gain) or 0.0
            model = (
                "Latency + throughput: the busiest unit's time at its peak stays, the time spent waiting on "
                f"latency divides by the gain in warps in flight, {gain:.1f}× (Little's law: {fill} blocks in "
                f"flight, every SM holding as many as fit, instead of {grid:.0f}), not below the roofline floor."
            )
            fix = self.fix_for(k, SMALL_GRID, grid=grid, block=block, sms=sms, kernel=k.kernel.name)
        return self.finding(
            title=f"{grid:.0f} blocks for {sms} SMs: {1 - grid / sms:.0%} of the GPU idle",
            message=(
                f"The grid has {grid:.0f} blocks; each runs on one SM, so {sms - grid:.0f} of {sms} SMs have "
                "nothing to do for the whole kernel."
            ),
            fix=fix,
            estimated_speedup=time_after(r.duration_ns or 0.0, new_ns, r.theoretical_ns),
            speedup_model=model,
            confidence="high",
            predicts=[predict("blocks_per_sm", grid / sms, fill / sms, 1.0, ">=")],
            evidence=[Evidence(LaunchStats.GRID_SIZE, grid, sms, "blocks (threshold: SM count)")],
        )

    def partial_wave(self, k: KernelContext, grid: float, sms: int, block: int, waves: float | None) -> Finding | None:
        """At least a block per SM, but a fraction of a wave: the SMs run latency-bound with warps to spare."""
        r = k.roofline
        theo = k.m(Occupancy.THEORETICAL_PCT)
        achieved = k.m(Occupancy.ACHIEVED_PCT)
        busy = max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0))
        if not waves or waves >= self.thresholds["max_partial_wave"] or not theo or not achieved:
            return None
        if busy >= self.thresholds["max_busy_pct"] or achieved >= self.thresholds["max_achieved_fraction"] * theo:
            return None
        fill = math.ceil(grid / waves) if waves else 0  # blocks in one full wave
        per_sm = fill / sms if sms else 0
        gain, chains = theo / achieved, ""
        share, loads_per_warp = load_chains(k)
        t = self.thresholds
        if share >= t["chain_long_scoreboard_share"] and loads_per_warp > t["chain_loads_per_warp"]:
            # each warp walks loads that wait for each other: the grid grows only by splitting those chains, so the
            # warps gained are bounded by the independent chains a warp holds, the reserve LAT001 draws on too
            gain = min(gain, t["chain_gain"])
            chains = f"; at most {gain:.0f}× the warps, as a warp's dependent loads split into independent chains"
        if self.is_tiled(k):
            splits, est = self.split_k_estimate(k, grid, sms, fill, max_gain=gain)
        else:
            splits, est = 0, self.full_wave_estimate(k, gain)
        fix = self.fix_for(
            k,
            (PARTIAL_WAVE, PARTIAL_WAVE_TILED) if est["tiled"] else PARTIAL_WAVE,
            grid=grid,
            waves=waves,
            sms=sms,
            per_sm=per_sm,
            block=block,
            blocks_per_sm=grid / sms,
            fill=fill,
            kernel=k.kernel.name,
            **(self.split_k(splits, est) if est["tiled"] else {}),
        )
        return self.finding(
            title=f"Partial wave: {grid:.0f} blocks where {fill} fit, {achieved:.0f}% of warps active",
            message=(
                f"The grid runs {waves:.2f} of a wave: each SM gets about {grid / sms:.1f} of the {per_sm:.0f} "
                f"blocks it can hold, so {achieved:.0f}% of its warp slots are busy (theoretical {theo:.0f}%), too "
                f"few to hide latency: memory and compute are at {r.sol.get('memory_pct', 0):.0f}% and "
                f"{r.sol.get('compute_pct', 0):.0f}% of peak."
            ),
            fix=fix,
            estimated_speedup=time_after(r.duration_ns or 0.0, est["new_ns"], r.theoretical_ns),
            speedup_model=self.split_k_model(est, f"{theo:.0f}% of warps active instead of {achieved:.0f}%{chains}"),
            confidence="medium",
            predicts=[
                predict("wave_idle_share", 1 - waves / math.ceil(waves), 0.0, 1 - self.thresholds["max_partial_wave"])
            ],
            evidence=[
                Evidence(LaunchStats.WAVES_PER_SM, round(waves, 2), self.thresholds["max_partial_wave"], "waves"),
                Evidence(
                    Occupancy.ACHIEVED_PCT,
                    round(achieved, 1),
                    round(self.thresholds["max_achieved_fraction"] * theo, 1),
                    "achieved occupancy",
                    "%",
                ),
            ],
        )

    @staticmethod
    def is_tiled(k: KernelContext) -> bool:
        """A kernel that stages its loop's operands in shared memory (a tiled product, a blocked reduction): its grid
        is set by the output tiles, so more blocks means split-K (or smaller tiles), not a bigger launch."""
        return bool(k.m(LaunchStats.SHARED_MEM_STATIC))

    @staticmethod
    def split_k(splits: int, est: dict) -> dict:
        """The fields of the split-K fix: K chunks per tile, and the reduction's cost against the grid's saving."""
        return {
            "splits": splits,
            "last_split": splits - 1,
            "reduction": fmt_ns(est["reduction_ns"]),
            "saving": fmt_ns(est["kernel_saving_ns"]),
        }

    @staticmethod
    def split_k_model(est: dict, warps: str) -> str:
        return (
            "Latency + throughput over the busiest SM's active time "
            f"({est['active_fraction']:.0%} of the kernel; the rest, launch ramp and drain, stays): the busiest "
            f"unit ({est['unit']}, {est['busy']:.0%} of its peak while active) keeps its time, the time spent "
            f"waiting on latency divides by the gain in warps in flight (Little's law: {warps}), the unit"
            + (f" and L2 ({est['l2']:.0%} of its peak while active)" if est.get("l2") else "")
            + f" at most at {PRACTICAL_FRACTION:.0%}"
            + (
                "; plus split-K's reduction: one more ramp and drain, and the partial results read and the output "
                "written once more through L2"
                if est["tiled"]
                else ""
            )
            + "; not below the roofline floor."
        )

    def split_k_estimate(
        self, k: KernelContext, grid: float, sms: int, fill: int, max_gain: float | None = None
    ) -> tuple[int, dict]:
        """(K chunks per tile, `full_wave_estimate`) for split-K up to one wave of `fill` blocks. The busiest SM runs
        ceil(grid / SMs) blocks now, and after the split grid × splits / SMs blocks of 1/splits the work; the warps
        gain is capped at `max_gain` (the occupancy there is to gain) when given."""
        splits = max(2, int(fill // grid))
        now, after = math.ceil(grid / sms), grid * splits / sms
        gain = after / now if max_gain is None else min(max_gain, after / now)
        return splits, self.full_wave_estimate(k, gain, splits, work_ratio=after / splits / now)

    def full_wave_estimate(self, k: KernelContext, gain: float, splits: int = 0, work_ratio: float = 1.0) -> dict:
        """The kernel's time once its grid fills a wave with the same work per thread (Little's law over the busiest
        SM's active cycles), and for a tiled kernel (shared memory: the grid grows by splitting the K loop) the price
        of split-K's reduction. `gain`: warps in flight on the busiest SM after ÷ before; `work_ratio`: its work
        after ÷ before (below 1 when the split spreads the work over SMs that sat idle). Checked on workloads/cuda/wave.cu (the planted gemm_big_tiles, K = 256, and its
        split-K twins, H200, 2026-11-30): the split kernel alone estimated 10.8 µs, measured 11.1 µs; the reduction
        estimated 2.1 µs, measured 2.9 µs (serial split-K, one kernel) and 3.2 µs (a second kernel)."""
        r = k.roofline
        duration = r.duration_ns or 0.0
        act_frac = self.active_fraction(k)
        units = {
            "L1/shared memory": k.m(SpeedOfLight.L1_MAX_ACTIVE_PCT),
            "instruction issue": k.m(SchedulerStats.ISSUE_ACTIVE_MAX_PCT),
            "memory": r.sol.get("memory_pct", 0.0) / act_frac,
            "compute": r.sol.get("compute_pct", 0.0) / act_frac,
        }
        unit, busy_pct = max(((n, v or 0.0) for n, v in units.items()), key=lambda nv: nv[1])
        busy = min(1.0, max(0.0, busy_pct / 100.0))
        tiled = self.is_tiled(k)
        act_ns, fixed_ns = duration * act_frac, duration * (1.0 - act_frac)
        gain = max(1.0, gain)
        # the floor: the busiest unit's work at the practical fraction of its peak, L2 included (a chase's L2 is
        # busier than Speed Of Light's memory share, which can be DRAM's alone)
        l2 = min(1.0, r.busy_pct.get("l2", 0.0) / 100.0 / act_frac)
        floor = max(busy, l2)
        new_act = act_ns * work_ratio * max(busy + (1.0 - busy) / gain, floor / PRACTICAL_FRACTION)
        kernel_ns = min(duration, fixed_ns + new_act)
        reduction_ns = 0.0
        if tiled:
            out_bytes = (k.m(MemoryTables.GLOBAL_STORE_SECTORS) or 0.0) * 32.0
            l2_bps = self.l2_bytes_per_s(k)
            reduction_ns = fixed_ns + ((splits + 1) * out_bytes / l2_bps * 1e9 if l2_bps else 0.0)
        return {
            "new_ns": kernel_ns + reduction_ns,
            "kernel_saving_ns": duration - kernel_ns,
            "reduction_ns": reduction_ns,
            "tiled": tiled,
            "unit": unit,
            "busy": busy,
            "l2": l2 if l2 > busy else None,  # L2, busier than the unit: its floor is L2's
            "active_fraction": act_frac,
        }

    @staticmethod
    def active_fraction(k: KernelContext) -> float:
        """The busiest SM's active cycles ÷ the kernel's elapsed cycles: what is left is launch ramp and drain, which
        no change of the grid removes (measured on wave.cu: 1.6-1.8 µs of a 14.5 µs kernel). 1 when unknown."""
        elapsed, active = k.m(SpeedOfLight.ELAPSED_CYCLES_MAX), k.m(SpeedOfLight.SM_ACTIVE_CYCLES_MAX)
        return active / elapsed if elapsed and active and 0 < active <= elapsed else 1.0

    @staticmethod
    def l2_bytes_per_s(k: KernelContext) -> float | None:
        """L2 bandwidth from the report: sectors per cycle per slice × slices × 32 B × the L2 clock."""
        per_slice = k.m(MemoryWorkloadAnalysis.L2_SECTORS_PEAK_PER_SLICE_CYCLE)
        total, avg = k.m(MemoryWorkloadAnalysis.L2_SECTORS), k.m(MemoryWorkloadAnalysis.L2_SECTORS_PER_SLICE)
        clock = k.m(TensorRooflineChart.L2_CLOCK_HZ)
        if not (per_slice and total and avg and clock):
            return None
        return per_slice * (total / avg) * 32.0 * clock
