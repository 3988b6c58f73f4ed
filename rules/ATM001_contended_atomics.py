from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryTables,
    Rule,
    SourceCounters,
    SpeedOfLight,
    atomic_lines,
    count,
    global_loads_in_flight,
    predict,
    streaming_ns,
    time_after,
)


class ContendedAtomics(Rule):
    """Global atomics serialize in L2: many threads update the same few addresses.

    What it detects:
        Global atomic/reduction requests (`l1tex__t_requests_pipe_lsu_mem_global_op_atom/red.sum`) at least
        `min_atomic_ratio` of the global load requests, in a kernel at least `min_headroom` × its roofline floor.
        Weakest evidence (ncu's basic set, which has no request counts): the L2 slices' atomic units busy at least
        `min_atomic_input_pct` of the time on average, the busiest slice at least `min_slice_concentration` × the
        mean (the atomics land on a few addresses, so on a few slices), and no unit of the kernel above
        `max_busiest_pct` of its peak (nothing else holds it); the finding is then low confidence, and the
        MemoryWorkloadAnalysis_Tables section (atomic requests per load) would confirm it.

    Why it costs time:
        Every atomic to one address is executed one after the other by its L2 slice. A histogram of 64M values into
        a few hot bins turns a bandwidth-bound pass into millions of serialized read-modify-writes; warps stall on
        the returning atomics (long scoreboard, drain).

    Example:
        atomicAdd(&bins[data[i] & 255], 1);       // every thread, global memory

    Use instead:
        Pre-reduce before touching global memory: a per-block histogram in shared memory (`__shared__ unsigned
        s_bins[256]`, `atomicAdd` there, one global atomic per bin per block), or a warp-level reduction
        (`__reduce_add_sync`, `__match_any_sync` to aggregate equal keys) so one lane updates for the warp.

    Speedup estimate:
        With the atomics pre-reduced the kernel streams its input with the loads it has in flight now: new time =
        read bytes per SM × DRAM latency ÷ (warps × loads in flight per warp × 32 × access bytes) + the roofline
        floor (latency plus throughput, `DRAM_LATENCY_CYCLES` in ncuadvisor/rulekit/models.py), not below the floor at
        85% of peak. On the weakest evidence (no requests, no SASS): the kernel after the fix is held by its busiest
        memory level as it is busy now (`memory_pct` of Speed Of Light): new time = time × that share.

    False positives:
        Atomics on distinct addresses (scatter-add with few collisions) cost little more than stores; the kernel is
        then near its floor and the rule stays silent.
    """

    code = "ATM001"
    slug = "contended-atomics"
    category = "atomics"
    title = "Contended global atomics"
    requires = (MemoryTables.GLOBAL_LOAD_REQUESTS,)
    optional = (
        MemoryTables.GLOBAL_ATOMIC_REQUESTS,
        MemoryTables.GLOBAL_REDUCTION_REQUESTS,
        SpeedOfLight.L2_ATOMIC_INPUT_MAX_PCT,
    )
    weak_evidence = (SpeedOfLight.L2_ATOMIC_INPUT_PCT,)
    per_instruction = (SourceCounters.INST_EXECUTED, SourceCounters.MEMORY_TYPE)
    thresholds = {
        "min_atomic_ratio": 0.1,
        "min_headroom": 3.0,
        "min_atomic_input_pct": 0.1,
        "min_slice_concentration": 4.0,
        "max_busiest_pct": 60.0,
    }
    fixes = {
        "cuda": Fix(
            text=(
                "Pre-reduce the updates: keep a per-block copy in shared memory, update it with shared-memory "
                "atomics, and add it to global memory once per block (or aggregate equal keys within a warp)."
            ),
            code=(
                "__shared__ unsigned s_bins[256];\n"
                "for (int b = threadIdx.x; b < 256; b += blockDim.x) s_bins[b] = 0;\n__syncthreads();\n"
                "for (size_t i = tid; i < n; i += stride) atomicAdd(&s_bins[data[i] & 255], 1u);\n"
                "__syncthreads();\n"
                "for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], s_bins[b]);"
            ),
        ),
        "triton": Fix(
            text=(
                "Reduce inside the program before `tl.atomic_add`: accumulate the block's contribution with "
                "`tl.sum`/`tl.histogram` and issue one atomic per bin per program."
            ),
            code="counts = tl.histogram(vals, NUM_BINS)\ntl.atomic_add(bins_ptr + tl.arange(0, NUM_BINS), counts)",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak:
            return self._from_l2_slices(k)
        r = k.roofline
        atom = (k.m(MemoryTables.GLOBAL_ATOMIC_REQUESTS) or 0) + (k.m(MemoryTables.GLOBAL_REDUCTION_REQUESTS) or 0)
        loads = k.m(MemoryTables.GLOBAL_LOAD_REQUESTS) or 0
        if atom <= 0 or atom < self.thresholds["min_atomic_ratio"] * max(loads, 1):
            return None
        if r.headroom is None or r.headroom < self.thresholds["min_headroom"]:
            return None
        lines = atomic_lines(k)
        loads_in_flight, inflight = global_loads_in_flight(k)
        new_ns = streaming_ns(k, inflight) or 0.0
        return self.finding(
            title=f"Contended global atomics: {atom:,.0f} atomic requests, {r.headroom:.0f}× the floor",
            message=(
                f"The kernel issues {atom:,.0f} global atomic requests ({atom / max(loads, 1):.1f} per load) and "
                f"runs at {r.headroom:.0f}× its roofline floor: the atomics serialize on a few addresses."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"With the updates pre-reduced, the kernel streams its input with {count(loads_in_flight, 'load')} "
                "in flight per warp: latency + throughput of its compulsory bytes"
                + (f" ({new_ns / 1e3:.1f} µs)" if new_ns else "")
                + ", not below the roofline floor at "
                "85% of peak."
            ),
            confidence="medium",
            # pre-reduced per block, the global atomics fall to a few per block (the rule is silent below its ratio)
            predicts=[
                predict("global_atomics_per_load", atom / max(loads, 1), None, self.thresholds["min_atomic_ratio"])
            ],
            evidence=[
                Evidence("atomic_requests", atom, None, "global atom + red requests"),
                Evidence("atomic_per_load", round(atom / max(loads, 1), 3), self.thresholds["min_atomic_ratio"]),
                Evidence("headroom", round(r.headroom, 1), self.thresholds["min_headroom"]),
            ],
            source=lines,
        )

    def _from_l2_slices(self, k: KernelContext) -> Finding | None:
        """The weakest evidence (no request counts): the L2 atomic units' busy share, its concentration on a few
        slices, and a kernel whose units are all far from their peaks."""
        t, r = self.thresholds, k.roofline
        mean = k.m(SpeedOfLight.L2_ATOMIC_INPUT_PCT) or 0.0
        busiest_slice = k.m(SpeedOfLight.L2_ATOMIC_INPUT_MAX_PCT)
        if mean < t["min_atomic_input_pct"] or busiest_slice is None:
            return None
        concentration = busiest_slice / mean
        busiest = max(r.sol.get("memory_pct") or 0.0, r.sol.get("compute_pct") or 0.0)
        if concentration < t["min_slice_concentration"] or busiest >= t["max_busiest_pct"]:
            return None
        memory_pct = r.sol.get("memory_pct") or 0.0
        new_ns = (r.duration_ns or 0) * memory_pct / 100
        return self.finding(
            title=f"Global atomics on a few addresses: the busiest L2 slice takes {concentration:.0f}× the mean",
            message=(
                f"The L2 slices' atomic units are busy {mean:.2g}% of the time on average and {busiest_slice:.2g}% on "
                f"the busiest slice ({concentration:.0f}× the mean): the atomics land on a few addresses and "
                f"serialize there, while no unit of the kernel is busier than {busiest:.0f}% of its peak."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"With the updates pre-reduced, the kernel is held by its busiest memory level as it is busy now "
                f"({memory_pct:.0f}% of the time): at most {1 - memory_pct / 100:.0%} saved."
            ),
            evidence=[
                Evidence(
                    SpeedOfLight.L2_ATOMIC_INPUT_PCT, round(mean, 3), t["min_atomic_input_pct"], "L2 atomic units", "%"
                ),
                Evidence(SpeedOfLight.L2_ATOMIC_INPUT_MAX_PCT, round(busiest_slice, 3), None, "busiest slice", "%"),
                Evidence("slice_concentration", round(concentration, 1), t["min_slice_concentration"]),
                Evidence("busiest_unit_pct", round(busiest, 1), t["max_busiest_pct"], "busiest unit (at most)", "%"),
            ],
        )
