from ncuadvisor.rulekit import (
    MEMORY_TYPE_GLOBAL,
    TENSOR_BUSY_PCT,
    TENSOR_PIPE_PCT,
    ComputeWorkloadAnalysis,
    Evidence,
    Finding,
    Fix,
    InstructionStats,
    KernelContext,
    RooflineChart,
    Rule,
    SourceCounters,
    access_bytes,
    fma_and_tensor_flops,
    opcode,
    per_pc,
    predict,
    time_after,
)


class FmaMatrixProduct(Rule):
    """A matrix product (or convolution) computed on the FMA pipes instead of the tensor cores.

    What it detects:
        At least `min_gflop` GFLOP of FP32/FP16 FMA work, no tensor-core work, the FMA pipe at least `min_fma_pct`
        busy, and operands loaded from memory at a matrix-product rate (shared + global load instructions at least
        `min_loads_per_fma` per FMA instruction: a chain of FMAs on registers does not qualify).

    Why it costs time:
        On an H100/H200 the tensor cores deliver about 990 TFLOP/s in FP16/BF16 and 495 in TF32 against 67 TFLOP/s
        on the FMA pipes: a matrix product on FMAs uses 7% of the chip.

    Example:
        acc += __half2float(As[ty][k]) * __half2float(Bs[k][tx]);   // half inputs, scalar FMAs

    Use instead:
        cuBLAS/cuBLASLt or CUTLASS; by hand, `nvcuda::wmma` 16×16×16 fragments (`mma_sync`) from shared-memory tiles,
        or `wgmma` on sm_90a. FP32 data can use TF32 (`wmma::precision::tf32`) if its 10-bit mantissa is accurate
        enough, or be converted to BF16.

    Speedup estimate:
        The FMA-pipe time moves to the tensor cores (8-16× faster): new time = time × (1 − FMA pipe utilization);
        the loads and the rest of the kernel remain.

    False positives:
        Small or skinny products (batched 4×4) that do not fill a 16×16 fragment; elementwise math with many FMAs per
        loaded value does not qualify.
    """

    code = "TEN001"
    slug = "fma-matrix-product"
    category = "tensor-cores"
    title = "Matrix product on FMA pipes: use tensor cores"
    requires = (
        ComputeWorkloadAnalysis.FMA_PIPE_PCT,
        InstructionStats.GLOBAL_LOAD_INST,
    )
    optional = (
        InstructionStats.SHARED_LOAD_INST,
        RooflineChart.FFMA_PER_CYCLE,
    )
    per_instruction = (SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE, SourceCounters.INST_EXECUTED)
    thresholds = {"min_gflop": 1.0, "min_fma_pct": 40.0, "min_loads_per_fma": 0.1}
    # {dtype}: the tensor-core type to use, "FP16/BF16" for half-precision loads, else "TF32 (or BF16)"
    fixes = {
        "cuda": Fix(
            text=(
                "The {dtype} matrix product runs on the FMA pipes ({fma_pct:.0f}% busy). Call cuBLAS/CUTLASS, or "
                "compute 16×16×16 tiles with nvcuda::wmma fragments loaded from the shared-memory tiles."
            ),
            code=(
                "#include <mma.h>\nusing namespace nvcuda;\n"
                "wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;\n"
                "wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;\n"
                "wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;\n"
                "wmma::fill_fragment(c, 0.f);\n"
                "for (int k0 = 0; k0 < 32; k0 += 16) {\n"
                "  wmma::load_matrix_sync(a, &As[warp_row][k0], 32 + 8);   // padded tiles\n"
                "  wmma::load_matrix_sync(b, &Bs[k0][warp_col], 32 + 8);\n"
                "  wmma::mma_sync(c, a, b, c);\n}"
            ),
        ),
        "triton": Fix(
            text=(
                "Compute the product with `tl.dot` on BLOCK_M×BLOCK_K and BLOCK_K×BLOCK_N tiles (≥ 16 in each "
                "dimension) so Triton emits tensor-core MMA instructions; for float32 inputs pass "
                '`input_precision="tf32"`.'
            ),
            code="acc = tl.dot(a, b, acc)   # tensor cores; BLOCK_* >= 16",
        ),
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        fma_flops, tensor = fma_and_tensor_flops(r)
        if fma_flops < t["min_gflop"] * 1e9 or tensor > 0.05 * fma_flops:
            return None
        fma_pct = k.m(ComputeWorkloadAnalysis.FMA_PIPE_PCT) or 0.0
        if fma_pct < t["min_fma_pct"]:
            return None
        fma_warp_inst = fma_flops / 2 / 32
        loads = (k.m(InstructionStats.GLOBAL_LOAD_INST) or 0) + (k.m(InstructionStats.SHARED_LOAD_INST) or 0)
        if loads < t["min_loads_per_fma"] * fma_warp_inst:
            return None
        sizes = [
            access_bytes(v["sass"], v.get(SourceCounters.MEMORY_ACCESS_SIZE_TYPE))
            for v in per_pc(k, SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE).values()
            if v.get(SourceCounters.MEMORY_TYPE) == MEMORY_TYPE_GLOBAL
        ]
        half = any(s == 2 for s in sizes if s)
        dtype = "FP16/BF16" if half else "TF32 (or BF16)"
        new_ns = (r.duration_ns or 0) * (1 - fma_pct / 100)
        # the product's inner loop: the lines whose FMA instructions run most (FFMA, HFMA2, DFMA)
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=3,
            min_share=0.0,
            sass_filter=lambda sass: "FMA" in opcode(sass).split(".")[0],
        )
        return self.finding(
            title=f"{fma_flops / 1e9:.1f} GFLOP of matrix work on FMA pipes, none on tensor cores",
            message=(
                f"The kernel computes {fma_flops / 1e9:.1f} GFLOP with FMA instructions fed from memory "
                f"({loads / fma_warp_inst:.2f} loads per FMA), the FMA pipe {fma_pct:.0f}% busy and the tensor "
                "cores idle."
            ),
            fix=self.fix_for(k, dtype=dtype, fma_pct=fma_pct),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, None),
            speedup_model=(
                f"The FMA pipe's busy time, {fma_pct:.0f}% of the kernel, moves to the tensor cores, which take a "
                f"small part of it: the time falls by up to {fma_pct:.0f}%."
            ),
            confidence="medium",
            changes_floor=True,
            evidence=[
                Evidence(
                    ComputeWorkloadAnalysis.FMA_PIPE_PCT,
                    round(fma_pct, 1),
                    t["min_fma_pct"],
                    "FMA pipe busy",
                    "%",
                ),
                Evidence("loads_per_fma", round(loads / fma_warp_inst, 3), t["min_loads_per_fma"]),
                Evidence("tensor_flops", tensor, None, "tensor-core FLOPs"),
            ],
            # the product moves from the FMA pipe to the tensor pipe: that one from idle to busy, this one freed
            predicts=[
                predict("tensor_pipe_pct", k.m(TENSOR_PIPE_PCT) or 0.0, None, TENSOR_BUSY_PCT, ">="),
                predict("fma_pipe_pct", fma_pct, None, fma_pct / 2),
            ],
            source=lines,
        )
