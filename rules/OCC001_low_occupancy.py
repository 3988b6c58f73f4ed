from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    Occupancy,
    Rule,
    count,
    counted,
    limiter_side,
    parallelism_ns,
    predict,
    time_after,
)

LIMITS = {
    "registers": Occupancy.LIMIT_REGISTERS,
    "shared memory": Occupancy.LIMIT_SHARED_MEM,
    "warps (block size)": Occupancy.LIMIT_WARPS,
    "blocks per SM": Occupancy.LIMIT_BLOCKS,
}
_SMALL_BLOCKS_CODE = "kernel<<<(n + 255) / 256, 256>>>(...);"


class LowOccupancy(Rule):
    """Too few warps per SM to hide latency, capped by a resource the kernel over-uses: the limiter is named.

    What it detects:
        A kernel that keeps neither memory nor compute busy (no pipe limits it: `roofline.limiter`; busiest Speed Of
        Light unit below `max_busy_pct`), whose theoretical occupancy (`sm__maximum_warps_per_active_cycle_pct`) is
        at most `max_theoretical_pct` (half the warp slots empty or more: LAT001 takes the kernels above it) because
        of registers, shared memory, block size or the block limit
        (`launch__occupancy_limit_*`, in blocks per SM: the smallest is the limiter), and whose grid has more blocks
        than the SMs hold at that limit (`launch__grid_size` > SMs × blocks per SM): where every block is resident
        at once, relaxing the limit adds no warp, and the lever is more blocks (LCH001).

    Why it costs time:
        An SM hides the latency of a load (~600 cycles from HBM) by switching to other warps. By Little's law the
        bytes in flight, and so the bandwidth, scale with the warps resident: at 6% occupancy the SM sits idle.

    Example:
        kernel<<<grid, 128, 200 * 1024>>>(...);   // 200 KB of dynamic shared memory: 1 block (4 warps) per SM

    Use instead:
        Registers: `__launch_bounds__(256, 4)` or `-maxrregcount=64` (check for spills). Shared memory: allocate
        only what a block uses, smaller tiles. Block limit: ≥ 128 threads per block.

    Speedup estimate:
        Latency plus throughput: the busiest unit's share of the time at its peak (Speed Of Light %) stays; the rest,
        waiting on latency, divides by the gain in resident warps (Little's law), theoretical occupancy with the
        limiter relaxed to the next-tightest limit ÷ theoretical occupancy now: new time = time × (SOL + (1 − SOL) ÷
        gain), not below the roofline floor at 85% of peak. Registers are never capped below `min_register_cap`
        per thread (64): a kernel that needs far more (a 172-register kernel capped at 32 to reach 100%) would
        spill to local memory, so the advice and the estimate stop at the blocks that fit at that cap.

    False positives:
        Kernels that already have enough independent work per warp (ILP, many loads in flight) need fewer warps;
        forcing registers down can spill to local memory.
    """

    code = "OCC001"
    slug = "low-occupancy"
    category = "occupancy"
    title = "Low occupancy"
    requires = (
        Occupancy.THEORETICAL_PCT,
        LaunchStats.BLOCK_SIZE,
        *LIMITS.values(),
    )
    optional = (
        Occupancy.ACHIEVED_PCT,
        LaunchStats.REGISTERS_PER_THREAD,
        LaunchStats.SHARED_MEM_STATIC,
        LaunchStats.SHARED_MEM_DYNAMIC,
        LaunchStats.GRID_SIZE,
    )
    thresholds = {"max_theoretical_pct": 50.0, "max_busy_pct": 60.0, "min_register_cap": 64.0}
    # one situation per limiter (LIMITS), named "the limiter is <limiter>"
    fixes_when = {
        "the limiter is registers": {
            "cuda": Fix(
                text=(
                    "{regs:.0f} registers per thread cap the SM at {resident_blocks} of {block}. Cap "
                    "registers at {reg_cap} so {min_blocks} blocks fit: `__launch_bounds__({block}, {min_blocks})` "
                    "(or -maxrregcount={reg_cap}), then check `-Xptxas -v` for spills."
                ),
                code="__global__ void __launch_bounds__({block}, {min_blocks}) {kernel}(...)",
            ),
            "triton": Fix(
                text=(
                    "{regs:.0f} registers per thread cap the SM at {resident_programs}. Use a smaller "
                    "BLOCK size (fewer elements per thread) or fewer num_warps per program; check the compiled "
                    "kernel's `n_regs` and `n_spills`."
                ),
                code="triton.Config({'BLOCK_SIZE': 512}, num_warps=4)  # smaller tile: fewer live registers",
            ),
        },
        "the limiter is shared memory": {
            "cuda": Fix(
                text=(
                    "Each block reserves {smem_kb:.1f} KB of shared memory, so only {resident_blocks} "
                    "fit per SM. Allocate only what a block uses (the dynamic size in the launch), or use "
                    "smaller tiles."
                ),
                code="kernel<<<grid, block, bytes_actually_used>>>(...);   // the third launch parameter",
            ),
            "triton": Fix(
                text=(
                    "Shared memory per program caps occupancy: lower num_stages (each stage buffers one tile) "
                    "or use smaller BLOCK_M/BLOCK_N/BLOCK_K."
                ),
                code="triton.Config({...}, num_stages=2)",
            ),
        },
        "the limiter is blocks per SM": {
            "cuda": Fix(
                text=(
                    "Blocks of {block} threads are too small: the SM's limit of {now_blocks:.0f} resident blocks "
                    "leaves warp slots empty. Use 128-256 threads per block."
                ),
                code=_SMALL_BLOCKS_CODE,
            ),
            "triton": Fix(
                text=(
                    "Programs of {block} threads are too small: the SM holds at most {now_blocks:.0f} programs, so "
                    "warp slots stay empty. Raise num_warps (4 or 8) so each resident program carries more warps, "
                    "or give each program a larger BLOCK (fewer, bigger programs)."
                ),
                code="triton.Config({'BLOCK': 1024}, num_warps=4)",
            ),
        },
        "the limiter is warps (block size)": {
            "cuda": Fix(
                text=(
                    "Blocks of {block} threads leave part of the SM's warp slots unusable; pick a block size that "
                    "divides the SM's thread limit (e.g. 256 or 512)."
                ),
                code=_SMALL_BLOCKS_CODE,
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        theo = k.m(Occupancy.THEORETICAL_PCT) or 0.0
        if theo <= 0 or theo > self.thresholds["max_theoretical_pct"]:
            return None
        busy = max(r.sol.get("memory_pct", 0.0), r.sol.get("compute_pct", 0.0))
        if limiter_side(r) == "compute" or busy >= self.thresholds["max_busy_pct"]:
            return None
        binding = self._binding(k)
        if binding is None:
            return None
        limiter, also, now_blocks, next_blocks = binding
        max_warps = float(k.device.get("max_warps_per_sm") or 64)
        warps_per_block = max(1.0, (k.block_size or 32) / 32.0)
        block = k.block_size or 256
        target = min(100.0, next_blocks * warps_per_block / max_warps * 100.0)
        if target <= theo * 1.2:
            return None
        new_ns = parallelism_ns(k, target / theo) or 0.0
        regs = k.m(LaunchStats.REGISTERS_PER_THREAD)
        smem = (k.m(LaunchStats.SHARED_MEM_STATIC) or 0) + (k.m(LaunchStats.SHARED_MEM_DYNAMIC) or 0)
        achieved = k.m(Occupancy.ACHIEVED_PCT)
        min_blocks = max(1, int(next_blocks))
        fix = self.fix_for(
            k,
            f"the limiter is {limiter}",
            regs=regs,
            now_blocks=now_blocks,
            resident_blocks=counted(now_blocks, "block"),
            resident_programs=counted(now_blocks, "program"),
            block=block,
            reg_cap=int(65536 / (min_blocks * block)) // 8 * 8,
            min_blocks=min_blocks,
            kernel=k.kernel.name,
            smem_kb=smem / 1024,
        )
        return self.finding(
            title=f"Occupancy capped at {theo:.0f}% by {limiter}",
            message=(
                f"Theoretical occupancy is {theo:.0f}% (achieved {achieved or 0:.0f}%), limited by {limiter} to "
                f"{count(now_blocks, 'block')} per SM"
                + (f" ({' and '.join(also)} would allow no more either)" if also else "")
                + "; the kernel keeps neither memory nor compute busy "
                f"({busy:.0f}% of peak at most), so it is waiting on latency with too few warps to hide it."
            ),
            fix=fix,
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"Latency + throughput: the busiest unit's {busy:.0f}% of the time stays, the time spent "
                f"waiting on latency divides by the gain in resident warps, {target:.0f}% / {theo:.0f}% "
                "(Little's law: the occupancy with the limiter relaxed to the next limit); not below the "
                "roofline floor."
            ),
            confidence="medium",
            evidence=[
                Evidence(
                    Occupancy.THEORETICAL_PCT,
                    theo,
                    self.thresholds["max_theoretical_pct"],
                    "theoretical occupancy",
                    "%",
                ),
                Evidence(LIMITS[limiter], now_blocks, None, f"block limit by {limiter}"),
                Evidence(Occupancy.ACHIEVED_PCT, achieved, None, "achieved occupancy", "%"),
                Evidence("busy_pct", round(busy, 1), self.thresholds["max_busy_pct"], "max of memory/compute SOL", "%"),
            ],
            # the resident warps grow by target / theo: achieved occupancy with them, and at least half that gain
            predicts=[
                predict(
                    "achieved_occupancy_pct",
                    achieved,
                    min(100.0, achieved * target / theo),
                    achieved + 0.5 * (min(100.0, achieved * target / theo) - achieved),
                    ">=",
                )
            ]
            if achieved
            else None,
        )

    def _binding(self, k: KernelContext) -> tuple[str, list[str], float, float] | None:
        """The limit (`_limiter`) where it binds: None without limits, or where every block of the grid is resident
        at once (grid blocks <= SMs x the blocks per SM it allows): a higher limit adds no warp (too few blocks:
        LCH001)."""
        read = {name: k.m(metric) for name, metric in LIMITS.items()}
        limits = {n: v for n, v in read.items() if v is not None and v > 0}
        if not limits:
            return None
        found = self._limiter(k, limits)
        grid = k.m(LaunchStats.GRID_SIZE)
        return None if grid and k.sm_count and grid <= k.sm_count * found[2] else found

    def _limiter(self, k: KernelContext, limits: dict[str, float]) -> tuple[str, list[str], float, float]:
        """The resource that limits the resident blocks, the others tied with it, the blocks per SM it allows and
        those the next limit allows once it is relaxed (registers: not below `min_register_cap` per thread)."""
        now_blocks = min(limits.values())
        tied = [n for n, v in limits.items() if v == now_blocks]
        # small blocks at the blocks-per-SM cap: the cap is the limit the launch shape sets, even where another
        # resource allows no more blocks either (one-warp Triton programs: 32 blocks, and shared memory for 32)
        limiter = "blocks per SM" if "blocks per SM" in tied else tied[0]
        also = [n for n in tied if n != limiter]
        others = [v for n, v in limits.items() if n != limiter and v > now_blocks]
        next_blocks = min(others) if others else now_blocks
        if limiter == "registers":  # not below min_register_cap registers per thread: far fewer than needed spill
            fit = int(65536 // (self.thresholds["min_register_cap"] * (k.block_size or 256)))
            if fit > now_blocks:
                next_blocks = min(next_blocks, fit)
        return limiter, also, now_blocks, next_blocks
