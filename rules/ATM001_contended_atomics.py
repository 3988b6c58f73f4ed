from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryTables,
    Rule,
    SourceCounters,
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
        85% of peak.

    False positives:
        Atomics on distinct addresses (scatter-add with few collisions) cost little more than stores; the kernel is
        then near its floor and the rule stays silent.
    """

    code = "ATM001"
    slug = "contended-atomics"
    category = "atomics"
    title = "Contended global atomics"
    requires = (MemoryTables.GLOBAL_LOAD_REQUESTS,)
    optional = (MemoryTables.GLOBAL_ATOMIC_REQUESTS, MemoryTables.GLOBAL_REDUCTION_REQUESTS)
    per_instruction = (SourceCounters.INST_EXECUTED, SourceCounters.MEMORY_TYPE)
    thresholds = {"min_atomic_ratio": 0.1, "min_headroom": 3.0}
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
