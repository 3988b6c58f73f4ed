from typing import Any

from ncuadvisor.metrics import MemoryWorkloadAnalysis
from ncuadvisor.rules_api import Evidence, Fix, ProgramContext, ProgramFinding, ProgramRule

_TORCH_COMPILE = Fix(
    text=(
        "Wrap the module in torch.compile so Inductor fuses these ops into one Triton kernel; for a "
        "hand-written Triton kernel, compute the whole chain on the tile held in registers and store "
        "once."
    ),
    code="model = torch.compile(model)   # Inductor fuses pointwise + normalization chains",
)


class FusionCandidates(ProgramRule):
    """Consecutive bandwidth-bound kernels pass intermediates through HBM: fuse them.

    What it detects:
        Runs of at least two consecutive launches on the same stream whose kernels have arithmetic intensity below
        `max_intensity` FLOP/byte and no tensor-core work (elementwise, normalization, reduction, copy kernels:
        LayerNorm → residual add → GELU in eager PyTorch). Matrix products break a run.

    Why it costs time:
        Each kernel writes its output to DRAM and the next one reads it back: for bandwidth-bound kernels that round
        trip is most of their time. One fused kernel reads the inputs once and writes the final output once.

    Example:
        y = F.gelu(x + residual); z = F.layer_norm(y, ...)   # eager: three kernels, two intermediates in HBM

    Use instead:
        `torch.compile` the module (Inductor fuses pointwise and normalization ops into Triton kernels), write one
        Triton kernel, or fold the elementwise tail into the producing kernel (a GEMM epilogue: cuBLASLt
        `CUBLASLT_EPILOGUE_GELU_BIAS`, or the epilogue of a Triton/CUTLASS matmul).

    Speedup estimate:
        Bytes of each intermediate (the smaller of what the producer wrote and the consumer read, per launch from
        `dram__bytes_write.sum`/`dram__bytes_read.sum`) are saved twice (written and read back); the run's time
        scales with its bytes. An upper bound: in a real run some intermediates stay in L2.

    False positives:
        ncu records no buffer addresses, so the data flow between kernels is inferred: the rule only chains PyTorch
        (ATen) and Triton kernels, where consecutive ops on one stream almost always feed each other; independent
        hand-written CUDA kernels are never chained (a false negative when they do feed each other). Fusing into
        compute-bound matrix products rarely pays (they are bound by FLOPs, not bytes); fusion can
        backfire through register or shared-memory pressure, recomputation, or code bloat per shape and dtype.
    """

    code = "PRG002"
    slug = "fusion-candidates"
    category = "fusion"
    title = "Fuse consecutive bandwidth-bound kernels"
    requires = (MemoryWorkloadAnalysis.DRAM_BYTES_READ, MemoryWorkloadAnalysis.DRAM_BYTES_WRITE)
    thresholds = {"max_intensity": 4.0, "min_saving_fraction": 0.05}
    # ncu records no buffer addresses, so whether B reads what A wrote cannot be seen. In PyTorch eager and Inductor
    # code consecutive ops on one stream almost always form such a chain; hand-written CUDA kernels often do not.
    LANGUAGES = ("pytorch", "triton")
    fixes = {
        "cuda": Fix(
            text=(
                "Fuse the chain into one kernel: each thread loads its inputs once, applies every stage in "
                "registers, and stores only the final output; a tail after a GEMM belongs in its epilogue."
            ),
            code="out[i] = stage3(stage2(stage1(in[i])));   // one kernel instead of three round trips",
        ),
        "pytorch": _TORCH_COMPILE,
        "triton": _TORCH_COMPILE,
    }

    def _fusable(self, k: dict[str, Any]) -> bool:
        r = k.get("roofline") or {}
        intensity = r.get("intensity")
        tensor = sum(v for p, v in (r.get("flops_by_precision") or {}).items() if p.startswith("tensor"))
        return (
            k.get("language") in self.LANGUAGES
            and not tensor
            and (intensity is None or intensity < self.thresholds["max_intensity"])
        )

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        runs: list[list[dict[str, Any]]] = []
        current: list[dict[str, Any]] = []
        last_stream = object()
        for x in p.launches:
            k = p.by_id.get(x["kernel_id"])
            if k is not None and self._fusable(k) and (not current or x["stream"] == last_stream):
                current.append(x)
            else:
                if len(current) >= 2:
                    runs.append(current)
                current = [x] if (k is not None and self._fusable(k)) else []
            last_stream = x["stream"]
        if len(current) >= 2:
            runs.append(current)
        # the same sequence of kernels repeats (layers, steps): report it once with its count
        grouped: dict[tuple, list[list[dict]]] = {}
        for run in runs:
            grouped.setdefault(tuple(x["kernel_id"] for x in run), []).append(run)
        findings = []
        for key, instances in grouped.items():
            saved_bytes = run_ns = saving_ns = 0.0
            for run in instances:
                total_bytes = sum((x["dram_read_bytes"] or 0) + (x["dram_write_bytes"] or 0) for x in run)
                inter = sum(
                    2 * min(a["dram_write_bytes"] or 0, b["dram_read_bytes"] or 0) for a, b in zip(run, run[1:])
                )
                dur = sum(x["duration_ns"] or 0 for x in run)
                run_ns += dur
                saved_bytes += inter
                if total_bytes > 0:
                    saving_ns += dur * inter / total_bytes
            if run_ns <= 0 or saving_ns < self.thresholds["min_saving_fraction"] * run_ns:
                continue
            names = [p.by_id[kid]["name"] for kid in key]
            langs = {p.by_id[kid]["language"] for kid in key}
            fix = self.fix_in("pytorch" if langs & {"pytorch", "triton"} else "cuda")
            findings.append(
                self.finding(
                    title=f"Fuse {len(key)} consecutive kernels ({len(instances)}× in the program)",
                    message=(
                        f"{' → '.join(names)} run back to back on one stream, all bandwidth-bound; their "
                        f"intermediates make {saved_bytes / 1e6:.1f} MB of round trips through HBM "
                        f"({len(instances)} occurrence(s), {run_ns / 1000:.1f} µs in all)."
                    ),
                    fix=fix,
                    kernels=names,
                    kernel_ids=list(key),
                    estimated_saving_ns=saving_ns,
                    saving_model=(
                        "Intermediate bytes (min of producer writes and consumer reads) saved twice; each run's "
                        "time scales with its bytes. Upper bound: some intermediates may stay in L2."
                    ),
                    confidence="medium",
                    evidence=[
                        Evidence("intermediate_bytes", saved_bytes, None, "round-trip bytes saved"),
                        Evidence("occurrences", len(instances), None, "times this chain runs"),
                    ],
                )
            )
        return findings
