import math

from ncuadvisor.roofline import LAUNCH_BOUND_NS
from ncuadvisor.rules_api import Evidence, KernelContext, Rule, parallelism_ns, time_after


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
        tiled kernel whose tiles are too big for the problem: smaller tiles per block, or split the reduction loop
        across blocks (split-K); where the grid cannot grow, more independent work per thread.

    Speedup estimate:
        Small grid and partial wave: latency plus throughput: the busiest unit's share of the time at its peak
        (Speed Of Light %) stays; the rest, waiting on latency, divides by the gain in warps in flight (Little's
        law), warps when every SM holds as many blocks as fit ÷ warps now (the grid's, or for a partial wave the
        achieved occupancy's). Tail: × waves / ceil(waves). Never below the roofline floor at 85% of peak.

    False positives:
        Kernels shorter than 5 µs are left to the launch-overhead rule (PRG001): their problem is the launch, not the
        grid. Kernels that are deliberately small (a reduction's last pass) and run for a few microseconds: the estimate
        is then small in absolute time, and the program ranking says so.
    """

    code = "LCH001"
    slug = "grid-too-small"
    category = "launch-config"
    title = "Grid too small to fill the GPU"
    requires = ("launch__grid_size", "launch__block_size")
    optional = ("launch__waves_per_multiprocessor", "device__attribute_multiprocessor_count",
                "launch__occupancy_limit_blocks", "launch__occupancy_limit_registers",
                "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
                "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active")
    thresholds = {"min_tail_loss": 0.2, "max_waves_for_tail": 4.0, "max_partial_wave": 0.5, "max_busy_pct": 60.0,
                  "max_achieved_fraction": 0.5}

    def check(self, k: KernelContext):
        r = k.roofline
        grid = k.m("launch__grid_size") or 0
        sms = k.sm_count
        if not grid or not sms or not r.duration_ns:
            return None
        if r.duration_ns < LAUNCH_BOUND_NS:
            return None  # a few microseconds of work: launch overhead (PRG001), not the grid, is the problem
        block = k.block_size
        if grid < sms:
            # warps in flight now vs. once every SM holds as many blocks as fit (Little's law)
            warps_per_block = max(1.0, block / 32.0)
            per_sm = k.m("launch__occupancy_limit_blocks") or 1.0
            for limit in ("launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem",
                          "launch__occupancy_limit_warps"):
                if k.m(limit):
                    per_sm = min(per_sm, k.m(limit))
            after_warps = sms * per_sm * warps_per_block
            new_ns = parallelism_ns(k, after_warps / (grid * warps_per_block)) or 0.0
            if k.is_triton:
                fix = (f"The launch grid has {grid:.0f} programs for {sms} SMs: use a smaller BLOCK_SIZE so "
                       "`triton.cdiv(n, BLOCK_SIZE)` ≥ 2 × SMs, or split the reduction axis (split-K).")
                code = "grid = (triton.cdiv(n, BLOCK_SIZE),)  # with BLOCK_SIZE small enough for >= 2*SM programs"
            else:
                fix = (f"{grid:.0f} blocks of {block} threads run on {grid:.0f} of {sms} SMs. Launch at least one full "
                       "wave: for a grid-stride loop, size the grid from the occupancy API.")
                code = ("int per_sm = 0;\n"
                        f"cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, {k.kernel.name}, {block}, 0);\n"
                        f"{k.kernel.name}<<<per_sm * sm_count, {block}>>>(...);")
            return self.finding(
                title=f"{grid:.0f} blocks for {sms} SMs: {1 - grid / sms:.0%} of the GPU idle",
                message=(f"The grid has {grid:.0f} blocks; each runs on one SM, so {sms - grid:.0f} of {sms} SMs have "
                         "nothing to do for the whole kernel."),
                fix=fix,
                fix_code=code,
                estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
                speedup_model=("Latency + throughput: the busiest unit's time at its peak stays, the time spent waiting "
                               "on latency divides by the gain in warps in flight (Little's law: every SM holding as "
                               "many blocks as fit), not below the roofline floor."),
                confidence="high",
                evidence=[Evidence("launch__grid_size", grid, sms, "blocks (threshold: SM count)")],
            )
        waves = k.m("launch__waves_per_multiprocessor")
        partial = self.partial_wave(k, grid, sms, block, waves)
        if partial is not None:
            return partial
        if waves and 1.0 < waves < self.thresholds["max_waves_for_tail"]:
            full = math.ceil(waves)
            loss = 1.0 - waves / full
            if loss >= self.thresholds["min_tail_loss"]:
                new_ns = r.duration_ns * waves / full
                if k.is_triton:
                    fix = ("Pick BLOCK sizes so the number of programs is a multiple of the programs that fit at once "
                           "(SMs × programs per SM), or make the kernel persistent: launch one wave of programs that "
                           "loop over the tiles.")
                    code = "grid = (min(triton.cdiv(n, BLOCK), NUM_SMS * PROGRAMS_PER_SM),)  # persistent loop inside"
                else:
                    fix = ("Make the block count a multiple of the blocks that fit at once (SMs × blocks per SM): "
                           "adjust the work per block, or use a persistent grid-stride loop with exactly one wave.")
                    code = "int blocks = per_sm * sm_count;   // one full wave, grid-stride loop inside"
                return self.finding(
                    title=f"Tail effect: {waves:.2f} waves, the last one {waves - int(waves):.0%} full",
                    message=(f"The grid runs in {waves:.2f} waves of blocks; during the last one "
                             f"{1 - (waves - int(waves)):.0%} of the SMs are idle."),
                    fix=fix,
                    fix_code=code,
                    estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
                    speedup_model=f"Time × {waves:.2f} / {full} (no partial last wave), not below the floor.",
                    confidence="medium",
                    evidence=[Evidence("launch__waves_per_multiprocessor", waves, None, "waves")],
                )
        return None

    def partial_wave(self, k: KernelContext, grid: float, sms: int, block: int, waves: float | None):
        """At least a block per SM, but a fraction of a wave: the SMs run latency-bound with warps to spare."""
        r = k.roofline
        theo = k.m("sm__maximum_warps_per_active_cycle_pct")
        achieved = k.m("sm__warps_active.avg.pct_of_peak_sustained_active")
        busy = max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0))
        if not waves or waves >= self.thresholds["max_partial_wave"] or not theo or not achieved:
            return None
        if busy >= self.thresholds["max_busy_pct"] or achieved >= self.thresholds["max_achieved_fraction"] * theo:
            return None
        gain = theo / achieved  # warps in flight once every SM holds the blocks that fit
        new_ns = parallelism_ns(k, gain) or 0.0
        fill = math.ceil(grid / waves) if waves else 0  # blocks in one full wave
        per_sm = fill / sms if sms else 0
        if k.is_triton:
            fix = (f"{grid:.0f} programs fill {waves:.0%} of one wave ({fill} programs fit at once): use smaller "
                   "BLOCK_M/BLOCK_N (or BLOCK_SIZE) so the grid has at least a full wave, or split the reduction axis "
                   "(split-K) across programs.")
            code = "grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)  # smaller BLOCK_M/N: >= 1 full wave"
        else:
            fix = (f"{grid:.0f} blocks fill {waves:.0%} of one wave: the {sms} SMs hold {per_sm:.0f} blocks of {block} "
                   f"threads each, and get about {grid / sms:.1f}. Give the grid at least {fill} blocks: smaller tiles "
                   "per block, or split the reduction loop across blocks (split-K, then add the partial results); "
                   "where the grid cannot grow, more independent work per thread.")
            code = (f"// {fill} blocks fit at once: cut each block's tile (or its share of the K loop) so the grid has "
                    "at least that many\n"
                    "dim3 grid(ceil_div(N, TILE / 2), ceil_div(M, TILE / 2));   // 4x the blocks of TILE x TILE tiles")
        return self.finding(
            title=f"Partial wave: {grid:.0f} blocks where {fill} fit, {achieved:.0f}% of warps active",
            message=(f"The grid runs {waves:.2f} of a wave: each SM gets about {grid / sms:.1f} of the {per_sm:.0f} "
                     f"blocks it can hold, so {achieved:.0f}% of its warp slots are busy (theoretical {theo:.0f}%), too "
                     f"few to hide latency: memory and compute are at {r.sol.get('memory_pct', 0):.0f}% and "
                     f"{r.sol.get('compute_pct', 0):.0f}% of peak."),
            fix=fix,
            fix_code=code,
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=("Latency + throughput: the busiest unit's time at its peak stays, the time spent waiting on "
                           f"latency divides by the gain in warps in flight (Little's law: {theo:.0f}% of warps "
                           f"active instead of {achieved:.0f}%), not below the roofline floor."),
            confidence="medium",
            evidence=[
                Evidence("launch__waves_per_multiprocessor", round(waves, 2), self.thresholds["max_partial_wave"],
                         "waves"),
                Evidence("sm__warps_active.avg.pct_of_peak_sustained_active", round(achieved, 1),
                         round(self.thresholds["max_achieved_fraction"] * theo, 1), "achieved occupancy", "%"),
            ],
        )
