from ncuadvisor.rulekit import (
    DRAM_LATENCY_CYCLES,
    DramInFlight,
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
    achievable_dram_fraction,
    count,
    dependent_loads,
    dram_in_flight,
    fmt_ns,
    in_flight_fix_ns,
    limiter_side,
    parallelism_ns,
    predict,
    serial_section,
    stall_bounded_ns,
    stall_total,
    time_after,
)

stall = WarpStateStats.stall
CHAIN = "the SASS shows a dependent-load chain (each load's address is an earlier load's result)"
SOL_ONLY = "Speed Of Light, launch statistics and occupancy only (no stall counters)"
SERIAL = "one warp of each block runs a loop of global loads while the others wait at a barrier"
IN_FLIGHT = "DRAM is the limiter but its SMs keep too few bytes in flight to cover its latency"


class DependentLoads(Rule):
    """Warps wait on global loads one at a time: too little memory-level parallelism per warp.

    What it detects:
        A latency-bound kernel (`roofline.limiter`: no unit would be busy half its time at its peak) with enough warps
        (`sm__maximum_warps_per_active_cycle_pct` above `min_theoretical_occupancy_pct`; at or below it, OCC001's
        occupancy cap is the cheaper way to more loads in flight), whose warps stall on global memory
        (`long_scoreboard`) for at least `min_long_scoreboard_share` of their stalls while each warp issues more than
        `min_loads_per_warp` loads: a loop whose loads wait for each other. With the SASS (Source Counters), the
        mechanism itself: at least `min_chained_share` of the hot loop's global loads take their address from their
        own earlier result (register dataflow over the loop, its back edge included: `LDG R13, [R12]` then
        `IMAD.WIDE R12, R13, 0x4, R8` and the next `LDG [R12]`), a linked-list walk, a tree descent, a pointer chase,
        with fewer than `chains_per_thread_after` independent chains per thread. A chain counts even where a memory unit is the limiter at
        less than `max_chain_memory_share` of the time at its peak: one sector per dependent load keeps L2 or DRAM a
        little over half busy on some GPUs (the H100's L2 at 55% on the planted chase, the H200's at 48%). A gather
        (`x[idx[i]]`) or a streaming load takes its address from the loop index, not from its own result, and is not a
        chain. A serial section, whatever the long-scoreboard share: barrier stalls at least `min_barrier_share` of the
        stalls, and the SASS shows a loop of global loads entered fewer than `max_section_entry_share` × the kernel's
        warps times (one warp of each block runs it) whose next barrier holds at least `min_section_held` of the
        sampled barrier stalls: one warp polls a flag or walks back over earlier blocks' results (a scan's decoupled
        look-back, a spin lock) while the rest of its block waits.

        Latency-bound on memory although DRAM is the limiter: the SMs keep fewer bytes in flight than DRAM's latency
        × bandwidth needs (Little's law, `rulekit.dram_in_flight`): resident warps × the loads a warp keeps in flight
        per pass (SASS register dataflow) × 32 lanes × their width, against `DRAM_LATENCY_CYCLES` × DRAM's peak bytes
        per SM cycle, and DRAM moves less of its peak than streams of that load width reach
        (`achievable_dram_fraction`, 0.757 at 4 bytes: what the bytes in flight achieve, measured, where the needed
        bytes rest on the H200's latency), at least `min_long_scoreboard_share` of the stalls wait on global loads
        and each warp runs a loop of more than `min_loads_per_warp` loads.
        A row loop of one 4-byte load per iteration, each used at once (an RMSNorm a block per row: 60 warps × 128 B
        = 7.7 KB per SM on an H100 PCIe, where 520 cycles × 16.2 B/cycle needs 8.4 KB; DRAM at 67%). ROOF001 gives
        way to it where the fix saves 10% or more.

        Weaker evidence (ncu's default set: Speed Of Light, launch statistics, occupancy; no stall counters, no memory
        tables): ncu's own reading of Speed Of Light (its SOLBottleneck rule: compute and memory throughput both below
        60% of peak "typically indicate latency issues"), memory and compute both under `max_sol_pct_weak` and no
        unit of the roofline busy that share of its time at its peak, on a grid that fills the GPU (at least
        `min_waves_weak` waves of blocks, `launch__waves_per_multiprocessor`) with enough warps
        (`min_theoretical_occupancy_pct`): the warps wait on latency with too little work in flight. Which latency
        (loads used right after they issue, a dependent chain, divergence, barriers) the default set cannot tell; a
        long-scoreboard share, where the report has the stall counters, must still be at least
        `min_long_scoreboard_share`. Silent where L2 is the busiest unit and at least `min_l2_over_dram_weak` × as
        busy as DRAM: L2 then serves traffic DRAM does not (wasted sectors, re-reads), which points at the access
        pattern (MEM001, CAC001), not at the work in flight. Achieved occupancy below `max_achieved_share_weak` of
        the theoretical is said (warps that end unevenly: imbalance or a tail). Low confidence; `--section
        WarpStateStats --section SourceCounters` would confirm it and place it.

    Why it costs time:
        A load from HBM takes ~600-800 cycles. A warp that needs the result of one load to address the next (pointer
        chasing, a dependent gather) or that uses each loaded value right away keeps one request in flight, and even
        a full SM then moves a few bytes per cycle.

    Example:
        for (int s = 0; s < steps; ++s) j = next[j];          // each load waits for the previous one

    Use instead:
        Put more independent loads in flight per warp: unroll the loop and issue the loads of several iterations
        before using them, walk several independent chains per thread, prefetch the next tile while computing on
        this one (cp.async with `__pipeline_commit`, or TMA, double buffering). A chain is not helped by coalescing:
        walk `chains_per_thread_after` lists per thread interleaved, or store the structure without pointers (the
        nodes in traversal order, a flattened tree). A serial section: `elements_per_thread_after` elements per thread
        (scanned in registers), so that the look-back and its barrier are paid once per that many times the data.
        Latency-bound on memory: more bytes per load as well as more loads, 16 bytes per thread (float4 / uint4, a
        scalar tail) or the loop unrolled so several iterations' loads issue before the first is used.

    Speedup estimate:
        The fix (`loads_in_flight_gain` independent chains or unrolled loads per warp) multiplies the loads in flight
        by that gain. Latency plus throughput: the busiest unit's share of the time at its peak (Speed Of Light %)
        stays, the rest, waiting on latency, divides by the gain (Little's law): new time = time × (SOL + (1 − SOL)
        ÷ gain), not below the roofline floor at 85% of peak. The fix keeps every load, so the new time is not below
        the busiest unit's time at 85% of its peak either, L2 included (`rulekit.unit_floor_ns`): a chase's one sector
        per dependent load keeps L2 busier than DRAM (55% against 40% on an H100), and once its chains overlap L2's
        ceiling is the one it meets (the planted chase_serial's interleaved twin ran L2 at 76-78% of its peak on an
        H100 and an H200). For a chain the gain is `chains_per_thread_after` ÷ the
        chains the SASS shows, and the new time is bounded by the long-scoreboard stall time the fix removes.
        The counter the fix moves: long-scoreboard stall cycles per issued instruction, divided by the gain (at most
        halfway there after: × (1 + 1 / gain) / 2). A serial section: the barrier stalls' share of the time divided
        by `elements_per_thread_after`, the rest unchanged (time × (1 − barrier share × (1 − 1 / that))), bounded by
        the barrier stall time it removes, not below the floor at 85% of peak.

        Latency-bound on memory: `loads_in_flight_gain` × the bytes in flight per warp (16-byte loads instead of
        4-byte ones, or the loads of that many iterations issued together) in the latency-plus-throughput model of the
        compulsory bytes (`streaming_ns`: read bytes per SM × DRAM latency ÷ bytes in flight per SM, plus the roofline
        floor), bounded by the long-scoreboard stall time it removes, not below the floor at 85% of peak. No counter
        of the report measures bytes in flight and the wait per instruction may rise with wider loads, so none is
        predicted; DRAM throughput is what rises.

        On the weaker evidence the same latency-plus-throughput model with `loads_in_flight_gain` is an upper bound,
        said so: it assumes that all the time beyond the busiest unit's share is waiting the fix overlaps, which only
        the stall counters could show.

        Where lanes are idle (DIV001: few active threads per warp instruction), each load in flight carries only the
        active lanes' work: more loads in flight shrink the waiting share alone, while packing the lanes into full
        warps (DIV001) shrinks the waiting and the issuing alike. Both estimates are of the same measured time, and
        the finding whose fix removes more of it comes first: an early-exit loop whose warps wait on its loads with
        14 of 32 lanes active (53% of the samples at the load's use) ranks DIV001's 54% above this rule's 48%.

    False positives:
        Random gathers over more data than L2 are bound by DRAM's random-access rate rather than latency; low
        occupancy (OCC001) and narrow accesses without a loop (MEM003) are reported by their own rules. The DRAM
        latency is calibrated on an H200 (`DRAM_LATENCY_CYCLES`); on a GDDR board or at other clocks the bytes DRAM
        needs in flight may differ, and the estimate says it assumes the H200's.
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
    optional = (
        *(stall(s) for s in WarpStateStats.STALL_REASONS if s != "long_scoreboard"),
        Occupancy.ACHIEVED_PCT,  # the resident warps that keep bytes in flight (`dram_in_flight`)
    )
    per_instruction = (
        SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD,
        SourceCounters.INST_EXECUTED,
        SourceCounters.SAMPLED_STALL_BARRIER,
    )
    # ncu's default set: the launch's waves, with the roofline's Speed Of Light shares (read, or derived from the
    # units where `profile` leaves the two percentages out) and the occupancy section
    weak_evidence = (LaunchStats.WAVES_PER_SM,)
    thresholds = {
        "min_long_scoreboard_share": 0.5,
        "min_loads_per_warp": 4.0,
        "min_theoretical_occupancy_pct": 50.0,
        "loads_in_flight_gain": 4.0,
        "min_chained_share": 0.25,
        "chains_per_thread_after": 4.0,
        "max_chain_memory_share": 0.7,
        "max_sol_pct_weak": 60.0,
        "min_waves_weak": 2.0,
        "max_achieved_share_weak": 0.8,
        "min_l2_over_dram_weak": 2.0,
        "min_barrier_share": 0.4,
        "max_section_entry_share": 0.5,
        "min_section_held": 0.4,
        "elements_per_thread_after": 8.0,
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
    fixes_when = {
        SOL_ONLY: {
            "cuda": Fix(
                text=(
                    "Memory and compute are both far below peak on a full GPU: the warps wait on latency with too "
                    "little independent work in flight. Issue the loads of several iterations before using them "
                    "(unroll, no `#pragma unroll 1` on a loop of loads), walk several independent chains per thread, "
                    "and check the stall reasons with `--section WarpStateStats --section SourceCounters` before "
                    "rewriting: they say whether loads, barriers or divergence hold the warps."
                ),
                code=(
                    "#pragma unroll 4   // the loads of 4 iterations in flight before their first use\n"
                    "for (int f = start; f < end; ++f) acc += table[index[f]];"
                ),
            ),
            "triton": Fix(
                text=(
                    "Memory and compute are both far below peak on a full GPU: raise num_stages so the tl.load of "
                    "the next iterations is in flight, and give each program more independent work (a larger "
                    "BLOCK); `--section WarpStateStats` would say which stalls hold the warps."
                ),
                code="triton.Config({'BLOCK': 1024}, num_warps=8, num_stages=4)",
            ),
        },
        SERIAL: {
            "cuda": Fix(
                text=(
                    "One warp of each block walks a loop of global loads (a look-back over earlier blocks' results, a "
                    "spin on a flag) while the block waits at the next barrier ({barrier:.0%} of the stalls). Give "
                    "each thread {gain:.0f} or more elements (loaded before the section, scanned in registers) so "
                    "the section is paid once per {gain:.0f}× the data, as CUB's scans do, and let the waiting warps "
                    "load their next elements before the barrier."
                ),
                code=(
                    "constexpr int ITEMS = 8;                      // elements per thread\n"
                    "float v[ITEMS];\n"
                    "for (int i = 0; i < ITEMS; ++i) v[i] = in[(blockIdx.x * blockDim.x * ITEMS) + i * blockDim.x + threadIdx.x];\n"
                    "// scan the ITEMS in registers, then one block scan and one look-back per block"
                ),
            ),
        },
        IN_FLIGHT: {
            "cuda": Fix(
                text=(
                    "Each warp keeps {loads} of {width:.0f} bytes per thread in flight: {per_sm:,.0f} bytes per SM, "
                    "where DRAM's latency × bandwidth needs {needed:,.0f}. Put {gain:.0f}× the bytes in flight: "
                    "load 16 bytes per thread (float4 / uint4 on 16-byte-aligned data, a scalar loop for the tail), "
                    "or unroll the loop so that the loads of {gain:.0f} iterations issue before the first is used."
                ),
                code=(
                    "// 16 bytes per thread: each load moves 4 floats, 4x the bytes in flight per warp\n"
                    "const float4* in4 = reinterpret_cast<const float4*>(in);\n"
                    "for (int i = threadIdx.x; i < n / 4; i += blockDim.x) {\n"
                    "  float4 v = in4[i];\n"
                    "  acc += f(v.x) + f(v.y) + f(v.z) + f(v.w);\n"
                    "}\n"
                    "// tail: for (int i = n / 4 * 4 + threadIdx.x; i < n; i += blockDim.x) acc += f(in[i]);"
                ),
            ),
            "triton": Fix(
                text=(
                    "Each program keeps too few bytes in flight for DRAM's latency: give it a larger BLOCK (at least "
                    "4 contiguous elements per thread, BLOCK ≥ 4 × 32 × num_warps, so tl.load emits 16-byte "
                    "accesses) and, in a loop over a row, num_stages ≥ 2 so the next block's loads are in flight."
                ),
                code="triton.Config({'BLOCK': 4096}, num_warps=8, num_stages=3)",
            ),
        },
        CHAIN: {
            "cuda": Fix(
                text=(
                    "Each load's address is the previous load's result (chains per thread now: {chains:.0f}, one load in "
                    "flight each): walk "
                    "{target:.0f} independent lists (or tree queries) per thread, interleaved, so {target:.0f} loads "
                    "are in flight; or store the structure without pointers (nodes in traversal order, a flattened "
                    "tree, an index array) so addresses are known ahead; or prefetch the next node's successor. "
                    "Coalescing does not help a chain."
                ),
                code=(
                    "// 4 lists per thread, one step of each per iteration: 4 loads in flight\n"
                    "for (int s = 0; s < steps; ++s) {\n"
                    "  a = nodes[a].next; b = nodes[b].next; c = nodes[c].next; d = nodes[d].next;\n}"
                ),
            ),
            "triton": Fix(
                text=(
                    "Each load's address is the previous load's result: give each program {target:.0f} independent "
                    "chains (a [BLOCK] vector of list heads stepped together with one tl.load per step), or store the "
                    "structure without pointers so tl.load can take a precomputed index block."
                ),
                code="idx = tl.load(next_ptr + idx)   # idx: a block of independent list positions, stepped together",
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak:
            return self.from_speed_of_light(k)
        r = k.roofline
        t = self.thresholds
        side = limiter_side(r)
        # a chain the SASS shows is latency-bound even where a memory unit is a little over half busy: the busy
        # share of a unit that serves one sector per dependent load is what the chain leaves it, not a ceiling
        chain_side = side == "latency" or (side == "memory" and (r.limiter_share or 1.0) < t["max_chain_memory_share"])
        # DRAM the limiter, but short of bytes in flight: latency-bound on memory (Little's law), not at its roof
        flight = dram_in_flight(k) if side == "memory" else None
        short = flight is not None and flight.latency_bound(t["min_long_scoreboard_share"])
        if not chain_side and not short:
            return None
        total = stall_total(k)
        ls = k.m(stall("long_scoreboard")) or 0.0
        barrier = (k.m(stall("barrier")) or 0.0) / total if total > 0 else 0.0
        if barrier >= t["min_barrier_share"]:  # the block waits on one warp's loads: a serial section
            section = serial_section(k, t["max_section_entry_share"], t["min_section_held"])
            if section is not None:
                return self.serial(k, section.entries, section.warps, section.held, barrier)
        if total <= 0 or ls / total < t["min_long_scoreboard_share"]:
            return None
        if (k.m(Occupancy.THEORETICAL_PCT) or 0) <= t["min_theoretical_occupancy_pct"]:
            return None  # half the warp slots empty or more: OCC001, the cheaper way to more loads in flight
        chain = dependent_loads(k)
        if chain is not None and chain.share >= t["min_chained_share"] and chain.chains:
            gain = t["chains_per_thread_after"] / chain.chains
            if gain >= 1.5:
                return self.chain(k, chain.share, chain.chains, gain, ls / total)
        warps = (k.m(LaunchStats.GRID_SIZE) or 0) * max(1.0, (k.m(LaunchStats.BLOCK_SIZE) or 32) / 32)
        loads_per_warp = (k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0) / max(warps, 1)
        if loads_per_warp <= t["min_loads_per_warp"]:
            return None  # no loop of loads: MEM003's wider accesses, where they are narrow
        if side != "latency":
            # no chain: a memory unit over half busy is the limiter, unless DRAM's SMs keep too few bytes in flight
            return self.in_flight(k, flight, loads_per_warp) if short and flight is not None else None
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

    def in_flight(self, k: KernelContext, flight: DramInFlight, loads_per_warp: float) -> Finding:
        """DRAM is the limiter below its peak, and the SMs keep fewer bytes in flight than its latency × bandwidth
        needs: a loop of loads each warp waits on, too few or too narrow to cover DRAM's latency."""
        r = k.roofline
        t = self.thresholds
        gain = t["loads_in_flight_gain"]
        new_ns = in_flight_fix_ns(k, flight, gain) or r.duration_ns or 0.0
        width = flight.bytes_per_warp / max(flight.loads_per_warp, 1e-9) / 32
        loads = count(round(flight.loads_per_warp, 1), "load")
        return self.finding(
            title=(
                f"Too few bytes in flight for DRAM: {flight.per_sm:,.0f} B per SM where its latency × bandwidth "
                f"needs {flight.needed_per_sm:,.0f} B"
            ),
            message=(
                f"DRAM is the limiter at {flight.dram_share:.0%} of its peak and {flight.long_scoreboard_share:.0%} "
                f"of the warps' stalls wait on global loads: each warp keeps {loads} of {width:.0f} bytes per thread "
                f"in flight ({flight.bytes_per_warp:,.0f} B), its {flight.warps_per_sm:.0f} resident warps per SM "
                f"{flight.per_sm:,.0f} B, where covering DRAM's latency (~{DRAM_LATENCY_CYCLES:.0f} SM cycles) at its "
                f"peak needs {flight.needed_per_sm:,.0f} B per SM (Little's law). The kernel is latency-bound on "
                "memory, not at its roof."
            ),
            fix=self.fix_for(
                k,
                IN_FLIGHT,
                loads=loads,
                width=width,
                per_sm=flight.per_sm,
                needed=flight.needed_per_sm,
                gain=gain,
            ),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"With {gain:.0f}× the bytes in flight per warp ({gain * flight.bytes_per_warp:,.0f} B), "
                f"the compulsory bytes take {fmt_ns(new_ns)}: latency plus throughput, the read bytes per SM × "
                "DRAM latency ÷ the bytes in flight per SM, plus the roofline floor; bounded by the long-scoreboard "
                "stall time it removes, not below the roofline floor."
            ),
            confidence="medium",
            evidence=[
                Evidence("bytes_in_flight_per_sm", round(flight.per_sm), round(flight.needed_per_sm), "B per SM"),
                Evidence(
                    "dram_fraction_of_peak",
                    round(flight.dram_share, 3),
                    round(achievable_dram_fraction(flight.width_bytes), 3),
                ),
                Evidence(
                    "long_scoreboard_share", round(flight.long_scoreboard_share, 3), t["min_long_scoreboard_share"]
                ),
                Evidence("loads_per_warp", round(loads_per_warp, 1), t["min_loads_per_warp"]),
            ],
            source=k.top_lines(SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD, limit=3),
        )

    def serial(self, k: KernelContext, entries: float, warps: float, held: float, barrier: float) -> Finding:
        """A serial section the SASS shows: one warp of each block loops on global loads (a look-back, a flag) while
        the block's other warps wait at the barrier after it."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        gain = self.thresholds["elements_per_thread_after"]
        # the section is paid once per block: with `gain` times the elements per thread, once per `gain` times the data
        new_ns = stall_bounded_ns(k, dur * (1.0 - barrier * (1.0 - 1.0 / gain)), ("barrier",))
        return self.finding(
            title=(
                f"Serial section: one warp per block loops on global loads while the block waits "
                f"({barrier:.0%} of stalls at barriers)"
            ),
            message=(
                f"A loop of global loads is entered {entries:,.0f} times by the kernel's {warps:,.0f} warps: one warp "
                "of each block polls a flag or walks back over earlier blocks' results (a scan's look-back, a spin "
                f"lock), one load at a time, while the block's other warps wait at the barrier after it, which holds "
                f"{held:.0%} of the sampled barrier stalls. Each block pays that latency for its own few elements."
            ),
            fix=self.fix_for(k, SERIAL, gain=gain, barrier=barrier),
            estimated_speedup=time_after(dur, new_ns, r.theoretical_ns),
            speedup_model=(
                f"{gain:.0f} elements per thread: the section and its barrier waits ({barrier:.0%} of the warps' "
                f"stalls) are paid once per {gain:.0f}× the data, the rest stays; bounded by the barrier stall time it "
                "removes, not below the roofline floor."
            ),
            confidence="medium",
            evidence=[
                Evidence(stall("barrier"), round(barrier, 3), self.thresholds["min_barrier_share"], "barrier share"),
                Evidence("section_entries_per_warp", round(entries / max(warps, 1), 3), None, "loop entries ÷ warps"),
                Evidence("barrier_stalls_held", round(held, 3), self.thresholds["min_section_held"]),
            ],
            source=k.top_lines(SourceCounters.SAMPLED_STALL_BARRIER, limit=2),
        )

    def chain(self, k: KernelContext, share: float, chains: int, gain: float, stall_share: float) -> Finding:
        """A dependent-load chain the SASS shows: each step's load waits for the one before."""
        r = k.roofline
        ls = k.m(stall("long_scoreboard")) or 0.0
        new_ns = stall_bounded_ns(k, parallelism_ns(k, gain) or 0.0, ("long_scoreboard",))
        per_thread = f"{chains} chain{'s' if chains > 1 else ''} per thread"
        return self.finding(
            title=(
                f"Dependent-load chain: {share:.0%} of the loop's global loads take their address from an earlier "
                f"load ({per_thread})"
            ),
            message=(
                f"The SASS shows loads whose address is the result of an earlier load of the same chain (a linked "
                f"list, a tree descent, a pointer chase): each waits ~600-800 cycles for the one before, and "
                f"{stall_share:.0%} of the warps' stalls are on global loads. Coalescing does not help: the loads of "
                "one chain cannot overlap."
            ),
            fix=self.fix_for(k, CHAIN, chains=chains, target=self.thresholds["chains_per_thread_after"]),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"{self.thresholds['chains_per_thread_after']:.0f} independent chains per thread instead of {chains}: "
                f"{gain:.1f}× the loads in flight; the busiest unit's time at its peak stays and the time spent "
                f"waiting on latency divides by {gain:.1f} (Little's law), bounded by the long-scoreboard stall time "
                "it removes, not below the busiest unit's time (L2 included) at 85% of its peak nor the roofline "
                "floor."
            ),
            confidence="high",
            # the wait per instruction divides by the gain in chains in flight; half that drop or more did the work
            predicts=[predict("long_scoreboard_stall", ls, ls / gain, ls * (1 + 1 / gain) / 2)],
            evidence=[
                Evidence("chained_load_share", round(share, 3), self.thresholds["min_chained_share"]),
                Evidence("chains_per_thread", chains, self.thresholds["chains_per_thread_after"]),
                Evidence("long_scoreboard_share", round(stall_share, 3), self.thresholds["min_long_scoreboard_share"]),
            ],
            source=k.top_lines(SourceCounters.SAMPLED_STALL_LONG_SCOREBOARD, limit=3),
        )

    def from_speed_of_light(self, k: KernelContext) -> Finding | None:
        """The weaker evidence: ncu's default set says latency (memory and compute both far below peak) on a grid that
        fills the GPU with enough warps; the stall counters, where present, must agree."""
        r = k.roofline
        t = self.thresholds
        mem, comp = r.sol.get("memory_pct"), r.sol.get("compute_pct")
        if mem is None or comp is None or not r.duration_ns or limiter_side(r) == "launch":
            return None
        if max(mem, comp, 100 * (r.limiter_share or 0.0)) >= t["max_sol_pct_weak"]:
            return None  # a unit at ncu's 60% line: its throughput, not latency, is the story
        waves, theo = k.m(LaunchStats.WAVES_PER_SM), k.m(Occupancy.THEORETICAL_PCT)
        if waves is None or waves < t["min_waves_weak"]:
            return None  # a grid that does not fill the GPU (or a partial wave): LCH001's
        if theo is None or theo <= t["min_theoretical_occupancy_pct"]:
            return None  # half the warp slots empty or more: OCC001, the cheaper way to more work in flight
        l2, dram = r.sol.get("l2_pct") or 0.0, r.sol.get("dram_pct") or 0.0
        if l2 >= max(r.busy_pct.values(), default=0.0) and l2 >= t["min_l2_over_dram_weak"] * dram:
            return None  # L2 serves far more than DRAM moves: the access pattern's traffic, not the work in flight
        total, ls = stall_total(k), k.m(stall("long_scoreboard"))
        if ls is not None and total > 0 and ls / total < t["min_long_scoreboard_share"]:
            return None  # the stall counters say the warps wait on something other than global loads
        busy = max(mem, comp)
        gain = t["loads_in_flight_gain"]
        new_ns = parallelism_ns(k, gain) or 0.0
        achieved = k.m(Occupancy.ACHIEVED_PCT)
        uneven = achieved is not None and achieved < t["max_achieved_share_weak"] * theo
        return self.finding(
            title=(
                f"Latency: memory {mem:.0f}% and compute {comp:.0f}% of peak "
                f"(both under {t['max_sol_pct_weak']:.0f}%) on a full GPU"
            ),
            message=(
                f"Speed Of Light puts memory at {mem:.0f}% and compute at {comp:.0f}% of peak, on {waves:,.1f} waves "
                f"of blocks with {theo:.0f}% theoretical occupancy: the GPU is full and its warps wait on latency, "
                "with too little independent work in flight (loads used right after they issue, a dependent chain, "
                "divergence or barriers: the default set cannot tell which)."
                + (
                    f" Achieved occupancy is {achieved:.0f}%, under {t['max_achieved_share_weak']:.0%} of the "
                    "theoretical: warps also end unevenly (imbalance between blocks, or a tail)."
                    if uneven
                    else ""
                )
            ),
            fix=self.fix_for(k, SOL_ONLY),
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=(
                f"At most: with {gain:.0f}× the work in flight, the busiest unit's {busy:.0f}% of the time stays and "
                f"the rest divides by {gain:.0f} (Little's law), not below the roofline floor. An upper bound: it "
                "assumes all the waiting is on latency the fix overlaps, which only the stall counters "
                "(WarpStateStats) could show."
            ),
            evidence=[
                Evidence("memory_pct", round(mem, 1), t["max_sol_pct_weak"], "memory throughput (Speed Of Light)", "%"),
                Evidence(
                    "compute_pct", round(comp, 1), t["max_sol_pct_weak"], "compute throughput (Speed Of Light)", "%"
                ),
                Evidence(LaunchStats.WAVES_PER_SM, round(waves, 2), t["min_waves_weak"], "waves"),
                Evidence(
                    Occupancy.THEORETICAL_PCT, theo, t["min_theoretical_occupancy_pct"], "theoretical occupancy", "%"
                ),
                Evidence(Occupancy.ACHIEVED_PCT, achieved, None, "achieved occupancy", "%"),
            ],
        )
