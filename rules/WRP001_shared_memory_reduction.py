from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    InstructionStats,
    KernelContext,
    Rule,
    SchedulerStats,
    SourceCounters,
    WarpStateStats,
    shared_tree,
    stall_total,
    time_after,
)

stall = WarpStateStats.stall


class SharedMemoryReduction(Rule):
    """Values exchanged between threads through shared memory and barriers where warp shuffles would do.

    What it detects:
        Warps stalled at barriers (`stall_barrier`) and on shared-memory round trips (`short_scoreboard`,
        `mio_throttle`) for at least `min_exchange_stall_share` of all stall reasons, barriers alone at least
        `min_barrier_share`, with at least `min_shared_per_global_load` shared loads per global load: the signature of
        a tree reduction or scan through shared memory. Or, from the SASS, the instructions of a shared-memory tree
        (a loop whose body waits at `BAR.SYNC`, loads and stores shared memory, halves its stride with a right shift
        by one and touches no global memory) at least `min_tree_issue_share` of the executed instructions, in a
        kernel whose schedulers issue in at least `min_issue_pct`% of cycles: the tree then costs issue slots (every
        warp runs each round's loop control and barrier, most with nothing to add) rather than barrier stalls.

    Why it costs time:
        A shared-memory tree over 1024 threads takes 10 rounds of store, `__syncthreads()`, load; the last five run
        inside one warp with most threads idle, each round a barrier. Warp shuffles exchange registers within a warp
        in one instruction, no shared memory and no barrier.

    Example:
        for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sm[tid] += sm[tid + s]; __syncthreads(); }

    Use instead:
        Reduce within each warp with `__shfl_down_sync(0xffffffff, v, offset)` (offsets 16, 8, 4, 2, 1), write one
        value per warp to shared memory, one `__syncthreads()`, and let the first warp reduce those 32 values the same
        way (or `cooperative_groups::reduce`, CUB `BlockReduce`).

    Speedup estimate:
        Half of the barrier and shared-memory stall time disappears (shuffles still wait on each other within a warp):
        new time = time × (1 − share / 2). From the SASS: half of the tree's issued instructions disappear (a
        shuffle round is two instructions, a shared-memory round about twelve, every warp running each one), and the
        time follows the issued instructions in the share of cycles the schedulers issue: new time = time × (1 −
        issue active × tree share / 2).

    False positives:
        Shared memory used as a real cache (tiles re-read many times) with barriers between phases; bank conflicts
        (MEM002) are reported on their own.
    """

    code = "WRP001"
    slug = "shared-memory-reduction"
    category = "warp-primitives"
    title = "Shared-memory exchanges where warp shuffles would do"
    requires = (
        stall("barrier"),
        stall("short_scoreboard"),
        InstructionStats.SHARED_LOAD_INST,
        InstructionStats.GLOBAL_LOAD_INST,
    )
    optional = tuple(stall(s) for s in WarpStateStats.STALL_REASONS if s not in ("barrier", "short_scoreboard")) + (
        SourceCounters.SHARED_WAVEFRONTS,
        SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE,
        SchedulerStats.ISSUE_ACTIVE_PCT,
    )
    per_instruction = (SourceCounters.SAMPLED_STALL_BARRIER, SourceCounters.INST_EXECUTED)
    thresholds = {
        "min_exchange_stall_share": 0.4,
        "min_barrier_share": 0.15,
        "min_shared_per_global_load": 1.0,
        "min_tree_issue_share": 0.3,
        "min_issue_pct": 50.0,
    }
    languages = ("cuda",)  # Triton's tl.sum / tl.reduce already reduce with shuffles
    fixes = {
        "cuda": Fix(
            text=(
                "Reduce (or scan) within each warp with __shfl_down_sync, exchange one value per warp through "
                "shared memory with a single __syncthreads(), then finish in the first warp with shuffles."
            ),
            code=(
                "__device__ float warp_sum(float v) {\n"
                "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);\n  return v;\n}\n"
                "__shared__ float partial[32];\n"
                "v = warp_sum(v);\n"
                "if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;\n"
                "__syncthreads();\n"
                "if (threadIdx.x < 32) v = warp_sum(threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f);"
            ),
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        t = self.thresholds
        total = stall_total(k)
        if total <= 0:
            return None
        barrier = k.m(stall("barrier")) or 0.0
        exchange = barrier + (k.m(stall("short_scoreboard")) or 0.0) + (k.m(stall("mio_throttle")) or 0.0)
        share, bshare = exchange / total, barrier / total
        shared_ld = k.m(InstructionStats.SHARED_LOAD_INST) or 0.0
        global_ld = k.m(InstructionStats.GLOBAL_LOAD_INST) or 0.0
        wavefronts = k.m(SourceCounters.SHARED_WAVEFRONTS) or 0.0
        if wavefronts and (k.m(SourceCounters.SHARED_WAVEFRONTS_EXCESSIVE) or 0) / wavefronts > 0.2:
            return None  # bank conflicts: MEM002
        if share < t["min_exchange_stall_share"] or bshare < t["min_barrier_share"]:
            return self._from_sass(k)
        if shared_ld < t["min_shared_per_global_load"] * max(global_ld, 1):
            return None
        r = k.roofline
        new_ns = (r.duration_ns or 0) * (1 - share / 2)
        lines = k.top_lines(SourceCounters.SAMPLED_STALL_BARRIER, limit=3)  # the __syncthreads() warps wait at
        return self.finding(
            title=f"Barrier and shared-memory stalls: {share:.0%} of warp stalls",
            message=(
                f"Warps spend {share:.0%} of their stall time at barriers ({bshare:.0%}) or waiting on shared "
                f"memory, with {shared_ld / max(global_ld, 1):.1f} shared loads per global load: values are "
                "exchanged through shared memory round by round."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"Half of the exchange stalls ({share:.0%} of the stall time) disappear: the time falls by "
                f"{share / 2:.0%}."
            ),
            confidence="medium",
            evidence=[
                Evidence("exchange_stall_share", round(share, 3), t["min_exchange_stall_share"]),
                Evidence(stall("barrier"), round(barrier, 2), None, "barrier stall (per issue)"),
                Evidence(
                    "shared_per_global_load", round(shared_ld / max(global_ld, 1), 2), t["min_shared_per_global_load"]
                ),
            ],
            source=lines,
        )

    def _from_sass(self, k: KernelContext) -> Finding | None:
        """The shared-memory tree read from the SASS: its loops' share of the executed instructions."""
        t = self.thresholds
        tree = shared_tree(k)
        issue = k.m(SchedulerStats.ISSUE_ACTIVE_PCT) or 0.0
        if tree is None or tree.share < t["min_tree_issue_share"] or issue < t["min_issue_pct"]:
            return None
        r = k.roofline
        cut = issue / 100 * tree.share / 2
        new_ns = (r.duration_ns or 0) * (1 - cut)
        lines = k.top_lines(SourceCounters.INST_EXECUTED, limit=2, min_share=0.02, pcs=set(tree.pcs))
        return self.finding(
            title=f"Shared-memory tree reduction: {tree.share:.0%} of issued instructions",
            message=(
                f"{tree.share:.0%} of the executed instructions are the rounds of a shared-memory tree (a loop that "
                f"halves its stride, with a barrier, shared loads and stores each round), and the schedulers issue "
                f"in {issue:.0f}% of cycles: every warp runs each round's loop control and barrier, most of them "
                "with nothing to add."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"Half of the tree's instructions ({tree.share:.0%} of those executed) disappear with warp shuffles, "
                f"and the time follows the instructions issued in the {issue:.0f}% of cycles the schedulers issue: "
                f"the time falls by {cut:.0%}."
            ),
            confidence="medium",
            evidence=[
                Evidence("tree_instruction_share", round(tree.share, 3), t["min_tree_issue_share"]),
                Evidence("issue_active_pct", round(issue, 1), t["min_issue_pct"], "issue slots busy", "%"),
            ],
            source=lines,
        )
