from ncuadvisor.rulekit import (
    MEMORY_TYPE_GLOBAL,
    PRACTICAL_FRACTION,
    ComputeWorkloadAnalysis,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    RooflineChart,
    Rule,
    SourceCounters,
    SpeedOfLight,
    access_bytes,
    per_pc,
    predict,
    time_after,
)


class Fp64InFp32Code(Rule):
    """Double-precision arithmetic in a kernel whose data is 32-bit: usually an unsuffixed literal (`1.5`).

    What it detects:
        FP64 FLOPs (`smsp__sass_thread_inst_executed_op_d{fma,add,mul}_pred_on`) above `min_fp64_share` of the
        kernel's FLOPs, while its global loads and stores are at most 32 bits wide (`memory_access_size_type`).
        Where the report does not count FLOPs by precision (ncu's default set), from the FP64 pipe's share alone:
        busy at least `min_fp64_pipe_pct` of the time on a board whose FP64 rate is below `max_fp64_ratio` of its
        FP32 rate (GeForce, T4, L4, A10, A40: 1/32 to 1/64), with medium confidence.

    Why it costs time:
        In C++ `x * 1.5` promotes a float to double: the FP64 pipe runs at 1/2 of the FP32 rate on an H100/H200 and
        at 1/64 on most other GPUs, and each conversion (F2F) costs extra instructions.

    Example:
        float y = x * 1.0001 + 0.5;          // double literals: computed in double

    Use instead:
        `float y = fmaf(x, 1.0001f, 0.5f);` (f-suffixed literals, float math functions: `sinf`, `expf`);
        `-Xptxas -warn-double-usage` lists the double instructions.

    Speedup estimate:
        The pipe that carries the double work (FP64, or XU where float/double conversions F2F run) is freed: new time
        = time × (1 − its utilization), not below all the FLOPs at 85% of the FP32 peak (read from the report).
        From the FP64 pipe's share alone: time × (1 − its utilization).

    False positives:
        Kernels that need double precision (accumulating long sums, ill-conditioned math): keep the accumulator in
        double and the rest in float, or use Kahan summation in float. From the FP64 pipe's share alone the data
        width is not known: a kernel that is double throughout fires too (said in its message).
    """

    code = "PRC001"
    slug = "fp64-in-fp32-code"
    category = "precision"
    title = "Double-precision math in a float kernel"
    requires = (SpeedOfLight.DURATION,)
    optional = (
        RooflineChart.DFMA_PER_CYCLE,
        ComputeWorkloadAnalysis.FP64_PIPE_PCT,
        ComputeWorkloadAnalysis.XU_PIPE_PCT,
    )
    per_instruction = (SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE, SourceCounters.INST_EXECUTED)
    thresholds = {"min_fp64_share": 0.3, "min_fp64_pipe_pct": 30.0, "max_fp64_ratio": 0.125}
    fixes = {
        "cuda": Fix(
            text=(
                "Add the `f` suffix to floating-point literals and use float math functions (sinf, expf, fmaf) at "
                "the lines below; compile with `-Xptxas -warn-double-usage` to find the rest."
            ),
            code="y = fmaf(y, 1.0001f, 0.5f);   // was: y = y * 1.0001 + 0.5;",
        ),
        "triton": Fix(
            text=(
                "Float64 math in a Triton kernel whose tensors are float32: a Python float constant combined with "
                "an fp64 tensor, or `.to(tl.float64)`; keep constants and intermediates in tl.float32."
            ),
            code="y = x * 1.0001 + 0.5   # with x: tl.float32, stays float32 in Triton",
        ),
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        if "fp64" not in r.flops_by_precision:
            return self.from_pipe_share(k)
        fp64 = r.flops_by_precision.get("fp64", 0.0)
        if not r.flops or fp64 / r.flops < self.thresholds["min_fp64_share"]:
            return None
        sizes = [
            access_bytes(v["sass"], v.get(SourceCounters.MEMORY_ACCESS_SIZE_TYPE))
            for v in per_pc(k, SourceCounters.MEMORY_TYPE, SourceCounters.MEMORY_ACCESS_SIZE_TYPE).values()
            if v.get(SourceCounters.MEMORY_TYPE) == MEMORY_TYPE_GLOBAL
        ]
        if any(s == 8 for s in sizes):
            return None  # 64-bit data: double is probably intended
        p64, p32 = r.peak_flops_per_s.get("fp64"), r.peak_flops_per_s.get("fp32")
        if not p64 or not p32 or not r.duration_ns:
            return None
        conversions = [e for e in k.per_instruction(SourceCounters.INST_EXECUTED) if (e.sass or "").startswith("F2F")]
        pipe = k.m(ComputeWorkloadAnalysis.FP64_PIPE_PCT) or 0.0
        if conversions:  # float<->double conversions run on the XU pipe
            pipe = max(pipe, k.m(ComputeWorkloadAnalysis.XU_PIPE_PCT) or 0.0)
        fp32_ns = r.flops / p32 * 1e9 / PRACTICAL_FRACTION  # all the work at the FP32 peak
        new_ns = max(r.duration_ns * (1 - pipe / 100), fp32_ns)
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=3,
            min_share=0.0,
            sass_filter=lambda s: s.startswith(("DFMA", "DADD", "DMUL", "F2F.F64", "F2F.F32.F64")),
        )
        return self.finding(
            title=f"FP64 arithmetic in float code: {fp64 / r.flops:.0%} of FLOPs in double",
            message=(
                f"{fp64 / 1e9:.2f} GFLOP run in double precision although the kernel's data is 32-bit; this GPU's "
                f"FP64 peak is {p64 / 1e12:.1f} TFLOP/s against {p32 / 1e12:.1f} for FP32."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns, new_ns, None),
            speedup_model=(
                f"The busiest pipe carrying the double work (FP64, or XU for the conversions) is {pipe:.0f}% busy; "
                f"freed of it, the time falls by up to {pipe:.0f}%, not below all the FLOPs at 85% of the FP32 "
                "peak."
            ),
            confidence="high",
            changes_floor=True,
            # in float, the arithmetic leaves the FP64 pipe: idle but for a tenth of what it did
            predicts=[predict("fp64_pipe_pct", fp64_pct, 0.0, max(1.0, fp64_pct / 10))]
            if (fp64_pct := k.m(ComputeWorkloadAnalysis.FP64_PIPE_PCT))
            else None,
            evidence=[
                Evidence("fp64_flop_share", round(fp64 / r.flops, 3), self.thresholds["min_fp64_share"]),
                Evidence("peak_fp64_over_fp32", round(p64 / p32, 3), None, "FP64 ÷ FP32 peak"),
            ],
            source=lines,
        )

    def from_pipe_share(self, k: KernelContext) -> Finding | None:
        """No FLOPs counted by precision: the FP64 pipe's busy share on a board with a slow FP64 pipe."""
        r = k.roofline
        busy, ratio = r.busy_pct.get("fp64"), r.fp64_ratio
        if not (busy and ratio and r.duration_ns) or ratio >= self.thresholds["max_fp64_ratio"]:
            return None
        if busy < self.thresholds["min_fp64_pipe_pct"]:
            return None
        return self.finding(
            title=f"FP64 pipe {busy:.0f}% busy on a GPU with 1/{1 / ratio:.0f}-rate double precision",
            message=(
                f"The FP64 pipe is busy {busy:.0f}% of the time, and this GPU runs double precision at 1/{1 / ratio:.0f} "
                "of its float rate. The report does not count FLOPs by precision, so whether the data is double "
                "cannot be told here: in float code this is nearly always an accidental promotion."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns, r.duration_ns * (1 - busy / 100), None),
            speedup_model=(
                f"The FP64 pipe is {busy:.0f}% busy; freed of the double work, the time falls by up to {busy:.0f}% "
                "(the float work it becomes is not counted in this report)."
            ),
            confidence="medium",
            changes_floor=True,
            evidence=[
                Evidence("fp64_pipe_pct", round(busy, 1), self.thresholds["min_fp64_pipe_pct"]),
                Evidence("peak_fp64_over_fp32", round(ratio, 4), self.thresholds["max_fp64_ratio"], "FP64 ÷ FP32 rate"),
            ],
        )
