from dataclasses import replace

from ncuadvisor.rulekit import (
    PRACTICAL_FRACTION,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryTables,
    Rule,
    SourceCounters,
    aten_op,
    atomic_lines,
    compulsory_ns,
    fmt_bytes,
    fmt_ns,
    time_after,
)

# a sorted segment reduce moves the source three times: read to gather it in index order, the gathered copy written,
# and read again by the reduce
SORTED_PASSES = 3


class AtenScatterAtomics(Rule):
    """An ATen scatter (`index_add_`, `scatter_add_`, `index_put_(accumulate=True)`, embedding backward, `bincount`)
    whose global atomics serialize, with the cost of the PyTorch rewrite that removes them.

    What it detects:
        An ATen kernel whose global atomic/reduction requests (`l1tex__t_requests_pipe_lsu_mem_global_op_atom/red`,
        `RED`/`ATOM` in the SASS) are at least `min_atomic_ratio` of its global load requests, at least
        `min_headroom` × its roofline floor, and not launch-bound.

    Why it costs time:
        Each update is a read-modify-write in L2, and updates to one address execute one after the other: with many
        source rows per destination row (few bins, many updates) the kernel runs at the L2's atomic rate, not at
        DRAM bandwidth.

    Example:
        out.index_add_(0, idx, src)          # 65,536 rows of src into 1,024 rows of out: 64 updates per element

    Use instead:
        Sort the indices and reduce segments (`torch.sort(idx)`, `src[perm]`, `torch.segment_reduce(..., "sum",
        lengths=torch.bincount(idx))`), or `scatter_reduce`; pre-aggregate where the data is produced (sum the rows
        that share an index before the scatter); with few bins (tens), a one-hot matmul on tensor cores:
        `out += F.one_hot(idx, bins).to(src.dtype).T @ src`. `torch.use_deterministic_algorithms(True)` replaces
        the atomics by a sort-based path (or raises where there is none): it costs what the sorted rewrite costs.

    Speedup estimate:
        The sorted rewrite moves the source `SORTED_PASSES` (3) times and sorts the indices: new time = 3 ×
        compulsory bytes at 85% of DRAM bandwidth + `sort_overhead_us` (ATen's radix sort, searchsorted and offsets
        of 65,536 int64 indices: 94 µs of kernels on an H200, fixtures/torch_scatter). When that is not at least
        `min_saving` below the kernel's time the rule says so and claims nothing: on an H200 the sorted twin of a
        64-updates-per-element `index_add_` took 251 µs against 137 µs for the atomics.

    False positives:
        Scatters onto distinct addresses (few collisions) run near their floor: the rule stays silent. The sort
        cost is a constant measured at one size; a much larger index makes the sort dearer still.
    """

    code = "ATM002"
    slug = "aten-scatter-atomics"
    category = "atomics"
    title = "Contended atomics in an ATen scatter"
    requires = (MemoryTables.GLOBAL_LOAD_REQUESTS,)
    optional = (MemoryTables.GLOBAL_ATOMIC_REQUESTS, MemoryTables.GLOBAL_REDUCTION_REQUESTS)
    per_instruction = (SourceCounters.INST_EXECUTED, SourceCounters.MEMORY_TYPE)
    lines_only = True  # the atomics' source lines (`atomic_lines`); the counts above decide
    thresholds = {"min_atomic_ratio": 0.1, "min_headroom": 3.0, "sort_overhead_us": 60.0, "min_saving": 0.1}
    languages = ("pytorch",)
    fixes = {
        "pytorch": Fix(
            text=(
                "{op} serializes on its atomics: sort the indices and reduce segments (torch.sort, then "
                "torch.segment_reduce over torch.bincount lengths), or pre-aggregate the rows that share an index "
                "before the scatter."
            ),
            code=(
                "idx_sorted, perm = torch.sort(idx)\n"
                "lengths = torch.bincount(idx_sorted, minlength=out.shape[0])\n"
                "out += torch.segment_reduce(src[perm], 'sum', lengths=lengths, unsafe=True)"
            ),
        ),
    }
    fixes_when = {
        "keep": {
            "pytorch": Fix(
                text=(
                    "Keep {op} at this size: a sort + segment reduce would cost about {alt} against {now} now. Fewer "
                    "updates are what helps: pre-aggregate the rows that share an index where they are produced; "
                    "with few bins (tens), a one-hot matmul on tensor cores. torch.use_deterministic_algorithms(True) "
                    "swaps these atomics for a sort-based path at about that cost."
                ),
                code="out += torch.nn.functional.one_hot(idx, num_bins).to(src.dtype).T @ src   # few bins only",
            ),
        },
    }

    def sass_when(self, k: KernelContext) -> bool:
        """Atomics at least `min_atomic_ratio` of the loads, far from the floor, not launch-bound: before any SASS."""
        r = k.roofline
        t = self.thresholds
        atom = (k.m(MemoryTables.GLOBAL_ATOMIC_REQUESTS) or 0) + (k.m(MemoryTables.GLOBAL_REDUCTION_REQUESTS) or 0)
        loads = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0
        if atom <= 0 or atom < t["min_atomic_ratio"] * max(loads, 1):
            return False
        if r.headroom is None or r.headroom < t["min_headroom"] or not r.duration_ns or r.bound == "launch":
            return False  # a launch-bound kernel (a sort's histogram pass) loses its time to launching, not atomics
        return bool(r.compulsory_bytes and r.peak_dram_bytes_per_s)

    def check(self, k: KernelContext) -> Finding | None:
        if not self.sass_when(k):
            return None
        r = k.roofline
        t = self.thresholds
        duration_ns, headroom = r.duration_ns, r.headroom
        compulsory, peak = r.compulsory_bytes, r.peak_dram_bytes_per_s
        if duration_ns is None or headroom is None or compulsory is None or peak is None:
            return None  # never: `sass_when` admits only kernels with all four
        atom = (k.m(MemoryTables.GLOBAL_ATOMIC_REQUESTS) or 0) + (k.m(MemoryTables.GLOBAL_REDUCTION_REQUESTS) or 0)
        loads = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0
        op = aten_op(k.kernel.demangled)
        stream_ns = compulsory_ns(r) or 0.0  # `sass_when` admitted it with compulsory bytes and a DRAM peak
        alt_ns = SORTED_PASSES * stream_ns + t["sort_overhead_us"] * 1e3
        saving = time_after(duration_ns, alt_ns, None)
        lines = atomic_lines(k)
        model = (
            f"Sorted rewrite: {SORTED_PASSES} passes over {fmt_bytes(r.compulsory_bytes)} at "
            f"{PRACTICAL_FRACTION:.0%} of DRAM bandwidth ({fmt_ns(SORTED_PASSES * stream_ns)}) + the index sort "
            f"({t['sort_overhead_us']:.0f} µs) = {fmt_ns(alt_ns)}."
        )
        evidence = [
            Evidence("atomic_requests", atom, None, "global atom + red requests"),
            Evidence("atomic_per_load", round(atom / max(loads, 1), 3), t["min_atomic_ratio"]),
            Evidence("headroom", round(headroom, 1), t["min_headroom"]),
            Evidence("sorted_rewrite_ns", round(alt_ns), round(duration_ns), "sorted rewrite vs now (ns)"),
        ]
        message = (
            f"{op} issues {atom:,.0f} global atomic requests ({atom / max(loads, 1):.1f} per load) and runs at "
            f"{r.headroom:.1f}× its roofline floor: updates to the same elements serialize in L2."
        )
        if saving < t["min_saving"]:
            keep = self.finding(
                title=f"Contended atomics in {op}: a sorted rewrite would cost more here, keep it",
                message=message
                + f" Removing them by sorting takes about {fmt_ns(alt_ns)} against {fmt_ns(r.duration_ns)} now: no "
                "saving worth the change.",
                fix=self.fix_for(k, "keep", op=op, alt=fmt_ns(alt_ns), now=fmt_ns(r.duration_ns)),
                estimated_speedup=0.0,
                speedup_model=model + " No saving claimed: the rewrite is not cheaper than the atomics.",
                confidence="medium",
                evidence=evidence,
                source=lines,
            )
            # a verdict, like "near its roofline": the known rewrite does not pay at this size
            return replace(keep, category="at-roofline")
        return self.finding(
            title=f"Contended atomics in {op}: {atom:,.0f} atomic requests, {r.headroom:.0f}× the floor",
            message=message,
            fix=self.fix_for(k, op=op),
            estimated_speedup=saving,
            speedup_model=model,
            confidence="low",
            evidence=evidence,
            source=lines,
        )
