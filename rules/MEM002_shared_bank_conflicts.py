from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    MemoryTables,
    Rule,
    SourceCounters,
    fmt_ns,
    per_pc,
    predict,
    time_after,
)


class SharedBankConflicts(Rule):
    """Shared-memory accesses split into many wavefronts: bank conflicts.

    What it detects:
        Excessive shared-memory wavefronts (`derived__memory_l1_wavefronts_shared_excessive`) as a share of all
        shared wavefronts (`memory_l1_wavefronts_shared`), at least `min_excess_fraction`, with the lines and the
        n-way conflict of each. Weaker evidence (a report without Source Counters, such as a custom set of the memory
        tables' shared-memory table): the bank conflicts (`l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum`, one
        replayed wavefront each) as a share of the shared wavefronts (`l1tex__data_pipe_lsu_wavefronts_mem_shared.sum`);
        no lines, low confidence.

    Why it costs time:
        Shared memory has 32 banks of 4 bytes. When the threads of a warp hit n different addresses in one bank, the
        access is replayed n times: a 32-way conflict turns one wavefront into 32 and the shared-memory pipe, which
        serves one wavefront per cycle per SM, becomes the bottleneck.

    Example:
        __shared__ float tile[32][32];
        out[...] = tile[threadIdx.x][threadIdx.y];   // a column: every thread in bank (threadIdx.y % 32)

    Use instead:
        Pad each row by one element (`__shared__ float tile[32][33]`; 16 bytes for float4 rows) or XOR-swizzle the
        column index (`tile[r][c ^ r]`).

    Speedup estimate:
        The shared pipe serves one wavefront per cycle per SM: the excess wavefronts cost excess / (SMs × SM clock),
        where the SMs are those the grid occupies (its blocks, when fewer than the SMs: one block's replays are served
        by its one SM); the fix removes that time, never below the roofline floor. Without the SM clock in the report,
        the device's maximum clock (its attribute): the replays' time is then at its shortest.

    False positives:
        Conflicts in a kernel whose time is elsewhere (DRAM-bound with the shared pipe idle) cost little: the
        estimate then comes out small and the finding is ranked low or dropped. On the weaker evidence, the
        conflict counter also counts the extra wavefronts of accesses wider than 4 bytes per thread on some GPUs.
    """

    code = "MEM002"
    slug = "shared-bank-conflicts"
    category = "bank-conflicts"
    title = "Shared-memory bank conflicts"
    requires = (SourceCounters.SHARED_WAVEFRONTS, SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE)
    optional = (SourceCounters.SHARED_WAVEFRONTS_IDEAL, LaunchStats.GRID_SIZE, MemoryTables.SHARED_WAVEFRONTS)
    weak_evidence = (MemoryTables.SHARED_BANK_CONFLICTS,)
    per_instruction = (SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE, SourceCounters.SHARED_CONFLICTS_NWAY)
    thresholds = {"min_excess_fraction": 0.2}
    fixes = {
        "cuda": Fix(
            text=(
                "Up to {worst:.0f}-way bank conflicts at the lines below: pad the shared array's row by one element "
                "(one 16-byte vector for float4 rows) or XOR-swizzle the column index."
            ),
            code="__shared__ float tile[32][33];   // was [32][32]: the +1 column shifts each row by one bank",
        ),
        "triton": Fix(
            text=(
                "Triton lays out shared memory itself; conflicts usually come from a layout conversion (tl.trans, "
                "a reduction over the non-contiguous axis). Try another BLOCK shape or num_warps, or keep the "
                "reduction on the contiguous axis."
            ),
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak:  # the memory tables' shared-memory table: conflicts, one replayed wavefront each
            total = k.m(MemoryTables.SHARED_WAVEFRONTS) or 0.0
            excess = k.m(MemoryTables.SHARED_BANK_CONFLICTS) or 0.0
        else:
            total = k.m(SourceCounters.SHARED_WAVEFRONTS) or 0.0
            excess = k.m(SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE) or 0.0
            if excess <= 0:  # the rolled-up value may be absent: add up the instructions
                excess = sum(e.value for e in k.per_instruction(SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE))
        if total <= 0 or excess <= 0:
            return None
        frac = excess / total
        if frac < self.thresholds["min_excess_fraction"]:
            return None
        r = k.roofline
        # the SMs that serve the replays: those the grid's blocks occupy (a one-block kernel's are all on one SM)
        grid = k.m(LaunchStats.GRID_SIZE)
        sms = min(k.sm_count or 0, int(grid)) if grid and grid >= 1 else k.sm_count
        hz = r.sm_clock_hz
        clock_note = ""
        if not hz and k.device.get("max_gpu_frequency_khz"):
            hz = float(k.device["max_gpu_frequency_khz"]) * 1e3
            clock_note = " (the device's maximum clock: the report has no SM clock)"
        if not sms or not hz or not r.duration_ns:
            return None
        saved_ns = excess / (sms * hz) * 1e9
        lines = k.top_lines(SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE)
        nway = per_pc(k, SourceCounters.SHARED_CONFLICTS_NWAY)
        worst = max((v.get(SourceCounters.SHARED_CONFLICTS_NWAY, 1) for v in nway.values()), default=1)
        return self.finding(
            title=f"Shared-memory bank conflicts{f' ({worst:.0f}-way)' if nway else ''}: {frac:.0%} of wavefronts are "
            "replays",
            message=(
                f"{excess:,.0f} of {total:,.0f} shared-memory wavefronts are replays caused by bank conflicts, "
                f"about {saved_ns / 1e3:.1f} µs of shared-pipe time on {sms} SM{'s' if sms != 1 else ''}."
            ),
            fix=self.fix_for(k, worst=worst),
            estimated_speedup=time_after(r.duration_ns, r.duration_ns - saved_ns, r.theoretical_ns),
            speedup_model=(
                f"The {excess:,.0f} replayed wavefronts go, at one wavefront per cycle per SM: {excess:,.0f} / "
                f"({sms} SM{'s' if sms != 1 else ''}{' the grid occupies' if sms != k.sm_count else ''} × "
                f"{hz / 1e9:.2f} GHz{clock_note}) = {fmt_ns(saved_ns)} less, not below the roofline floor."
            ),
            confidence="high" if worst >= 8 else "medium",
            evidence=[
                Evidence(
                    MemoryTables.SHARED_BANK_CONFLICTS if k.weak else SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE,
                    excess,
                    None,
                    "excess wavefronts",
                ),
                Evidence(
                    MemoryTables.SHARED_WAVEFRONTS if k.weak else SourceCounters.SHARED_WAVEFRONTS,
                    total,
                    None,
                    "shared wavefronts",
                ),
                Evidence("excess_fraction", round(frac, 3), self.thresholds["min_excess_fraction"], "replay share"),
                Evidence(SourceCounters.SHARED_CONFLICTS_NWAY, worst, None, "worst n-way conflict"),
            ],
            # conflict-free, every shared access is one wavefront per request; the rule fires again above the bound
            predicts=[
                predict(
                    "shared_wavefronts_per_needed",
                    total / (total - excess),
                    1.0,
                    1 / (1 - self.thresholds["min_excess_fraction"]),
                )
            ],
            source=lines,
        )
