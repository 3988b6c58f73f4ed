import re

from ncuadvisor.rules_api import Evidence, ProgramContext, ProgramRule

INDUCTOR_VARIANT = re.compile(r"^(triton_(?:poi|red|per|tem|for)_\w+?)_(\d+)$")


class DynamicShapes(ProgramRule):
    """One kernel launched with many shapes, or many compiled variants of one Inductor kernel.

    What it detects:
        A kernel function seen with at least `min_shapes` distinct launch shapes (grid × block), or at least
        `min_variants` TorchInductor kernels that differ only by their numeric suffix (recompiled per shape).

    Why it costs time:
        Shapes that change from call to call defeat CUDA Graphs (a graph fixes its shapes), trigger recompilation
        in torch.compile (each new shape compiles a new kernel, and code size grows per shape and dtype), and leave
        kernels tuned for one shape running on others.

    Example:
        for seq_len in lengths: model(x[:, :seq_len])   # every decode step a new shape

    Use instead:
        Where shapes are stable (decode), bucket them to a few padded sizes and capture one CUDA Graph per bucket;
        where they vary (prefill), use shape-generic kernels: Triton masks over a runtime length,
        `torch.compile(dynamic=True)` / `torch._dynamo.mark_dynamic` for symbolic shapes.

    Speedup estimate:
        Not estimated from the report (compile time and graph-launch savings happen outside the kernels); the
        finding says where to look.

    False positives:
        Programs that legitimately run a few distinct problem sizes (a multi-scale model) once each.
    """

    code = "PRG003"
    slug = "dynamic-shapes"
    category = "dynamic-shapes"
    title = "Many launch shapes of the same kernel"
    requires = ("gpu__time_duration.sum",)
    thresholds = {"min_shapes": 4, "min_variants": 4}

    def check_program(self, p: ProgramContext):
        shapes: dict[str, set] = {}
        ids: dict[str, list[str]] = {}
        for k in p.kernels:
            shapes.setdefault(k["demangled"], set()).add((k["grid"], k["block"]))
            ids.setdefault(k["demangled"], []).append(k["id"])
        findings = []
        for name, s in shapes.items():
            if len(s) >= self.thresholds["min_shapes"]:
                short = next(k["name"] for k in p.kernels if k["demangled"] == name)
                findings.append(self.finding(
                    title=f"{short} runs with {len(s)} launch shapes",
                    message=(f"The same kernel was launched with {len(s)} different grid/block shapes: shapes vary "
                             "between calls, which defeats CUDA Graphs and per-shape tuning."),
                    fix=("Bucket stable shapes (decode) to a few padded sizes with one CUDA Graph each; keep varying "
                         "shapes (prefill) on shape-generic kernels (Triton masks, torch.compile(dynamic=True))."),
                    kernels=[short], kernel_ids=ids[name], estimated_saving_ns=0.0,
                    saving_model="Not estimated: the cost is in recompilation and lost graph replays.",
                    confidence="low",
                    evidence=[Evidence("launch_shapes", len(s), self.thresholds["min_shapes"])],
                ))
        variants: dict[str, list[dict]] = {}
        for k in p.kernels:
            m = INDUCTOR_VARIANT.match(k["name"])
            if m:
                variants.setdefault(m.group(1), []).append(k)
        for base, ks in variants.items():
            if len(ks) >= self.thresholds["min_variants"]:
                findings.append(self.finding(
                    title=f"{len(ks)} compiled variants of {base}",
                    message=(f"TorchInductor emitted {len(ks)} kernels named {base}_N: the same fused op compiled "
                             "again, typically once per input shape."),
                    fix=("Mark the varying dimension dynamic (torch._dynamo.mark_dynamic(x, dim) or "
                         "torch.compile(dynamic=True)) so one shape-generic kernel serves all sizes, or pad inputs "
                         "to a few buckets."),
                    fix_code="torch._dynamo.mark_dynamic(x, 1)   # sequence length varies",
                    kernels=[k["name"] for k in ks], kernel_ids=[k["id"] for k in ks], estimated_saving_ns=0.0,
                    saving_model="Not estimated: the cost is in compilation and code size.",
                    confidence="low",
                    evidence=[Evidence("variants", len(ks), self.thresholds["min_variants"])],
                ))
        return findings
