from ncuadvisor.rulekit import (
    ELEMENT_BYTES,
    PRACTICAL_FRACTION,
    Evidence,
    Fix,
    ForeachKernel,
    KernelEntry,
    ProgramContext,
    ProgramFinding,
    ProgramRule,
    SpeedOfLight,
    count,
    fmt_ns,
    foreach_kernel,
    predict,
)

# What the other multi-tensor kernels are: not the optimizer's update, whatever fused=True does
OTHER_ROLES = {
    "norm": "gradient norms (torch._foreach_norm: clip_grad_norm_)",
    "scale": "scaling by a device scalar (clip_grad_norm_'s clip coefficient)",
    "zero": "zeroing (zero_grad(set_to_none=False))",
    "copy": "copies (torch._foreach_copy_)",
    "amp": "GradScaler's unscale_",
    "fused": "a fused optimizer's step",
    "other": "other multi-tensor kernels",
}
DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}

_FIX = Fix(
    text=(
        "Construct the optimizer with fused=True: torch.optim.Adam, AdamW and SGD have a fused CUDA implementation "
        "that reads each parameter, its gradient and its state once and writes them back once (one multi-tensor "
        "kernel per group of tensors) instead of one pass per foreach op; the update is the same math. For an "
        "optimizer without fused=True, torch.compile the optimizer step: Inductor fuses its foreach ops. The model "
        "is not where these kernels come from: torch.compile of the module leaves them as they are."
    ),
    code=(
        "opt = torch.optim.{optimizer}(model.parameters(), {args}, fused=True)   # the arguments as before\n"
        "\n"
        "# an optimizer without fused=True: compile its step\n"
        "@torch.compile(fullgraph=False)\n"
        "def opt_step():\n"
        "    opt.step()"
    ),
)


def role(fk: ForeachKernel) -> str:
    """What a multi-tensor kernel does: "step" (a foreach op of an optimizer's update) or one of OTHER_ROLES."""
    if fk.functor.startswith("Fused"):  # FusedAdamMathFunctor, FusedSgdMathFunctor: already one pass
        return "fused"
    if "Norm" in fk.functor or "LpMax" in fk.functor:
        return "norm"
    if fk.functor == "BinaryOpScalarTensorFunctor":  # x *= a scalar held on the device
        return "scale"
    if fk.functor == "ZeroFunctor":
        return "zero"
    if fk.functor == "CopyFunctor":
        return "copy"
    if "amp_" in fk.op:  # _amp_foreach_non_finite_check_and_unscale_
        return "amp"
    if not fk.functor or fk.reads is None or fk.element_bytes is None:
        return "other"
    return "step"


class ForeachOptimizer(ProgramRule):
    """The optimizer step runs as PyTorch's foreach kernels, one pass over all parameters per op: `fused=True`.

    What it detects:
        ATen multi-tensor-apply launches (`multi_tensor_apply_kernel`) of the foreach functors an optimizer's
        update is made of (`torch._foreach_mul_`, `_foreach_lerp_`, `_foreach_addcmul_`, `_foreach_sqrt`,
        `_foreach_addcdiv_`, `_foreach_add_`: BinaryOp*, UnaryOp*, PointwiseOp*, TernaryOp* functors), the update
        of PyTorch's default optimizers on CUDA (`foreach=None` picks it). Not counted as optimizer work: gradient
        norms (`LpNormFunctor`: clip_grad_norm_), scaling by a scalar held on the device
        (`BinaryOpScalarTensorFunctor`: clip_grad_norm_'s clip coefficient), `zero_grad(set_to_none=False)`
        (`ZeroFunctor`), `torch._foreach_copy_` (`CopyFunctor`) and GradScaler's unscale_; a fused optimizer
        (`FusedAdamMathFunctor`, `FusedSgdMathFunctor`) is already one pass. Reported when the saving is at least
        `min_program_fraction` of the program's GPU time.

    Why it costs time:
        Each foreach op is a separate pass over every parameter-sized list: AdamW's step is weight decay (`mul_`),
        `lerp_` of exp_avg, `mul_` and `addcmul_` of exp_avg_sq, `sqrt`, `div_`, `add_` of eps and `addcdiv_` into
        the parameters, ~80 bytes moved per fp32 parameter. The fused kernel reads the parameter, its gradient and
        its two states and writes three of them back: 28 bytes. The kernels are bandwidth-bound, so time follows
        bytes.

    Example:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)   # foreach on CUDA by default

    Use instead:
        `torch.optim.AdamW(..., fused=True)` (Adam, AdamW and SGD have it on CUDA), or `torch.compile` the
        optimizer step (a function calling `opt.step()`) for the others. `torch.compile` of the model does not
        reach these kernels.

    Speedup estimate:
        The foreach kernels' bytes per step (load and store bytes of each profiled kernel times its launches; a
        kernel timed only, at the bandwidth the profiled ones achieved) against a fused pass at the same bandwidth
        moving (3 + 2 × states) × element size bytes per parameter: the parameter and its gradient read, the
        parameter written, each state read and written. Parameters: the elements written by the op that runs once
        per parameter (the lerp of exp_avg, else the sqrt of exp_avg_sq, else SGD's momentum `mul_`). States: two
        when the ops hold a lerp, a sqrt or an addcdiv (Adam-style; three with amsgrad's maximum), one for several
        SGD-style ops (a momentum buffer), none for one. Saving = foreach time × (1 − fused bytes / foreach bytes).
        Where no foreach kernel was profiled, the bandwidth is `practical` × the DRAM peak.
        The counter the fix moves: the launches of the foreach kernels, to 0 (at most half of them left after).

    False positives:
        Other code built of foreach ops (an EMA of the weights with `_foreach_lerp_`) looks the same and is counted;
        fused=True does not remove it (torch.compile of that function does). Optimizers without a fused
        implementation (RMSprop, NAdam, RAdam on CUDA) need torch.compile instead. fused=True needs all parameters
        on the GPU in a floating-point dtype. An AdamW whose learning rate is a tensor scales the weights with
        `BinaryOpScalarTensorFunctor` and that pass is not counted (a smaller estimate).
    """

    code = "PYT003"
    slug = "foreach-optimizer"
    category = "fusion"
    title = "Optimizer step in foreach kernels: use fused=True"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {"min_program_fraction": 0.005, "practical": PRACTICAL_FRACTION}
    fixes = {"pytorch": _FIX}

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        steps, others = _foreach_kernels(p)
        if not steps or not p.total_ns:
            return []
        bw = self._bandwidth(p, steps)
        if not bw:
            return []
        elements, measured, foreach_bytes = self._per_op(steps, bw)
        anchor = self._anchor(elements)
        params = elements[anchor]
        if params > 0 and not measured[anchor] and any(measured.values()):
            # the op run once per parameter was timed only: the elements a profiled op wrote, over the number of
            # passes it makes (which the timed estimate tells)
            best = max((s for s in elements if measured[s]), key=lambda s: elements[s])
            params = elements[best] / max(1, round(elements[best] / params))
        element_bytes = ELEMENT_BYTES.get(anchor[4], 4)
        states = self._states([s for s in elements])
        fused_bytes = params * element_bytes * (3 + 2 * states)
        time_ns = sum(k.duration_ns for k, _ in steps)
        if params <= 0 or foreach_bytes <= fused_bytes:
            return []
        saving = time_ns * (1.0 - fused_bytes / foreach_bytes)
        if saving < self.thresholds["min_program_fraction"] * p.total_ns:
            return []
        ops = sum(max(1, round(n / params)) for n in elements.values())
        per_param, fused_per_param = foreach_bytes / params, fused_bytes / params
        launches = sum(k.launches for k, _ in steps)
        dtype = DTYPES.get(anchor[4], anchor[4])
        adam = states >= 2
        ids = [k.id for k, _ in steps]
        order = self._launch_order(p, ids)
        not_counted = "; ".join(
            f"{OTHER_ROLES[r]}, {fmt_ns(ns)}" for r, ns in sorted(others.items(), key=lambda t: -t[1])
        )
        return [
            self.finding(
                title=f"Optimizer step in {count(ops, 'foreach op')}: fused=True makes it one pass",
                message=(
                    f"The optimizer's update runs as {count(ops, 'foreach op')} over {params / 1e6:.1f} M {dtype} "
                    f"parameters ({count(launches, 'multi_tensor_apply launch', 'multi_tensor_apply launches')}, "
                    f"{fmt_ns(time_ns)}, {time_ns / p.total_ns:.0%} of GPU time): each op streams parameter-sized "
                    f"lists through HBM, {per_param:.0f} bytes per parameter in all. A fused step reads each "
                    f"parameter, its gradient and {'its ' if states else ''}{count(states, 'state tensor')} once and "
                    f"writes {count(1 + states, 'tensor')} back: {fused_per_param:.0f} bytes."
                    + (f" Not counted as optimizer work: {not_counted}." if not_counted else "")
                ),
                fix=self.fix_in(
                    "pytorch",
                    optimizer="AdamW" if adam else "SGD",
                    args="lr=lr, weight_decay=wd" if adam else "lr=lr, momentum=0.9",
                ),
                kernels=[p.by_id[kid].display_name or p.by_id[kid].name for kid in order],
                kernel_ids=order,
                # fused=True runs the step in kernels of its own: the foreach kernels' launches are gone
                predicts=[predict("kernel_launches", launches, 0.0, launches / 2)],
                estimated_saving_ns=saving,
                saving_model=(
                    f"The foreach kernels move {per_param:.0f} bytes per parameter ({self._source(steps, bw)}); a "
                    f"fused pass at the same bandwidth moves (3 + 2 × {states} states) × {element_bytes} bytes = "
                    f"{fused_per_param:.0f}: foreach time × (1 − {fused_per_param:.0f} / {per_param:.0f})."
                ),
                confidence="medium",
                evidence=[
                    Evidence("parameters", round(params), None, "elements per list (the op run once per parameter)"),
                    Evidence("foreach_bytes_per_parameter", round(per_param, 1), None, "bytes moved per parameter"),
                    Evidence("fused_bytes_per_parameter", round(fused_per_param, 1), None, "with fused=True"),
                    Evidence("foreach_ns", round(time_ns), None, "GPU time of the optimizer's foreach kernels"),
                ],
            )
        ]

    def _per_op(
        self, steps: list[tuple[KernelEntry, ForeachKernel]], bw: float
    ) -> tuple[dict[tuple, float], dict[tuple, bool], float]:
        """Per op (functor, op, lists, element type): the elements it writes per step and whether every launch of it
        was measured; and the bytes of all ops."""
        elements: dict[tuple, float] = {}
        measured: dict[tuple, bool] = {}
        foreach_bytes = 0.0
        for k, fk in steps:
            sig = (fk.functor, fk.op, fk.lists, fk.reads, fk.element)
            e, moved = self._elements_and_bytes(k, fk, bw)
            elements[sig] = elements.get(sig, 0.0) + e
            measured[sig] = measured.get(sig, True) and _launch_bytes(k) is not None
            foreach_bytes += moved
        return elements, measured, foreach_bytes

    def _bandwidth(self, p: ProgramContext, steps: list[tuple[KernelEntry, ForeachKernel]]) -> float | None:
        """Bytes per second the profiled foreach kernels achieved (load + store bytes of their launches over their
        time); the DRAM peak × `practical` where none was profiled."""
        moved = spent = 0.0
        for k, _ in steps:
            got = _launch_bytes(k)
            if got is not None:
                moved += got[0] * k.launches
                spent += k.duration_ns
        if moved > 0 and spent > 0:
            return moved / spent * 1e9
        peak = (p.device or {}).get("peak_dram_bytes_per_s")
        return float(peak) * self.thresholds["practical"] if peak else None

    def _source(self, steps: list[tuple[KernelEntry, ForeachKernel]], bw: float) -> str:
        """Where the bytes come from, in words."""
        profiled = sum(1 for k, _ in steps if _launch_bytes(k) is not None)
        if profiled == len(steps):
            return f"the load and store bytes of their profiled launches, {bw / 1e12:.2f} TB/s"
        if profiled:
            return (
                f"load and store bytes where profiled, the {count(len(steps) - profiled, 'kernel')} timed only at the "
                f"{bw / 1e12:.2f} TB/s the others achieved"
            )
        return (
            f"from their time at {bw / 1e12:.2f} TB/s, {self.thresholds['practical']:.0%} of the DRAM peak: none was "
            "profiled"
        )

    @staticmethod
    def _elements_and_bytes(k: KernelEntry, fk: ForeachKernel, bw: float) -> tuple[float, float]:
        """(elements written, bytes moved) by a kernel group in all its launches: measured where it was profiled,
        else from its time at bandwidth `bw` (each element read from `reads` lists and written to one)."""
        size = fk.element_bytes or 4
        got = _launch_bytes(k)
        launches = k.launches
        if got is not None:
            moved, stored = got
            return stored / size * launches, moved * launches
        moved = k.duration_ns * bw / 1e9
        return moved / (size * ((fk.reads or 1) + 1)), moved

    @staticmethod
    def _anchor(elements: dict[tuple, float]) -> tuple:
        """The op that runs once per parameter: the lerp of exp_avg, else the sqrt of exp_avg_sq, else SGD's momentum
        mul_, else the op that writes the fewest elements."""
        for op, functor in (("LerpFunctor", None), ("Sqrt", None), ("multiplies", "BinaryOpScalarFunctor")):
            found = [s for s in elements if s[1] == op and functor in (None, s[0])]
            if found:
                return min(found, key=lambda s: elements[s])
        return min(elements, key=lambda s: elements[s])

    @staticmethod
    def _states(sigs: list[tuple]) -> int:
        """State tensors per parameter: two for an Adam-style update (a lerp, a sqrt or an addcdiv), three with
        amsgrad's maximum; one for several SGD-style ops (a momentum buffer), none for one."""
        adam = any(
            s[1] in ("LerpFunctor", "Sqrt") or (s[0].startswith("PointwiseOp") and s[1] == "divides") for s in sigs
        )
        if adam:
            return 3 if any(s[1] == "maximum" for s in sigs) else 2
        return 1 if len(sigs) > 1 else 0

    @staticmethod
    def _launch_order(p: ProgramContext, ids: list[str]) -> list[str]:
        """The kernel ids in the order of their first launch."""
        first: dict[str, int] = {}
        for i, x in enumerate(p.launches):
            first.setdefault(str(x.get("kernel_id")), i)
        return sorted(ids, key=lambda kid: first.get(kid, len(p.launches)))


def _launch_bytes(k: KernelEntry) -> tuple[float, float] | None:
    """(load + store bytes, store bytes) of a kernel's profiled launch; None where it was timed only."""
    if k.profiled is False:
        return None
    load, store = k.roofline.load_bytes, k.roofline.store_bytes
    if not isinstance(load, (int, float)) or not isinstance(store, (int, float)) or store <= 0:
        return None
    return float(load) + float(store), float(store)


def _foreach_kernels(p: ProgramContext) -> tuple[list[tuple[KernelEntry, ForeachKernel]], dict[str, float]]:
    """The program's foreach kernels of the optimizer's step, and the time of the others by their role."""
    steps: list[tuple[KernelEntry, ForeachKernel]] = []
    others: dict[str, float] = {}
    for k in p.kernels:
        fk = foreach_kernel(k.demangled)
        if fk is None:
            continue
        r = role(fk)
        if r == "step":
            steps.append((k, fk))
        else:
            others[r] = others.get(r, 0.0) + k.duration_ns
    return steps, others
