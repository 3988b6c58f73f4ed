from dataclasses import replace

from ncuadvisor.rulekit import Evidence, Finding, Fix, InstructionStats, KernelContext, MemoryTables, Rule, aten_op


class SharedMemoryHistogram(Rule):
    """An ATen histogram (`torch.bincount`, `torch.histc`) that already aggregates its updates per block in shared
    memory and is slow on its shared-memory atomics: a verdict, with what PyTorch can and cannot do about it.

    What it detects:
        An ATen kernel, at least `min_headroom` × its roofline floor, not launch-bound and not DRAM-bound, whose
        updates are aggregated per block: it executes at least `min_shared_atomics_per_load` shared-memory atomic
        instructions (`ATOMS`, `smsp__inst_executed_op_shared_atom.sum`) per global load request; or, where the report
        lacks that counter, its global atomic/reduction requests are between `min_global_per_load` and ATM002's
        `min_atomic_ratio` per global load (a flush of every bin once per block: `kernelHistogram1D` issued 0.04-0.06
        on an H200; ATen's reductions, one semaphore atomic per block, 0.004-0.016).

    Why it costs time:
        Every input element is one atomic add on one of a few bins in shared memory. The lanes of a warp that hit the
        same bin serialize in the atomic unit, and with tens of bins most of them do: the kernel waits on its
        shared-memory atomics while DRAM stays mostly idle. The global atomics are already few (ATM002 does not
        apply).

    Example:
        counts = torch.bincount(ints, minlength=64)      # 4,194,304 int64 values in [0, 64)
        hist = torch.histc(xs, bins=100, min=0.0, max=1.0)

    Use instead:
        Nothing in PyTorch counts faster at these sizes: a sort-based count (`torch.sort` + `torch.searchsorted` or
        `unique_consecutive`) makes several passes over the input, and a one-hot sum writes bins × the input.
        Fewer updates are what helps: count once for every consumer, or a subsample where an estimate will do.
        `torch.bincount` first reduces its input twice (min, max) and waits on the host for both to size its output
        (29 µs of reductions beside a 39 µs histogram on an H200, fixtures/scatter-ops-2026-12-01); with the range
        known, `torch.histc(x.float(), bins=n, min=0, max=n)` does neither, at the cost of a cast. Under
        `torch.use_deterministic_algorithms(True)`, `torch.histc` on CUDA and `torch.bincount` with weights raise an
        error: there is no deterministic path to fall back to.

    Speedup estimate:
        None claimed: the rewrites PyTorch offers move more data than the histogram does.

    False positives:
        A kernel that aggregates per block for another reason (a block-level partial sum flushed with atomics) and is
        slow for a reason of its own: the message names the counters it read, and the other rules still run.
    """

    code = "ATM003"
    slug = "shared-memory-histogram"
    category = "atomics"
    title = "Histogram on shared-memory atomics"
    requires = (MemoryTables.GLOBAL_LOAD_REQUESTS,)
    optional = (
        MemoryTables.GLOBAL_ATOMIC_REQUESTS,
        MemoryTables.GLOBAL_REDUCTION_REQUESTS,
        InstructionStats.SHARED_ATOMIC_INSTRUCTIONS,
    )
    thresholds = {
        "min_headroom": 3.0,
        "min_shared_atomics_per_load": 0.5,
        "min_global_per_load": 0.02,
        "max_global_per_load": 0.1,  # ATM002's min_atomic_ratio: above it the global atomics are the problem
    }
    languages = ("pytorch",)
    fixes = {
        "pytorch": Fix(
            text=(
                "Keep {op}: its updates are already aggregated per block in shared memory, and no PyTorch op counts "
                "faster at this size (a sort makes several passes over the input, a one-hot sum writes bins × the "
                "input). Fewer updates are what helps: count once for every consumer, or a subsample where an "
                "estimate will do. torch.bincount also reduces its input twice (min, max) and waits on the host for "
                "both before this kernel; with the range known, torch.histc(x.float(), bins=n, min=0, max=n) does "
                "neither. Under torch.use_deterministic_algorithms(True), torch.histc on CUDA and torch.bincount "
                "with weights raise an error."
            ),
            code="counts = torch.histc(x.float(), bins=n, min=0, max=n)  # bincount without its min/max passes",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        loads = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0
        if loads <= 0:
            return None
        glob = (k.m(MemoryTables.GLOBAL_ATOMIC_REQUESTS) or 0) + (k.m(MemoryTables.GLOBAL_REDUCTION_REQUESTS) or 0)
        if glob <= 0 or glob >= t["max_global_per_load"] * loads:
            return None  # no bins flushed to global memory; or contended global atomics, ATM002's case
        shared = k.m(InstructionStats.SHARED_ATOMIC_INSTRUCTIONS)
        if shared is not None:
            if shared < t["min_shared_atomics_per_load"] * loads:
                return None
        elif glob < t["min_global_per_load"] * loads:
            return None
        if r.headroom is None or r.headroom < t["min_headroom"] or r.bound == "launch" or r.limiter == "dram":
            return None
        op = aten_op(k.kernel.demangled, "this ATen kernel")
        counted = f", {shared / loads:.1f} shared-memory atomic instructions per load" if shared is not None else ""
        dram = (
            f" with DRAM at {r.achieved_dram_bytes_per_s / r.peak_dram_bytes_per_s:.0%} of its peak"
            if r.achieved_dram_bytes_per_s is not None and r.peak_dram_bytes_per_s
            else ""
        )
        goes = (
            "its time goes to the shared-memory atomics"
            if shared is not None
            else "its time most likely goes to the shared-memory atomics (this report does not count them)"
        )
        evidence = [
            Evidence("global_atomics_per_load", round(glob / loads, 3), t["max_global_per_load"]),
            Evidence("headroom", round(r.headroom, 1), t["min_headroom"]),
        ]
        if shared is not None:
            evidence.append(
                Evidence("shared_atomics_per_load", round(shared / loads, 2), t["min_shared_atomics_per_load"])
            )
        found = self.finding(
            title=f"Histogram in {op} on shared-memory atomics: already aggregated per block, keep it",
            message=(
                f"{op} flushes its bins to global memory once per block ({glob / loads:.2f} global atomic requests "
                f"per load{counted}) and runs at {r.headroom:.1f}× its roofline floor{dram}: {goes}, where the lanes "
                "of a warp that hit the same bin serialize. No PyTorch rewrite moves less data."
            ),
            fix=self.fix_for(k, op=op),
            estimated_speedup=0.0,
            speedup_model="No saving claimed: the rewrites PyTorch offers (sort, one-hot sum) move more data.",
            confidence="medium" if shared is not None else "low",
            evidence=evidence,
        )
        # a verdict, like "near its roofline": what is slow here has no cheaper PyTorch form
        return replace(found, category="at-roofline")
