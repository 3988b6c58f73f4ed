from ncuadvisor.rulekit import (
    ComputeWorkloadAnalysis,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryTables,
    RooflineChart,
    Rule,
    SourceCounters,
    fma_and_tensor_flops,
    predict,
    time_after,
)

FFMA = RooflineChart.FFMA_PER_CYCLE
FADD = RooflineChart.FADD_PER_CYCLE
FMUL = RooflineChart.FMUL_PER_CYCLE

# the situations of fixes_when, applied in this order
ADDS = "the arithmetic is adds (a stencil, a filter, a sum over neighbours)"
SHARED = "the operands come from shared memory"


class NoDataReuse(Rule):
    """Arithmetic fed straight from global memory (or from shared memory without register reuse): tile it.

    What it detects:
        A kernel with at least `min_gflop` GFLOP of FMA work whose loads per FLOP are high: global load bytes
        (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` × 32) above `max_global_bytes_per_flop`, or shared-memory
        wavefronts (`memory_l1_wavefronts_shared`) above `max_shared_wavefronts_per_flop`, while L1/shared memory is
        the busiest unit.

    Why it costs time:
        A matrix product computed one output per thread reads 2 operands per FMA: the load/store unit, not the FMA
        pipe, sets the pace. Shared-memory tiles cut global loads by the tile width; register tiles (each thread
        computing a 4×4 or 8×8 block of outputs) cut shared loads by the same factor.

    Example:
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];   // global operands every step

    Use instead:
        Stage 32×32 tiles of A and B in shared memory (`__shared__ float As[32][32], Bs[32][33]`), then give each
        thread a register tile of outputs; better, use cuBLAS/CUTLASS, or tensor cores (TEN001). When the arithmetic is
        adds rather than multiply-adds (FFMA under `max_fma_share_for_stencil` of the FP32 work: a stencil, a filter,
        a sum over neighbours), the fix shown is a register window: each thread computes several neighbouring outputs
        from values it loaded once.

    Speedup estimate:
        Global operands: a shared-memory tiled kernel reaches about `tiled_fma_fraction` of the FP32 peak (17 of 67
        TFLOP/s on an H200); shared operands: a register-tiled kernel about `register_tiled_fma_fraction`. New time =
        FLOPs / (that fraction × peak). Both fractions were measured on an H200 (sm_90): on another architecture the
        estimate says so and its confidence is low (a GTX 1660's tiling measured -20% where the model said -58%).
        The counter the fix moves: the operand traffic per FLOP at the level that serves it, global load bytes per
        FMA-pipe FLOP (at most `max_global_bytes_per_flop` after) or shared wavefronts per FLOP (at most
        `max_shared_wavefronts_per_flop`); DRAM bytes, already near the compulsory bytes where L2 holds the
        operands, do not tell a tiled kernel from an untiled one.

    False positives:
        Shared-memory operands with the FMA pipe already above `max_fma_pct` busy are not flagged: the FMA pipe is
        then the limit (tensor cores, TEN001). Kernels whose operands are genuinely used once (elementwise with many FLOPs per element) have low loads per
        FLOP and do not fire.
    """

    code = "TIL001"
    slug = "no-data-reuse"
    category = "tiling"
    title = "Little data reuse: tile in shared memory and registers"
    requires = (MemoryTables.GLOBAL_LOAD_SECTORS,)
    optional = (
        SourceCounters.SHARED_WAVEFRONTS,
        ComputeWorkloadAnalysis.FMA_PIPE_PCT,
        FFMA,
        FADD,
        FMUL,
    )
    per_instruction = (SourceCounters.INST_EXECUTED, SourceCounters.MEMORY_TYPE)
    thresholds = {
        "min_gflop": 1.0,
        "max_global_bytes_per_flop": 0.5,
        "max_shared_wavefronts_per_flop": 0.005,
        "min_l1_pct": 60.0,
        "tiled_fma_fraction": 0.25,
        "register_tiled_fma_fraction": 0.6,
        "max_fma_pct": 50.0,
        "max_fma_share_for_stencil": 0.2,
    }
    fixes = {
        "cuda": Fix(
            text=(
                "Operands come from global memory at every step: stage 32×32 tiles of both inputs in shared "
                "memory and loop over the tile from there (then add register tiles of outputs per thread)."
            ),
            code=(
                "__shared__ float As[32][32], Bs[32][33];\n"
                "for (int t = 0; t < K; t += 32) {\n"
                "  As[ty][tx] = A[row * K + t + tx];  Bs[ty][tx] = B[(t + ty) * N + col];\n"
                "  __syncthreads();\n"
                "  for (int k = 0; k < 32; ++k) acc += As[ty][k] * Bs[k][tx];\n"
                "  __syncthreads();\n}"
            ),
        ),
        "triton": Fix(
            text=(
                "Use a blocked `tl.dot` over BLOCK_M×BLOCK_N×BLOCK_K tiles (64×64×32 or larger) instead of scalar "
                "loops; tune num_warps and num_stages with @triton.autotune."
            ),
            code="acc += tl.dot(a_tile, b_tile)   # a_tile: [BLOCK_M, BLOCK_K], b_tile: [BLOCK_K, BLOCK_N]",
        ),
    }
    fixes_when = {
        ADDS: {
            "cuda": Fix(
                text=(
                    "Each input is loaded again for every output that uses it (the arithmetic is adds, a stencil "
                    "or a sum over neighbours): have each thread compute several neighbouring outputs and slide the "
                    "values they share through registers, or stage the block's tile with its halo in shared memory "
                    "once."
                ),
                code=(
                    "float w[2 * R + 1];                       // the window, in registers\n"
                    "for (int d = 0; d < 2 * R; ++d) w[d + 1] = in[(y0 - R + d) * W + x];\n"
                    "for (int y = y0; y < y0 + ROWS; ++y) {    // ROWS outputs per thread\n"
                    "  /* shift w down by one, load the one new row */  w[2 * R] = in[(y + R) * W + x];\n"
                    "  float acc = 0.f; for (int d = 0; d <= 2 * R; ++d) acc += w[d];  out[y * W + x] = acc;\n}"
                ),
            ),
            "triton": Fix(
                text=(
                    "Load each input tile once per program (a [BLOCK_Y + halo, BLOCK_X] block with tl.load) and "
                    "compute all of its outputs from it, instead of one load per output and tap."
                ),
                code="tile = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=m)   # once per program",
            ),
        },
        SHARED: {
            "cuda": Fix(
                text=(
                    "Operands are re-read from shared memory for every FMA: give each thread a register tile of "
                    "outputs (e.g. 8×8) so every value loaded from shared memory feeds 8 FMAs."
                ),
                code=(
                    "float acc[8][8] = {};   // per-thread register tile\n"
                    "for (int k = 0; k < 32; ++k) {\n"
                    "  float a[8], b[8];\n"
                    "  for (int i = 0; i < 8; ++i) { a[i] = As[ty * 8 + i][k]; b[i] = Bs[k][tx * 8 + i]; }\n"
                    "  for (int i = 0; i < 8; ++i) for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];\n}"
                ),
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        fma_flops, tensor = fma_and_tensor_flops(r)
        if fma_flops < t["min_gflop"] * 1e9 or tensor > 0.1 * fma_flops:
            return None
        if r.sol.get("l1_pct", 0.0) < t["min_l1_pct"]:
            return None
        global_bpf = (k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0) * 32 / fma_flops
        shared_wpf = (k.m(SourceCounters.SHARED_WAVEFRONTS) or 0) / fma_flops
        peak = r.peak_flops_per_s.get("fp32")
        if not peak or not r.duration_ns:
            return None
        ffma, fadd, fmul = (k.m(m) or 0.0 for m in (FFMA, FADD, FMUL))
        # a matrix product is multiply-adds; a stencil, a filter or a sum over neighbours is mostly adds
        adds_only = (fadd + fmul) > 0 and 2 * ffma < t["max_fma_share_for_stencil"] * (2 * ffma + fadd + fmul)
        if global_bpf > t["max_global_bytes_per_flop"]:
            level, frac = "global", t["tiled_fma_fraction"]
            what = f"{global_bpf:.2f} bytes of global loads per FLOP"
        elif (
            shared_wpf > t["max_shared_wavefronts_per_flop"]
            and (k.m(ComputeWorkloadAnalysis.FMA_PIPE_PCT) or 0) < t["max_fma_pct"]
        ):
            level, frac = "shared", t["register_tiled_fma_fraction"]
            what = f"{shared_wpf * 1000:.1f} shared-memory wavefronts per 1000 FLOP"
        else:
            return None
        new_ns = fma_flops / (frac * peak) * 1e9
        # the fractions are an H200's (sm_90): elsewhere the balance of FP32 lanes, shared-memory bandwidth and DRAM
        # differs (a GTX 1660's tiling measured -20% where this model said -58%), so the estimate is said as such
        arch = str(k.device.get("compute_capability") or "")
        calibrated = "" if arch == "9.0" else f", not on this sm_{arch.replace('.', '')} device" if arch else ""
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=2,
            min_share=0.0,
            sass_filter=lambda s: s.startswith(("LDG", "LDS")),
            memory_only=True,
        )
        return self.finding(
            title=f"Little data reuse: {what}",
            message=(
                f"{fma_flops / 1e9:.1f} GFLOP of FMA work read {what}; L1/shared memory is "
                f"{r.sol.get('l1_pct', 0):.0f}% busy while the FMA pipe waits for operands."
            ),
            fix=self.fix_for(k, [ADDS] * adds_only + [SHARED] * (level == "shared")),
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=(
                f"A {'shared-memory' if level == 'global' else 'register'}-tiled kernel reaches "
                f"~{frac:.0%} of the FP32 peak (measured on an H200{calibrated}), so the time becomes the FLOPs at "
                f"{frac:.0%} of that peak."
            ),
            confidence="medium" if not calibrated else "low",
            # tiled, the operands come from the level below the one that read them per FLOP; the rule is silent at
            # its threshold
            predicts=[
                predict("global_load_bytes_per_flop", global_bpf, None, t["max_global_bytes_per_flop"])
                if level == "global"
                else predict("shared_wavefronts_per_flop", shared_wpf, None, t["max_shared_wavefronts_per_flop"])
            ],
            evidence=[
                Evidence("global_load_bytes_per_flop", round(global_bpf, 4), t["max_global_bytes_per_flop"]),
                Evidence("shared_wavefronts_per_flop", round(shared_wpf, 5), t["max_shared_wavefronts_per_flop"]),
                Evidence("l1_pct", round(r.sol.get("l1_pct", 0), 1), t["min_l1_pct"], "L1 throughput", "%"),
            ],
            source=lines,
        )
