from ncuadvisor.rulekit import (
    L1_STREAM_CALIBRATION,
    L1_WARP_OVERHEAD_REQUESTS,
    PRACTICAL_FRACTION,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    MemoryTables,
    MemoryWorkloadAnalysis,
    Rule,
    SourceCounters,
    fmt_bytes,
    fmt_ns,
    l1_load_stream,
    note_sm90_calibration,
    time_after,
)

ROWS_OF_1D_BLOCKS = "1-D blocks on a grid of rows"


class ReuseFromL2(Rule):
    """Data re-read many times, each time from L2: L1 misses the reuse, and L2 bandwidth sets the pace.

    What it detects:
        L2 is the busiest memory unit (`lts__throughput` at least `min_l2_pct`% of peak, at least `min_l2_over_dram`
        times DRAM's %), L1 hits fewer than `max_l1_hit_pct`% of the sectors it is asked for, and L2 sends L1 at
        least `min_reuse` times the bytes DRAM delivered (`lts__t_sectors_srcunit_tex_op_read` × 32 ÷
        `dram__bytes_read`): the data fits in L2 and is reused, but the reuse happens across blocks (other SMs, other
        times), never inside one SM's L1. Kernels whose L2 traffic is wasted sectors (uncoalesced, MEM001) are left to
        that rule: at most `max_excess_share` of the L2 sectors may be excess.

    Why it costs time:
        L2 delivers a few times DRAM's bandwidth, L1 an order more. A thread grid whose neighbours share inputs but sit
        in different blocks (a 256×1 block on a vertical stencil; a matrix product whose tiles walk the grid in raster
        order) fetches every shared line once per block from L2, so the kernel waits on L2 while DRAM idles.

    Example:
        vstencil<<<dim3(W / 256, H), dim3(256, 1)>>>(in, out);   // reads in[y-16 .. y+16][x]: 33 blocks share each line

    Use instead:
        Put the threads that share inputs into one block, so that L1 serves the reuse: a 2-D block (`dim3(32, 32)`)
        for stencils, shared-memory tiles with their halo, or each thread computing several neighbouring outputs from
        values it keeps in registers. In Triton, load one 2-D tile per program and compute all its outputs from it, or
        group program ids (`GROUP_SIZE_M`, as in the Triton matmul tutorial) so programs sharing inputs run together.

    Speedup estimate:
        The L2 traffic of the reuse goes away; the other units keep their work (L1 still serves every request, DRAM
        still moves the same bytes): new time = the busiest of L1, DRAM and the SM (Speed Of Light % × duration) at the
        share of its peak it reaches. For DRAM and the SM that is the practical fraction; for L1, serving a stream of
        global loads that now mostly hit, it is T ÷ (T + 15) at T load requests per warp (the fix keeps each
        thread's loads), at most the practical fraction: a warp's loads cost L1 about 15 request slots more than their
        number, measured on an H100 over 9 to 65 loads per warp (`L1_WARP_OVERHEAD_REQUESTS`).

    False positives:
        Working sets that are genuinely read once from L2 (a gather over a table that fits in L2) have a low reuse
        ratio and do not fire; reuse across kernel launches (L2 persistence) is a different problem and shows as DRAM,
        not L2, traffic.
    """

    code = "CAC001"
    slug = "reuse-from-l2"
    category = "cache"
    title = "Reuse served by L2, not L1: the threads that share data are in different blocks"
    requires = (
        MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1_READ,
        MemoryWorkloadAnalysis.DRAM_BYTES_READ,
        MemoryWorkloadAnalysis.L1_HIT_RATE_PCT,
    )
    optional = (
        MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1,
        SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,
        LaunchStats.BLOCK_DIM_X,
        LaunchStats.BLOCK_DIM_Y,
        LaunchStats.BLOCK_DIM_Z,
        LaunchStats.GRID_DIM_Y,
        LaunchStats.GRID_SIZE,
        LaunchStats.BLOCK_SIZE,
        MemoryTables.GLOBAL_LOAD_REQUESTS,
    )
    per_instruction = (SourceCounters.INST_EXECUTED, SourceCounters.MEMORY_TYPE)
    thresholds = {
        "min_l2_pct": 60.0,
        "min_l2_over_dram": 1.5,
        "max_l1_hit_pct": 50.0,
        "min_reuse": 4.0,
        "max_excess_share": 0.25,
    }
    fixes = {
        "cuda": Fix(
            text=(
                "Blocks re-read lines other blocks already fetched: stage each block's input tile (with its halo) in "
                "shared memory once, or have each thread compute several neighbouring outputs and keep the values "
                "they share in registers; for tiled matrix products, walk the tiles in grouped (swizzled) order so "
                "that blocks running together share their inputs in L2 and L1."
            ),
            code=(
                "__shared__ float tile[BY + 2 * R][BX + 2 * R];   // the block's inputs, read once from global\n"
                "/* cooperative load of the tile and its halo */  __syncthreads();\n"
                "/* every tap from tile[][] */"
            ),
        ),
        "triton": Fix(
            text=(
                "Programs that read the same inputs run far apart: load one 2-D tile per program (e.g. "
                "[BLOCK_Y + halo, BLOCK_X] with tl.load) and compute all of its outputs from it, or group the "
                "program ids (GROUP_SIZE_M, as in the Triton matmul tutorial) so that programs sharing inputs run "
                "at the same time."
            ),
            code=(
                "pid_m, pid_n = tl.program_id(0), tl.program_id(1)\n"
                "rows = pid_m * BLOCK_Y + tl.arange(0, BLOCK_Y + 2 * R)[:, None]   # the tile with its halo\n"
                "tile = tl.load(x_ptr + rows * stride + cols[None, :], mask=mask)  # once per program"
            ),
        ),
    }
    fixes_when = {
        # blocks one row high on a grid of many rows: the rows above and below are in other blocks
        ROWS_OF_1D_BLOCKS: {
            "cuda": Fix(
                text=(
                    "The {bx}×1 blocks put the threads that share inputs (the rows above and below) into different "
                    "blocks: launch 2-D blocks so they share L1, e.g. dim3(32, {rows}) or dim3(32, 32), "
                    "and index rows with threadIdx.y; or stage the block's tile with its halo in shared memory."
                ),
                code=(
                    "dim3 block(32, {rows});            // was dim3({bx}, 1)\n"
                    "dim3 grid(W / block.x, H / block.y);\n"
                    "int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;"
                ),
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        r, t = k.roofline, self.thresholds
        sol = r.sol
        l2, dram = sol.get("l2_pct", 0.0), sol.get("dram_pct", 0.0)
        if not r.duration_ns or l2 < t["min_l2_pct"] or l2 < t["min_l2_over_dram"] * dram:
            return None
        if l2 < sol.get("l1_pct", 0.0):
            return None
        hit = k.m(MemoryWorkloadAnalysis.L1_HIT_RATE_PCT) or 0.0
        if hit > t["max_l1_hit_pct"]:
            return None
        l2_read = (k.m(MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1_READ) or 0.0) * 32.0
        dram_read = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_READ) or 0.0
        if dram_read <= 0 or l2_read / dram_read < t["min_reuse"]:
            return None
        l2_sectors = k.m(MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1) or l2_read / 32.0
        excess = k.m(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE) or 0.0
        if l2_sectors and excess / l2_sectors > t["max_excess_share"]:
            return None
        reuse = l2_read / dram_read
        # after the fix: the other units' work stays; the busiest of them at the share of its peak it reaches
        stream = l1_load_stream(k)
        busy = {"L1": sol.get("l1_pct", 0.0), "DRAM": dram, "the SM": sol.get("compute_pct", 0.0)}
        share = dict.fromkeys(busy, PRACTICAL_FRACTION) | ({"L1": stream[1]} if stream else {})
        unit = max(busy, key=lambda u: busy[u] / share[u])
        rate = share[unit]
        new_ns = r.duration_ns * busy[unit] / 100.0 / rate
        how = f"{rate:.0%} of its peak"
        if unit == "L1" and stream:
            note_sm90_calibration(k, L1_STREAM_CALIBRATION)
            loads = stream[0]
            how += (
                f", what a stream of {loads:.0f} global loads a warp reaches ({loads:.0f} ÷ ({loads:.0f} + "
                f"{L1_WARP_OVERHEAD_REQUESTS:.0f}), at most {PRACTICAL_FRACTION:.0%})"
            )
        bx, by, bz = (
            int(k.m(dim) or 0) for dim in (LaunchStats.BLOCK_DIM_X, LaunchStats.BLOCK_DIM_Y, LaunchStats.BLOCK_DIM_Z)
        )
        grid_y = int(k.m(LaunchStats.GRID_DIM_Y) or 0)
        rows_of_1d_blocks = by == 1 and bz == 1 and grid_y > 1 and bx >= 64
        fix = self.fix_for(k, ROWS_OF_1D_BLOCKS if rows_of_1d_blocks else (), bx=bx, rows=max(1, bx // 32))
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=2,
            min_share=0.0,
            sass_filter=lambda s: s.startswith("LDG"),
            memory_only=True,
        )
        return self.finding(
            title=f"Reuse served by L2, not L1: L2 sends {reuse:.0f}× the bytes DRAM delivers",
            message=(
                f"L2 is {l2:.0f}% busy (DRAM {dram:.0f}%): it sent L1 {fmt_bytes(l2_read)} for "
                f"{fmt_bytes(dram_read)} read from DRAM, and L1 hit only {hit:.0f}% of its sectors. The data is "
                "reused, but by threads in other blocks, so every reuse is another trip to L2."
            ),
            fix=fix,
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=(
                f"The reuse traffic leaves L2; L1, DRAM and the SM keep their work: the one that takes longest, "
                f"{unit} ({busy[unit]:.0f}% of {fmt_ns(r.duration_ns)}), at {how}: {fmt_ns(new_ns)}."
            ),
            confidence="medium",
            evidence=[
                Evidence("l2_pct", round(l2, 1), t["min_l2_pct"], "L2 throughput", "%"),
                Evidence("l1_hit_pct", round(hit, 1), t["max_l1_hit_pct"], "L1 hit rate", "%"),
                Evidence(
                    "l2_to_dram_read_ratio", round(reuse, 1), t["min_reuse"], "L2→L1 bytes per DRAM byte read", "×"
                ),
            ],
            source=lines,
        )
