from ncuadvisor.rulekit import (
    LIBRARY_TENSOR_EFFICIENCY,
    MEMORY_TYPE_GLOBAL,
    MOVES_TO_TENSOR,
    TENSOR_BUSY_PCT,
    TENSOR_PIPE_PCT,
    ComputeWorkloadAnalysis,
    Evidence,
    Finding,
    Fix,
    FmaStream,
    InstructionStats,
    KernelContext,
    RooflineChart,
    Rule,
    SourceCounters,
    SpeedOfLight,
    access_bytes,
    fixed_kernel_ns,
    fma_and_tensor_flops,
    fma_stream,
    fmt_ns,
    opcode,
    per_pc,
    predict,
    product_on_fma_pipes,
    time_after,
)

FP32_DATA = "the operands are FP32: TF32 tensor cores"
LIBRARY = "a register-blocked product near the FMA roof: a library call"


class FmaMatrixProduct(Rule):
    """A matrix product (or convolution) computed on the FMA pipes instead of the tensor cores.

    What it detects:
        At least `min_gflop` GFLOP of FP32/FP16 FMA work and no tensor-core work, in a stream shaped like a matrix
        product. With the SASS, the shape is read from the instructions: at least `min_product_share` of the
        executed FMAs multiply two data registers and add a third (`acc += a × b`, operands loaded from memory: at
        least `min_loads_per_product_fma` loads per FMA instruction), at most `max_mufu_per_fma` special-function
        instructions per FMA (an N-body step's `MUFU.RSQ` per interaction is a reduction of nonlinear terms, not a
        product; a factor every thread of the grid shares, a single-channel filter's weight, is not a product's
        operand either: `rulekit.models.fma_stream`), and the FMA pipe at least `min_fma_pct_product` busy. A register-blocked SGEMM at its FMA ceiling
        qualifies: its floor is the tensor roof, not the FMA one. Without the SASS: the FMA pipe at least
        `min_fma_pct` busy and loads at least `min_loads_per_fma` per FMA instruction (a chain of FMAs on registers
        does not qualify). Weakest evidence (ncu's basic set: no FLOP count, no instruction statistics, no SASS
        metrics): Speed Of Light's pipe utilisation, the FMA pipe at least `min_fma_pct_weak` of the elapsed time,
        the tensor pipe idle, the load/store pipe at least `min_lsu_pct_weak` busy (the factors come from memory: a
        recurrence on registers leaves it idle) and the XU (MUFU) pipe at most `max_xu_per_fma_weak` of the FMA
        pipe's share (no nonlinear term per product), and, where the report has the SASS, the instruction stream's
        shape as above; the finding is then low confidence, and the
        ComputeWorkloadAnalysis and InstructionStats sections (or SourceCounters' SASS) would confirm it.

    Why it costs time:
        On an H100/H200 the tensor cores deliver about 990 TFLOP/s in FP16/BF16 and 495 in TF32 against 67 TFLOP/s
        on the FMA pipes: a matrix product on FMAs uses 7% of the chip.

    Example:
        acc += __half2float(As[ty][k]) * __half2float(Bs[k][tx]);   // half inputs, scalar FMAs

    Use instead:
        cuBLAS/cuBLASLt or CUTLASS; by hand, `nvcuda::wmma` 16×16×16 fragments (`mma_sync`) from shared-memory tiles,
        or `wgmma` on sm_90a. FP32 data can use TF32 (`wmma::precision::tf32`) if its 10-bit mantissa is accurate
        enough, or be converted to BF16 with FP32 accumulation: the precision trade is named in the finding.

    Speedup estimate:
        Two fixes, two models; the counters pick one. WMMA by hand from the kernel's tiles (an unblocked product, flaws'
        `matmul_half_fma`: 2 FMAs per shared load, 24% of the FMA peak): the FMA-pipe time moves to the tensor
        cores (8-16× faster), new time = time × (1 − FMA pipe utilization), the loads and the rest of the kernel
        remain (2.49× against 2.97× measured for `matmul_half_wmma`). A product already tuned for the FMA pipes
        (at least `min_fma_per_shared_load_library` FMAs per shared-memory load: register blocking; at least
        `min_fma_peak_share_library` of the FMA peak reached) is past what hand-written WMMA improves: the fix
        advised is a library's kernel (cuBLAS/cuBLASLt with TF32 or BF16, CUTLASS), and the fixed kernel's time is
        its FLOPs at `LIBRARY_TENSOR_EFFICIENCY` (81.5%) of the tensor peak of its precision (TF32 for FP32 data,
        FP16 for half inputs), no less than its compulsory bytes and DRAM's traffic as it ran at 85% of DRAM's peak
        (`fixed_kernel_ns`). The 81.5% is the median share of their tensor peak that the cuBLAS/nvjet GEMMs of at
        least 20 GFLOP reached in this project's H200 captures (torch_gemm_conv's TF32 GEMM 0.88, torch_cast_copy's
        two bf16 splitK GEMMs 0.81 and 0.82, torch_eager's bf16 GEMM 0.71; `tests/test_tensor_efficiency.py`);
        smaller products reach less (0.19 at 4.3 GFLOP), so for them the estimate is optimistic. The finding's model
        text gives both estimates. On the llm.c exam twin (H100, 2026-12-06): `matmul_forward_kernel4` (a 128×128-tile
        SGEMM, 8×8 outputs per thread, 16 FMAs per shared load, 53% of the FMA peak) 12.0× against 9.68× measured for
        cuBLASLt's TF32 kernel (2.29× before, the WMMA model).

    False positives:
        Small or skinny products (batched 4×4) that do not fill a 16×16 fragment; elementwise math with many FMAs per
        loaded value does not qualify, nor a recurrence (`x = x × c + d`) or a sum of nonlinear terms (MUFU between
        the FMAs).
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
    weak_evidence = (SpeedOfLight.FMA_PIPE_ELAPSED_PCT,)
    per_instruction = (SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE, SourceCounters.INST_EXECUTED)
    thresholds = {
        "min_fma_pct_weak": 80.0,
        "min_lsu_pct_weak": 5.0,
        "max_xu_per_fma_weak": 0.05,
        "max_tensor_pct_weak": 1.0,
        "min_gflop": 1.0,
        "min_fma_pct": 40.0,
        "min_loads_per_fma": 0.1,
        "min_product_share": 0.5,
        "min_loads_per_product_fma": 0.01,
        "max_mufu_per_fma": 0.03,
        "min_fma_pct_product": 20.0,
        "min_fma_per_shared_load_library": 8.0,
        "min_fma_peak_share_library": 0.4,
    }
    # {dtype}: the tensor-core type to use, "FP16/BF16" for half-precision loads, else "TF32 (or BF16)"
    fixes_when = {
        LIBRARY: {
            "cuda": Fix(
                text=(
                    "This matrix product is already tuned for the FMA pipes: tiles in shared memory, register "
                    "blocking ({fma_per_lds:.0f} FMAs per shared-memory load) and {fma_share:.0%} of the FMA peak. "
                    "Hand-written WMMA from these tiles gains little over it; the {dtype} tensor-core kernels of a "
                    "library do: call "
                    "cuBLAS/cuBLASLt ({library_math}) or CUTLASS for the product, with the bias and activation in "
                    "the epilogue. {trade}"
                ),
                code=(
                    "cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F);   // TF32 tensor cores\n"
                    "cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &bias_epilogue, sizeof(int));\n"
                    "cublasLtMatmul(handle, op, &alpha, W, Wl, X, Xl, &beta, Y, Yl, Y, Yl, &algo, ws, ws_size, stream);\n"
                    "// or: cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH); cublasSgemm(...)"
                ),
            ),
        },
        FP32_DATA: {
            "cuda": Fix(
                text=(
                    "The {dtype} matrix product runs on the FMA pipes ({fma_pct:.0f}% busy). Call cuBLAS/CUTLASS with "
                    "TF32 math on (`cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH)`), or compute 16×16×8 TF32 tiles with "
                    "nvcuda::wmma fragments loaded from the shared-memory tiles. {trade}"
                ),
                code=(
                    "#include <mma.h>\nusing namespace nvcuda;\n"
                    "wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;\n"
                    "wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;\n"
                    "wmma::fragment<wmma::accumulator, 16, 16, 8, float> c;\n"
                    "wmma::fill_fragment(c, 0.f);\n"
                    "for (int k0 = 0; k0 < 32; k0 += 8) {\n"
                    "  wmma::load_matrix_sync(a, &As[warp_row][k0], 32 + 4);   // float tiles, padded\n"
                    "  wmma::load_matrix_sync(b, &Bs[k0][warp_col], 32 + 4);\n"
                    "  for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);\n"
                    "  for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);\n"
                    "  wmma::mma_sync(c, a, b, c);\n}"
                ),
            ),
        },
    }
    fixes = {
        "cuda": Fix(
            text=(
                "The {dtype} matrix product runs on the FMA pipes ({fma_pct:.0f}% busy). Call cuBLAS/CUTLASS, or "
                "compute 16×16×16 tiles with nvcuda::wmma fragments loaded from the shared-memory tiles. {trade}"
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
                '`input_precision="tf32"`. {trade}'
            ),
            code="acc = tl.dot(a, b, acc)   # tensor cores; BLOCK_* >= 16",
        ),
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak:
            return self._from_pipes(k)
        r = k.roofline
        t = self.thresholds
        fma_flops, tensor = fma_and_tensor_flops(r)
        if fma_flops < t["min_gflop"] * 1e9 or tensor > 0.05 * fma_flops:
            return None
        fma_pct = k.m(ComputeWorkloadAnalysis.FMA_PIPE_PCT) or 0.0
        fma_warp_inst = fma_flops / 2 / 32
        loads = (k.m(InstructionStats.GLOBAL_LOAD_INST) or 0) + (k.m(InstructionStats.SHARED_LOAD_INST) or 0)
        stream = fma_stream(k)
        if not self._a_product(stream, fma_pct, loads, fma_warp_inst):
            return None
        half = _half_inputs(k)
        dtype = "FP16/BF16" if half else "TF32 (or BF16)"
        tensor_peak = r.peak_flops_per_s.get("tensor_fp16" if half else "tensor_tf32", 0.0)
        tensor_ns = fma_flops / tensor_peak * 1e9 if tensor_peak else None
        trade = (
            "FP16/BF16 inputs on the tensor cores keep the inputs' precision; accumulate in FP32."
            if half
            else "The precision trade: TF32 keeps FP32's range with a 10-bit mantissa (about 0.1% relative error per "
            "product, FP32 accumulation); BF16 inputs with FP32 accumulation have an 8-bit mantissa and halve the "
            "bytes. Check the accuracy the result needs before switching."
        )
        wmma_ns = (r.duration_ns or 0) * (1 - fma_pct / 100)
        library = self._library_case(k, fma_flops, loads, fma_warp_inst)
        library_ns = (
            fixed_kernel_ns(k, fma_flops / (LIBRARY_TENSOR_EFFICIENCY * tensor_peak) * 1e9, MOVES_TO_TENSOR)
            if tensor_peak
            else None
        )
        new_ns = library_ns if library and library_ns else wmma_ns
        # the product's inner loop: the lines whose FMA instructions run most (FFMA, HFMA2, DFMA)
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=3,
            min_share=0.0,
            sass_filter=lambda sass: "FMA" in opcode(sass).split(".")[0],
        )
        return self.finding(
            title=f"{fma_flops / 1e9:.1f} GFLOP of matrix work on FMA pipes, none on tensor cores",
            message=_message(k, fma_flops, loads / fma_warp_inst, stream, fma_pct, tensor_peak, dtype, tensor_ns),
            fix=self.fix_for(
                k,
                ([] if half else [FP32_DATA]) + ([LIBRARY] if library and library_ns else []),
                dtype=dtype,
                fma_pct=fma_pct,
                trade=trade,
                fma_per_lds=library[0] if library else 0.0,
                fma_share=library[1] if library else 0.0,
                library_math="FP16/BF16 inputs, FP32 compute" if half else "`CUBLAS_COMPUTE_32F_FAST_TF32`",
            ),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, None),
            speedup_model=self._model_text(k, fma_pct, fma_flops, tensor_peak, dtype, library, library_ns, wmma_ns),
            confidence="medium",
            changes_floor=True,
            evidence=_evidence(t, fma_pct, loads / fma_warp_inst, stream, tensor),
            # the product moves from the FMA pipe to the tensor pipe: that one from idle to busy, this one freed
            predicts=[
                predict("tensor_pipe_pct", k.m(TENSOR_PIPE_PCT) or 0.0, None, TENSOR_BUSY_PCT, ">="),
                predict("fma_pipe_pct", fma_pct, None, fma_pct / 2),
            ],
            source=lines,
        )

    def _a_product(self, stream: FmaStream | None, fma_pct: float, loads: float, fma_warp_inst: float) -> bool:
        """Whether the FMA work is a matrix product fed from memory: the instruction stream decides where the SASS
        is at hand (a product of loaded operands, nothing nonlinear between the FMAs), else the loads per FMA."""
        t = self.thresholds
        if stream is not None and stream.fma:
            if stream.mufu_per_fma > t["max_mufu_per_fma"] or stream.product_share < t["min_product_share"]:
                return False
            return fma_pct >= t["min_fma_pct_product"] and loads >= t["min_loads_per_product_fma"] * fma_warp_inst
        return fma_pct >= t["min_fma_pct"] and loads >= t["min_loads_per_fma"] * fma_warp_inst

    def _library_case(
        self, k: KernelContext, fma_flops: float, loads: float, fma_warp_inst: float
    ) -> tuple[float, float] | None:
        """(FMAs per shared-memory load, share of the FMA peak reached) when the counters show a tuned SGEMM: operands
        from shared-memory tiles, each shared load feeding at least `min_fma_per_shared_load_library` FMAs (register
        blocking: 8×8 outputs per thread read 16 values per 64 FMAs), at least `min_fma_peak_share_library` of the FMA
        peak. Such a kernel is past what hand-written WMMA from its tiles improves; the fix is a library's kernel.
        None otherwise."""
        r, t = k.roofline, self.thresholds
        shared = k.m(InstructionStats.SHARED_LOAD_INST) or 0.0
        fp16 = r.flops_by_precision.get("fp16", 0.0)
        peak = r.peak_flops_per_s.get("fp16" if fp16 > fma_flops / 2 else "fp32", 0.0)
        if not shared or not peak or not r.duration_ns:
            return None
        per_lds, share = fma_warp_inst / shared, fma_flops / (r.duration_ns * 1e-9) / peak
        if per_lds < t["min_fma_per_shared_load_library"] or share < t["min_fma_peak_share_library"]:
            return None
        return per_lds, share

    @staticmethod
    def _model_text(
        k: KernelContext,
        fma_pct: float,
        fma_flops: float,
        tensor_peak: float,
        dtype: str,
        library: tuple[float, float] | None,
        library_ns: float | None,
        wmma_ns: float,
    ) -> str:
        """How the fixed kernel's time was modelled: WMMA by hand from the kernel's tiles, or a library's kernel."""
        wmma = (
            f"The FMA pipe's busy time, {fma_pct:.0f}% of the kernel, moves to the tensor cores, which take a small "
            f"part of it: the time falls by up to {fma_pct:.0f}%"
        )
        if not (library and library_ns):
            return wmma + "."
        dur = k.roofline.duration_ns or 0.0
        kind = dtype.split(" ")[0]
        return (
            f"The product moves to a library's tensor-core kernel: {fma_flops / 1e9:.1f} GFLOP at "
            f"{LIBRARY_TENSOR_EFFICIENCY:.1%} of the {kind} tensor peak ({tensor_peak / 1e12:.0f} TFLOP/s; the "
            "share cuBLAS/nvjet GEMMs reached in this project's captures), no less than its compulsory bytes and "
            f"DRAM's traffic as it ran at 85% of DRAM's peak: {fmt_ns(library_ns)} against {fmt_ns(dur)} now "
            f"({dur / library_ns:.1f}×). Hand-written WMMA from these tiles (the model of an unblocked kernel: "
            f"the FMA pipe's busy time, {fma_pct:.0f}%, moves to the tensor cores) would give "
            f"{dur / max(wmma_ns, 1e-9):.1f}×; a kernel already register-blocked at {library[1]:.0%} of the FMA "
            "peak is past what that improves, so the finding takes the library's estimate."
        )

    def _from_pipes(self, k: KernelContext) -> Finding | None:
        """The weakest evidence: Speed Of Light's pipe utilisation alone (no FLOPs counted, no SASS metrics)."""
        t, r = self.thresholds, k.roofline
        shares = product_on_fma_pipes(r, t)
        if shares is None:
            return None
        fma, tensor, lsu, xu = shares.fma, shares.tensor, shares.lsu, shares.xu
        stream = fma_stream(k)  # a report with the SASS but not the pipe statistics: the instructions decide
        if stream is not None and stream.fma:
            if stream.mufu_per_fma > t["max_mufu_per_fma"] or stream.product_share < t["min_product_share"]:
                return None
        trade = (
            "The precision trade: TF32 keeps FP32's range with a 10-bit mantissa; BF16 inputs with FP32 accumulation "
            "have an 8-bit mantissa. Check the accuracy the result needs before switching."
        )
        new_ns = (r.duration_ns or 0) * (1 - fma / 100)
        return self.finding(
            title=f"FMA pipe {fma:.0f}% busy with loads feeding it, tensor cores idle: a matrix product on FMAs?",
            message=(
                f"The FMA pipe is busy {fma:.0f}% of the time, the load/store pipe {lsu:.0f}% (the factors come from "
                f"memory), the XU {xu:.0f}% (no nonlinear term per product) and the tensor cores {tensor:.0f}%: the "
                "shape of a matrix product or convolution computed on the FMA pipes, whose floor is the tensor roof "
                "where the precision allows."
            ),
            fix=self.fix_for(k, FP32_DATA, dtype="TF32 (or BF16)", fma_pct=fma, trade=trade),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, None),
            speedup_model=(
                f"The FMA pipe's busy time, {fma:.0f}% of the kernel, moves to the tensor cores, which take a small "
                f"part of it: the time falls by up to {fma:.0f}%."
            ),
            changes_floor=True,
            evidence=[
                Evidence(SpeedOfLight.FMA_PIPE_ELAPSED_PCT, round(fma, 1), t["min_fma_pct_weak"], "FMA pipe busy", "%"),
                Evidence("lsu_pipe_pct", round(lsu, 1), t["min_lsu_pct_weak"], "load/store pipe busy", "%"),
                Evidence("xu_pipe_pct", round(xu, 1), None, "XU (MUFU) pipe busy", "%"),
                Evidence("tensor_pipe_pct", round(tensor, 1), t["max_tensor_pct_weak"], "tensor pipe busy", "%"),
            ],
        )


def _half_inputs(k: KernelContext) -> bool:
    """Whether the kernel's global accesses include 2-byte ones (FP16/BF16 inputs), by its SASS."""
    sizes = [
        access_bytes(v["sass"], v.get(SourceCounters.MEMORY_ACCESS_SIZE_TYPE))
        for v in per_pc(k, SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE).values()
        if v.get(SourceCounters.MEMORY_TYPE) == MEMORY_TYPE_GLOBAL
    ]
    return any(s == 2 for s in sizes if s)


def _evidence(
    t: dict[str, float], fma_pct: float, loads_per_fma: float, stream: FmaStream | None, tensor: float
) -> list[Evidence]:
    """The finding's evidence: the FMA pipe's busy share and the loads per FMA against the thresholds of the
    instruction stream's test (when the SASS shows the FMAs) or the counters' one, the product share, the tensor
    FLOPs."""
    return [
        Evidence(
            ComputeWorkloadAnalysis.FMA_PIPE_PCT,
            round(fma_pct, 1),
            t["min_fma_pct_product"] if stream is not None and stream.fma else t["min_fma_pct"],
            "FMA pipe busy",
            "%",
        ),
        Evidence(
            "loads_per_fma",
            round(loads_per_fma, 3),
            t["min_loads_per_product_fma"] if stream is not None and stream.fma else t["min_loads_per_fma"],
        ),
        *(
            [Evidence("product_fma_share", round(stream.product_share, 3), t["min_product_share"])]
            if stream is not None and stream.fma
            else []
        ),
        Evidence("tensor_flops", tensor, None, "tensor-core FLOPs"),
    ]


def _message(
    k: KernelContext,
    fma_flops: float,
    loads_per_fma: float,
    stream: FmaStream | None,
    fma_pct: float,
    tensor_peak: float,
    dtype: str,
    tensor_ns: float | None,
) -> str:
    """The finding's message: the FMA work, its loads, the pipes, and the tensor roof where the precision allows."""
    said = f"The kernel computes {fma_flops / 1e9:.1f} GFLOP with FMA instructions fed from memory ({loads_per_fma:.2f} loads per FMA"
    if stream:
        said += f"; {stream.product_share:.0%} of the FMAs accumulate a product of two loaded values"
    said += f"), the FMA pipe {fma_pct:.0f}% busy and the tensor cores idle."
    if tensor_ns:
        said += (
            f" Its floor is the tensor roof where the precision allows: {fma_flops / 1e9:.1f} GFLOP at "
            f"{tensor_peak / 1e12:.0f} TFLOP/s ({dtype.split(' ')[0]}) take {fmt_ns(tensor_ns)}, against "
            f"{fmt_ns(k.roofline.duration_ns)} now."
        )
    return said
