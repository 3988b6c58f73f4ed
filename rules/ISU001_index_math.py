import re

from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    Rule,
    SchedulerStats,
    SourceCounters,
    WarpStateStats,
    fixed_kernel_ns,
    fmt_ns,
    limiter_phrase,
    opcode,
    shared_tree_of,
    stall_shares,
    time_after,
)

# Opcode families (SASS, sm_70 and later). Everything else that executes is bookkeeping: integer and address
# arithmetic (IMAD, LEA, IADD3, SHF, LOP3), compares and selects (ISETP, SEL, VIMNMX), moves and conversions.
MATH = (
    "FFMA",
    "FADD",
    "FMUL",
    "FMNMX",
    "FCHK",
    "HFMA2",
    "HADD2",
    "HMUL2",
    "HMNMX2",
    "HMMA",
    "HGMMA",
    "DFMA",
    "DADD",
    "DMUL",
    "DMNMX",
    "MUFU",
    "IMMA",
    "IDP",
    "QGMMA",
    "IGMMA",
    "BMMA",
)
# ATen's TensorIterator kernels, whose index arithmetic comes from the strides and dtypes of their operands (the
# offset calculators): the one kind of ATen kernel whose bookkeeping a PyTorch program changes, by the layout and
# dtypes it hands the op. ATen's other kernels (embedding backward's segment sums, CUB's sort passes) do their index
# math by design; nothing in the program's code removes it.
TENSOR_ITERATOR = re.compile(
    r"\bat::native::(?:\w+::)*(?:vectorized_|unrolled_|index_)?elementwise_kernel\w*<|\bat::native::(?:\w+::)*reduce_kernel<"
)
MEMORY = ("LD", "ST", "ATOM", "RED", "UTMA", "UBLKCP", "LDGSTS", "LDSM", "STSM", "SULD", "SUST", "TEX", "TLD")
CONTROL = (
    "BRA",
    "EXIT",
    "BAR",
    "BSSY",
    "BSYNC",
    "WARPSYNC",
    "RET",
    "CALL",
    "NOP",
    "YIELD",
    "DEPBAR",
    "MEMBAR",
    "ERRBAR",
    "JMP",
    "BREAK",
    "WARPGROUP",
    "SYNCS",
    "ELECT",
    "VOTE",
    "MATCH",
    "SHFL",
    "REDUX",
    "NANOSLEEP",
)
# the units hoisting the bookkeeping relieves: the issue slots and the pipes that run it (IMAD runs on the FMA pipe,
# conversions such as F2F and I2F on the XU); the L1/load-store traffic, DRAM and L2 keep their work
BOOKKEEPING_UNITS = frozenset({"issue", "alu", "fma", "sfu"})
# the waits of an issue-bound warp, which fewer instructions shorten; the memory waits (long scoreboard, throttles on
# the L1 queues) stay: an L1-bound convolution with clamped taps waits on its loads, not on its bookkeeping
ISSUE_WAITS = ("selected", "not_selected", "dispatch_stall", "math_pipe_throttle", "wait")


def issue_limited(k: KernelContext) -> bool:
    """Instruction issue is the kernel's limiter (or none is named): the one case the words say "issue-bound"."""
    return k.roofline.limiter in (None, "issue")


def family(sass: str) -> str:
    op = opcode(sass).split(".")[0]
    if op.startswith(MATH):
        return "math"
    if op.startswith(MEMORY):
        return "memory"
    if op.startswith(CONTROL):
        return "control"
    return "overhead"


class IndexMath(Rule):
    """Issue slots spent on index and address arithmetic rather than on the kernel's math and memory instructions.

    What it detects:
        A kernel that is not near its roofline bound (headroom at least `min_headroom`), whose schedulers issue an
        instruction in at least `min_issue_pct`% of cycles (`smsp__issue_active`), and whose executed instructions
        (per instruction: `inst_executed`, opcode from the SASS) are at least `min_overhead_share` bookkeeping:
        integer and address arithmetic, compares, clamps, selects and moves, i.e. neither floating-point math, nor
        loads and stores, nor control flow. The instructions of a shared-memory tree (WRP001: a loop with a barrier,
        shared loads and stores and a halving stride) count as executed but not as bookkeeping: their loop control
        and addresses go with the tree, which warp shuffles replace. Among ATen's kernels, only TensorIterator loops (`elementwise_kernel`,
        `vectorized_elementwise_kernel`, `unrolled_elementwise_kernel`, `reduce_kernel`): their index math follows
        the layout and dtypes the program hands the op; other ATen and CUB kernels are left to the rules of what
        calls them (ATM004 for embedding backward's segment sums and sort passes).

    Why it costs time:
        An issue-bound kernel runs as fast as its schedulers can issue instructions. When two thirds of them compute
        indices (`y * w + x` in 64 bits, `min`/`max` clamps at every tap, bounds checks), the memory system and the
        math pipes wait for the bookkeeping: the kernel looks compute-bound on the Speed Of Light chart while its
        FLOP rate is a fraction of the peak.

    Example:
        for (dy...) for (dx...) acc += in[(size_t)min(max(y + dy, 0), h - 1) * w + min(max(x + dx, 0), w - 1)];

    Use instead:
        Hoist the address arithmetic out of the inner loops (advance a pointer by the row pitch), keep indices in
        32-bit `int` where sizes allow, give interior blocks a path without clamps (handle borders separately), and
        compute several outputs per thread so that indices and loaded neighbours are shared (register blocking).
        Triton: bigger BLOCK sizes, masks only where needed (an `EVEN_N: tl.constexpr` fast path), `tl.multiple_of`
        / `tl.max_contiguous` hints. ATen: the index math of non-contiguous or broadcast inputs (TensorIterator's
        offset calculator): make the inputs contiguous once, or let `torch.compile` fuse the op.

    Speedup estimate:
        The time of the fixed kernel. Its issue time: removing half of the bookkeeping instructions gives time × (1 −
        `removable_fraction` × overhead share); half is what hoisting and clamp-free interiors typically remove (a
        clamped 5×5 blur measured 1.35×). No less than what the units the fix leaves alone need as executed (the
        L1/load-store traffic, L2, DRAM: `fixed_kernel_ns` with the issue slots, the ALU, the FMA pipe (IMAD) and the
        XU (conversions) changed) and the compulsory bytes; bounded by the issue stalls it removes (selected, not
        selected, dispatch, pipe throttles, wait: GPA's attribution). A convolution whose warps wait on their L1
        loads gains little from hoisting its index math: the reuse fix (TIL001) removes those loads. Never below the
        practical roofline floor; labelled low confidence. The message names the kernel's limiter, the word its bound
        badge shows: "issue-bound" only where instruction issue is the limiter; a kernel limited by L2, DRAM or L1 is
        told that hoisting saves at most the time that limit leaves (ATen's vectorized elementwise kernels at 66% of
        L2 with 73% of cycles issuing), one limited by the ALU, FMA or XU pipe that the pipe runs the index math.

    False positives:
        Kernels whose work is integer arithmetic (hashing, sorting keys, integer codecs): there the "bookkeeping" is
        the computation. Tensor-core kernels are excluded (their math is few, wide instructions).
    """

    code = "ISU001"
    slug = "index-math"
    category = "instruction-overhead"
    title = "Issue slots spent on index arithmetic"
    languages = ("cuda", "triton", "pytorch")
    requires = (SchedulerStats.ISSUE_ACTIVE_PCT,)
    optional = tuple(WarpStateStats.stall(s) for s in WarpStateStats.STALL_REASONS)  # the issue stalls' share
    # the stall bound refines the estimate; for ATen kernels `profile` leaves the stall reasons out (replay passes):
    # their estimate there is the issue time's, unbounded by the stalls
    optional_languages = ("cuda", "triton")
    per_instruction = (SourceCounters.INST_EXECUTED,)
    thresholds = {
        "min_headroom": 1.6,  # ROOF001's max_headroom: nearer its floor, the kernel is left alone
        "min_issue_pct": 50.0,
        "min_overhead_share": 0.5,
        "coverage": 0.95,
        "removable_fraction": 0.5,
    }
    fixes = {
        "cuda": Fix(
            text=(
                "Hoist the address arithmetic out of the inner loop (advance a pointer by the row pitch), use 32-bit "
                "indices, give interior blocks a path without clamps, and compute several outputs per thread so "
                "that the index math and the loaded neighbours are shared."
            ),
            code=(
                "const float* row = in + (y - R) * w + x - R;          // interior block: no clamps, int indices\n"
                "for (int dy = 0; dy <= 2 * R; ++dy, row += w)\n"
                "  for (int dx = 0; dx <= 2 * R; ++dx) acc += row[dx];"
            ),
        ),
        "triton": Fix(
            text=(
                "Most issued instructions compute offsets and masks: use bigger BLOCK sizes so each program does "
                "more work per offset computation, drop masks in the interior (an EVEN_N constexpr fast path), and "
                "tell the compiler about alignment with tl.multiple_of / tl.max_contiguous."
            ),
            code=(
                "offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
                "offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)\n"
                "x = tl.load(X + offs) if EVEN_N else tl.load(X + offs, mask=offs < n)"
            ),
        ),
        "pytorch": Fix(
            text=(
                "This ATen kernel spends its issue slots on index arithmetic, which TensorIterator needs for "
                "non-contiguous, broadcast or type-promoting inputs: make the inputs contiguous (and of one dtype) "
                "before the op, or let torch.compile fuse it into a kernel with simple indexing."
            ),
            code="y = torch.compile(fn)(x)          # or: x = x.contiguous() once, before the elementwise chain",
        ),
    }

    def sass_when(self, k: KernelContext) -> bool:
        """Far from its floor, issue-bound, no tensor work, and (ATen) a TensorIterator loop: before any SASS."""
        t = self.thresholds
        r = k.roofline
        if r.headroom is None or r.headroom < t["min_headroom"] or not r.duration_ns:
            return False
        if (k.m(SchedulerStats.ISSUE_ACTIVE_PCT) or 0.0) < t["min_issue_pct"]:
            return False
        if any(v for key, v in r.flops_by_precision.items() if key.startswith("tensor")):
            return False
        # an ATen kernel that is not a TensorIterator loop: its index math is not the program's
        return k.language != "pytorch" or bool(TENSOR_ITERATOR.search(k.kernel.demangled or k.kernel.name))

    def check(self, k: KernelContext) -> Finding | None:
        if not self.sass_when(k):
            return None
        t = self.thresholds
        r = k.roofline
        duration_ns, headroom = r.duration_ns, r.headroom
        if duration_ns is None or headroom is None:  # never: `sass_when` admits only kernels with both
            return None
        issue = k.m(SchedulerStats.ISSUE_ACTIVE_PCT) or 0.0
        entries = sorted(k.per_instruction(SourceCounters.INST_EXECUTED), key=lambda e: -e.value)
        total = sum(e.value for e in entries)
        if total <= 0:
            return None
        tree = shared_tree_of([(e.pc, e.value, e.sass or "") for e in entries]).pcs  # WRP001's mechanism
        counts = {"math": 0.0, "memory": 0.0, "control": 0.0, "overhead": 0.0, "tree": 0.0}
        seen = 0.0
        overhead_pcs = set()
        for e in entries:  # the instructions that make up `coverage` of the executed ones (their SASS is read)
            if seen >= t["coverage"] * total:
                break
            fam = "tree" if e.pc in tree else family(e.sass or "")
            counts[fam] += e.value
            seen += e.value
            if fam == "overhead":
                overhead_pcs.add(e.pc)
        share = counts["overhead"] / seen if seen else 0.0
        if share < t["min_overhead_share"]:
            return None
        cut = t["removable_fraction"] * share
        issue_ns = duration_ns * (1.0 - cut)
        new_ns = fixed_kernel_ns(k, issue_ns, BOOKKEEPING_UNITS, ISSUE_WAITS)
        lines = k.top_lines(SourceCounters.INST_EXECUTED, limit=2, min_share=0.02, pcs=overhead_pcs)
        return self.finding(
            title=f"{share:.0%} of issued instructions are index arithmetic",
            message=(
                f"The schedulers issue in {issue:.0f}% of cycles, and {share:.0%} of the executed instructions "
                f"are integer/address bookkeeping (floating-point math {counts['math'] / seen:.0%}, loads and "
                f"stores {counts['memory'] / seen:.0%}): {self._bound_words(k)}, "
                f"{headroom:.1f}× above its roofline floor."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(duration_ns, new_ns, r.theoretical_ns),
            speedup_model=self._model(k, share, cut, issue_ns, new_ns),
            confidence="low",
            evidence=[
                Evidence("overhead_instruction_share", round(share, 3), t["min_overhead_share"]),
                Evidence("issue_active_pct", round(issue, 1), t["min_issue_pct"], "issue slots busy", "%"),
                Evidence("headroom", round(headroom, 2), t["min_headroom"]),
            ],
            source=lines,
        )

    @staticmethod
    def _bound_words(k: KernelContext) -> str:
        """What holds the kernel, in the limiter's word (the one the bound badge shows): issue-bound on index math
        only where instruction issue is the limiter; else the limiter, and what that leaves to the index math."""
        r = k.roofline
        unit = r.limiter
        if issue_limited(k):
            return "the kernel is issue-bound on index math"
        if unit in BOOKKEEPING_UNITS:
            return f"the kernel is {limiter_phrase(r)}, the pipe that runs that index math"
        if unit in r.busy_pct:
            return (
                f"the kernel is {limiter_phrase(r)} ({r.busy_pct[unit]:.0f}% busy), so hoisting the index math "
                "saves at most the time that limit leaves"
            )
        return f"the kernel is {limiter_phrase(r)}, and the index math lengthens every warp's path"

    def _model(self, k: KernelContext, share: float, cut: float, issue_ns: float, new_ns: float) -> str:
        """The speedup model in words, and what holds the fixed kernel above its issue time when something does."""
        r = k.roofline
        lead = (
            "Issue-bound: time follows the instructions issued"
            if issue_limited(k)
            else f"The issue time follows the instructions issued (the kernel is {limiter_phrase(r)})"
        )
        said = (
            f"{lead}; removing {self.thresholds['removable_fraction']:.0%} "
            f"of the bookkeeping ones ({share:.0%} of those executed) cuts the time by {cut:.0%}"
        )
        if new_ns <= issue_ns * 1.001:
            return said + " (the units it leaves alone need less; its issue stalls allow it), not below the floor."
        kept = {u: v for u, v in r.ceilings.items() if u not in BOOKKEEPING_UNITS and u != "launch"}
        unit = max(kept, key=lambda u: kept[u]) if kept else None
        waits = sum(stall_shares(k).get(s, 0.0) for s in ISSUE_WAITS)
        if unit and kept[unit] >= new_ns * 0.999:
            held = f"the work it leaves alone: {unit} needs {fmt_ns(kept[unit])} as executed"
        elif r.duration_ns and r.duration_ns * (1.0 - waits) >= new_ns * 0.999:
            held = f"the issue stalls it removes ({waits:.0%} of the warps' cycles: {', '.join(w.replace('_', ' ') for w in ISSUE_WAITS)})"
        else:
            held = "the compulsory bytes at 85% of DRAM's peak"
        return f"{said}, held at {fmt_ns(new_ns)} by {held}."
