from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    Rule,
    SourceCounters,
    WarpStateStats,
    cut,
    limiter_phrase,
    limiter_side,
    predict,
    time_after,
)


class WarpDivergence(Rule):
    """Threads of a warp take different branches: each side runs with part of the warp masked off.

    What it detects:
        Average active threads per executed warp instruction (`smsp__thread_inst_executed_per_inst_executed.ratio`)
        below `max_efficiency` × 32, in a kernel whose time is in issuing instructions (limited by a pipe or instruction
        issue, or latency-bound: `roofline.limiter`), with the lines whose instructions run with the fewest threads
        (`derived__avg_thread_executed` per instruction, weighted by `inst_executed`).

    Why it costs time:
        A warp issues one instruction for all 32 lanes. When lanes disagree on a branch, the warp runs both sides one
        after the other with the other lanes masked: a 50/50 split on `threadIdx.x & 1` doubles the instructions.

    Example:
        if (threadIdx.x & 1) x = path_a(x); else x = path_b(x);

    Use instead:
        Make the condition uniform per warp (branch on `threadIdx.x / 32`, or sort/bin work so a warp's lanes agree);
        when both sides are short, compute both and select.

    Speedup estimate:
        Issue-bound time scales with warp instructions: new time = time × efficiency (× half that effect when
        latency-bound), never below the roofline floor.
        The counter the fix moves: active threads per warp instruction, to 32 (at least `max_efficiency` × 32 after).

    False positives:
        Bounds checks (`if (i < n)`) on the last block and early-exit loops lower the average a little; they are
        below the threshold unless the grid is tiny.
    """

    code = "DIV001"
    slug = "warp-divergence"
    category = "divergence"
    title = "Divergent branches within warps"
    requires = (WarpStateStats.THREADS_PER_INST,)
    per_instruction = (SourceCounters.AVG_THREADS_EXECUTED, SourceCounters.INST_EXECUTED)
    thresholds = {"max_efficiency": 0.75, "max_line_threads": 24.0}
    fixes = {
        "cuda": Fix(
            text=(
                "Warps execute with {ratio:.1f} of 32 threads active on average: make the branch condition "
                "uniform per warp (branch on the warp index, or bin/sort the work so a warp's 32 lanes agree)."
            ),
            code="if ((threadIdx.x / 32) & 1) x = path_a(x); else x = path_b(x);   // was threadIdx.x & 1",
        ),
        "triton": Fix(
            text=(
                "Lanes of a program disagree: masked `tl.where` work or data-dependent branches. Split the work by "
                "condition into separate programs (or kernels), or sort the inputs so a block shares one path."
            ),
            code="out = tl.where(cond, a, b)  # only when both sides are cheap",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        ratio = k.m(WarpStateStats.THREADS_PER_INST) or 32.0
        eff = ratio / 32.0
        side = limiter_side(r)
        if eff >= self.thresholds["max_efficiency"] or side not in ("compute", "latency"):
            return None
        weight = 1.0 if side == "compute" else 0.5
        new_ns = (r.duration_ns or 0) * (1 - weight * (1 - eff))
        low = {
            e.pc
            for e in k.per_instruction(SourceCounters.AVG_THREADS_EXECUTED)
            if e.value < self.thresholds["max_line_threads"]
        }
        lines = k.top_lines(SourceCounters.INST_EXECUTED, limit=3, min_share=0.0, pcs=low)
        return self.finding(
            title=f"Warp divergence: {ratio:.1f} of 32 threads active per instruction",
            message=(
                f"On average only {ratio:.1f} threads execute each warp instruction ({eff:.0%}); the "
                f"kernel ({limiter_phrase(r)}) spends its issue slots on masked lanes."
            ),
            fix=self.fix_for(k, ratio=ratio),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"Issued warp instructions scale with the lanes that work: with all 32 active instead of {eff:.0%}, "
                f"{cut(weight, 1 - eff, r)}, not below the roofline floor."
            ),
            confidence="medium",
            # made uniform per warp, the branch runs with all 32 lanes; the rule is silent at its threshold
            predicts=[
                predict("threads_per_instruction", ratio, 32.0, self.thresholds["max_efficiency"] * 32, ">="),
            ],
            evidence=[
                Evidence(
                    WarpStateStats.THREADS_PER_INST,
                    round(ratio, 2),
                    self.thresholds["max_efficiency"] * 32,
                    "active threads per instruction",
                )
            ],
            source=lines,
        )
