from ncuadvisor.analysis.perfmodels import global_loads_in_flight, streaming_ns, time_after
from ncuadvisor.metrics import SourceCounters
from ncuadvisor.rules_api import Evidence, Finding, Fix, KernelContext, Rule


class UncoalescedGlobal(Rule):
    """Global loads or stores touch many more 32-byte sectors than the threads need (uncoalesced access).

    What it detects:
        The share of global-memory L2 sectors that are excessive: `derived__memory_l2_theoretical_sectors_global_excessive`
        over `memory_l2_theoretical_sectors_global` (Memory Workload Analysis tables, Source Counters), with the
        source lines that cause it.

    Why it costs time:
        A warp whose 32 threads read 32 consecutive floats needs four 32-byte sectors; with a stride of 32 floats it
        needs 32 sectors and uses 4 bytes of each: up to 8× the traffic for 4-byte accesses (32× for single bytes),
        through L1, L2 and often DRAM.

    Example:
        out[i] = in[(i % rows) * cols + i / rows];   // consecutive threads walk down a column

    Use instead:
        Make threadIdx.x the fastest-moving index of every global access. For a transpose or column walk, stage a
        tile through shared memory: read rows coalesced into `__shared__ float tile[32][33]`, then write the
        transposed tile out row by row.

    Speedup estimate:
        The larger of two lower bounds on the new time: the time scaled by the sectors moved (time × ideal / actual
        sectors; half that effect for a compute-bound kernel), and, for a memory- or latency-bound kernel, the
        latency-plus-throughput time of its compulsory bytes with the same loads in flight, now coalesced (read
        bytes per SM × DRAM latency ÷ (warps × loads in flight per warp × 32 × access bytes) + the roofline floor;
        `DRAM_LATENCY_CYCLES` in ncuadvisor/analysis/perfmodels.py). Never below the roofline floor.

    False positives:
        Gathers through an index array (embedding lookups, sparse matrices) are uncoalesced by nature; sort or
        bucket the indices, or accept it.
    """

    code = "MEM001"
    slug = "uncoalesced-global"
    category = "coalescing"
    title = "Uncoalesced global memory access"
    requires = (SourceCounters.L2_SECTORS_GLOBAL, SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE)
    optional = (SourceCounters.L2_SECTORS_GLOBAL_IDEAL,)
    per_instruction = (SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,)
    thresholds = {"min_excess_fraction": 0.3}
    # {kind}: "loads" or "stores", the kind of the instruction with the most excess sectors
    fixes = {
        "cuda": Fix(
            text=(
                "Global {kind} at the lines below are uncoalesced: consecutive threads (threadIdx.x) must touch "
                "consecutive addresses. For a column walk or transpose, stage a 32×32 tile through shared memory "
                "(padded to 33 columns to avoid bank conflicts) and read/write global memory row by row."
            ),
            code=(
                "__shared__ float tile[32][33];\n"
                "tile[threadIdx.y][threadIdx.x] = in[(by * 32 + threadIdx.y) * n + bx * 32 + threadIdx.x];\n"
                "__syncthreads();\n"
                "out[(bx * 32 + threadIdx.y) * n + by * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];"
            ),
        ),
        "triton": Fix(
            text=(
                "The {kind} of this Triton kernel are strided: make the contiguous (stride-1) dimension the last "
                "axis of the offsets, e.g. `offs = rows[:, None] * stride_row + cols[None, :]`, and load 2-D tiles "
                "with `tl.make_block_ptr(..., order=(1, 0))`; for a transpose, load the tile coalesced and "
                "`tl.trans` it in registers."
            ),
            code="ptrs = base + rows[:, None] * stride_row + cols[None, :]  # cols: the stride-1 axis",
        ),
    }

    def check(self, k: KernelContext) -> Finding | None:
        total = k.m(SourceCounters.L2_SECTORS_GLOBAL) or 0.0
        excess = k.m(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE) or 0.0
        if total <= 0:
            return None
        frac = excess / total
        if frac < self.thresholds["min_excess_fraction"]:
            return None
        r = k.roofline
        weight = 0.5 if r.bound == "compute" else 1.0
        sector_ns = (r.duration_ns or 0) * (1 - weight * frac)
        # Coalescing keeps the loads and their count: each now brings 32 lanes × its width of useful bytes.
        loads, inflight = global_loads_in_flight(k)
        stream_ns = streaming_ns(k, inflight) if r.bound in ("memory", "latency") else None
        new_ns = max(sector_ns, stream_ns or 0.0)
        lines = k.top_lines(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE)
        stores = any((ln.sass or "").startswith(("STG", "ST.")) for ln in lines[:1])
        kind = "stores" if stores else "loads"
        return self.finding(
            title=f"Uncoalesced global {kind}: {frac:.0%} of sectors wasted",
            message=(
                f"{frac:.0%} of the global-memory sectors this kernel moves are not needed by its threads "
                f"({excess:,.0f} of {total:,.0f}); the memory system carries {1 / max(1e-9, 1 - frac):.1f}× the "
                "useful traffic."
            ),
            fix=self.fix_for(k, kind=kind),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                f"Time scales with sectors moved: × (1 - {weight:g} × {frac:.2f}) for a {r.bound}-bound kernel"
                + (
                    f", but no faster than its compulsory bytes with {loads:.0f} coalesced load(s) in flight per "
                    f"warp allow (latency + throughput: {stream_ns / 1e3:.1f} µs)"
                    if stream_ns
                    else ""
                )
                + "; not below the roofline floor."
            ),
            confidence="high" if frac >= 0.5 else "medium",
            evidence=[
                Evidence(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE, excess, None, "excessive sectors"),
                Evidence(SourceCounters.L2_SECTORS_GLOBAL, total, None, "sectors"),
                Evidence("excess_fraction", round(frac, 3), self.thresholds["min_excess_fraction"], "wasted share"),
            ],
            source=lines,
        )
