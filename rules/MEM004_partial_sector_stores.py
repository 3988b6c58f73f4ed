from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryTables,
    MemoryWorkloadAnalysis,
    Rule,
    SourceCounters,
    fmt_bytes,
    fmt_ns,
    time_after,
)

SECTOR = 32.0


class PartialSectorStores(Rule):
    """Stores that leave 32-byte sectors partly written make DRAM read them first.

    What it detects:
        A kernel DRAM limits (`roofline.limiter` is DRAM) whose DRAM reads exceed the bytes its global loads ask for
        (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld` × 32) by at least `min_fill_share` of the bytes of the sectors
        it stores to (`l1tex__t_sectors_pipe_lsu_mem_global_op_st` × 32), the extra reads being at least
        `min_fill_of_dram` of what DRAM moved, while its stores are coalesced (the excess sectors of its global
        accesses, `derived__memory_l2_theoretical_sectors_global_excessive`, are between `min_excess_share` and
        `max_excess_share` of them: present, since a store skipped under a condition leaves bytes of its sector
        unwritten, and below the share MEM001 speaks to, where the sectors themselves are wasted).

    Why it costs time:
        DRAM and L2 move whole sectors. A sector the kernel writes only in part must be merged with its old
        contents: L2 reads it from DRAM before writing it back. A store under a data-dependent condition
        (`if (v > t) out[i] = f(v);`) leaves nearly every sector partly written once a few of its 8 floats are
        skipped, so the output is read from DRAM as well as written: its bytes cross DRAM twice (pred_store_contig,
        61% of its elements stored: 47% more DRAM traffic than its loads and stores).

    Example:
        if (v > 0.5f) out[i] = 2.f * v;          // out[i] kept where v <= 0.5: each sector read, merged, written

    Use instead:
        Write whole sectors. Where the skipped elements' value is known (a buffer that is zeroed, or filled with a
        default, first), store it instead of skipping: `out[i] = v > 0.5f ? 2.f * v : 0.f;` and drop the memset.
        Where only the selected elements matter, write them densely (stream compaction: a warp-aggregated atomic or
        a scan gives each its slot) with their indices.

    Speedup estimate:
        The fix removes the fill reads and leaves the rest of DRAM's traffic: new time = time × (DRAM bytes − the
        extra reads) ÷ DRAM bytes, not below the roofline floor. A kernel that must keep the old values (an in-place
        update of a few elements) cannot avoid the reads: the estimate is for the kernels that can.

    False positives:
        DRAM reads above the loads' bytes for another cause (loads that miss L2 after it evicted their lines) also
        show as extra reads; the rule asks that the stores are partial (excess sectors present) and the extra reads
        match the stored sectors, which that case rarely does.
    """

    code = "MEM004"
    slug = "partial-sector-stores"
    category = "coalescing"
    title = "Partly written sectors: DRAM reads what the kernel stores"
    requires = (
        MemoryWorkloadAnalysis.DRAM_BYTES_READ,
        MemoryWorkloadAnalysis.DRAM_BYTES_WRITE,
        MemoryTables.GLOBAL_LOAD_SECTORS,
        MemoryTables.GLOBAL_STORE_SECTORS,
        SourceCounters.L2_SECTORS_GLOBAL,
        SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,
    )
    thresholds = {"min_fill_share": 0.5, "min_fill_of_dram": 0.15, "min_excess_share": 0.05, "max_excess_share": 0.3}
    fixes = {
        "cuda": Fix(
            text=(
                "{fill} of DRAM reads fill the {stored} of sectors the stores write in part: write whole sectors. "
                "Store the skipped elements' known value (zero, a default) instead of skipping them and drop the "
                "memset, or write only the selected elements, densely, with their indices."
            ),
            code="out[i] = v > 0.5f ? 2.f * v : 0.f;   // was: if (v > 0.5f) out[i] = 2.f * v;  (out zeroed first)",
        ),
        "triton": Fix(
            text=(
                "{fill} of DRAM reads fill the {stored} of sectors the stores write in part: mask the store by the "
                "bounds only and select the value, so every program writes whole sectors."
            ),
            code="tl.store(out_ptr + offs, tl.where(x > 0.5, 2 * x, 0.0), mask=offs < n)   # was: mask=(offs < n) & (x > 0.5)",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        r, t = k.roofline, self.thresholds
        if not r.duration_ns or r.limiter != "dram":
            return None
        read = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_READ) or 0.0
        written = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_WRITE) or 0.0
        loads = (k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0.0) * SECTOR
        stored = (k.m(MemoryTables.GLOBAL_STORE_SECTORS) or 0.0) * SECTOR
        sectors = k.m(SourceCounters.L2_SECTORS_GLOBAL) or 0.0
        excess = (k.m(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE) or 0.0) / sectors if sectors else 0.0
        fill = read - loads
        if stored <= 0 or fill < t["min_fill_share"] * stored or fill < t["min_fill_of_dram"] * (read + written):
            return None
        if not t["min_excess_share"] <= excess <= t["max_excess_share"]:
            return None
        fill = min(fill, stored)  # no more than the stored sectors can be filled
        moved = read + written
        new_ns = r.duration_ns * (moved - fill) / moved
        return self.finding(
            title=f"Partly written sectors: {fill / moved:.0%} of DRAM traffic reads what the kernel stores",
            message=(
                f"DRAM read {fmt_bytes(read)} where the global loads ask for {fmt_bytes(loads)}: the other "
                f"{fmt_bytes(fill)} matches the {fmt_bytes(stored)} of sectors the stores touch, which they write in "
                f"part ({excess:.0%} of the global sectors are excess), so L2 reads each from DRAM to merge it."
            ),
            fix=self.fix_for(k, fill=fmt_bytes(fill), stored=fmt_bytes(stored)),
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=(
                f"The fill reads leave DRAM, the rest of its traffic stays: {fmt_ns(r.duration_ns)} × "
                f"({fmt_bytes(moved)} − {fmt_bytes(fill)}) ÷ {fmt_bytes(moved)} = {fmt_ns(new_ns)}."
            ),
            confidence="medium",
            evidence=[
                Evidence(
                    "fill_share_of_stored",
                    round(fill / stored, 3),
                    t["min_fill_share"],
                    "extra DRAM reads per stored sector byte",
                ),
                Evidence(
                    "fill_share_of_dram",
                    round(fill / moved, 3),
                    t["min_fill_of_dram"],
                    "extra reads' share of DRAM traffic",
                ),
                Evidence(
                    "excess_sector_share", round(excess, 3), t["max_excess_share"], "excess share of global sectors"
                ),
            ],  # fmt: skip
        )
