from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    MemoryTables,
    Occupancy,
    Rule,
    SourceCounters,
    WarpStateStats,
    limiter_side,
    parallelism_ns,
    predict,
    stall_total,
    time_after,
)

stall = WarpStateStats.stall


class DependentLoads(Rule):
    """Warps wait on global loads one at a time: too little memory-level parallelism per warp.

    What it detects:
        A latency-bound kernel (`roofline.limiter`: no unit would be busy half its time at its peak) with enough warps
        (`sm__maximum_warps_per_active_cycle_pct` ≥ `min_theoretical_occupancy_pct`), whose warps stall on global memory
        (`long_scoreboard`) for at least `min_long_scoreboard_share` of their stalls while each warp issues more than
        `min_loads_per_warp` loads: a loop whose loads wait for each other.

    Why it costs time:
        A load from HBM takes ~600-800 cycles. A warp that needs the result of one load to address the next (pointer
        chasing, a dependent gather) or that uses each loaded value right away keeps one request in flight, and even
        a full SM then moves a few bytes per cycle.

    Example:
        for (int s = 0; s < steps; ++s) j = next[j];          // each load waits for the previous one

    Use instead:
        Put more independent loads in flight per warp: unroll the loop and issue the loads of several iterations
        before using them, walk several independent chains per thread, prefetch the next tile while computing on
        this one (cp.async with `__pipeline_commit`, or TMA, double buffering).

    Speedup estimate:
        The fix (`loads_in_flight_gain` independent chains or unrolled loads per warp) multiplies the loads in flight
        by that gain. Latency plus throughput: the busiest unit's share of the time at its peak (Speed Of Light %)
        stays, the rest, waiting on latency, divides by the gain (Little's law): new time = time × (SOL + (1 − SOL)
        ÷ gain), not below the roofline floor at 85% of peak.
        The counter the fix moves: long-scoreboard stall cycles per issued instruction, divided by the gain (at most
        halfway there after: × (1 + 1 / gain) / 2).

    False positives:
        Random gathers over more data than L2 are bound by DRAM's random-access rate rather than latency; low
        occupancy (OCC001) and narrow accesses (MEM003) are reported by their own rules.
    """

    code = "LAT001"
    slug = "dependent-loads"
    category = "latency"
    title = "Too few loads in flight (dependent loads)"
    requires = (
        stall("long_scoreboard"),
        MemoryTables.GLOBAL_LOAD_REQUESTS,
        Occupancy.THEORETICAL_PCT,
        LaunchStats.GRID_SIZE,
        LaunchStats.BLOCK_SIZE,
    )
    optional = tuple(stall(s) for s in WarpStateStats.STALL_REASONS if s != "long_scoreboard")
    per_instruction = (SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD,)
    thresholds = {
        "min_long_scoreboard_share": 0.5,
        "min_loads_per_warp": 4.0,
        "min_theoretical_occupancy_pct": 50.0,
        "loads_in_flight_gain": 4.0,
    }
    fixes = {
        "cuda": Fix(
            text=(
                "Each warp issues {loads_per_warp:.0f} global loads and waits for each one (long-scoreboard stalls "
                "are {stall_share:.0%} of its stalls). Issue several independent loads before using them: unroll, "
                "walk several chains per thread, or prefetch with cp.async/TMA into shared memory."
            ),
            code=(
                "// 4 independent chains per thread: 4 loads in flight instead of 1\n"
                "for (int s = 0; s < steps; ++s) {\n"
                "  j0 = next[j0]; j1 = next[j1]; j2 = next[j2]; j3 = next[j3];\n}"
            ),
        ),
        "triton": Fix(
            text=(
                "Raise num_stages so Triton software-pipelines the tl.load of the next iterations, and give each "
                "program more independent work (a larger BLOCK) so more loads are in flight."
            ),
            code="@triton.autotune(configs=[triton.Config({'BLOCK': 1024}, num_warps=8, num_stages=4)], key=['n'])",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        if limiter_side(r) != "latency":
            return None
        if (k.m(Occupancy.THEORETICAL_PCT) or 0) < t["min_theoretical_occupancy_pct"]:
            return None  # too few warps: OCC001
        total = stall_total(k)
        ls = k.m(stall("long_scoreboard")) or 0.0
        if total <= 0 or ls / total < t["min_long_scoreboard_share"]:
            return None
        warps = (k.m(LaunchStats.GRID_SIZE) or 0) * max(1.0, (k.m(LaunchStats.BLOCK_SIZE) or 32) / 32)
        loads_per_warp = (k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0) / max(warps, 1)
        if loads_per_warp <= t["min_loads_per_warp"]:
            return None
        gain = t["loads_in_flight_gain"]
        new_ns = parallelism_ns(k, gain) or 0.0
        lines = k.top_lines(SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD, limit=3)
        return self.finding(
            title=f"Latency-bound: {ls / total:.0%} of stalls wait on global loads, {loads_per_warp:.0f} loads per warp",
            message=(
                f"Memory and compute are both below half of peak; warps mostly wait for global loads "
                f"({ls:.0f} cycles of long-scoreboard stall per issued instruction) with too few requests in "
                "flight to cover HBM latency."
            ),
            fix=self.fix_for(k, loads_per_warp=loads_per_warp, stall_share=ls / total),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"With {gain:.0f}× the loads in flight, the busiest unit's time at its peak stays and the time "
                f"spent waiting on latency divides by {gain:.0f} (Little's law), not below the roofline "
                "floor."
            ),
            confidence="medium",
            # the wait per instruction divides by the gain in loads in flight; half that drop or more did the work
            predicts=[predict("long_scoreboard_stall", ls, ls / gain, ls * (1 + 1 / gain) / 2)],
            evidence=[
                Evidence(stall("long_scoreboard"), round(ls, 2), None, "long-scoreboard stall per issue"),
                Evidence("long_scoreboard_share", round(ls / total, 3), t["min_long_scoreboard_share"]),
                Evidence("loads_per_warp", round(loads_per_warp, 1), t["min_loads_per_warp"]),
            ],
            source=lines,
        )
