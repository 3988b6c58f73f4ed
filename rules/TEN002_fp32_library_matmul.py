import re

from ncuadvisor.rulekit import (
    LIBRARY_TENSOR_EFFICIENCY,
    MOVES_TO_TENSOR,
    PRACTICAL_FRACTION,
    TENSOR_BUSY_PCT,
    TENSOR_PIPE_PCT,
    ComputeWorkloadAnalysis,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    Rule,
    SpeedOfLight,
    compulsory_ns,
    fixed_kernel_ns,
    fmt_ns,
    predict,
    product_on_fma_pipes,
    table_peak,
    time_after,
)

# cuDNN names its convolution kernels by pass (fprop, dgrad, wgrad) or algorithm; the layout follows the types
# (`..._nchwkcrs_nchw_...`: NCHW activations, KCRS filters)
CONVOLUTION = re.compile(r"fprop|dgrad|wgrad|implicit_gemm|implicit_precomp|conv|winograd|fft_", re.IGNORECASE)
NCHW = re.compile(r"nchw", re.IGNORECASE)


class Fp32LibraryMatmul(Rule):
    """A cuBLAS/cuDNN matrix product or convolution computed in FP32 on the FMA pipes, the tensor cores idle.

    What it detects:
        A library kernel with at least `min_gflop` GFLOP of FP32 work, tensor-core work under `max_tensor_share`
        of it, and FP32 the precision that sets its compute floor (the FMA pipe at least `min_fma_pct` busy when the
        report has it). PyTorch runs `matmul`/`conv` in strict FP32 like this by default for matrix products
        (`torch.backends.cuda.matmul.allow_tf32 = False`) and whenever TF32 was switched off. Weakest evidence (ncu's
        basic set: no FLOP count): Speed Of Light's pipe utilisation as TEN001 reads it (`product_on_fma_pipes`):
        the FMA pipe at least `min_fma_pct_weak` of the elapsed time, the tensor pipe idle, the load/store pipe at
        least `min_lsu_pct_weak` busy, the XU at most `max_xu_per_fma_weak` of the FMA pipe; the FP32 work is then
        the FMA pipe's busy share at the FP32 peak, and the peaks the report lacks come from the architecture table
        (`table_peak`, said in the message and the evidence), with low confidence.

    Why it costs time:
        An H100/H200 delivers about 67 TFLOP/s of FP32 on its FMA pipes and about 495 TFLOP/s of TF32 (990 of BF16)
        on its tensor cores: the same product with TF32 inputs runs 5-8× faster. Convolutions in NCHW also pay for
        layout transforms around the tensor-core kernels; cuDNN's fast kernels want NHWC (`channels_last`).

    Example:
        torch.backends.cuda.matmul.allow_tf32 = False      # the default for matmul
        y = x @ w                                          # fp32: sm80_xmma_gemm_f32f32_..._ffma_...

    Use instead:
        `torch.set_float32_matmul_precision("high")` (or `torch.backends.cuda.matmul.allow_tf32 = True`) and
        `torch.backends.cudnn.allow_tf32 = True`: TF32 keeps FP32 storage and a 10-bit mantissa in the product; or run
        the region under `torch.autocast("cuda", dtype=torch.bfloat16)`. Convolutions: also
        `model.to(memory_format=torch.channels_last)` and the input `x.to(memory_format=torch.channels_last)`.

    Speedup estimate:
        The time of the fixed kernel: on the tensor cores it is bound by the largest of its FLOPs at
        `LIBRARY_TENSOR_EFFICIENCY` (81.5%) of the TF32 tensor peak (the median share of their tensor peak that the
        cuBLAS/nvjet GEMMs of at least 20 GFLOP in this project's H200 captures reached: 0.71 to 0.88; since
        2026-12-06, 85% before), its compulsory bytes (`rulekit.models.compulsory_bytes`) at DRAM bandwidth and
        DRAM's traffic as it ran (the fix keeps the bytes), those at 85% of peak (the practical fraction). A
        convolution in NCHW adds cuDNN's layout transforms around its NHWC tensor-core kernel, a read and a write of
        its input and output: twice its compulsory bytes at DRAM bandwidth, at 85%. Measured
        on an H200: a 4096³ product 2,777 → 395 µs with TF32, an fp32 NCHW 3×3 convolution 285 → 68 µs with TF32 and
        channels_last. One fix at a time (H200, 2026-12-01, the same convolution): TF32 alone 300 → 104 µs, then
        channels_last 104 → 75 µs; channels_last with TF32 off made it slower (300 → 355 µs): NHWC pays off on the
        tensor cores, not on the FMA pipes, so TF32 comes first.

    False positives:
        Code that needs full FP32 products (ill-conditioned solves, some loss scales): TF32 rounds the inputs to a
        10-bit mantissa; the finding then says what FP32 costs.
    """

    code = "TEN002"
    slug = "fp32-library-matmul"
    category = "tensor-cores"
    title = "FP32 library matrix product on FMA pipes: enable TF32"
    switch = True  # TF32 is one setting for every FP32 cuBLAS/cuDNN call of the program
    requires = (SpeedOfLight.DURATION,)
    optional = (ComputeWorkloadAnalysis.FMA_PIPE_PCT,)
    thresholds = {
        "min_gflop": 1.0,
        "max_tensor_share": 0.05,
        "min_fma_pct": 30.0,
        "min_fma_pct_weak": 80.0,
        "min_lsu_pct_weak": 5.0,
        "max_xu_per_fma_weak": 0.05,
        "max_tensor_pct_weak": 1.0,
    }
    languages = ("library",)
    fixes = {
        "library": Fix(
            text=(
                "Allow TF32 with torch.set_float32_matmul_precision('high') (and torch.backends.cudnn.allow_tf32 = "
                "True for convolutions), or run the region under torch.autocast('cuda', dtype=torch.bfloat16). This "
                "{what} runs in strict FP32 on the FMA pipes ({gflop:.1f} GFLOP, tensor cores idle); the one setting "
                "covers every FP32 matmul and convolution of the program."
            ),
            code=(
                "torch.set_float32_matmul_precision('high')   # TF32 tensor cores for fp32 matmul\n"
                "torch.backends.cuda.matmul.allow_tf32 = True\n"
                "torch.backends.cudnn.allow_tf32 = True\n"
                "# or: with torch.autocast('cuda', dtype=torch.bfloat16): y = model(x)"
            ),
        ),
    }
    fixes_when = {
        "nchw": {
            "library": Fix(
                text=(
                    "First allow TF32 with torch.backends.cudnn.allow_tf32 = True and "
                    "torch.set_float32_matmul_precision('high'), or autocast to bf16: this NCHW convolution runs in "
                    "strict FP32 on the FMA pipes ({gflop:.1f} GFLOP, tensor cores idle). Then switch the model and its "
                    "input to channels_last so cuDNN picks its NHWC tensor-core kernels without layout transforms. "
                    "channels_last alone, still in FP32 on the FMA pipes, does not help (on an H200 it made a 3×3 "
                    "convolution 18% slower)."
                ),
                code=(
                    "torch.backends.cudnn.allow_tf32 = True\n"
                    "torch.set_float32_matmul_precision('high')\n"
                    "model = model.to(memory_format=torch.channels_last)\n"
                    "x = x.to(memory_format=torch.channels_last)"
                ),
            ),
        },
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        if r.flops_by_precision.get("fp32") is None:  # the report counts no FLOPs (ncu's basic set)
            return self._from_pipes(k)
        fp32 = r.flops_by_precision.get("fp32", 0.0)
        tensor = sum(v for p, v in r.flops_by_precision.items() if p.startswith("tensor"))
        if fp32 < t["min_gflop"] * 1e9 or tensor > t["max_tensor_share"] * fp32 or not r.duration_ns:
            return None
        if r.limiting_precision not in (None, "fp32"):
            return None
        fma_pct = k.m(ComputeWorkloadAnalysis.FMA_PIPE_PCT)
        if fma_pct is not None and fma_pct < t["min_fma_pct"]:
            return None
        peak = r.peak_flops_per_s.get("tensor_tf32")
        if not peak:
            return None
        name = k.kernel.demangled or k.kernel.name
        conv = bool(CONVOLUTION.search(name))
        nchw = conv and bool(NCHW.search(name))
        tensor_ns = fp32 / peak * 1e9
        # the fixed kernel: the product on the tensor pipe at the share of its peak library GEMMs reach, no less than
        # the compulsory bytes and DRAM's traffic as it ran (the same operands and tiles move) at 85% of DRAM's peak
        new_ns = fixed_kernel_ns(k, tensor_ns / LIBRARY_TENSOR_EFFICIENCY, MOVES_TO_TENSOR)
        # NCHW: cuDNN's TF32 kernels are NHWC, the input and output transposed around them (read + write each)
        new_ns += 2.0 * (compulsory_ns(r) or 0.0) if nchw else 0.0
        what = "convolution" if conv else "matrix product"
        evidence = [
            Evidence("fp32_flops", fp32, t["min_gflop"] * 1e9, "FP32 FLOPs (the threshold: min_gflop in FLOPs)"),
            Evidence("tensor_flops", tensor, round(t["max_tensor_share"] * fp32), "tensor-core FLOPs"),
        ]
        if fma_pct is not None:
            evidence.append(
                Evidence(
                    ComputeWorkloadAnalysis.FMA_PIPE_PCT, round(fma_pct, 1), t["min_fma_pct"], "FMA pipe busy", "%"
                )
            )
        return self.finding(
            title=f"FP32 {what} on FMA pipes: {fp32 / 1e9:.1f} GFLOP, tensor cores idle",
            message=(
                f"This library {what} computes {fp32 / 1e9:.1f} GFLOP in strict FP32 on the FMA pipes in "
                f"{fmt_ns(r.duration_ns)}; with TF32 the tensor cores do it at {peak / 1e12:.0f} TFLOP/s "
                f"({fmt_ns(tensor_ns)} at peak)" + (", and its NCHW layout adds layout transforms." if nchw else ".")
            ),
            fix=self.fix_for(k, "nchw" if nchw else (), what=what, gflop=fp32 / 1e9),
            estimated_speedup=time_after(r.duration_ns, new_ns, None),
            speedup_model=(
                f"The fixed kernel: on TF32 tensor cores it takes the longest of its FLOPs at "
                f"{LIBRARY_TENSOR_EFFICIENCY:.1%} of the TF32 peak (the share cuBLAS/nvjet GEMMs reached in this "
                "project's captures), its compulsory bytes and DRAM's traffic as it ran"
                + (", plus the NCHW layout transforms (its input and output read and written again)" if nchw else "")
                + f", those at {PRACTICAL_FRACTION:.0%} of DRAM's peak: {fmt_ns(new_ns)}."
            ),
            confidence="high" if fma_pct is not None else "medium",
            changes_floor=True,
            evidence=evidence,
            # TF32 moves the product onto the tensor pipe: from idle to busy
            predicts=[predict("tensor_pipe_pct", k.m(TENSOR_PIPE_PCT) or 0.0, None, TENSOR_BUSY_PCT, ">=")],
        )

    def _from_pipes(self, k: KernelContext) -> Finding | None:
        """The weakest evidence (no FLOP count): Speed Of Light's pipe utilisation, as TEN001's weak path reads it."""
        r, t = k.roofline, self.thresholds
        shares = product_on_fma_pipes(r, t)
        fp32_at, tf32_at = table_peak(k, "fp32"), table_peak(k, "tensor_tf32")
        if shares is None or not r.duration_ns or not fp32_at or not tf32_at:
            return None
        fma, tensor, lsu, xu = shares.fma, shares.tensor, shares.lsu, shares.xu
        (fp32_peak, fp32_src), (peak, peak_src) = fp32_at, tf32_at
        sources = sorted({s for s in (fp32_src, peak_src) if s != "report"})
        said = f" (the peaks: {', '.join(sources)}, at the SM clock measured)" if sources else ""
        # the FMA pipe busy that share of the time at the FP32 peak: the FP32 work, which TF32 moves to the tensor pipe
        fp32 = fma / 100 * r.duration_ns * 1e-9 * fp32_peak
        tensor_ns = fp32 / peak * 1e9
        new_ns = fixed_kernel_ns(k, tensor_ns / LIBRARY_TENSOR_EFFICIENCY, MOVES_TO_TENSOR)
        name = k.kernel.demangled or k.kernel.name
        what = "convolution" if CONVOLUTION.search(name) else "matrix product"
        return self.finding(
            title=f"FMA pipe {fma:.0f}% busy, tensor cores idle: an FP32 library {what} on FMA pipes",
            message=(
                f"This library kernel keeps the FMA pipe busy {fma:.0f}% of its {fmt_ns(r.duration_ns)}, the "
                f"load/store pipe {lsu:.0f}% and the tensor cores {tensor:.0f}%: a {what} in strict FP32, about "
                f"{fp32 / 1e9:.1f} GFLOP at the FP32 peak, which TF32 tensor cores do at {peak / 1e12:.0f} TFLOP/s "
                f"({fmt_ns(tensor_ns)} at peak){said}. The report counts no FLOPs (ncu's basic set): the work is "
                "read from the FMA pipe's busy share; the sections SpeedOfLight_RooflineChart and "
                "ComputeWorkloadAnalysis would count it."
            ),
            fix=self.fix_for(k, what=what, gflop=fp32 / 1e9),
            estimated_speedup=time_after(r.duration_ns, new_ns, None),
            speedup_model=(
                f"The FP32 work is the FMA pipe's busy share at the FP32 peak ({fma:.0f}% of the time); the fixed "
                f"kernel takes it at {LIBRARY_TENSOR_EFFICIENCY:.1%} of the TF32 peak, no less than what the other "
                f"units need as executed: {fmt_ns(new_ns)}."
            ),
            confidence="low",
            changes_floor=True,
            evidence=[
                Evidence("fma_pipe_pct", round(fma, 1), t["min_fma_pct_weak"], "FMA pipe busy", "%"),
                Evidence("lsu_pipe_pct", round(lsu, 1), t["min_lsu_pct_weak"], "load/store pipe busy", "%"),
                Evidence("xu_pipe_pct", round(xu, 1), None, "XU (MUFU) pipe busy", "%"),
                Evidence("tensor_pipe_pct", round(tensor, 1), t["max_tensor_pct_weak"], "tensor pipe busy", "%"),
                Evidence("fp32_peak_flops", round(fp32_peak), None, f"FP32 peak ({fp32_src})"),
                Evidence("tf32_peak_flops", round(peak), None, f"TF32 tensor peak ({peak_src})"),
            ],
        )
