from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    Rule,
    SourceCounters,
    SpeedOfLight,
    opcode,
    time_after,
)

# The compiler's unsigned division / modulo by a value known only at run time (sm_70 and later): a float reciprocal
# estimate refined with integer multiply-highs.
_DIVISION = ("I2F.U32.RP", "MUFU.RCP", "IMAD.HI.U32")
_SHARED = ("LDS", "STS")


class ModuloTreeReduction(Rule):
    """A shared-memory tree reduction that picks its active threads with `tid % (2*s)` (interleaved addressing).

    What it detects:
        A loop (instructions executed `min_rounds` or more times per launch of the kernel's entry, `inst_executed` per
        instruction) holding a barrier (`BAR.SYNC`), shared-memory loads or stores under a predicate, and the
        compiler's integer division by a run-time value (`I2F.U32.RP`, `MUFU.RCP`, `IMAD.HI.U32`): each round
        computes `tid % (2*s)` to decide which threads add.

    Why it costs time:
        Interleaved addressing keeps every warp in every round (the active threads are spread over all warps, a few
        lanes each), so each round costs the whole block a barrier and ~15 instructions of division per thread, and
        the last five rounds, inside one warp, still go through shared memory and a barrier.

    Example:
        for (int s = 1; s < blockDim.x; s *= 2) { if (tid % (2 * s) == 0) sm[tid] += sm[tid + s]; __syncthreads(); }

    Use instead:
        Sequential addressing (`for (s = blockDim.x / 2; s > 32; s >>= 1) if (tid < s) sm[tid] += sm[tid + s];`):
        whole warps drop out and the modulo goes; finish the last 64 values in one warp with `__shfl_down_sync`, no
        barrier (or CUB `BlockReduce`, `cooperative_groups::reduce`).

    Speedup estimate:
        The rounds through shared memory and a barrier drop from 1 + r (the loop's trip count r) to 1 + max(1, r −
        5) (the last five rounds become shuffles in one warp): time × (1 + max(1, r − 5)) ÷ (1 + r), no faster than
        the issued instructions allow once the division goes and inactive warps skip the rounds.

    False positives:
        A loop with a run-time division that is not a reduction (a histogram, a sparse walk) and uses shared memory
        with barriers; the fix then does not apply, but the division by a power of two (`& (2*s - 1)`) still pays.
    """

    code = "WRP002"
    slug = "modulo-tree-reduction"
    category = "warp-primitives"
    title = "Tree reduction with interleaved addressing (tid % (2*s))"
    requires = (SpeedOfLight.DURATION,)
    per_instruction = (SourceCounters.INST_EXECUTED,)
    thresholds = {"min_rounds": 4.0, "shuffle_rounds": 5.0}
    languages = ("cuda",)
    fixes = {
        "cuda": Fix(
            text=(
                "The reduction picks its active threads with a modulo ({rounds:.0f} rounds, each a barrier and an "
                "integer division per thread). Use sequential addressing so whole warps drop out, and finish the "
                "last 64 values in one warp with __shfl_down_sync (no shared memory, no barrier)."
            ),
            code=(
                "for (unsigned s = blockDim.x / 2; s > 32; s >>= 1) {\n"
                "  if (tid < s) sm[tid] += sm[tid + s];\n"
                "  __syncthreads();\n"
                "}\n"
                "if (tid < 32) {\n"
                "  float v = sm[tid] + sm[tid + 32];\n"
                "  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);\n"
                "  if (tid == 0) out[blockIdx.x] = v;\n"
                "}"
            ),
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        entries = sorted(k.per_instruction(SourceCounters.INST_EXECUTED), key=lambda e: e.pc)
        if not entries or entries[0].value <= 0:
            return None
        entry = entries[0].value  # the kernel's first instruction runs once per warp
        loop_count = max(e.value for e in entries)
        rounds = loop_count / entry
        if rounds < self.thresholds["min_rounds"]:
            return None
        body = [e for e in entries if e.value == loop_count]
        ops = [opcode(e.sass) for e in body]
        if not any(op.startswith("BAR.SYNC") for op in ops):
            return None
        if not all(any(op.startswith(d) for op in ops) for d in _DIVISION):
            return None
        predicated_shared = [
            e for e in body if (e.sass or "").lstrip().startswith("@") and opcode(e.sass).startswith(_SHARED)
        ]
        if not predicated_shared:
            return None
        r = k.roofline
        shuffle = self.thresholds["shuffle_rounds"]
        barrier_ratio = (1 + max(1.0, rounds - shuffle)) / (1 + rounds)
        # issued instructions after the fix: the loop without its division, run by warps that halve every round
        # (≈ twice the first round's warps in all) for the rounds above a warp
        issued = sum(e.value for e in entries)
        loop_issued = sum(e.value for e in body)
        division = sum(1 for op in ops if op.startswith(("I2F", "MUFU", "F2I", "IMAD.HI")))
        body_ratio = max(0.0, len(body) - 3 * division) / len(body)  # each division op brings ~2 more
        issue_ratio = (issued - loop_issued + loop_issued / rounds * 2 * body_ratio) / issued
        new_ns = (r.duration_ns or 0) * max(barrier_ratio, issue_ratio)
        lines = k.top_lines(SourceCounters.INST_EXECUTED, limit=3, min_share=0.0, pcs={e.pc for e in predicated_shared})
        return self.finding(
            title=f"Tree reduction with a modulo test: {rounds:.0f} barrier rounds, every warp in each",
            message=(
                f"A loop runs {rounds:.0f} times per warp with a barrier, predicated shared-memory loads and stores "
                "and an integer division by a run-time value each round: a tree reduction whose active threads are "
                "chosen by tid % (2*s), spread over every warp."
            ),
            fix=self.fix_for(k, rounds=rounds),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"Barrier rounds through shared memory drop from {1 + rounds:.0f} to "
                f"{1 + max(1.0, rounds - shuffle):.0f} (the last {shuffle:.0f} become warp shuffles), so the time "
                f"falls to {barrier_ratio:.0%} of what it is; but to no less than the instructions issued without "
                f"the division and with halving warps take ({issue_ratio:.0%}), nor below the roofline floor."
            ),
            confidence="medium",
            evidence=[
                Evidence("rounds", round(rounds, 1), self.thresholds["min_rounds"], "loop trips per warp"),
                Evidence("division_ops", division, None, "integer-division instructions in the loop"),
            ],
            source=lines,
        )
