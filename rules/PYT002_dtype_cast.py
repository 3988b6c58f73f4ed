from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryWorkloadAnalysis,
    Rule,
    SpeedOfLight,
    cast_types,
    copy_kind,
    fmt_bytes,
    fmt_ns,
    predict,
)


class DtypeCast(Rule):
    """An eager PyTorch dtype cast (`x.to(torch.bfloat16)`, `.float()`, autocast's casts of FP32 weights and inputs)
    running as a kernel of its own.

    What it detects:
        ATen copy kernels that change the dtype, taking at least `min_time_share` of the program's GPU time: the
        kernel names the cast (`bfloat16_copy_kernel_cuda(...)::[lambda(float)]`: float32 → bfloat16; the generic
        copy's `LoadWithCast`/`StoreWithCast`), or DRAM reads and writes differ by the ratio of two element sizes
        (4 bytes read per 2 written).

    Why it costs time:
        A cast reads the whole tensor and writes it again in another type, and computes nothing. Under
        `torch.autocast` every FP32 weight is cast again on each forward pass; a `.float()` before a reduction and a
        `.to(bf16)` after it make two round trips through HBM.

    Example:
        x = torch.randn(8192, 8192, device="cuda")      # fp32
        y = x.to(torch.bfloat16) @ w                      # a bfloat16_copy kernel, then the GEMM

    Use instead:
        Keep the tensor in the dtype its consumer wants: create it in bf16 (`dtype=torch.bfloat16`), convert
        parameters once (`model.to(torch.bfloat16)`, or cache the cast weights outside the loop) instead of casting
        each step; or `torch.compile` the region so Inductor fuses the cast into the kernel that produces or consumes
        the tensor.

    Speedup estimate:
        The cast kernel disappears: its whole time (a producer that writes the narrow type directly also writes
        fewer bytes, not counted).
        The counter the fix moves: the cast kernel's launches, to 0 (at most half of them left after).

    False positives:
        A cast that is needed once (an input arriving in FP32 from the host); the finding then says what it costs.
        This is not a layout copy (PYT001): a cast keeps the layout and changes the type. The casts of a
        cross-entropy computed by eager kernels (autocast's fp32 upcast at the loss, its gradient's downcast) belong
        to that loss, which PYT005 owns whole: there this finding is suppressed with PYT005 named.
    """

    code = "PYT002"
    slug = "dtype-cast"
    category = "fusion"
    title = "Dtype cast in eager PyTorch"
    requires = (SpeedOfLight.DURATION,)
    optional = (MemoryWorkloadAnalysis.DRAM_BYTES_READ, MemoryWorkloadAnalysis.DRAM_BYTES_WRITE)
    thresholds = {"min_time_share": 0.02}
    languages = ("pytorch",)
    fixes = {
        "pytorch": Fix(
            text=(
                "Avoid the cast ({types}): keep the tensor in the dtype its consumer uses (create it in that dtype, "
                "convert parameters once with model.to(...) or cache the cast weights outside the loop instead of "
                "casting every step), or torch.compile the region so the cast is fused into the kernel that produces "
                "or consumes the tensor."
            ),
            code=(
                "x = torch.randn(n, d, device='cuda', dtype=torch.bfloat16)   # produced in bf16, no cast kernel\n"
                "model = model.to(torch.bfloat16)                              # weights cast once, not per step"
            ),
        ),
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        read = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_READ)
        write = k.m(MemoryWorkloadAnalysis.DRAM_BYTES_WRITE)
        if copy_kind(k.kernel.demangled, read, write) != "cast" or k.time_share < self.thresholds["min_time_share"]:
            return None
        named = cast_types(k.kernel.demangled)
        types = f"{named[0]} → {named[1]}" if named else "a dtype conversion"
        evidence = [Evidence("time_share", round(k.time_share, 3), self.thresholds["min_time_share"])]
        if read and write:
            evidence.append(Evidence("dram_read_per_write", round(read / write, 2), None, "DRAM bytes read ÷ written"))
        return self.finding(
            title=f"Dtype cast ({types}): converts data that is not computed on",
            message=(
                f"This ATen kernel only converts a tensor ({types}): it reads {fmt_bytes(read)} and writes "
                f"{fmt_bytes(write)} per launch ({k.kernel.launches} launches, {fmt_ns(k.kernel.duration_ns)}, "
                f"{k.time_share:.0%} of GPU time)."
                if read and write
                else f"This ATen kernel only converts a tensor ({types}), {k.time_share:.0%} of GPU time."
            ),
            fix=self.fix_for(k, types=types),
            estimated_speedup=1.0,
            speedup_model="The cast kernel disappears: 100% of its time is saved.",
            confidence="medium",
            changes_floor=True,
            # the cast is gone: none of its launches are left (at most half, where a few stay needed)
            predicts=[predict("launches", k.kernel.launches, 0.0, k.kernel.launches / 2)],
            evidence=evidence,
        )
