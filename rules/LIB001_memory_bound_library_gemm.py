from ncuadvisor.rulekit import Evidence, Finding, Fix, KernelContext, Rule, SpeedOfLight, fmt_ns, time_after


class MemoryBoundLibraryGemm(Rule):
    """A library matrix product (cuBLAS, CUTLASS) far from its floor at a shape too thin to be compute-bound.

    What it detects:
        A library kernel with tensor-core work whose headroom is at least `min_headroom` and whose arithmetic
        intensity (FLOPs per compulsory byte) is below the device's ridge point (tensor peak ÷ DRAM bandwidth),
        where fusing it would save at least `min_saving` of its time. At the ridge the memory and compute floors are
        close, fusion removes little, and the rule leaves the kernel to the rule that names what holds its time
        (GEN001: a partial last wave, K too small for the tile).

    Why it costs time:
        A product with a small inner dimension (attention's QKᵀ with head_dim 64, a batch of small matrices) reads
        and writes more bytes than it computes on: the library cannot make it compute-bound, and its output makes a
        round trip through HBM to the next kernel.

    Example:
        scores = q @ k.transpose(-1, -2); p = scores.softmax(-1); out = p @ v    # eager attention

    Use instead:
        Fuse the product with its neighbours: `torch.nn.functional.scaled_dot_product_attention` (FlashAttention:
        QKᵀ, softmax and PV in one kernel, the scores never reach HBM); batch small products (`torch.bmm`, grouped
        GEMM); or put the elementwise tail in a cuBLASLt/Triton epilogue.

    Speedup estimate:
        Fused, the product's bytes stay on chip and its floor becomes its compute floor; what held it above its
        old floor (latency, a partial wave) stays: new time = the larger of its FLOPs at 85% of the tensor peak of
        its type and its time scaled by compute floor ÷ memory floor. Near the ridge the two floors are close and
        fusion buys little: under `min_saving` of the kernel's time the rule claims nothing.

    False positives:
        Products whose neighbours cannot be fused (the output is needed later anyway); the estimate then is an upper
        bound.
    """

    code = "LIB001"
    slug = "memory-bound-library-gemm"
    category = "fusion"
    title = "Library matrix product is memory-bound at this shape: fuse it"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {"min_headroom": 2.0, "min_saving": 0.1}
    languages = ("library",)
    fixes = {
        "library": Fix(
            text=(
                "Fuse it with its neighbours so the product's output stays on chip: for attention use "
                "torch.nn.functional.scaled_dot_product_attention (FlashAttention); batch small products; or move "
                "the elementwise tail into a cuBLASLt / Triton epilogue."
            ),
            code="out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
        ),
    }
    changes_floor = True

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        tensor = {p: v for p, v in r.flops_by_precision.items() if p.startswith("tensor") and v}
        if not tensor or r.headroom is None or r.headroom < self.thresholds["min_headroom"]:
            return None
        prec = max(tensor, key=lambda p: tensor[p])
        peak = r.peak_flops_per_s.get(prec)
        if not peak or not r.peak_dram_bytes_per_s or r.intensity is None or not r.compulsory_bytes:
            return None
        ridge = peak / r.peak_dram_bytes_per_s
        if r.intensity >= ridge:
            return None
        new_ns = r.flops / (0.85 * peak) * 1e9
        compute_floor_ns = r.flops / peak * 1e9
        memory_floor_ns = r.compulsory_bytes / r.peak_dram_bytes_per_s * 1e9
        # the headroom the bytes do not explain stays after fusion: the same distance from the new, lower floor
        new_ns = max(new_ns, (r.duration_ns or 0) * compute_floor_ns / memory_floor_ns)
        if not r.duration_ns or new_ns > (1 - self.thresholds["min_saving"]) * r.duration_ns:
            return None  # at the ridge: the bytes fusion removes do not hold this kernel's time
        return self.finding(
            title=f"Memory-bound matrix product: {r.intensity:.0f} FLOP/byte, ridge {ridge:.0f}",
            message=(
                f"This {prec.replace('tensor_', '').upper()} product does {r.flops / 1e9:.1f} GFLOP on "
                f"{r.compulsory_bytes / 1e6:.1f} MB ({r.intensity:.0f} FLOP/byte, below the ridge point of "
                f"{ridge:.0f}): at {fmt_ns(r.duration_ns)} it is {r.headroom:.1f}× its floor, bound by moving its "
                "operands and output, which no library kernel choice fixes."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, None),
            speedup_model=(
                "Fused, the product's floor is its compute floor: the larger of its FLOPs at 85% of the tensor peak "
                f"of its type and its time × compute floor ÷ memory floor ({compute_floor_ns / memory_floor_ns:.2f}: "
                "what holds it above its floor stays)."
            ),
            confidence="low",
            changes_floor=True,
            evidence=[
                Evidence("intensity", round(r.intensity, 1), round(ridge, 1), "FLOP/byte (threshold: ridge)"),
                Evidence("headroom", round(r.headroom, 2), self.thresholds["min_headroom"]),
            ],
        )
