from ncuadvisor.rulekit import (
    FLOPS_PER_WARP_FMA,
    PRACTICAL_FRACTION,
    ComputeWorkloadAnalysis,
    Evidence,
    Finding,
    Fix,
    InstructionStats,
    KernelContext,
    LaunchStats,
    MemoryTables,
    MemoryWorkloadAnalysis,
    RooflineChart,
    Rule,
    SourceCounters,
    SourceSelection,
    SpeedOfLight,
    access_bytes,
    address_work,
    busy_scaled_ns,
    compulsory_load_bytes,
    fixed_kernel_ns,
    fma_and_tensor_flops,
    fma_stream,
    fmt_bytes,
    fmt_ns,
    opcode,
    predict,
    register_tile_wavefronts,
    shared_fed_ns,
    tiled_product_ns,
    time_after,
    uniform_share,
)

FFMA = RooflineChart.FFMA_PER_CYCLE
FADD = RooflineChart.FADD_PER_CYCLE
FMUL = RooflineChart.FMUL_PER_CYCLE

# the situations of fixes_when, applied in this order
ADDS = "the arithmetic is adds (a stencil, a filter, a sum over neighbours)"
SHARED = "the operands come from shared memory"
PRODUCT = "a matrix product read from global memory (each FMA multiplies two loaded values): tile it at both levels"
REREAD = "each input is re-read through L1 for every output that uses it (a stencil, a convolution)"
WINDOW = "a filter's taps read from a shared tile once per use"

# the stall reasons reuse removes: the waits on global loads, on the L1/shared queues they fill, and the issue pressure
# of the load instructions that go (an L1-bound stencil's warps wait as much for the issue slots and the LSU pipe)
REUSE_WAITS = (
    "long_scoreboard",
    "lg_throttle",
    "short_scoreboard",
    "mio_throttle",
    "tex_throttle",
    "math_pipe_throttle",
    "not_selected",
    "dispatch_stall",
)
# the units a tile with register reuse changes: the load traffic through L1 and L2, the load instructions' issue, and
# the ALU and FMA pipe that ran the arithmetic only those loads' addresses used (each unit's new busy share is the
# reuse model's: `_reuse_scale`)
REUSE_CHANGES = frozenset({"l1", "lsu", "shared", "l2", "issue", "alu", "fma"})
_FP32_ARITHMETIC = frozenset({"FFMA", "FADD", "FMUL"})  # one instruction a use in a register window too
_SHARED_REREAD = "shared-memory load bytes ÷ compulsory loads"
# a tiled matrix product is new code: its loads, index arithmetic and FMAs are all the tiled kernel's
TILING_CHANGES = REUSE_CHANGES


class NoDataReuse(Rule):
    """Arithmetic fed straight from global memory (or from shared memory without register reuse): tile it.

    What it detects:
        A kernel with at least `min_gflop` GFLOP of FMA work whose loads per FLOP are high: global load bytes
        (`l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum` × 32) above `max_global_bytes_per_flop`, or shared-memory
        wavefronts (`memory_l1_wavefronts_shared`) above `max_shared_wavefronts_per_flop`, while L1/shared memory is
        the busiest unit. Also, whatever the arithmetic (a stencil of adds, a convolution): the same input bytes
        re-read per output through L1, the global load bytes the threads asked for (ideal sectors, not the wasted
        ones) at least `min_reread` times the compulsory load bytes (`rulekit.models.compulsory_bytes`), L1 hitting at least `min_l1_hit_pct` % of sectors (the reuse is there,
        served by L1 instead of registers or shared memory) and, unless L2 is less than `min_l2_busy_of_l1` as busy
        as L1 (its refetches then cost nothing: operands that fit in L2, L1 hitting 99%), L2 sending L1 at most
        `max_l2_to_dram` times the bytes DRAM reads (`lts__t_sectors_srcunit_tex.sum`: a reuse served by L2, at a
        cost, is CAC001's). Weakest evidence (ncu's basic
        set, a custom set without the memory tables: no load sectors, no wavefronts): Speed Of Light's unit and pipe
        shares and the launch's shared memory. The FMA pipe at least `min_fma_pct_weak` busy (arithmetic at a real
        rate), the tensor pipe idle and the XU at most `max_xu_per_fma_weak` of the FMA pipe's share (a product of
        loaded values, no nonlinear term per step), L1/shared memory (or the load/store pipe that feeds it) the
        busiest unit of all at least `min_l1_pct` busy, and DRAM at most `max_dram_pct_weak` busy (the operands come
        from on-chip memory, not from DRAM: MEM001's and CAC001's cases have DRAM or L2 busy). With shared memory per
        block (the operands are staged there) the fix is register tiles, and not above `max_fma_pct` of the FMA pipe,
        as on the main path; without, shared-memory tiles. The finding is then low confidence, and
        MemoryWorkloadAnalysis_Tables (or SourceCounters) would confirm it.

    Why it costs time:
        A matrix product computed one output per thread reads 2 operands per FMA: the load/store unit, not the FMA
        pipe, sets the pace. Shared-memory tiles cut global loads by the tile width; register tiles (each thread
        computing a 4×4 or 8×8 block of outputs) cut shared loads by the same factor.

    Example:
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];   // global operands every step

    Use instead:
        Stage 32×32 tiles of A and B in shared memory (`__shared__ float As[32][32], Bs[32][33]`), then give each
        thread a register tile of outputs; better, use cuBLAS/CUTLASS, or tensor cores (TEN001). A matrix product whose
        FMAs each multiply two loaded values gets both levels at once: tiles of both operands in shared memory and a
        tile of `register_tile`×`register_tile` outputs per thread, with the code. When the arithmetic is
        adds rather than multiply-adds (FFMA under `max_fma_share_for_stencil` of the FP32 work: a stencil, a filter,
        a sum over neighbours), the fix shown is a register window: each thread computes several neighbouring outputs
        from values it loaded once. Inputs re-read through L1 (a stencil, a 9×9 convolution): the block's input tile
        with its halo in shared memory, and several outputs per thread from values in registers.

    Speedup estimate:
        A matrix product (at least `min_product_share` of its FMAs multiply two loaded values, read from the SASS:
        `rulekit.models.fma_stream`; integer dot products, `IDP.4A` of int8 factors, count as its multiply-adds, not
        `IMAD`, which index arithmetic runs too; a factor loaded from an address no thread or block index reaches, the same in
        every thread of the grid, is a filter's weight, not a product's operand: `rulekit.models.grid_uniform_loads`),
        its operands from global or from shared memory: the fixed kernel is the product
        tiled at both levels, and its time is its FMAs at the FP32 peak plus the shared-memory wavefronts its register
        tile leaves, 2 ÷ `register_tile` per warp FMA (each value read feeds `register_tile` FMAs; conflict-free rows),
        at one per cycle per SM, added rather than overlapped: a hand-written tiled kernel's warps wait for a k step's
        shared loads before its FMAs (`rulekit.models.tiled_product_ns`: on a GPU of 128 FP32 lanes per SM an 8×8
        tile is half the FP32 peak). At the wavefronts they execute, the model is within -5% and +11% of the
        measured time of the tiled kernels that L1/shared memory limits (flaws' `matmul_tiled` on the H200 and the
        H100, wave's `gemm_splitk_serial_long` on both, conv9's `conv9_smem`: tests/test_tiled_product.py); no less
        than the units tiling leaves alone and the compulsory bytes; the re-read model below (a filter's window with
        its halo) is not used for a product. Other FMA streams (a filter with constant weights), global operands: a
        shared-memory tiled kernel reaches about `tiled_fma_fraction` of the FP32 peak (17 of 67 TFLOP/s on an
        H200); shared operands: a register-tiled kernel about `register_tiled_fma_fraction`. New time =
        FLOPs / (that fraction × peak), no less than the units tiling leaves alone (DRAM's traffic, FP64, the XU) and
        the compulsory bytes (the fixed kernel). Shared operands re-read once per use (a filter's taps over a tile
        already staged there: the bytes the threads read from shared memory, `LDS` in the SASS, at least `min_reread`
        times the compulsory loads) are not a product's: the fixed kernel is the register window below, its shared
        reads each used as many times, every instruction of its taps but the FP32 arithmetic (the read, its address,
        a weight's load, the loop's control) once per value read, the ALU's work as much less, its time the window's
        (a 9×9 over its shared tile: 2.55× against 2.22× measured, where the fraction said 3.08×; the planted 11×11
        over its tile, its weights loaded per tap: 3.43× against 3.29×). Both
        fractions were measured on an H200 (sm_90): on another architecture the
        estimate says so and its confidence is low (a GTX 1660's tiling measured -20% where the model said -58%).
        Inputs re-read through L1 (a stencil, a convolution): the time of the fixed kernel, the block's tile with its
        halo in shared memory and `outputs_per_thread` outputs per thread from a register window. Its L1 work: the
        global loads' wavefronts of today once per input (at most `halo_loads` loads of each with the halo, over the
        re-read factor), plus the shared-memory reads that replace them, one wavefront per read (conflict-free rows,
        one wavefront per cycle per SM), each read used by `outputs_per_thread` × side ÷ (`outputs_per_thread` + side
        − 1) taps of a square filter of side √(re-read factor) (4.5 uses for a 9×9, 3.3 for a 5×5), and the tile's
        stores; the load/store pipe as many instructions; the issue slots less the global loads that go and the
        arithmetic that only their addresses use (clamps, 64-bit index products, pointer sums: backward register
        liveness over the SASS, `rulekit.models.address_work`), as the tile is read at constant offsets; the ALU and
        the FMA pipe less those instructions (IMAD on the FMA pipe); the index arithmetic that feeds anything else and
        the FMAs stay; the uniform instructions (`ULDC`: the weights from the constant bank; warp-wide offsets,
        `rulekit.models.uniform_share`) run once per thread for its `outputs_per_thread` outputs (conv9.cu's twin runs
        4.5 a warp's output where the naive 9×9 runs 45). Every other unit keeps its busy share, and the busiest unit
        stays as busy as now; the time is that, or, if longer, the fixed kernel's FP32 arithmetic at the peak plus
        its shared wavefronts at one per cycle per SM, added, as a tiled product's (`rulekit.models.shared_fed_ns`: a
        warp waits for its shared reads before the arithmetic that uses them); no less than the compulsory bytes at
        85% of DRAM's peak, and bounded by the stall time it removes (the memory waits, and the issue pressure of the
        loads that go: not selected, pipe throttles, dispatch). On conv9.cu (H100) the twin with the tile and 8
        outputs a thread runs about 1.15× the window's time (it also waits for its tile's global loads: long
        scoreboard 26%, barrier 12% of its stalls) and issues 75% of cycles where the clamped 9×9 issued 64%: the
        estimates there are within -15% and +17% of the measured twins (benchmarks/RESULTS.md). The bytes removed
        include the wasted sectors of uncoalesced loads: the tile is read in whole rows. Where both apply, the
        faster fixed kernel of the two, in its own words (a convolution's FMAs read global memory per FLOP too; its
        fix is the input's tile with its halo); where no FMA multiplies two loaded values (a filter: its weights
        grid-uniform loads or constants), the words are the filter's whichever model is faster, the other's time said
        beside it (until 2026-12-06 such a filter got a product's words, "tiles of both inputs", where the fraction was
        the faster: convmap.cu's coalesced 11×11, H100, -59%; conv9.cu's conv5_global). A filter whose taps already
        read its shared tile once per use (the window model applies) is at the shared level whatever its global loads
        per FLOP: convmap_tiled loads a weight per tap (0.55 bytes per FLOP, each a broadcast's sector) and was given a
        product's tiles at -57%; its fix is the register window, -71% (its twin convmap_window measured -70%; -19%
        until 2026-12-06, when only the shared reads and the uniform instructions left the issue slots, 86% busy).
        Counted after coalescing: the tile of a filter or a stencil (every model here but the matrix product's) keeps
        the kernel's thread mapping, and is read in coalesced rows only once that mapping is: where MEM001 fires on
        the kernel its fix comes first, and this estimate is counted on MEM001's fixed kernel, 1 − (1 − the tile's
        saving alone) ÷ (1 − MEM001's), the share of the time the coalesced kernel leaves (`Finding.counted_after`,
        `rulekit.engine.counted_after`), so that the two in turn save what the tile alone would; nothing where the
        coalesced kernel is as fast. Swagatam1812's naive 11×11 conv2d (A100: row = ...threadIdx.x, 9.6 sectors a
        request, weights every thread shares): coalescing −80% (the author's coalesced variant measured −79%), then
        the tile −42% of the coalesced kernel (the author's shared-memory tile measured −41% on it); until 2026-12-06
        the tile came first, at −96%, modelled as a matrix product's two levels. A matrix product's two-level tile is
        new code that loads both tiles in coalesced rows with a mapping of its own: it is ranked on its own saving
        (llm.c's matmul_forward_kernel1, 9 sectors a request: the tile first, 37× against 39× measured). A product
        under `min_gflop` whose inputs are re-read through L1 gets the product's two-level tiles as its fix and the
        re-read model's time as its estimate, ranked on its own saving (CUTLASS's int8 reference GEMM, 113 M integer
        operations in IDP.4A, A100: -95%, ahead of coalescing's -89%).
        A reuse that L2 serves (refetches) is CAC001's only where it costs L2 time (L2 at least `min_l2_busy_of_l1` of
        L1's busy share).
        Where index arithmetic also fills the issue slots (ISU001), this estimate removes the part that only
        addressed the loads that go and keeps the rest: the larger of the two ranks first (a clamped 9×9 convolution:
        the tile, measured 4.4× against hoisting's 1.9×; a clamped 5×5: the tile 2.5× against 1.4×).
        On the weakest evidence, the FLOPs are the report's where its roofline counts them, else the FMA pipe's busy
        time (a pipe busy x% of the time at x% of the FP32 peak: an upper bound, the pipe also runs FADD, FMUL and
        IMAD): the time becomes that busy time ÷ the tiled fraction, no less than the units tiling leaves alone.
        The counter the fix moves (a matrix product): the operand traffic per FLOP at the level that serves it, global load bytes per
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
        MemoryWorkloadAnalysis.L1_HIT_RATE_PCT,
        MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1,
        MemoryTables.GLOBAL_STORE_SECTORS,
        MemoryWorkloadAnalysis.DRAM_BYTES_READ,
        InstructionStats.GLOBAL_LOAD_INST,
        SourceCounters.SHARED_WAVEFRONTS,
        ComputeWorkloadAnalysis.FMA_PIPE_PCT,
        FFMA,
        FADD,
        FMUL,
    )
    weak_evidence = (SpeedOfLight.FMA_PIPE_ELAPSED_PCT,)
    per_instruction = (
        SourceCounters.INST_EXECUTED,
        SourceCounters.MEMORY_TYPE,
        SourceCounters.L2_SECTORS_GLOBAL_IDEAL,
        SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE,
    )
    thresholds = {
        "min_gflop": 1.0,
        "max_global_bytes_per_flop": 0.5,
        "max_shared_wavefronts_per_flop": 0.005,
        "min_l1_pct": 60.0,
        "tiled_fma_fraction": 0.25,
        "register_tiled_fma_fraction": 0.6,
        "register_tile": 8.0,
        "min_product_share": 0.5,
        "max_fma_pct": 50.0,
        "max_fma_share_for_stencil": 0.2,
        "min_reread": 4.0,
        "min_l1_hit_pct": 50.0,
        "max_l2_to_dram": 4.0,
        "outputs_per_thread": 8.0,
        "halo_loads": 2.0,
        "min_l2_busy_of_l1": 0.25,
        "min_fma_pct_weak": 15.0,
        "max_xu_per_fma_weak": 0.05,
        "max_tensor_pct_weak": 1.0,
        "max_dram_pct_weak": 40.0,
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
        REREAD: {
            "cuda": Fix(
                text=(
                    "Each input is loaded {reread:.0f} times through L1 (once per output that uses it): stage the "
                    "block's input tile with its halo in shared memory once (coalesced rows), then have each thread "
                    "compute several neighbouring outputs from values held in registers."
                ),
                code=(
                    "__shared__ float tile[BY + 2 * R][BX + 2 * R];   // the block's inputs with their halo\n"
                    "for (int i = ty; i < BY + 2 * R; i += BY)          // coalesced rows, each input loaded once\n"
                    "  for (int j = tx; j < BX + 2 * R; j += BX) tile[i][j] = in[(y0 - R + i) * W + x0 - R + j];\n"
                    "__syncthreads();\n"
                    "for (int dy = 0; dy <= 2 * R; ++dy) for (int dx = 0; dx <= 2 * R; ++dx)\n"
                    "  acc += w[dy][dx] * tile[ty + dy][tx + dx];"
                ),
            ),
            "triton": Fix(
                text=(
                    "Each input is loaded {reread:.0f} times: load each program's input tile with its halo once "
                    "(one tl.load of a [BLOCK_Y + 2R, BLOCK_X + 2R] block) and compute all of its outputs from it."
                ),
                code="tile = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=m)   # once per program",
            ),
        },
        PRODUCT: {
            "cuda": Fix(
                text=(
                    "Each FMA multiplies two values loaded from global memory (a matrix product): tile it at both "
                    "levels. Stage tiles of both operands in shared memory (128×8 of A and 8×128 of B per 256-thread "
                    "block, loaded in coalesced rows) and give each thread a tile of {tile:.0f}×{tile:.0f} outputs "
                    "in registers, so that each value read from shared memory feeds {tile:.0f} FMAs; better, "
                    "cuBLAS/CUTLASS, or tensor cores (TEN001)."
                ),
                code=(
                    "// 16×16 threads, the block's 128×128 outputs: each thread 8×8 (rows ty + 16i, columns tx + 16j)\n"
                    "__shared__ float As[8][128 + 4], Bs[8][128];   // As[k][m]: A's tile transposed, padded\n"
                    "float acc[8][8] = {};\n"
                    "for (int k0 = 0; k0 < K; k0 += 8) {\n"
                    "  for (int e = tid; e < 8 * 128; e += 256) {   // both tiles, in coalesced rows\n"
                    "    As[e % 8][e / 8] = A[(m0 + e / 8) * K + k0 + e % 8];\n"
                    "    Bs[e / 128][e % 128] = B[(k0 + e / 128) * N + n0 + e % 128];\n"
                    "  }\n"
                    "  __syncthreads();\n"
                    "  for (int k = 0; k < 8; ++k) {   // 16 shared reads feed 64 FMAs\n"
                    "    float a[8], b[8];\n"
                    "    for (int i = 0; i < 8; ++i) { a[i] = As[k][ty + 16 * i]; b[i] = Bs[k][tx + 16 * i]; }\n"
                    "    for (int i = 0; i < 8; ++i) for (int j = 0; j < 8; ++j) acc[i][j] += a[i] * b[j];\n"
                    "  }\n"
                    "  __syncthreads();\n"
                    "}"
                ),
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
        WINDOW: {
            "cuda": Fix(
                text=(
                    "Each input is read {reread:.0f} times from the shared tile (once per tap that uses it): have "
                    "each thread compute several neighbouring outputs (e.g. 8 down a column) from a register window, "
                    "so that each value read from shared memory feeds several taps, and hold the filter's weights in "
                    "registers or constant memory rather than loading one per tap."
                ),
                code=(
                    "float acc[8] = {};                          // outputs (y0 + o, x), o < 8, of this thread\n"
                    "for (int dx = 0; dx <= 2 * R; ++dx) {\n"
                    "  float win[8 + 2 * R];                     // one column of the tile, in registers\n"
                    "  for (int i = 0; i < 8 + 2 * R; ++i) win[i] = tile[ty * 8 + i][tx + dx];\n"
                    "  for (int dy = 0; dy <= 2 * R; ++dy)\n"
                    "    for (int o = 0; o < 8; ++o) acc[o] += w[dy][dx] * win[o + dy];   // w: registers or __constant__\n"
                    "}"
                ),
            ),
        },
    }

    @staticmethod
    def _hot_loads(k: KernelContext) -> SourceSelection:
        """The two source lines whose global or shared loads execute most (where the operands are read)."""
        return k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=2,
            min_share=0.0,
            sass_filter=lambda s: s.startswith(("LDG", "LDS")),
            memory_only=True,
        )

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak:
            return self._from_pipes(k)
        r = k.roofline
        t = self.thresholds
        fma_flops, tensor = fma_and_tensor_flops(r)
        if tensor > 0.1 * fma_flops or not r.duration_ns:
            return None
        global_bpf = (k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0) * 32 / fma_flops if fma_flops else 0.0
        shared_wpf = (k.m(SourceCounters.SHARED_WAVEFRONTS) or 0) / fma_flops if fma_flops else 0.0
        ffma, fadd, fmul = (k.m(m) or 0.0 for m in (FFMA, FADD, FMUL))
        # a matrix product is multiply-adds; a stencil, a filter or a sum over neighbours is mostly adds
        adds_only = (fadd + fmul) > 0 and 2 * ffma < t["max_fma_share_for_stencil"] * (2 * ffma + fadd + fmul)
        share = self._product_share(k)
        product = share is not None and share >= t["min_product_share"]
        level, frac, what, new_ns, window = self._tiled(k, fma_flops, global_bpf, shared_wpf, product)
        # a matrix product's reuse is its two operand tiles and a register tile of outputs, not a filter's window with
        # its halo: the re-read model, and its words, are for the other kernels
        reread = self.reread(k) if level != "shared" and not (product and level) else None
        reread_ns = reread[2] if reread else float("inf")
        if not level and reread is None:
            return None
        # known FMAs none of which multiplies two loaded values (a filter: its weights the same in every thread, or
        # constants): where its inputs are re-read through L1 its fix is the tile with its halo and a register window
        # (the words), whichever of the two models is the faster fixed kernel (the estimate)
        filter_words = reread is not None and share is not None and share < t["min_product_share"]
        if reread is not None and reread_ns < new_ns:
            # the estimate is the re-read model's, and so are the words: a convolution's FMAs read global memory per
            # FLOP too, but its fix is the input's tile with its halo, not a matrix product's two operand tiles
            level, new_ns = "reread", reread_ns
        # the fractions are an H200's (sm_90): elsewhere the balance of FP32 lanes, shared-memory bandwidth and DRAM
        # differs (a GTX 1660's tiling measured -20% where this model said -58%), so the estimate is said as such
        arch = str(k.device.get("compute_capability") or "")
        calibrated = "" if arch == "9.0" else f", not on this sm_{arch.replace('.', '')} device" if arch else ""
        lines = self._hot_loads(k)
        window = window if level == "shared" else None  # not where the re-read model took over
        per_flop = (global_bpf, shared_wpf, share)
        evidence, model = self._tiled_words(k, level, frac, fma_flops, per_flop, calibrated, window)
        situations: list[str] = []
        if reread is not None:
            reread_evidence, reread_model, reread_what = self._reread_words(k, reread)
            evidence += reread_evidence
            if level == "reread":
                what, model, situations = reread_what, reread_model, [PRODUCT] if product else [REREAD]
                if product:
                    model = self._product_reread_words(k, share) + model
        if level == "global":
            situations = [ADDS] * adds_only + [PRODUCT] * product
            if filter_words:
                what, situations = reread_what, [REREAD]
                model += (
                    f" The tile with its halo and a register window, modelled from the re-read, would take "
                    f"{fmt_ns(reread_ns)}: the faster of the two is the estimate."
                )
        if level == "shared":
            situations = [ADDS] * adds_only + ([WINDOW] if window else [SHARED])
        return self.finding(
            title=f"Little data reuse: {what}",
            message=self._message(r.sol.get("l1_pct", 0), level, fma_flops, what, reread),
            fix=self.fix_for(k, situations, reread=(window or reread or (0.0,))[0], tile=t["register_tile"]),
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=model,
            confidence="medium" if not calibrated else "low",
            # tiled, the operands come from the level below the one that read them per FLOP; the rule is silent at
            # its threshold (inputs re-read through L1: no per-FLOP counter, the kernel may do no FMA work)
            predicts=[]
            if level == "reread"
            else [
                predict("global_load_bytes_per_flop", global_bpf, None, t["max_global_bytes_per_flop"])
                if level == "global"
                else predict("shared_wavefronts_per_flop", shared_wpf, None, t["max_shared_wavefronts_per_flop"])
            ],
            evidence=evidence,
            source=lines,
            # a filter's or a stencil's tile keeps the kernel's thread mapping, and is read in coalesced rows only once
            # that mapping is: where MEM001 fires, its fix comes first and this one is counted after it. A matrix
            # product's two-level tile is new code with its own mapping (both tiles loaded in coalesced rows)
            counted_after=("MEM001",) if level in ("global", "reread") and not product else (),
        )

    def _product_reread_words(self, k: KernelContext, share: float | None) -> str:
        """Why a matrix product's estimate is the re-read model's: its multiply-adds (integer dot products counted in
        integer operations) are under `min_gflop`, where the two-level model is not used."""
        stream = fma_stream(k)
        dot = (
            f", {stream.dot_ops / 1e6:.0f} M integer operations of dot products, 8 a thread's IDP.4A"
            if stream and stream.dot_ops
            else ""
        )
        return (
            f"A matrix product ({share or 0.0:.0%} of its multiply-adds multiply two loaded values{dot}), under "
            f"{self.thresholds['min_gflop']:.0f} GFLOP: its fix is the product's tiles at both levels, its estimate "
            "the bytes that reuse removes, as below. "
        )

    @staticmethod
    def _product_share(k: KernelContext) -> float | None:
        """The share of the FMAs that multiply two loaded values (`fma_stream`: a matrix product's), else None
        (no SASS, no FMA)."""
        stream = fma_stream(k)
        return stream.products / stream.fma if stream and stream.fma > 0 else None

    def _tiled_words(
        self,
        k: KernelContext,
        level: str,
        frac: float,
        fma_flops: float,
        per_flop: tuple[float, float, float | None],
        calibrated: str,
        window: tuple[float, float, float, dict[str, float]] | None = None,
    ) -> tuple[list[Evidence], str]:
        """The matrix-product models' evidence and speedup model, in words (`per_flop`: global load bytes and shared
        wavefronts per FLOP, and the FMAs' product share; `window`: a filter's register window over its shared tile,
        `shared_window`, where it is the fix)."""
        t = self.thresholds
        global_bpf, shared_wpf, share = per_flop
        evidence = [
            Evidence("global_load_bytes_per_flop", round(global_bpf, 4), t["max_global_bytes_per_flop"]),
            Evidence("shared_wavefronts_per_flop", round(shared_wpf, 5), t["max_shared_wavefronts_per_flop"]),
            Evidence("l1_pct", round(k.roofline.sol.get("l1_pct", 0), 1), t["min_l1_pct"], "L1 throughput", "%"),
        ]
        if share is not None and level in ("global", "shared"):
            label = "FMAs of two loaded values"
            evidence.append(Evidence("fma_product_share", round(share, 3), t["min_product_share"], label))
        if share is not None and share >= t["min_product_share"]:
            return evidence, self._product_words(k, fma_flops, shared_wpf, frac, level)
        if window:
            factor, after, _, scale = window
            evidence.append(Evidence("shared_reread_factor", round(factor, 1), t["min_reread"], _SHARED_REREAD))
            wavefronts = scale["shared"] * (k.m(SourceCounters.SHARED_WAVEFRONTS) or 0.0)
            return evidence, (
                f"Each input is read from shared memory {factor:.0f}× (once per use: the bytes the threads read from "
                f"shared memory over the compulsory loads). The fixed kernel computes {t['outputs_per_thread']:.0f} "
                f"outputs per thread from a register window: each value read from shared memory used {after:.1f}× "
                f"(a wavefront a read; the tile's stores stay), the issue slots' work {scale['issue']:.2f}× today's "
                "(the FP32 arithmetic stays, one instruction a use; every other instruction of the taps, the read, its "
                "address, a weight's load, the loop's control, once per value read), the ALU's "
                f"{scale['alu']:.2f}×; {self._window_words(k, wavefronts)}: {frac:.0%} of the FP32 peak; "
                "no less than the units it leaves alone and the compulsory bytes; bounded by the stalls it removes."
            )
        return evidence, (
            f"A {'shared-memory' if level == 'global' else 'register'}-tiled kernel reaches ~{frac:.0%} of the FP32 "
            f"peak (measured on an H200{calibrated}), so the time becomes the FLOPs at {frac:.0%} of that peak."
        )

    def _from_pipes(self, k: KernelContext) -> Finding | None:
        """The weakest evidence: Speed Of Light's unit and pipe shares and the launch's shared memory (no load
        sectors, no wavefronts, maybe no FLOP count)."""
        t, r = self.thresholds, k.roofline
        busy = {u: v or 0.0 for u, v in r.busy_pct.items() if u != "launch"}
        fma, tensor, xu, dram = (busy.get(u, 0.0) for u in ("fma", "tensor", "sfu", "dram"))
        onchip_unit = max(("l1", "lsu", "shared"), key=lambda u: busy.get(u, 0.0))
        onchip = busy.get(onchip_unit, 0.0)
        if not r.duration_ns or fma < t["min_fma_pct_weak"] or tensor > t["max_tensor_pct_weak"]:
            return None
        if xu > t["max_xu_per_fma_weak"] * fma or dram > t["max_dram_pct_weak"] or onchip < t["min_l1_pct"]:
            return None
        if any(v > onchip for u, v in busy.items() if u not in ("l1", "lsu", "shared")):
            return None  # another unit (the FMA pipe, L2, DRAM) sets the pace: not the operands' on-chip traffic
        shared_bytes = (k.m(LaunchStats.SHARED_MEM_STATIC) or 0.0) + (k.m(LaunchStats.SHARED_MEM_DYNAMIC) or 0.0)
        level = "shared" if shared_bytes > 0 else "global"
        if level == "shared" and fma >= t["max_fma_pct"]:
            return None
        frac = t["register_tiled_fma_fraction"] if level == "shared" else t["tiled_fma_fraction"]
        fma_flops, _ = fma_and_tensor_flops(r)
        peak = r.peak_flops_per_s.get("fp32")
        if fma_flops and peak:
            work_ns = fma_flops / (frac * peak) * 1e9
            work = f"its {fma_flops / 1e9:.1f} GFLOP (counted by the report's roofline) at {frac:.0%} of the FP32 peak"
        else:
            work_ns = r.duration_ns * fma / 100 / frac
            work = (
                f"the FMA pipe's busy time ({fma:.0f}% of the kernel: its FLOPs, at most, are that share of the FP32 "
                f"peak) ÷ {frac:.0%}"
            )
        new_ns = fixed_kernel_ns(k, work_ns, TILING_CHANGES)
        arch = str(k.device.get("compute_capability") or "")
        calibrated = "" if arch == "9.0" else f", not on this sm_{arch.replace('.', '')} device" if arch else ""
        unit_name = {"l1": "L1/shared memory", "lsu": "the load/store pipe", "shared": "shared memory"}[onchip_unit]
        staged = (
            f"operands staged in shared memory ({shared_bytes / 1024:.0f} KiB per block) and re-read from there for "
            "every FMA: too few outputs per thread in registers"
            if level == "shared"
            else "no shared memory: operands loaded through L1 for every FMA"
        )
        return self.finding(
            title=f"Little data reuse: {unit_name} {onchip:.0f}% busy feeding an FMA pipe at {fma:.0f}%",
            message=(
                f"{unit_name[0].upper() + unit_name[1:]} is the busiest unit ({onchip:.0f}%) while the FMA pipe is "
                f"{fma:.0f}% busy, DRAM {dram:.0f}% and the tensor cores {tensor:.0f}%: the FMA pipe waits on operands "
                f"loaded from on-chip memory, the shape of a matrix product (or stencil) with {staged}."
            ),
            fix=self.fix_for(k, [SHARED] if level == "shared" else []),
            estimated_speedup=time_after(r.duration_ns, new_ns, r.theoretical_ns),
            speedup_model=(
                f"A {'register' if level == 'shared' else 'shared-memory'}-tiled kernel reaches ~{frac:.0%} of the "
                f"FP32 peak (measured on an H200{calibrated}), so the time becomes {work}; the units tiling leaves "
                "alone (DRAM, FP64, the XU) stay."
            ),
            confidence="low",
            evidence=[
                Evidence(SpeedOfLight.FMA_PIPE_ELAPSED_PCT, round(fma, 1), t["min_fma_pct_weak"], "FMA pipe busy", "%"),
                Evidence(f"{onchip_unit}_pct", round(onchip, 1), t["min_l1_pct"], f"{unit_name} busy", "%"),
                Evidence("dram_pct", round(dram, 1), t["max_dram_pct_weak"], "DRAM busy", "%"),
                Evidence("tensor_pipe_pct", round(tensor, 1), t["max_tensor_pct_weak"], "tensor pipe busy", "%"),
                Evidence("shared_mem_per_block", shared_bytes, None, "shared memory per block", "B"),
            ],
        )

    def _tiled(
        self, k: KernelContext, fma_flops: float, global_bpf: float, shared_wpf: float, product: bool = False
    ) -> tuple[str, float, str, float, tuple[float, float, float, dict[str, float]] | None]:
        """A matrix product's operands read per FLOP: (the level that serves them, "global" or "shared", else ""; the
        tiled kernel's fraction of the FP32 peak; what was read, in words; the tiled kernel's time, else infinity; a
        filter's register window over its shared tile, `shared_window`, where the level is "shared", else None).
        Where each FMA multiplies two loaded values (`product`), the tiled kernel is the product tiled at both levels
        (`_product_ns`), whichever level serves the operands now."""
        r = k.roofline
        t = self.thresholds
        peak = r.peak_flops_per_s.get("fp32")
        level, frac, what, new_ns = "", 0.0, "", float("inf")
        window = None
        if fma_flops >= t["min_gflop"] * 1e9 and peak and r.sol.get("l1_pct", 0.0) >= t["min_l1_pct"]:
            # a filter's taps already read from a shared tile (`shared_window`): its global loads per FLOP are what
            # is left around the tile (a weight loaded per tap), and its fix is at the shared level, a register window
            shared = None if product else self.shared_window(k)
            if global_bpf > t["max_global_bytes_per_flop"] and shared is None:
                level, frac = "global", t["tiled_fma_fraction"]
                what = f"{global_bpf:.2f} bytes of global loads per FLOP"
            elif (
                shared_wpf > t["max_shared_wavefronts_per_flop"]
                and (k.m(ComputeWorkloadAnalysis.FMA_PIPE_PCT) or 0) < t["max_fma_pct"]
            ):
                level, frac = "shared", t["register_tiled_fma_fraction"]
                what = f"{shared_wpf * 1000:.1f} shared-memory wavefronts per 1000 FLOP"
            if level:
                # the fixed kernel: its FLOPs at the tiled fraction of the peak (a matrix product: its FMAs and the
                # shared wavefronts of both levels' tiles), no less than the units tiling leaves alone and the
                # compulsory bytes. No stall bound: a tiled product is new code, and an LSU-bound one stalls on issue
                # (not selected, pipe throttles), not on memory (a 2-D convolution: 34% not selected)
                work_ns = self._product_ns(k, fma_flops)[0] if product else None
                new_ns = fixed_kernel_ns(k, work_ns or fma_flops / (frac * peak) * 1e9, TILING_CHANGES)
                window = shared if level == "shared" else None
                if window:
                    # a filter's taps read from shared memory once each: the fix is a register window, not a product's
                    # register tile, and its time is the window's (its reads and arithmetic), not a product's fraction
                    new_ns = window[2]
                if work_ns or window:
                    frac = fma_flops / (new_ns * 1e-9) / peak
        return level, frac, what, new_ns, window

    def _product_ns(self, k: KernelContext, fma_flops: float) -> tuple[float | None, float, float]:
        """A matrix product tiled at both levels (`rulekit.models.tiled_product_ns`): (its main loop's time, else None;
        of which its FMAs at the FP32 peak; its shared wavefronts, `register_tile_wavefronts` of the register tile, at
        one per cycle per SM), in ns."""
        r = k.roofline
        peak = r.peak_flops_per_s.get("fp32") or 0.0
        wavefronts = register_tile_wavefronts(self.thresholds["register_tile"])
        total = tiled_product_ns(fma_flops, peak, k.sm_count, r.sm_clock_hz or 0.0, wavefronts)
        fma_ns = fma_flops / peak * 1e9 if peak else 0.0
        return total, fma_ns, (total or 0.0) - fma_ns

    def _product_words(self, k: KernelContext, fma_flops: float, shared_wpf: float, frac: float, level: str) -> str:
        """The speedup model of a matrix product tiled at both levels, in words."""
        tile = self.thresholds["register_tile"]
        _, fma_ns, shared_ns = self._product_ns(k, fma_flops)
        wavefronts = register_tile_wavefronts(tile)
        now = (
            f", now {shared_wpf * FLOPS_PER_WARP_FMA:.2f}"
            if level == "shared"
            else " (now its operands come from global memory)"
        )
        return (
            f"The fixed kernel tiles the product at both levels: tiles of both operands in shared memory and a tile "
            f"of {tile:.0f}×{tile:.0f} outputs per thread in registers, each value read from shared memory "
            f"feeding {tile:.0f} FMAs: {wavefronts:.2f} shared wavefronts per warp FMA{now}. Its time is its FMAs at "
            f"the FP32 peak ({fmt_ns(fma_ns)}) plus those wavefronts at one per cycle per SM ({fmt_ns(shared_ns)}), "
            "added, not overlapped (a hand-written tiled kernel's warps wait for a k step's shared loads before its "
            f"FMAs): {frac:.0%} of the FP32 peak; no less than the units tiling leaves alone and the compulsory bytes."
        )

    def _reread_words(
        self, k: KernelContext, reread: tuple[float, float, float, float, float, float, float]
    ) -> tuple[list[Evidence], str, str]:
        """Inputs re-read through L1, in words: (the evidence, the speedup model, what was read)."""
        t = self.thresholds
        factor, after, _, hit, wasted, loaded, needed = reread
        scale = self._reuse_scale(k, factor, after)
        evidence = [
            Evidence("reread_factor", round(factor, 1), t["min_reread"], "global load bytes ÷ compulsory loads"),
            Evidence(MemoryWorkloadAnalysis.L1_HIT_RATE_PCT, round(hit, 1), t["min_l1_hit_pct"], "L1 hits", "%"),
        ]
        waste = f", {wasted:.0%} of their sectors wasted by uncoalesced loads" if wasted >= 0.05 else ""
        model = (
            f"The fixed kernel stages the block's tile with its halo in shared memory and computes "
            f"{t['outputs_per_thread']:.0f} outputs per thread from a register window: each input loaded from global "
            f"memory at most {t['halo_loads']:.0f}× (now {factor:.0f}×: {fmt_bytes(loaded)} of global loads for "
            f"{fmt_bytes(needed)} needed{waste}), each value read from shared memory used {after:.1f}× (a wavefront "
            f"a read). L1's work {scale['l1']:.2f}× and the load/store pipe's {scale['lsu']:.2f}× today's, the issue "
            f"slots' {scale['issue']:.2f}× ({self._issue_words(k, scale)}), every other unit's as today; "
            f"{self._window_words(k, self._reread_wavefronts(k, factor, after))}; no less than the compulsory bytes "
            "at 85% of DRAM's peak; bounded by the memory and issue stalls it removes."
        )
        return evidence, model, f"each input loaded {factor:.0f}× through L1 ({hit:.0f}% hits){waste}"

    @staticmethod
    def _issue_words(k: KernelContext, scale: dict[str, float]) -> str:
        """What the fixed kernel's issue slots lose, in words: the loads that go, and the address arithmetic only they
        used where the SASS shows some."""
        work = address_work(k)
        uniform = uniform_share(k) or 0.0
        once = (
            f"; the uniform instructions ({uniform:.0%}: the weights from the constant bank, warp-wide offsets) once "
            "per thread for all its outputs"
            if uniform >= 0.05
            else ""
        )
        if not work or work.share < 0.05:  # a few prologue instructions: not worth the words
            return f"the loads that go; the index arithmetic and the FMAs stay{once}"
        return (
            f"the loads that go and the address arithmetic only they use, {work.share:.0%} of the instructions "
            f"executed: the tile is read at constant offsets; the ALU {scale['alu']:.2f}× and the FMA pipe "
            f"{scale['fma']:.2f}× as busy; the FMAs stay{once}"
        )

    @staticmethod
    def _message(l1_pct: float, level: str, fma_flops: float, what: str, reread: tuple[float, ...] | None) -> str:
        """The finding's message: the operands read per FLOP, or the inputs re-read per output."""
        if level != "reread":
            return (
                f"{fma_flops / 1e9:.1f} GFLOP of FMA work read {what}; L1/shared memory is "
                f"{l1_pct:.0f}% busy while the FMA pipe waits for operands."
            )
        return (
            f"{what}: the same input bytes are loaded again for every output that uses them, "
            f"{fmt_bytes(reread[5] if reread else 0.0)} of global loads for "
            f"{fmt_bytes(reread[6] if reread else 0.0)} the kernel needs; L1 is {l1_pct:.0f}% busy."
        )

    def uses_per_shared_read(self, factor: float) -> float:
        """The uses of each value a thread of the fixed kernel reads from shared memory: a register window of
        `outputs_per_thread` outputs down a column of a square filter of sqrt(factor) taps a side reads
        outputs + side - 1 rows of `side` values for outputs × side² uses (never more than the re-read factor)."""
        rows, side = self.thresholds["outputs_per_thread"], max(1.0, factor**0.5)
        return max(1.0, min(factor, rows * side / (rows + side - 1.0)))

    def _reuse_scale(self, k: KernelContext, factor: float, after: float) -> dict[str, float]:
        """The busy shares of L1, the load/store pipe and issue after the fix, as factors of today's: the global loads'
        L1 work once per input (at most `halo_loads` times with the tile's halo), plus the shared-memory reads that
        replace them (a global load instruction's worth of shared wavefronts per `after` uses, one wavefront each:
        the tile's rows are conflict-free) and the tile's stores; the issue slots less the global loads that go."""
        r = k.roofline
        halo = self.thresholds["halo_loads"]
        loads = k.m(InstructionStats.GLOBAL_LOAD_INST) or 0.0
        l1, shared = r.busy_pct.get("l1", 0.0), r.busy_pct.get("shared", 0.0)
        cycles = (r.duration_ns or 0.0) * 1e-9 * (r.sm_clock_hz or 0.0) * k.sm_count
        kept = min(1.0, halo / factor)  # the global loads' share that stays: the tile's
        # one shared wavefront per cycle per SM: the read of a value for `after` uses, and the store of the tile
        wavefront_pct = 100.0 / cycles if cycles > 0 else 0.0
        new_shared = loads * (1.0 / after + kept) * wavefront_pct
        new_l1 = shared + max(0.0, l1 - shared) * kept + new_shared
        l1_scale = min(1.0, new_l1 / l1) if l1 > 0 and wavefront_pct else min(1.0, 1.0 / after + 2 * kept)
        load_share = min(1.0, loads / r.instructions) if loads and r.instructions else 0.0
        # the arithmetic that only addresses the loads that go (clamps, 64-bit index products, pointer sums) goes with
        # them: the tile is read at constant offsets; the tile's own loads keep theirs (`kept`)
        work = address_work(k)
        gone = 1.0 - kept
        address_share = min(1.0, work.share) if work else 0.0
        # a global load becomes 1/after shared reads, and the tile's load and store (2 × kept); the uniform
        # instructions (the filter's weights from the constant bank) run once per thread for its outputs
        issue_scale = max(
            0.0,
            1.0 - load_share * max(0.0, 1.0 - 1.0 / after - 2.0 * kept) - address_share * gone - self._uniform_gone(k),
        )
        # the load/store pipe issues the loads that stay: taken as all its instructions (a stencil's are loads)
        lsu_scale = min(1.0, 1.0 / after + 2.0 * kept)
        alu_scale = 1.0 - work.address_alu / work.alu * gone if work and work.alu else 1.0
        fma_scale = 1.0 - work.address_fma / work.fma * gone if work and work.fma else 1.0
        return {
            "l1": l1_scale,
            "lsu": lsu_scale,
            "issue": issue_scale,
            "alu": alu_scale,
            "fma": fma_scale,
        }

    def _reread_wavefronts(self, k: KernelContext, factor: float, after: float) -> float:
        """The shared wavefronts of the fixed kernel of inputs re-read through L1: a read for `after` uses of each
        global load that goes, the tile's store (its share `halo_loads` ÷ factor of the loads), and those the kernel
        already has."""
        loads = k.m(InstructionStats.GLOBAL_LOAD_INST) or 0.0
        kept = min(1.0, self.thresholds["halo_loads"] / factor)
        return (k.m(SourceCounters.SHARED_WAVEFRONTS) or 0.0) + loads * (1.0 / after + kept)

    @staticmethod
    def _window_words(k: KernelContext, wavefronts: float) -> str:
        """`_window_ns` in words: the arithmetic and the shared wavefronts, added; the busiest unit as busy as now."""
        r = k.roofline
        fp32_ns = r.floors.get("fma") or 0.0
        total = shared_fed_ns(r, k.sm_count, wavefronts) or fp32_ns
        return (
            f"its time is its FP32 arithmetic at the peak ({fmt_ns(fp32_ns)}) plus its {wavefronts / 1e6:.1f} M shared "
            f"wavefronts at one per cycle per SM ({fmt_ns(total - fp32_ns)}), added (a warp waits for its shared "
            "reads before the arithmetic that uses them), no less than the time its busiest unit takes, as busy as now"
        )

    def _uniform_gone(self, k: KernelContext) -> float:
        """The share of today's instructions a register window of `outputs_per_thread` outputs saves on the uniform
        datapath (`rulekit.models.uniform_share`): computed once per thread instead of once per output."""
        return (uniform_share(k) or 0.0) * (1.0 - 1.0 / max(1.0, self.thresholds["outputs_per_thread"]))

    def _window_ns(self, k: KernelContext, scale: dict[str, float], wavefronts: float) -> float | None:
        """The fixed kernel's time: its FP32 arithmetic at the peak plus its shared-memory `wavefronts` at one per
        cycle per SM, added (`rulekit.models.shared_fed_ns`), no less than the units' work after the fix with the
        busiest as busy as now (`rulekit.models.busy_scaled_ns` with the reuse model's `scale`). None without busy
        shares."""
        units = busy_scaled_ns(k, scale)
        if units is None:
            return None
        return max(units, shared_fed_ns(k.roofline, k.sm_count, wavefronts) or 0.0)

    def shared_window(self, k: KernelContext) -> tuple[float, float, float, dict[str, float]] | None:
        """Inputs re-read from shared memory, one read per use (a filter's taps over a tile already staged there):
        (the re-read factor, the uses of each shared read after the fix, the fixed kernel's time, its units' scale),
        else None. The factor is the bytes the threads read from shared memory (the SASS's `LDS` executed × 32 lanes ×
        their width) over the compulsory load bytes; the fixed kernel gives each thread `outputs_per_thread` outputs
        from a register window, so that each read feeds `uses_per_shared_read` taps: its shared reads' wavefronts
        divided by that (the tile's stores stay), its FP32 arithmetic (`FFMA`, `FADD`, `FMUL`) one instruction a use as
        now and every other instruction once per value read (÷ the uses: the reads, their addresses, a weight's load,
        the loop's control; the window's instructions measured 570 M where this says 614 M on convmap_window, 289 M for
        271 M on conv9_smem_reg), the ALU's work ÷ the uses; its time is `_window_ns`, bounded by the stalls it
        removes."""
        r, t = k.roofline, self.thresholds
        needed = compulsory_load_bytes(r)
        wavefronts = k.m(SourceCounters.SHARED_WAVEFRONTS) or 0.0
        # the threads' shared loads (`LDS`, `LDS.64`, ...; not `LDSM`, a tensor core's operand fetch)
        ops = [(e.value, opcode(e.sass)) for e in k.per_instruction(SourceCounters.INST_EXECUTED) if e.sass]
        reads = [(v, op) for v, op in ops if op == "LDS" or op.startswith("LDS.")]
        lds = sum(v for v, _ in reads)
        if not needed or not wavefronts or not lds or not r.instructions or not r.duration_ns:
            return None
        factor = sum(v * 32 * (access_bytes(s) or 4) for v, s in reads) / needed
        if factor < t["min_reread"]:
            return None
        after = self.uses_per_shared_read(factor)
        read_wf = min(wavefronts, lds)  # a conflict-free read of 4-byte values: one wavefront
        new_wf = read_wf / after + (wavefronts - read_wf)
        onchip = new_wf / wavefronts
        # in the register window the FP32 arithmetic stays, one instruction a use, and every other instruction of the
        # taps (the shared read, its address, the weight's load, the loop's control) runs once per value read for
        # `after` uses, as the window kernels measure (convmap_window issues 570 M where this says 614 M from
        # convmap_tiled; conv9_smem_reg 289 M where it says 271 M from conv9_smem)
        arith = min(float(r.instructions), sum(v for v, op in ops if op.split(".")[0] in _FP32_ARITHMETIC))
        issue = (arith + (r.instructions - arith) / after) / r.instructions
        scale = {"l1": onchip, "shared": onchip, "lsu": onchip, "issue": issue, "alu": 1.0 / after}
        work = self._window_ns(k, scale, new_wf)
        if work is None:
            return None
        new_ns = max(
            fixed_kernel_ns(k, work, REUSE_CHANGES, REUSE_WAITS), (r.theoretical_ns or 0.0) / PRACTICAL_FRACTION
        )
        return factor, after, new_ns, scale

    def reread(self, k: KernelContext) -> tuple[float, float, float, float, float, float, float] | None:
        """Inputs re-read through L1 (a stencil, a convolution): (re-read factor, uses per load after the fix, the
        fixed kernel's time, L1 hit %, wasted share of the sectors, bytes loaded, compulsory load bytes), or None."""
        r = k.roofline
        t = self.thresholds
        loaded = (k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0.0) * 32
        needed = compulsory_load_bytes(r)
        hit = k.m(MemoryWorkloadAnalysis.L1_HIT_RATE_PCT)
        if not needed or not loaded or hit is None or not r.duration_ns:
            return None
        # re-reads are the bytes the threads asked for (ideal sectors: a warp's 4-byte loads of 16-byte records ask
        # for 4 sectors and touch 16) over the bytes needed; the wasted sectors of uncoalesced loads are not re-reads
        stores = (k.m(MemoryTables.GLOBAL_STORE_SECTORS) or 0.0) * 32
        asked = min(loaded, (r.ideal_bytes or 0.0) - stores) if r.ideal_bytes else loaded
        factor = asked / needed
        if factor < t["min_reread"] or hit < t["min_l1_hit_pct"]:
            return None
        from_l2 = k.m(MemoryWorkloadAnalysis.L2_SECTORS_FROM_L1)
        read = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_READ)
        l2_busy, l1_busy = r.busy_pct.get("l2") or 0.0, r.busy_pct.get("l1") or 0.0
        l2_serves = from_l2 is not None and read and from_l2 * 32 > t["max_l2_to_dram"] * read
        if from_l2 is None or not read or (l2_serves and l2_busy >= t["min_l2_busy_of_l1"] * l1_busy):
            return None  # the reuse is served by L2 (refetches), and costs L2 time: CAC001
        after = self.uses_per_shared_read(factor)
        work = self._window_ns(k, self._reuse_scale(k, factor, after), self._reread_wavefronts(k, factor, after))
        if work is None:
            return None
        new_ns = fixed_kernel_ns(k, work, REUSE_CHANGES, REUSE_WAITS)
        new_ns = max(new_ns, (r.theoretical_ns or 0.0) / PRACTICAL_FRACTION)
        ideal = sum(e.value for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL_IDEAL))
        excess = sum(e.value for e in k.per_instruction(SourceCounters.L2_SECTORS_GLOBAL_EXCESSIVE))
        wasted = excess / (ideal + excess) if ideal + excess > 0 else 0.0
        return factor, after, new_ns, hit, wasted, loaded, needed
