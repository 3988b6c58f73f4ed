import math

from ncuadvisor.rulekit import (
    LAUNCH_BOUND_NS,
    PRACTICAL_FRACTION,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    Occupancy,
    Rule,
    SchedulerStats,
    fixed_kernel_ns,
    fma_stream,
    fmt_ns,
    gemm_shape,
    kept_units_ns,
    limiter_side,
    own_work_floor,
    parallelism_ns,
    stall_bounded_ns,
    stall_metric,
    stall_shares,
    time_after,
    unread_fma_ceiling,
)

# The stall reasons each mechanism's fix removes (what the bound on its estimate may take away).
MEMORY_WAITS = ("long_scoreboard", "lg_throttle", "drain")
SHARED_WAITS = ("short_scoreboard", "mio_throttle", "tex_throttle")
ISSUE_WAITS = ("selected", "not_selected", "dispatch_stall", "math_pipe_throttle", "wait")
# A stall reason in the warps' words, and the mechanism it names when it dominates a kernel no unit keeps busy.
STALL_MECHANISM = {
    "long_scoreboard": "global-memory latency not hidden: each warp waits on its loads with too few in flight",
    "lg_throttle": "the load/store queue is full of narrow global accesses: too many instructions per byte",
    "barrier": "warps wait at block-wide barriers (__syncthreads) for the slowest warp of their block",
    "membar": "memory fences (__threadfence, atomics with ordering) drain the warp's memory operations",
    "short_scoreboard": "shared-memory or MUFU results waited on right after they are requested",
    "mio_throttle": "the shared-memory / special-function queue is full",
    "wait": "fixed-latency dependences: each instruction needs the result of the one before (no ILP)",
    "math_pipe_throttle": "one math pipe is saturated while the others idle",
    "no_instruction": "the instruction cache misses or warps wait for branch targets",
    "branch_resolving": "divergent or data-dependent branches",
    "drain": "stores draining at the warps' exit",
    "sleeping": "warps sleep (nanosleep, a spin-wait)",
    "dispatch_stall": "the dispatcher stalls (register-bank or pipe conflicts)",
    "tex_throttle": "the texture / L1 queue is full",
    "imc_miss": "constant-cache misses",
    "misc": "miscellaneous stalls",
    "not_selected": "eligible warps wait for the scheduler: the SM issues every cycle",
    "selected": "the SM issues every cycle",
}
STALL_CATEGORY = {
    "long_scoreboard": "latency",
    "lg_throttle": "vectorize",
    "barrier": "latency",
    "membar": "latency",
    "short_scoreboard": "latency",
    "mio_throttle": "bank-conflicts",
    "wait": "latency",
    "math_pipe_throttle": "instruction-overhead",
    "no_instruction": "instruction-overhead",
    "branch_resolving": "divergence",
}

TENSOR = "a tensor-core product near its pipe's rate"
LATENCY = "no unit busy: the dominant stall names the wait"
REUSE = "L1 / shared traffic far above the bytes needed"
REFETCH = "L2 or DRAM traffic above the bytes needed"
ISSUE = "instruction issue, not the needed work, limits"
LAUNCH = "launch overhead or an under-filled grid"
OWN_TAIL = "a partial last wave of a kernel whose instructions are all its work"
FLOP_PIPE = "the FMA pipe at its ceiling"
XU = "the XU pipe busy with work that is not transcendentals"
_LIBRARY_TENSOR = Fix(
    text=(
        "A library GEMM at this shape ({head}). The library picked its best tile; the lever is the shape and what "
        "surrounds the call: batch or concatenate the products that share an operand (a larger M·N gives more tiles "
        "per SM; a larger K amortises each tile's prologue and epilogue), keep M, N, K multiples of 128 (64 at "
        "least), and fuse the bias/activation/cast into the GEMM's epilogue (cuBLASLt epilogues, torch.compile) "
        "instead of a separate pass over C."
    )
)

_LIBRARY_LAUNCH = Fix(
    text=(
        "The library sized this launch for the problem it was given ({head}): give each call more work (batch the "
        "calls, one larger problem instead of several small ones) or replay the sequence in a CUDA graph "
        '(torch.cuda.graphs, torch.compile mode="reduce-overhead").'
    )
)


_LIBRARY_OWN_TAIL = Fix(
    text=(
        "The library sized this grid ({head}), and every instruction it issues is its algorithm's: nothing in the "
        "kernel or its launch is the call's to change. Fewer, larger calls (all the values a step needs drawn in one "
        "call) spread the last wave over more work; under torch.compile the values can be drawn inside the kernel "
        "that uses them, which saves this kernel's stores and its consumer's loads."
    )
)


class UnexplainedHeadroom(Rule):
    """Room no specific rule explains: the mechanism the limiter, the stalls and the instruction mix name.

    What it detects:
        A kernel at least `min_headroom` times its roofline floor (the bar of ROOF001's "leave it") on which no other
        rule fired, at least `min_duration_ns` long. It runs last (`fallback`) and names, from the counters, the
        mechanism that holds the time: for a tensor-core product near its pipe's rate (or a library product whose
        floor is the tensor pipe's, or within `ridge_band` of the largest work floor, and no unit is busy), the pipe's idle share and the waves of tiles on the SMs, from
        the launch and the counters, never the kernel's name: M·N (the SMs' writes at the product type's output
        width), K (FLOPs ÷ 2·M·N) and the tiles of the grid say "M·N off the tile multiple of the SMs (the last wave
        is partial)" (a last wave at least `min_tail_idle` idle) or "K too small to amortise the tile pipeline" (K
        under `min_gemm_k`, or each tile writing `max_epilogue_ratio` of the bytes it loads); for a latency-bound kernel,
        the stall reason that dominates (a reason at least `min_stall_share` of the warps' cycles); for a kernel
        whose L1 / shared traffic is `min_traffic_excess` times its compulsory bytes, missing reuse; for L2 or DRAM
        traffic above the compulsory bytes, refetches; for an issue-bound kernel, instructions that are not the
        needed work, unless its floor is those instructions (a library kernel that reads no global memory: every
        instruction is its algorithm's), where a last wave of blocks at least `min_tail_idle` idle names the room; for
        an FMA (or FP16) pipe busy at least `min_pipe_pct` % in a report TEN001 cannot read, that
        pipe's ceiling and the tensor roof a matrix product would have; for a launch-bound one, the launch or the
        grid.

    Why it costs time:
        The headroom is the time the kernel takes beyond the work and bytes it needs. Each mechanism holds part of
        it; naming the one that the counters show is the start of the fix. Where none of the project's specific
        rules recognises the pattern, this finding says so (its title starts with "Unexplained headroom") instead of
        leaving "no rule applies" as if the kernel were done.

    Example:
        A cuBLAS/nvjet bf16 GEMM at 1.8× its tensor floor, one wave of 128 tiles on 132 SMs, the tensor pipe 68%
        busy; an ATen softmax at 2.6× its floor, issue-bound; a stencil re-reading its inputs through L1.

    Use instead:
        The mechanism's own fix, stated in the finding: reuse through shared memory or registers, more loads in
        flight, fewer instructions per byte (vector loads, hoisted index arithmetic, fusion), a grid and shape that
        fill the SMs, or for a library kernel the shape and the fused epilogue.

    Speedup estimate:
        The modelled time of the fixed kernel: the time the units the fix leaves alone still need (their busy time
        at peak as executed), not below the roofline floor at 85% of peak, and bounded by the stall time the fix
        removes (duration × (1 − the share of the warps' cycles in the stall reasons it addresses), as GPA
        attributes stalls). For a tensor-core product: the tensor pipe's busy time at full rate, or with the last
        wave full. Confidence is low: the mechanism is named from counters, not recognised from code.

    False positives:
        The floor may be unreachable for the kernel's shape (a skinny GEMM, a reduction with a serial tail); the
        finding then names a mechanism whose fix is structural. Kernels under `min_duration_ns` are left to the
        launch rules.
    """

    code = "GEN001"
    slug = "unexplained-headroom"
    category = "latency"  # each finding takes its mechanism's category
    title = "Unexplained headroom"
    requires = (LaunchStats.GRID_SIZE,)
    # The warp stall reasons and the schedulers' issue rate are read where the report has them (the CUDA and Triton
    # rules collect them) but not declared: declared, they would add the Warp State and Scheduler sections' replay
    # passes to the collection of every ATen and library kernel, which no other rule of theirs reads.
    optional = (
        LaunchStats.WAVES_PER_SM,
        Occupancy.THEORETICAL_PCT,
        Occupancy.ACHIEVED_PCT,
        Occupancy.LIMIT_BLOCKS,
        Occupancy.LIMIT_REGISTERS,
        Occupancy.LIMIT_SHARED_MEM,
        Occupancy.LIMIT_WARPS,
    )
    thresholds = {
        "min_headroom": 1.6,
        "min_duration_ns": 1_000.0,
        "min_stall_share": 0.25,
        "min_traffic_excess": 2.0,
        "min_tail_idle": 0.10,
        "min_pipe_pct": 60.0,
        "min_gemm_k": 512.0,
        "max_epilogue_ratio": 0.25,
        "ridge_band": 0.9,  # a tensor floor this close to the DRAM floor: the product sits at the ridge
    }
    languages = ("cuda", "triton", "pytorch", "library")
    fallback = True
    fixes = {
        "cuda": Fix(text="{lever}."),
        "triton": Fix(
            text=(
                "{lever}. In Triton the same levers are the program's shape: a larger BLOCK per program (or a loop "
                "over blocks in one program), num_warps to match, num_stages ≥ 3 so a loop's loads are pipelined, "
                "and tl.dot for any product."
            )
        ),
    }
    fixes_when = {
        LAUNCH: {
            "cuda": Fix(text="{lever}."),
            "library": _LIBRARY_LAUNCH,
            "pytorch": _LIBRARY_LAUNCH,
        },
        TENSOR: {"cuda": Fix(text="{lever}."), "library": _LIBRARY_TENSOR, "pytorch": _LIBRARY_TENSOR},
        OWN_TAIL: {"cuda": Fix(text="{lever}."), "library": _LIBRARY_OWN_TAIL, "pytorch": _LIBRARY_OWN_TAIL},
        ISSUE: {
            "cuda": Fix(
                text=(
                    "Cut the instructions per needed byte or FLOP: wider loads (float4 / 16-byte vectors), "
                    "index arithmetic hoisted out of the loops, several elements per thread with the loop unrolled, "
                    "fewer branches and shuffles per element."
                )
            ),
            "triton": Fix(
                text=(
                    "Cut the instructions per element: larger BLOCK sizes with fewer warps per program, "
                    "contiguous tl.arange offsets (tl.multiple_of / tl.max_contiguous hints) so loads vectorise, and "
                    "the masks and index math hoisted out of the loop."
                )
            ),
            "pytorch": Fix(
                text=(
                    "An ATen kernel runs its generic per-element code; fewer instructions per byte come from "
                    "fusing it with its neighbours (torch.compile generates one vectorised kernel for the chain) or "
                    "a fused op (F.scaled_dot_product_attention, fused layer norm, foreach/fused optimizers). Where "
                    "the instructions are the op's own algorithm (a random-number generator's integer rounds: "
                    "torch.randn, dropout masks), the kernel will not go faster at this shape: draw fewer values "
                    "(only those used, in the dtype used), or let torch.compile draw them inside the kernel that "
                    "uses them, which saves this kernel's stores and its consumer's loads."
                )
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        if not r.duration_ns or r.duration_ns < t["min_duration_ns"]:
            return None
        side = limiter_side(r)
        # user code at its FMA ceiling without SASS: near the FMA roof, but a product's floor is the tensor roof
        unread_product = (
            unread_fma_ceiling(k) and side == "compute" and r.busy_pct.get(r.limiter or "", 0.0) >= t["min_pipe_pct"]
        )
        if r.headroom is None or (r.headroom < t["min_headroom"] and not unread_product):
            return None
        shares = stall_shares(k)
        top = next(iter(shares.items()), None)
        built: tuple[str, str, str, float, str, list[Evidence]] | None
        # the tensor pipe's floor is the product's, or close enough to the largest work floor (the launch's aside)
        # that the bytes do not hold it
        work_floors = [v for u, v in r.floors.items() if u != "launch"]
        tensor_floor = bool(work_floors) and r.floors.get("tensor", 0.0) >= t["ridge_band"] * max(work_floors)
        if (
            r.limiter == "tensor"
            or (side == "compute" and r.busy_pct.get("tensor", 0.0) >= 40.0)
            or (tensor_floor and side == "latency" and k.language in ("library", "pytorch"))
        ):
            built = self.tensor(k)
        elif side == "launch":
            built = self.launch(k)
        elif side == "memory":
            built = self.memory(k, shares)
        elif (
            side == "compute"
            and r.limiter in ("fma", "fp16")
            and r.busy_pct.get(r.limiter, 0.0) >= t["min_pipe_pct"]
            and fma_stream(k) is None  # with the SASS, TEN001 has judged the stream (an N-body step is no product)
        ):
            built = self.flop_pipe(k)
        elif side == "compute" and own_work_floor(k):
            built = self.own_work(k)
        elif side == "compute":
            built = self.issue(k, shares)
        else:
            built = self.latency(k, top)
        if built is None:
            return None
        situation, category, what, new_ns, model, evidence = built
        lever = self.lever(situation, top)
        f = self.finding(
            title=(
                f"{'Unexplained headroom' if r.headroom >= t['min_headroom'] else 'Near the FMA roof, maybe not the real one'}"
                f" ({r.headroom:.1f}× the floor): {what.split(':')[0]}"
            ),
            message=(
                f"{fmt_ns(r.duration_ns)} against a floor of {fmt_ns(r.theoretical_ns)} ({r.headroom:.2f}×) and no "
                f"specific rule of this set names the cause (a gap in the rule set, not a verdict); the counters "
                f"show {what}."
            ),
            fix=self.fix_for(
                k, [w for w in (situation,) if w in self.fixes_when], head=what.split(":")[0], lever=lever
            ),
            # on the tensor roof the FMA floor no longer holds: a product's estimate is not capped at it
            estimated_speedup=time_after(r.duration_ns, new_ns, None if situation == FLOP_PIPE else r.theoretical_ns),
            speedup_model=model,
            confidence="low",
            evidence=[Evidence("headroom", round(r.headroom, 3), t["min_headroom"], "measured ÷ floor"), *evidence],
        )
        f.category = category
        f.changes_floor = situation == FLOP_PIPE
        return f

    def lever(self, situation: str, top: tuple[str, float] | None) -> str:
        """The toolbox's fix for the mechanism, in a sentence (the per-language texts are in `fixes_when`)."""
        if situation == REUSE:
            return (
                "Reuse each loaded value from fast memory: stage the block's tile (with its halo) in shared memory "
                "once and read it from there, or block in registers (several outputs per thread sharing loads)"
            )
        if situation == REFETCH:
            return (
                "Fetch each byte once: order the blocks so neighbours share cached data (tile the grid, swizzle the "
                "block index), read full 32-byte sectors, and keep the working set of a wave within L2"
            )
        if situation == OWN_TAIL:
            return (
                "Size the grid to whole waves: blocks = SMs × the blocks per SM the occupancy allows "
                "(cudaOccupancyMaxActiveBlocksPerMultiprocessor), each looping over its share of the work"
            )
        if situation == LAUNCH:
            return (
                "Give the GPU more work per launch: fuse the kernel with its neighbour, capture the sequence in a "
                "CUDA graph, or give the grid at least one block per SM"
            )
        if situation == XU:
            return (
                "Execute fewer XU instructions: integer shifts and bit operations in the ALU's forms (LOP3, SHF, "
                "PRMT, IADD3) instead of XU ones (POPC, FLO, BREV, I2F/F2I conversions), conversions hoisted out of "
                "the loops, and transcendentals replaced by FMA polynomials where the accuracy allows"
            )
        if situation == FLOP_PIPE:
            return (
                "If the FMAs compute a matrix product, run it on the tensor cores: cuBLAS/CUTLASS with TF32 "
                "(cublasSetMathMode CUBLAS_TF32_TENSOR_OP_MATH; TF32 keeps FP32's range with a 10-bit mantissa) or "
                "BF16 inputs with FP32 accumulation; profile with --section SourceCounters so the instruction stream "
                "can tell a product from other FMA work"
            )
        if situation == TENSOR:
            return (
                "Fill the last wave (a tile count that is a multiple of the SMs, or a persistent / stream-K "
                "schedule), deepen the K pipeline so the tensor pipe never waits on its operands, and fuse the "
                "epilogue's element-wise work"
            )
        reason = top[0] if top else ""
        return {
            "long_scoreboard": (
                "Put more independent loads in flight: unroll and issue several iterations' loads before their use, "
                "walk several independent chains per thread, or prefetch the next tile (cp.async, double buffering)"
            ),
            "barrier": (
                "Barrier less often or with less work between them: warp-level shuffles instead of block-wide "
                "rounds, double-buffered shared tiles, smaller blocks; where one warp works alone between two "
                "barriers (a scan's look-back, a final reduction), several elements per thread, so that the section "
                "is paid once per more data"
            ),
            "wait": "Interleave independent work: several accumulators or elements per thread (ILP)",
            "short_scoreboard": "Hide shared/MUFU latency with independent work between a load and its use",
            "mio_throttle": "Fewer, wider shared accesses (vector LDS), no bank conflicts, fewer MUFU per element",
            "lg_throttle": "Fewer, wider global accesses: 16-byte vector loads, several elements per thread",
            "membar": "Relax the fences: atomics without ordering where the algorithm allows, fewer __threadfence",
            "branch_resolving": "Make branches uniform per warp, or compute both sides branch-free",
            "no_instruction": "Smaller loop bodies (less unrolling) or fewer divergent paths",
        }.get(reason, "Raise the work in flight per SM: more warps or more independent work per warp")

    # -- the mechanisms ----------------------------------------------------------------------------------------

    def tensor(self, k: KernelContext) -> tuple[str, str, str, float, str, list[Evidence]] | None:
        """A tensor-core product: the pipe's idle share, and the waves of tiles on the SMs."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        busy = r.busy_pct.get("tensor", 0.0)
        sms = k.sm_count
        grid = k.m(LaunchStats.GRID_SIZE) or 0.0
        waves = k.m(LaunchStats.WAVES_PER_SM)
        parts = [f"the tensor pipe busy {busy:.0f}% of the elapsed cycles"]
        evidence = [Evidence("tensor_pipe_busy_pct", round(busy, 1), None, "tensor pipe busy", "%")]
        idle_tail = 0.0
        if waves and sms and grid:
            full = max(1, math.ceil(waves - 1e-9))
            idle_tail = 1.0 - waves / full
            per_sm = grid / (waves * sms) if waves else 0.0
            parts.append(
                f"{grid:.0f} tiles in {waves:.2f} wave{'s' if waves > 1 else ''} on {sms} SMs "
                f"({per_sm:.0f} per SM at a time; {idle_tail:.0%} of the SM slots idle)"
            )
            evidence.append(Evidence(LaunchStats.WAVES_PER_SM, round(waves, 3), None, "waves"))
        if busy <= 0 and not idle_tail:
            return None
        shape = gemm_shape(k)
        if shape is not None:
            parts.append(
                f"M·N ≈ {shape.outputs:,.0f} outputs (at {shape.output_bytes} bytes each) in {grid:.0f} tiles of "
                f"~{shape.tile_outputs:,.0f}, K ≈ {shape.k:,.0f}"
                + (
                    f"; each tile writes {shape.epilogue_ratio:.0%} of the bytes it loads"
                    if shape.epilogue_ratio
                    else ""
                )
            )
            evidence.append(Evidence("gemm_k", round(shape.k), self.thresholds["min_gemm_k"], "K (FLOPs ÷ 2·M·N)"))
        short_k = shape is not None and (
            shape.k < self.thresholds["min_gemm_k"]
            or (shape.epilogue_ratio or 0.0) >= self.thresholds["max_epilogue_ratio"]
        )
        if idle_tail >= self.thresholds["min_tail_idle"]:
            category = "launch-config"
            head = f"M·N off the tile multiple of {sms} SMs (the last wave is partial)" if sms else "wave quantisation"
            new_ns = dur * (1.0 - idle_tail)
            model = (
                f"The last wave filled: the time × {waves:.2f} / {math.ceil((waves or 0.0) - 1e-9)} (the idle SM slots' share "
                "removed); not below the tensor floor at 85% of peak."
            )
        else:
            per_sm_now = grid / (waves * sms) if waves and sms and grid else 0.0
            one = "one tile per SM, " if waves and waves <= 1.0 and per_sm_now <= 1.0 else ""
            category, head = "fusion", f"{one}the tile pipeline's fill and drain not amortised"
            if short_k and shape is not None:
                head = f"{one}K too small to amortise the tile pipeline (K ≈ {shape.k:,.0f})"
            # the pipe at its practical rate for the same work; the rest of the time is fill, drain and epilogue
            new_ns = dur * busy / 100.0 / PRACTICAL_FRACTION if busy else dur
            model = (
                f"At most: the tensor pipe's busy time ({busy:.0f}% of {fmt_ns(dur)}) at 85% of its peak, the "
                "prologue, epilogue and tail hidden; a library kernel reaches it only with a shape that gives each SM "
                "several tiles or a long K."
            )
        what = f"{head}: " + "; ".join(parts)
        return TENSOR, category, what, new_ns, model, evidence

    def launch(self, k: KernelContext) -> tuple[str, str, str, float, str, list[Evidence]] | None:
        """A launch-bound kernel: the launch overhead (short) or a grid that cannot fill the SMs."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        grid = k.m(LaunchStats.GRID_SIZE) or 0.0
        sms = k.sm_count
        launch_ns = r.floors.get("launch", 0.0)
        if dur < LAUNCH_BOUND_NS:
            what = (
                f"launch overhead: {fmt_ns(dur)} per launch, of which {fmt_ns(launch_ns)} is an empty kernel's "
                f"launch on this GPU"
            )
            new_ns = max(dur - launch_ns, 0.0)
            model = (
                "Fused into a neighbour (or replayed in a CUDA graph), the kernel keeps its work and loses its own "
                f"launch ({fmt_ns(launch_ns)})."
            )
            return LAUNCH, "launch-overhead", what, new_ns, model, []
        if grid and sms and grid < sms:
            what = f"an under-filled grid: {grid:.0f} blocks for {sms} SMs, {1 - grid / sms:.0%} of the SMs idle"
            new_ns = parallelism_ns(k, sms / grid) or dur
            model = (
                f"One block per SM ({sms / grid:.1f}× the work in flight): the busiest unit's share of the time stays, "
                "the rest divides by that gain (Little's law, as LCH001); not below the floor."
            )
            return LAUNCH, "launch-config", what, new_ns, model, [Evidence(LaunchStats.GRID_SIZE, grid, sms)]
        return None

    def memory(
        self, k: KernelContext, shares: dict[str, float]
    ) -> tuple[str, str, str, float, str, list[Evidence]] | None:
        """A memory level limits: traffic above the compulsory bytes (reuse, refetch), else latency."""
        r = k.roofline
        unit = r.limiter or "dram"
        # the level's busy time at its peak: its ceiling where the roofline has one, else its Speed Of Light share
        executed = r.ceilings.get(unit) or (r.duration_ns or 0.0) * r.busy_pct.get(unit, 0.0) / 100.0
        needed = r.memory_floor_ns or 0.0
        excess = executed / needed if executed and needed else 0.0
        ev = [
            Evidence("traffic_excess", round(excess, 2), self.thresholds["min_traffic_excess"], f"{unit} ÷ DRAM floor")
        ]
        if excess and excess >= self.thresholds["min_traffic_excess"]:
            if unit in ("l1", "lsu", "shared"):
                changed = frozenset({"l1", "lsu", "shared", "l2", "issue"})
                situation, category = REUSE, "tiling"
                what = (
                    f"missing reuse: {unit.upper() if unit != 'lsu' else 'the load/store pipe'} carries {excess:.1f}× "
                    f"the time the compulsory bytes take from DRAM (each input is read many times through L1)"
                )
                waits: tuple[str, ...] = MEMORY_WAITS + SHARED_WAITS
            else:
                changed = frozenset({"l2", "dram"})
                situation, category = REFETCH, "cache"
                what = f"refetches: {unit.upper()} traffic takes {excess:.1f}× the compulsory bytes' DRAM time"
                waits = MEMORY_WAITS
            kept = kept_units_ns(r, changed) or 0.0
            new_ns = fixed_kernel_ns(k, 0.0, changed, waits)  # the memory levels at the compulsory bytes' time
            model = (
                f"The bytes that reuse removes: the memory levels at the compulsory bytes' time; the units the fix "
                f"leaves alone ({fmt_ns(kept)} at peak) stay; bounded by the stall time of the memory waits it removes."
            )
            return situation, category, what, new_ns, model, ev
        return self.latency(k, next(iter(shares.items()), None))

    def flop_pipe(self, k: KernelContext) -> tuple[str, str, str, float, str, list[Evidence]]:
        """The FMA (or FP16) pipe busy most of the time, far above the floor the report lets the roofline count (a
        report without the instruction counts or the SASS that TEN001 reads): at that pipe's ceiling, the only faster
        unit for a matrix product is the tensor cores."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        unit = r.limiter or "fma"
        busy = r.busy_pct.get(unit, 0.0)
        what = (
            f"the {unit.upper()} pipe at its ceiling: busy {busy:.0f}% of the time; if these FMAs are a matrix "
            "product (the report has no SASS to tell), its floor is the tensor roof (TF32, or BF16 with FP32 "
            "accumulation), else only fewer FLOPs help"
        )
        new_ns = dur * (1.0 - busy / 100.0)
        model = (
            f"As TEN001: the {unit.upper()} pipe's busy time ({busy:.0f}%) moves to the tensor cores, which take a small "
            "part of it; only if the FMAs form a matrix product."
        )
        ev = [Evidence(f"{unit}_pipe_busy_pct", round(busy, 1), self.thresholds["min_pipe_pct"], "pipe busy", "%")]
        return FLOP_PIPE, "tensor-cores", what, new_ns, model, ev

    def own_work(self, k: KernelContext) -> tuple[str, str, str, float, str, list[Evidence]] | None:
        """A kernel whose floor is its own instructions (a library kernel that reads no global memory: the roofline
        counts every instruction it issues as its algorithm's work): no instruction is overhead, so the room is the
        time the issue slots idle; named where the grid's last wave is partial (the SMs idle in it)."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        waves = k.m(LaunchStats.WAVES_PER_SM)
        grid = k.m(LaunchStats.GRID_SIZE) or 0.0
        if not waves or not 1.0 < waves < 4.0:
            return None
        full = math.ceil(waves)
        idle_tail = 1.0 - waves / full
        if idle_tail < self.thresholds["min_tail_idle"]:
            return None
        what = (
            f"a partial last wave: {grid:.0f} blocks run in {waves:.2f} waves on {k.sm_count} SMs, and {idle_tail:.0%} "
            "of the block slots idle in the last one (every instruction the kernel issues is its own algorithm's work, "
            "none overhead)"
        )
        new_ns = dur * waves / full
        model = (
            f"The last wave filled: the time × {waves:.2f} / {full} (the idle block slots' share removed); not below "
            "the floor (the instructions it issues) at 85% of peak."
        )
        return (
            OWN_TAIL,
            "launch-config",
            what,
            new_ns,
            model,
            [Evidence(LaunchStats.WAVES_PER_SM, round(waves, 3), None, "waves")],
        )

    def issue(self, k: KernelContext, shares: dict[str, float]) -> tuple[str, str, str, float, str, list[Evidence]]:
        """An issue/ALU/FMA-limited kernel whose needed work is far below its instructions."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        unit = r.limiter or "issue"
        executed = r.ceilings.get(unit) or dur
        needed = r.theoretical_ns or 0.0
        ratio = executed / needed if needed else 0.0
        issue_pct = k.m(SchedulerStats.ISSUE_ACTIVE_PCT)
        what = (
            f"instruction overhead: {unit.upper() if unit in ('alu', 'fma', 'sfu') else 'instruction issue'} needs "
            f"{ratio:.1f}× the floor's time for the instructions executed"
            + (f" (the schedulers issue on {issue_pct:.0f}% of cycles)" if issue_pct is not None else "")
        )
        if unit == "sfu":  # the XU pipe busy with work the floor does not count: conversions, integer bit operations
            what = (
                f"XU instructions that are not needed work: the SFU (XU) pipe needs {ratio:.1f}× the floor's time for "
                "the instructions it executed, beyond the transcendentals the floor counts"
            )
        changed = frozenset({"issue", "alu", "fma", "fp16", "lsu", "sfu"})
        kept = kept_units_ns(r, changed) or 0.0
        # half of the issue time beyond the needed work removed: time × (1 + 1/ratio) / 2
        halved = dur * (1.0 + 1.0 / max(ratio, 1.0)) / 2.0
        new_ns = fixed_kernel_ns(k, max(needed / PRACTICAL_FRACTION, halved), changed, ISSUE_WAITS)
        model = (
            f"Half the instructions beyond the needed work removed (the {unit} time is {ratio:.1f}× the floor): time "
            f"× (1 + 1/{ratio:.1f}) / 2; the memory side ({fmt_ns(kept)} at peak) stays; bounded by the issue-side "
            "stall time (selected, not selected, dispatch, math throttle, wait)."
        )
        ev = [Evidence("issue_ratio", round(ratio, 2), None, f"{unit} time ÷ floor")]
        return (XU if unit == "sfu" else ISSUE), "instruction-overhead", what, new_ns, model, ev

    def latency(
        self, k: KernelContext, top: tuple[str, float] | None
    ) -> tuple[str, str, str, float, str, list[Evidence]] | None:
        """No unit busy: the dominant stall reason names the wait."""
        r = k.roofline
        dur = r.duration_ns or 0.0
        if top is None or top[1] < self.thresholds["min_stall_share"] or top[0] in ("selected", "not_selected"):
            return None
        reason, share = top
        what = f"{reason.replace('_', ' ')} stalls: {STALL_MECHANISM.get(reason, reason)} ({share:.0%} of warp cycles)"
        # doubling the independent work in flight halves the exposed wait; never more than the wait itself
        new_ns = stall_bounded_ns(k, dur * (1.0 - share / 2.0), (reason,))
        model = (
            f"The {reason.replace('_', ' ')} wait ({share:.0%} of the warps' cycles) halved by twice the independent "
            "work in flight per warp (Little's law); the rest stays; not below the floor."
        )
        ev = [Evidence(stall_metric(reason), round(share, 3), self.thresholds["min_stall_share"], "share of stalls")]
        return LATENCY, STALL_CATEGORY.get(reason, "latency"), what, new_ns, model, ev
