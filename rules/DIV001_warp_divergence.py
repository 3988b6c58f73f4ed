import re

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
    opcode,
    predict,
    time_after,
)

LOOP = "lanes leave a loop at different iterations"
_TARGET = re.compile(r"(0x[0-9a-f]+)")


class WarpDivergence(Rule):
    """Threads of a warp take different branches: each side runs with part of the warp masked off.

    What it detects:
        Average active threads per executed warp instruction (`smsp__thread_inst_executed_per_inst_executed.ratio`)
        below `max_efficiency` × 32, in a kernel whose time is in issuing instructions (limited by a pipe or instruction
        issue, or latency-bound: `roofline.limiter`), with the lines whose instructions run with the fewest threads
        (`derived__avg_thread_executed` per instruction, weighted by `inst_executed`). Where most of the idle lanes
        (weighted by sampled cycles, else by executions) sit in loops whose backward branch runs with fewer than
        `max_line_threads` lanes and at most `max_loop_kept_share` of the lanes of the instruction that enters the
        loop, the lanes leave those loops at different iterations (an early exit, a data-dependent trip count) and
        the fix is the loop's, not a branch's (a loop on one side of a branch, all its lanes iterating, keeps the
        entry's lanes).

    Why it costs time:
        A warp issues one instruction for all 32 lanes. When lanes disagree on a branch, the warp runs both sides one
        after the other with the other lanes masked: a 50/50 split on `threadIdx.x & 1` doubles the instructions.

    Example:
        if (threadIdx.x & 1) x = path_a(x); else x = path_b(x);

    Use instead:
        Make the condition uniform per warp (branch on `threadIdx.x / 32`, or sort/bin work so a warp's lanes agree);
        when both sides are short, compute both and select. A loop whose lanes leave at different iterations (an
        early exit, a data-dependent trip count): give a warp one task and its lanes the iterations (a warp per
        candidate, lanes over the dimensions, the exit decided by a warp vote), or sort the tasks by length.

    Speedup estimate:
        Packing the work into full warps divides each divergent instruction's warp cycles by 32 ÷ its active
        threads. Issue-bound (limited by a pipe or instruction issue): the time scales with the issued warp
        instructions, new time = time × efficiency. Latency-bound: the time is the warps' cycles, issuing and waiting
        alike, and a warp that waits on a load with 14 of 32 lanes active waits once for 14 lanes' work; with the
        sampled warp cycles of each instruction (Source Counters' `smsp__pcsamp_sample_count`) and its active
        threads (`derived__avg_thread_executed`), new time = time × (1 − Σ samples × (1 − threads ÷ 32) ÷ Σ samples):
        the idle-lane share of the sampled cycles. Lanes switched off by a predicate (`@P0 BREAK` with fewer threads
        true than active, `derived__avg_thread_executed_true`) count as active: they evaluated the condition, and
        packing keeps that. Without the samples, half of the issue-bound cut (time × (1 − (1 − efficiency) ÷ 2)).
        Never below the roofline floor.
        The counter the fix moves: active threads per warp instruction, to 32 (at least `max_efficiency` × 32 after).

        Against LAT001 (too few loads in flight) on the same latency-bound kernel: with half the lanes idle, every
        load in flight carries half a warp's work, so packing the lanes is itself a latency-hiding fix, one that
        shrinks the waiting and the issuing share alike, while more loads in flight (LAT001's `loads_in_flight_gain`)
        shrink only the waiting share. The two estimates are of the same measured time; the findings are ordered by
        which removes more of it (a divergent early-exit loop whose waits sit at its loads: DIV001 first when its
        idle-lane share of the samples exceeds LAT001's cut).

    False positives:
        Bounds checks (`if (i < n)`) on the last block and short early exits lower the average a little; they are
        below the threshold unless the grid is tiny. A loop that is the kernel's work and exits early per lane is not
        one: there the idle lanes are the time.
    """

    code = "DIV001"
    slug = "warp-divergence"
    category = "divergence"
    title = "Divergent branches within warps"
    requires = (WarpStateStats.THREADS_PER_INST,)
    per_instruction = (SourceCounters.AVG_THREADS_EXECUTED, SourceCounters.INST_EXECUTED, SourceCounters.SAMPLES)
    thresholds = {"max_efficiency": 0.75, "max_line_threads": 24.0, "max_loop_kept_share": 0.9}
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

    fixes_when = {
        LOOP: {
            "cuda": Fix(
                text=(
                    "Lanes leave a loop at different iterations ({ratio:.1f} of 32 threads active per instruction): "
                    "the warp runs the loop until its last lane is done, and every wait in it is paid for the lanes "
                    "still inside. Give a warp one task and its lanes the loop's iterations (a warp per candidate, "
                    "lanes over the dimensions, the early exit decided by a warp vote), or sort or bin the tasks by "
                    "their trip count so the lanes of a warp finish together."
                ),
                code=(
                    "// a warp per task, lanes over the loop: no lane waits for another's iterations\n"
                    "float s = 0.f;\n"
                    "for (int d = lane; d < dim; d += 32) { float t = a[d] - b[d]; s += t * t; }\n"
                    "for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);"
                ),
            ),
            "triton": Fix(
                text=(
                    "Lanes of a program leave a loop at different iterations: sort or bin the inputs by their trip "
                    "count (or launch the long and the short tasks separately) so a program's lanes finish together."
                ),
                code="order = torch.argsort(trip_counts)   # then launch on the inputs in that order",
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        ratio = k.m(WarpStateStats.THREADS_PER_INST) or 32.0
        eff = ratio / 32.0
        side = limiter_side(r)
        if eff >= self.thresholds["max_efficiency"] or side not in ("compute", "latency"):
            return None
        threads = {e.pc: e.value for e in k.per_instruction(SourceCounters.AVG_THREADS_EXECUTED)}
        idle = idle_sampled_share(k, threads) if side == "latency" else None
        if side == "compute":
            cut_share = 1 - eff
            model = (
                f"Issued warp instructions scale with the lanes that work: with all 32 active instead of {eff:.0%}, "
            )
            model += f"{cut(1.0, 1 - eff, r)}, not below the roofline floor."
        elif idle is not None:
            cut_share = idle
            model = (
                f"A latency-bound warp's cycles, issuing and waiting alike, are paid once per warp instruction: the "
                f"sampled cycles on instructions with idle lanes, weighted by the idle share of their lanes, are "
                f"{idle:.0%} of the samples; with the lanes packed into full warps the time falls by that much, "
                "not below the roofline floor."
            )
        else:  # no sampled cycles per instruction: half of the issue-bound cut
            cut_share = 0.5 * (1 - eff)
            model = (
                f"Issued warp instructions scale with the lanes that work: with all 32 active instead of {eff:.0%}, "
            )
            model += f"{cut(0.5, 1 - eff, r)}, not below the roofline floor."
        new_ns = (r.duration_ns or 0) * (1 - cut_share)
        low = {pc for pc, v in threads.items() if v < self.thresholds["max_line_threads"]}
        lines = k.top_lines(SourceCounters.INST_EXECUTED, limit=3, min_share=0.0, pcs=low)
        evidence = [
            Evidence(
                WarpStateStats.THREADS_PER_INST,
                round(ratio, 2),
                self.thresholds["max_efficiency"] * 32,
                "active threads per instruction",
            )
        ]
        if idle is not None:
            evidence.append(Evidence("idle_lane_sampled_share", round(idle, 3), None, "idle lanes' share of samples"))
        return self.finding(
            title=f"Warp divergence: {ratio:.1f} of 32 threads active per instruction",
            message=(
                f"On average only {ratio:.1f} threads execute each warp instruction ({eff:.0%}); the "
                f"kernel ({limiter_phrase(r)}) spends its "
                + (
                    "issue slots on masked lanes."
                    if idle is None
                    else f"cycles, waits included, with lanes masked: {idle:.0%} of the sampled warp cycles belong to "
                    "idle lanes, and each load in flight carries only the active lanes' work."
                )
            ),
            fix=self.fix_for(k, [LOOP] if idle_in_exited_loops(k, threads, self.thresholds) else [], ratio=ratio),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=model,
            confidence="medium",
            # made uniform per warp, the branch runs with all 32 lanes; the rule is silent at its threshold
            predicts=[
                predict("threads_per_instruction", ratio, 32.0, self.thresholds["max_efficiency"] * 32, ">="),
            ],
            evidence=evidence,
            source=lines,
        )


def idle_sampled_share(k: KernelContext, threads: dict[int, float]) -> float | None:
    """The share of the sampled warp cycles that belong to idle lanes: Σ samples × (1 − active threads ÷ 32) ÷ Σ
    samples over the kernel's instructions (an instruction without a thread count counts as full); None without
    sampled cycles per instruction or thread counts."""
    samples = k.per_instruction(SourceCounters.SAMPLES)
    total = sum(e.value for e in samples)
    if total <= 0 or not threads:
        return None
    idle = sum(e.value * max(0.0, 1.0 - min(32.0, threads.get(e.pc, 32.0)) / 32.0) for e in samples)
    return idle / total


def idle_in_exited_loops(k: KernelContext, threads: dict[int, float], t: dict[str, float]) -> bool:
    """Whether most of the idle lanes (weighted by sampled cycles, else by executions) sit in loops whose backward
    branch runs with fewer than `max_line_threads` lanes and at most `max_loop_kept_share` of the lanes that entered
    the loop: lanes that have left the loop while others iterate."""
    weights = {e.pc: e.value for e in k.per_instruction(SourceCounters.SAMPLES)} or {
        e.pc: e.value for e in k.per_instruction(SourceCounters.INST_EXECUTED)
    }
    listing = sorted(k.per_instruction(SourceCounters.INST_EXECUTED), key=lambda e: e.pc)
    pcs = [e.pc for e in listing]
    loops = []
    for e in listing:
        target = _TARGET.search(e.sass or "") if opcode(e.sass).startswith("BRA") else None
        top = int(target.group(1), 16) if target else None
        if top is None or top > e.pc or top not in pcs or pcs.index(top) == 0:
            continue
        # the lanes at the back edge against those that entered: fewer, and some lanes left the loop early (a loop
        # whose lanes all iterate, on one side of a branch, keeps the entry's count)
        entry = threads.get(pcs[pcs.index(top) - 1], 32.0)
        back = threads.get(e.pc, 32.0)
        if back < t["max_line_threads"] and back <= t["max_loop_kept_share"] * entry:
            loops.append((top, e.pc))
    idle = {pc: w * max(0.0, 1.0 - min(32.0, threads.get(pc, 32.0)) / 32.0) for pc, w in weights.items()}
    inside = sum(v for pc, v in idle.items() if any(top <= pc <= bottom for top, bottom in loops))
    return inside > 0.5 * sum(idle.values())
