from ncuadvisor.rulekit import (
    MEMORY_TYPE_GLOBAL,
    Evidence,
    Finding,
    Fix,
    InstructionStats,
    KernelContext,
    LaunchStats,
    MemoryTables,
    Occupancy,
    Rule,
    SourceCounters,
    SpeedOfLight,
    access_bytes,
    achievable_dram_fraction,
    bytes_in_flight,
    compulsory_ns,
    count,
    counted,
    fmt_bytes,
    fmt_ns,
    global_loads_in_flight,
    limiter_side,
    per_pc,
    predict,
    streaming_ns,
    time_after,
)


class NarrowGlobalAccess(Rule):
    """Coalesced but narrow global accesses (1, 2 or 4 bytes per thread) keep a streaming kernel below bandwidth.

    What it detects:
        A kernel limited by a memory level (`roofline.limiter`) or latency-bound whose global load/store instructions are mostly narrower than 16 bytes per thread
        (`memory_access_size_type` per instruction, weighted by `inst_executed`; the width is read from the SASS,
        `LDG.E.U8` = 1 byte), while the accesses are coalesced (no sector waste), and which is limited by its bytes in
        flight whatever its DRAM share (`DramInFlight.short` in ncuadvisor/rulekit/models.py): its SMs keep fewer
        bytes in flight (resident warps × the loads a warp keeps in flight, from the SASS, × 32 lanes × their width)
        than DRAM's latency × bandwidth needs (Little's law, `DRAM_LATENCY_CYCLES`), and DRAM moves less of its peak
        than streams of that load width reach (`achievable_dram_fraction`: 0.757 at 4 bytes, the median of the
        planted 4-byte streams), what the bytes in flight achieve, measured. The H100 scalar copy holds 0.89 of the
        bytes DRAM needs at 70.5% of its peak (its float4 twin 19.5% faster); T4 copies hold 0.84-0.94 at 82-83%,
        more than 4-byte streams reach, where the needed bytes rest on the H200's latency: no room is shown there.
        Without the SASS dataflow, the occupancy or the stalls: DRAM below that share alone.

    Why it costs time:
        Each warp instruction moves at most 32 × access size bytes. With 1-byte or 4-byte accesses a warp needs 16×
        or 4× more instructions and more requests in flight to keep HBM busy than with 16-byte accesses; the SM runs
        out of issue slots and outstanding requests before DRAM runs out of bandwidth.

    Example:
        out[i] = in[i] * 2;            // uint8_t per thread

    Use instead:
        Move 16 bytes per thread: `reinterpret_cast<const uint4*>(in)[i]` (or float4 for floats) with a scalar
        loop for the tail, on 16-byte aligned pointers.

    Speedup estimate:
        The same loads in flight per warp (SASS dataflow), each now 16 bytes per thread: latency plus throughput of
        the compulsory bytes, read bytes per SM × DRAM latency ÷ (warps × loads in flight per warp × 32 × 16) + the
        roofline floor (`DRAM_LATENCY_CYCLES` in ncuadvisor/rulekit/models.py); without SASS or occupancy data, compulsory
        bytes at `achievable_dram_fraction` of DRAM peak (a float4 copy measured 85% on an H200). Never below the
        roofline floor at 85% of peak.
        The counter the fix moves: global sectors per request (loads and stores), the narrow share's requests each
        moving 16 bytes per thread instead of the access size (at least halfway there after).

    False positives:
        Kernels whose narrow accesses are gathers (indices) or whose time is spent elsewhere; misaligned or odd-sized
        buffers need a scalar prologue/epilogue. The rule stays silent when bank conflicts or low occupancy (below
        `min_achieved_occupancy_pct`) explain the low bandwidth, so their own rules speak first; likewise
        data re-read more than `max_reuse_factor` times (tiling), more than `max_loads_per_warp` loads per warp (a
        loop: latency), more shared than global loads (exchanges: warp primitives), atomics and local memory.
    """

    code = "MEM003"
    slug = "narrow-global-access"
    category = "vectorize"
    title = "Narrow global accesses: use 16-byte vector loads/stores"
    requires = (SpeedOfLight.DURATION, SourceCounters.L2_SECTORS_GLOBAL)
    optional = (
        SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,
        SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE,
        SourceCounters.SHARED_WAVEFRONTS,
        Occupancy.ACHIEVED_PCT,
        MemoryTables.GLOBAL_LOAD_SECTORS,
        MemoryTables.GLOBAL_LOAD_REQUESTS,
        MemoryTables.GLOBAL_STORE_SECTORS,  # with the store requests: the counter the fix moves (sectors/request)
        MemoryTables.GLOBAL_STORE_REQUESTS,
        MemoryTables.GLOBAL_ATOMIC_REQUESTS,
        MemoryTables.GLOBAL_REDUCTION_REQUESTS,
        MemoryTables.LOCAL_LOAD_SECTORS,
        MemoryTables.LOCAL_STORE_SECTORS,
        LaunchStats.GRID_SIZE,
        LaunchStats.BLOCK_SIZE,
        InstructionStats.SHARED_LOAD_INST,
        InstructionStats.GLOBAL_LOAD_INST,
    )
    per_instruction = (SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE, SourceCounters.INST_EXECUTED)
    thresholds = {
        "min_narrow_share": 0.5,
        "achievable_dram_fraction": 0.85,
        "max_excess_fraction": 0.3,
        "min_achieved_occupancy_pct": 40.0,
        "max_reuse_factor": 4.0,
        "max_loads_per_warp": 4.0,
    }
    fixes = {
        "cuda": Fix(
            text=(
                "The global accesses below move {access_bytes} per thread: load and store 16 bytes per "
                "thread (float4 / uint4) and handle the tail with a scalar loop."
            ),
            code=(
                "const uint4* in16 = reinterpret_cast<const uint4*>(in);   // 16 bytes per thread\n"
                "uint4* out16 = reinterpret_cast<uint4*>(out);\n"
                "for (size_t i = tid; i < n / 16; i += stride) out16[i] = op(in16[i]);\n"
                "// tail: for (size_t i = n / 16 * 16 + tid; i < n; i += stride) out[i] = op(in[i]);"
            ),
        ),
        "triton": Fix(
            text=(
                "Triton emits 16-byte accesses only when it can prove contiguity and alignment: keep the "
                "contiguous axis last, hint it with `tl.max_contiguous(tl.multiple_of(offs, 16), 16)`, pass "
                "contiguous 16-byte-aligned tensors, and give each program ≥ 4 elements per thread "
                "(BLOCK_SIZE ≥ 4 × 32 × num_warps)."
            ),
            code="offs = tl.max_contiguous(tl.multiple_of(pid * BLOCK + tl.arange(0, BLOCK), 16), 16)",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        if limiter_side(r) not in ("memory", "latency") or not r.compulsory_bytes or not r.peak_dram_bytes_per_s:
            return None
        if self._explained_elsewhere(k):
            return None
        found = _narrow_share(k)
        if found is None:
            return None
        share, width = found
        if share < self.thresholds["min_narrow_share"]:
            return None
        achieved = (r.achieved_dram_bytes_per_s or 0) / r.peak_dram_bytes_per_s
        # limited by the bytes in flight, whatever DRAM's share: short of latency × bandwidth, and below what
        # streams of the width reach; without the SASS dataflow or the stalls, the DRAM share alone
        flight = bytes_in_flight(k)
        reach = achievable_dram_fraction(flight.width_bytes if flight else width)
        if not (flight.short() if flight else achieved < reach):
            return None
        loads, _ = global_loads_in_flight(k)
        stream_ns = streaming_ns(k, loads * 32 * 16)
        target_ns = stream_ns or compulsory_ns(r, self.thresholds["achievable_dram_fraction"]) or 0.0
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=3,
            min_share=0.0,
            sass_filter=lambda s: s.startswith(("LDG", "STG")) and ".128" not in s,
            memory_only=True,
        )
        # the narrow share of the requests is replaced by one request per 16 bytes per thread: the same sectors in
        # share × width/16 + (1 − share) of the requests; the fix did its work at half that gain or more
        sectors = (k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0) + (k.m(MemoryTables.GLOBAL_STORE_SECTORS) or 0)
        requests = (k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0) + (k.m(MemoryTables.GLOBAL_STORE_REQUESTS) or 0)
        per_request = sectors / requests if requests and k.m(MemoryTables.GLOBAL_STORE_REQUESTS) is not None else None
        predicts = None
        if per_request:
            widened = per_request / (share * width / 16 + (1 - share))
            bound = per_request + (widened - per_request) / 2
            predicts = [predict("global_sectors_per_request", per_request, widened, bound, ">=")]
        return self.finding(
            title=f"{width}-byte global accesses: DRAM at {achieved:.0%} of peak",
            message=(
                f"{share:.0%} of global memory instructions move {count(width, 'byte')} per thread; the kernel moves "
                f"{fmt_bytes(r.compulsory_bytes)} at {achieved:.0%} of DRAM peak, too few bytes per instruction "
                "to keep HBM busy."
            ),
            fix=self.fix_for(k, width=width, access_bytes=counted(width, "byte")),
            estimated_speedup=time_after(r.duration_ns or 0, target_ns, r.theoretical_ns),
            speedup_model=(
                (
                    f"With the same {count(loads, 'load')} in flight per warp, 16 bytes per thread each, the "
                    f"compulsory bytes take {fmt_ns(stream_ns)} (latency + throughput)"
                    if stream_ns
                    else f"Compulsory bytes at {self.thresholds['achievable_dram_fraction']:.0%} of DRAM peak "
                    "(what 16-byte streaming reaches)"
                )
                + ", not below the roofline floor."
            ),
            confidence="medium",
            predicts=predicts,
            evidence=[
                Evidence(
                    "narrow_access_share",
                    round(share, 3),
                    self.thresholds["min_narrow_share"],
                    "share of global instructions < 16 B",
                ),
                Evidence("access_bytes", width, 16, "narrowest global access (bytes per thread)"),
                Evidence("dram_fraction_of_peak", round(achieved, 3), round(reach, 3)),
                *(
                    [Evidence("bytes_in_flight_per_sm", round(flight.per_sm), round(flight.needed_per_sm), "B per SM")]
                    if flight
                    else []
                ),
            ],
            source=lines,
        )

    def _explained_elsewhere(self, k: KernelContext) -> bool:
        """Whether another mechanism explains the low bandwidth (and its rule speaks first), or the kernel is not a
        streaming one: each byte loaded about once, few loads per warp, no local memory, no atomics."""
        r = k.roofline
        total = k.m(SourceCounters.L2_SECTORS_GLOBAL) or 0
        excess = k.m(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE) or 0
        if total and excess / total > self.thresholds["max_excess_fraction"]:
            return True  # uncoalesced: MEM001 speaks first
        shared = k.m(SourceCounters.SHARED_WAVEFRONTS) or 0
        if shared and (k.m(SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE) or 0) / shared > 0.2:
            return True  # bank conflicts explain the low bandwidth: MEM002 speaks first
        occupancy = k.m(Occupancy.ACHIEVED_PCT)
        if occupancy is not None and occupancy < self.thresholds["min_achieved_occupancy_pct"]:
            return True  # too few warps explain the low bandwidth: OCC001 speaks first
        # A streaming kernel: each byte loaded about once, few loads per warp, no local memory, no atomics.
        ld_sectors = k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0
        if r.compulsory_bytes and ld_sectors * 32 > self.thresholds["max_reuse_factor"] * r.compulsory_bytes:
            return True  # data re-read many times: tiling (TIL001) speaks
        ld_requests = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0
        warps = (k.m(LaunchStats.GRID_SIZE) or 0) * max(1.0, (k.m(LaunchStats.BLOCK_SIZE) or 32) / 32)
        if warps and ld_requests / warps > self.thresholds["max_loads_per_warp"]:
            return True  # a loop of loads per warp: more loads in flight (LAT001), not wider ones
        atomics = (k.m(MemoryTables.GLOBAL_ATOMIC_REQUESTS) or 0) + (k.m(MemoryTables.GLOBAL_REDUCTION_REQUESTS) or 0)
        if atomics > 0.1 * max(ld_requests, 1):
            return True  # atomics dominate: ATM001 speaks
        local = (k.m(MemoryTables.LOCAL_LOAD_SECTORS) or 0) + (k.m(MemoryTables.LOCAL_STORE_SECTORS) or 0)
        if local > 0.1 * max(ld_sectors, 1):
            return True  # local memory: LOC001 speaks
        if (k.m(InstructionStats.SHARED_LOAD_INST) or 0) > (k.m(InstructionStats.GLOBAL_LOAD_INST) or 0):
            return True  # values exchanged through shared memory: WRP001/MEM002 speak
        return False


def _narrow_share(k: KernelContext) -> tuple[float, int] | None:
    """The share of the global memory instructions (weighted by executions) that move fewer than 16 bytes per
    thread, and the narrowest width; None when the kernel's SASS shows no global access of a known width."""
    pcs = per_pc(k, SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE, SourceCounters.INST_EXECUTED)
    glob = [p for p in pcs.values() if p.get(SourceCounters.MEMORY_TYPE) == MEMORY_TYPE_GLOBAL]
    for p in glob:
        p["bytes"] = access_bytes(p["sass"], p.get(SourceCounters.MEMORY_ACCESS_SIZE_TYPE))
    glob = [p for p in glob if p["bytes"]]
    if not glob:
        return None
    weight = lambda p: p.get(SourceCounters.INST_EXECUTED, 1.0)  # noqa: E731
    all_w = sum(weight(p) for p in glob)
    narrow = [p for p in glob if p["bytes"] < 16]
    narrow_w = sum(weight(p) for p in narrow)
    share = narrow_w / all_w if all_w else 0.0
    return share, min((p["bytes"] for p in narrow), default=0)
