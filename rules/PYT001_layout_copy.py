from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    MemoryWorkloadAnalysis,
    Rule,
    SpeedOfLight,
    copy_kind,
    fmt_bytes,
    fmt_ns,
    predict,
)


class LayoutCopy(Rule):
    """An eager PyTorch layout copy (`.contiguous()`, `.clone()`, `permute`/`transpose` + `reshape`) that moves
    data only to change its layout.

    What it detects:
        ATen copy kernels (`direct_copy_kernel`, `copy_kernel`, batched cat copies) taking at least
        `min_time_share` of the program's GPU time that keep the dtype: a copy that converts it (its kernel says so,
        `bfloat16_copy_kernel_cuda`, or it reads more bytes per element than it writes) is a cast, PYT002's case.

    Why it costs time:
        A copy reads and writes the whole tensor through HBM and computes nothing; in attention code it typically
        comes from `transpose(1, 2).contiguous()` or `reshape` of a non-contiguous view.

    Example:
        q = x.view(b, s, h, d).transpose(1, 2).contiguous()

    Use instead:
        Keep the layout the consumer wants (pass strided views: `scaled_dot_product_attention` and matmul accept
        them), produce the tensor in the needed layout in the first place, or `torch.compile` the region so
        Inductor folds the copy into the kernel that reads it.

    Speedup estimate:
        The copy kernel disappears: its whole time.
        The counter the fix moves: the copy kernel's launches, to 0 (at most half of them left after).

    False positives:
        Copies that are needed (host transfers, a layout a library requires); the finding then says what it costs.
    """

    code = "PYT001"
    slug = "layout-copy"
    category = "fusion"
    title = "Layout copy in eager PyTorch"
    requires = (SpeedOfLight.DURATION,)
    optional = (MemoryWorkloadAnalysis.DRAM_BYTES_READ, MemoryWorkloadAnalysis.DRAM_BYTES_WRITE)
    thresholds = {"min_time_share": 0.02}
    languages = ("pytorch",)
    fixes = {
        "pytorch": Fix(
            text=(
                "Avoid the copy: pass the strided view to the consumer (matmul and scaled_dot_product_attention "
                "accept non-contiguous inputs), create the tensor in the layout it is consumed in, or torch.compile "
                "the region so the copy is fused into its consumer."
            ),
            code=(
                "q, k, v = qkv.view(b, s, 3, h, d).unbind(2)\n"
                "out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))"
            ),
        ),
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        kind = copy_kind(
            k.kernel.demangled,
            k.m(MemoryWorkloadAnalysis.DRAM_BYTES_READ),
            k.m(MemoryWorkloadAnalysis.DRAM_BYTES_WRITE),
        )
        if kind != "layout" or k.time_share < self.thresholds["min_time_share"]:
            return None
        r = k.roofline
        return self.finding(
            title="Layout copy: moves data that is not computed on",
            message=(
                f"This ATen copy kernel moves {fmt_bytes(r.dram_bytes)} per launch ({k.kernel.launches} "
                f"launches, {fmt_ns(k.kernel.duration_ns)}, {k.time_share:.0%} of GPU time) only to change a tensor's layout."
            ),
            fix=self.fix_for(k),
            estimated_speedup=1.0,
            speedup_model="The copy kernel disappears: 100% of its time is saved.",
            confidence="medium",
            changes_floor=True,
            # the copy is gone: none of its launches are left (at most half, where a few stay needed)
            predicts=[predict("launches", k.kernel.launches, 0.0, k.kernel.launches / 2)],
            evidence=[Evidence("time_share", round(k.time_share, 3), self.thresholds["min_time_share"])],
        )
