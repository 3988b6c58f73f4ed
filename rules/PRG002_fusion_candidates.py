import re
from typing import Any

from ncuadvisor.rulekit import (
    Evidence,
    Fix,
    KernelEntry,
    MemoryWorkloadAnalysis,
    ProgramContext,
    ProgramFinding,
    ProgramRule,
    count,
    fmt_bytes,
    fmt_ns,
    foreach_kernel,
    predict,
)

_TORCH_COMPILE = Fix(
    text=(
        "Wrap the module in torch.compile so Inductor fuses these ops into one Triton kernel; for a "
        "hand-written Triton kernel, compute the whole chain on the tile held in registers and store "
        "once."
    ),
    code="model = torch.compile(model)   # Inductor fuses pointwise + normalization chains",
)

# What names an ATen kernel's op in its demangled name, most specific first: the functor (CUDAFunctor_add,
# binary_internal::MulFunctor), the kernel implementation (GeluCUDAKernelImpl, direct_copy_kernel_cuda,
# masked_fill_kernel), then the kernel's own name (vectorized_layer_norm_kernel).
_FUNCTOR = re.compile(r"CUDAFunctor_(\w+?)[<>,\s]|(?:::|<)(\w+?)Functor\b")
_WRAPPERS = {"AUnary", "BUnary", "Unary", "Binary", "CUDA", ""}
_IMPL = re.compile(r"::(\w+?)(?:_kernel_cuda|CUDAKernelImpl|_kernel_impl|_kernel)\(")
# ATen's generic pointwise kernels (TensorIterator's `gpu_kernel`): one functor applied per element
_POINTWISE = re.compile(r"^(?:void )?at::native::(?:\w+::)*(?:vectorized_|unrolled_)?elementwise_kernel<")
_OWN = re.compile(r"^(?:vectorized_|unrolled_)?(\w+?)(?:_kernel)?$")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def op_name(k: KernelEntry) -> str:
    """A short name of the op a kernel runs: `add` for ATen's CUDAFunctor_add elementwise kernel, `gelu`, `layer_norm`;
    a Triton kernel keeps its (generated) name."""
    name = k.name or "?"
    if k.language != "pytorch":
        return name
    text = k.demangled or name
    functors = [a or b for a, b in _FUNCTOR.findall(text) if (a or b) not in _WRAPPERS]
    if functors:
        return _snake(functors[-1])
    m = _IMPL.search(text)
    if m:
        return _snake(m.group(1))
    m = _OWN.match(name)  # the kernel's own (short) name: vectorized_layer_norm_kernel
    return m.group(1) if m else name


def chain_name(names: list[str]) -> str:
    """`layer_norm → add → gelu`; a run of the same op reads `elementwise ×100`."""
    parts: list[list[Any]] = []
    for n in names:
        if parts and parts[-1][0] == n:
            parts[-1][1] += 1
        else:
            parts.append([n, 1])
    return " → ".join(n if c == 1 else f"{n} ×{c}" for n, c in parts)


class FusionCandidates(ProgramRule):
    """Consecutive memory-class kernels pass intermediates through HBM: fuse them.

    What it detects:
        Runs of at least two consecutive launches on the same stream whose kernels the machine model calls
        memory-class: their memory floor is at least `min_memory_over_compute` times their compute floor (executed
        intensity well below the ridge of their precision), no tensor-core work, not latency-bound (by Speed Of
        Light, or by the machine model's limiter), no atomics (no atomics rule spoke, "keep it" verdicts included),
        no pass of a device-wide CUB sort or scan and no ATen multi-tensor-apply (`torch._foreach_*`) kernel
        (elementwise, normalization, reduction, copy kernels: LayerNorm → residual add → GELU in eager PyTorch). The
        launches of one foreach op are chunks of one list of tensors, not a chain, and its ops are not the module's
        (an optimizer's step: PYT003; clip_grad_norm_). Matrix products, atomic scatters, sorts and latency-bound
        kernels break a run, and so does a kernel `ncuadvisor profile` timed without profiling it in depth (its bound is
        unknown; every launch of a kernel it profiled gets the DRAM bytes of the profiled launch, scaled by duration),
        unless it is one of ATen's generic pointwise kernels (`vectorized_elementwise_kernel<…>`: one functor per
        element, memory-class by what it runs) whose DRAM bytes phase 1 measured. Kernels a program rule owns (`ProgramRule.owns`: the cross-entropy chain of PYT005, which a
        fused loss replaces) break a run too. A chain saving less than `min_program_fraction` of the program is not
        reported.

    Why it costs time:
        Each kernel writes its output to DRAM and the next one reads it back, and each launch leaves a gap. One fused
        kernel reads the inputs once, writes the final output once, and launches once.

    Example:
        y = F.gelu(x + residual); z = F.layer_norm(y, ...)   # eager: three kernels, two intermediates in HBM

    Use instead:
        `torch.compile` the module (Inductor fuses pointwise and normalization ops into Triton kernels), extend the
        Triton kernel of the chain to its neighbours, or fold the elementwise tail into the producing kernel (a GEMM
        epilogue: cuBLASLt `CUBLASLT_EPILOGUE_GELU_BIAS`, or the epilogue of a Triton/CUTLASS matmul).

    Speedup estimate:
        The intermediate bytes (per boundary the smaller of what the producer wrote and the consumer read,
        `dram__bytes_write.sum`/`dram__bytes_read.sum`, twice: written and read back) at DRAM bandwidth, no more than
        the run's time above the fused kernel's floor (the larger of its kernels' busy compute pipes, duration ×
        compute throughput, and the bytes left at DRAM bandwidth), plus `launch_gap_ns` per launch removed. An upper
        bound: in a real run some intermediates stay in L2.
        The counter the fix moves: the launches of the chain's kernels, one fewer per kernel fused away in each
        occurrence (checked by `diff` on the kernels matched to them after the change, 0 where all are gone).

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
    thresholds = {
        "min_memory_over_compute": 2.0,  # memory floor ≥ 2× compute floor: removing bytes still pays
        "max_intensity": 4.0,  # only where a kernel has no floors (no device peaks): intensity below it
        "min_saving_fraction": 0.05,  # of the run's time
        "min_program_fraction": 0.005,  # of the program's GPU time: below it a fusion is not worth the code
        "launch_gap_ns": 1000.0,  # GPU idle between two dependent launches on one stream
    }
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

    def _fusable(self, k: KernelEntry) -> bool:
        r = k.roofline
        if k.language not in self.LANGUAGES:
            return False
        if k.profiled is False:  # `ncuadvisor profile` timed it only: its bound is unknown
            return self._pointwise_timed_only(k)
        if any(v for p, v in r.flops_by_precision.items() if p.startswith("tensor")):
            return False
        if "latency" in (r.bound, k.bound, r.limiter):
            return False  # by Speed Of Light, or by the machine model where the report lacks Speed Of Light
        # an atomics rule spoke (its verdict may be "keep it", an at-roofline category): updates through atomics
        if any(f.category == "atomics" or f.rule.startswith("ATM") for f in k.findings):
            return False
        if "cub::" in k.demangled:  # a pass of a device-wide sort or scan: grid-wide dependencies
            return False
        # an ATen multi-tensor-apply (foreach) kernel: its consecutive launches are chunks of one list of tensors, not
        # a producer and its consumer, and its ops come from code outside the module (the optimizer's step: PYT003;
        # clip_grad_norm_, zero_grad), which torch.compile of the module does not reach
        if foreach_kernel(k.demangled) is not None:
            return False
        mem, comp = r.memory_floor_ns, r.compute_floor_ns
        if isinstance(mem, (int, float)) and isinstance(comp, (int, float)) and mem > 0:
            return mem >= self.thresholds["min_memory_over_compute"] * comp
        intensity = r.intensity
        return intensity is None or intensity < self.thresholds["max_intensity"]

    def _pointwise_timed_only(self, k: KernelEntry) -> bool:
        """A kernel phase 1 of `ncuadvisor profile` timed without profiling it in depth is memory-class only when what
        it runs says so: ATen's generic pointwise kernel (`elementwise_kernel`, `vectorized_`/`unrolled_` ones, not
        the foreach, reduction or indexing ones) applies one functor per element, a few FLOPs per element read, and
        never uses the tensor cores; its DRAM bytes are phase 1's own."""
        pointwise = bool(_POINTWISE.match(k.demangled or ""))
        return k.language == "pytorch" and pointwise and k.roofline.dram_bytes is not None

    def _runs(self, p: ProgramContext) -> list[list[dict[str, Any]]]:
        runs: list[list[dict[str, Any]]] = []
        current: list[dict[str, Any]] = []
        last_stream = object()
        for x in p.launches:
            k = p.by_id.get(x["kernel_id"])
            # a kernel another rule owns (the loss chain of PYT005) is that rule's to fix: it breaks a run
            fusable = k is not None and str(x["kernel_id"]) not in p.owned and self._fusable(k)
            if fusable and (not current or x["stream"] == last_stream):
                current.append(x)
            else:
                if len(current) >= 2:
                    runs.append(current)
                current = [x] if fusable else []
            last_stream = x["stream"]
        if len(current) >= 2:
            runs.append(current)
        return runs

    def _bandwidth(self, p: ProgramContext, kernel_ids: list[str]) -> float | None:
        peaks = [p.by_id[kid].roofline.peak_dram_bytes_per_s or 0 for kid in kernel_ids]
        peak = max(peaks, default=0) or (p.device or {}).get("peak_dram_bytes_per_s") or 0
        return float(peak) if peak else None

    def _saving(self, p: ProgramContext, run: list[dict[str, Any]], bw: float | None) -> tuple[float, float, float]:
        """(intermediate bytes, run time, time saved) of one run."""
        total_bytes = sum((x["dram_read_bytes"] or 0) + (x["dram_write_bytes"] or 0) for x in run)
        inter = sum(2 * min(a["dram_write_bytes"] or 0, b["dram_read_bytes"] or 0) for a, b in zip(run, run[1:]))
        dur = sum(x["duration_ns"] or 0 for x in run)
        gaps = (len(run) - 1) * self.thresholds["launch_gap_ns"]
        if bw is None:  # no peak bandwidth: the run's time scales with its bytes
            return inter, dur, (dur * inter / total_bytes if total_bytes > 0 else 0.0) + gaps
        busy = 0.0  # time the kernels keep their compute pipes busy: a fused kernel still spends it
        for x in run:
            sol = p.by_id[x["kernel_id"]].roofline.sol
            busy += (x["duration_ns"] or 0) * min(100.0, float(sol.get("compute_pct") or 0.0)) / 100
        floor = max(busy, (total_bytes - inter) / bw * 1e9)
        return inter, dur, max(0.0, min(inter / bw * 1e9, dur - floor)) + gaps

    def _advice(self, p: ProgramContext, key: tuple[str, ...]) -> str:
        """What to do, in the program's terms: the Triton kernel to extend, or the NVTX range to torch.compile."""
        triton = [p.by_id[kid].name for kid in key if p.by_id[kid].language == "triton"]
        if triton:
            return f"Extend the Triton kernel {triton[0]} (or the torch.compile region that made it) to its neighbours."
        ranges = {p.by_id[kid].nvtx or "" for kid in key} - {""}
        if len(ranges) == 1:
            return f"torch.compile the module running in NVTX range '{ranges.pop()}'."
        return "torch.compile the module that runs these ops."

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        # the same sequence of kernels repeats (layers, steps): report it once with its count
        grouped: dict[tuple, list[list[dict]]] = {}
        for run in self._runs(p):
            grouped.setdefault(tuple(x["kernel_id"] for x in run), []).append(run)
        findings = []
        for key, instances in grouped.items():
            bw = self._bandwidth(p, list(key))
            saved_bytes = run_ns = saving_ns = 0.0
            for run in instances:
                inter, dur, saving = self._saving(p, run, bw)
                saved_bytes += inter
                run_ns += dur
                saving_ns += saving
            if run_ns <= 0 or saving_ns < self.thresholds["min_saving_fraction"] * run_ns:
                continue
            if saving_ns < self.thresholds["min_program_fraction"] * p.total_ns:
                continue
            names = [p.by_id[kid].name for kid in key]
            chain = chain_name([op_name(p.by_id[kid]) for kid in key])
            langs = {p.by_id[kid].language for kid in key}
            launches = sum(p.by_id[kid].launches for kid in dict.fromkeys(key))
            left = max(0, launches - (len(key) - 1) * len(instances))  # fused: one launch per occurrence
            fix = self.fix_in("pytorch" if langs & {"pytorch", "triton"} else "cuda")
            findings.append(
                self.finding(
                    title=f"Fuse {chain} ({len(key)} launches, {len(instances)}× in the program)",
                    message=(
                        f"{chain} run back to back on one stream, all memory-class; their intermediates make "
                        f"{fmt_bytes(saved_bytes)} of round trips through HBM and {count(len(key) - 1, 'launch gap')} "
                        f"({count(len(instances), 'occurrence')}, {fmt_ns(run_ns)} in all). {self._advice(p, key)}"
                    ),
                    fix=fix,
                    kernels=names,
                    kernel_ids=list(key),
                    estimated_saving_ns=saving_ns,
                    saving_model=(
                        "Intermediate bytes (min of producer writes and consumer reads, twice) at DRAM bandwidth, no "
                        "more than the run's time above the fused kernel's floor (busy compute pipes, bytes left), "
                        f"plus {self.thresholds['launch_gap_ns'] / 1000:.0f} µs per launch removed. Upper bound: "
                        "some intermediates may stay in L2."
                    ),
                    confidence="medium",
                    # the others are gone
                    predicts=[predict("kernel_launches", launches, left, left)],
                    evidence=[
                        Evidence("intermediate_bytes", saved_bytes, None, "round-trip bytes saved"),
                        Evidence("occurrences", len(instances), None, "times this chain runs"),
                    ],
                )
            )
        return findings
