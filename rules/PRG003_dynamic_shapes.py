import re

from ncuadvisor.rulekit import Evidence, Fix, KernelEntry, ProgramContext, ProgramFinding, ProgramRule, SpeedOfLight

INDUCTOR_VARIANT = re.compile(r"^(triton_(?:poi|red|per|tem|for)_\w+?)_(\d+)$")
INDUCTOR_VARIANTS = "TorchInductor compiled one kernel again per shape"


class DynamicShapes(ProgramRule):
    """One kernel launched with many shapes, or many compiled variants of one Inductor kernel.

    What it detects:
        A kernel function seen with at least `min_shapes` distinct launch shapes (grid × block), at least
        `min_changing` of them confined to part of the run: a shape that is launched from the first third of the
        kernel's launches to the last third is a call site that runs every step (a model's several matrix sizes),
        not a shape that changes. Or at least `min_variants` TorchInductor kernels that differ only by their numeric
        suffix (recompiled per shape).

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
        Predicts no counter: what bucketing or shape-generic kernels save (recompilations, graph captures, host
        dispatch) happens outside the kernels, and the kernels' time per launch does not move.

    False positives:
        Programs that legitimately run a few distinct problem sizes (a multi-scale model) once each; a capture of
        a single step, where no shape can recur.
    """

    code = "PRG003"
    slug = "dynamic-shapes"
    category = "dynamic-shapes"
    title = "Many launch shapes of the same kernel"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {"min_shapes": 4, "min_variants": 4, "min_changing": 2}
    fixes = {
        "cuda": Fix(
            text=(
                "Bucket stable shapes (decode) to a few padded sizes with one CUDA Graph each; keep varying "
                "shapes (prefill) on shape-generic kernels (Triton masks over a runtime length, "
                "torch.compile(dynamic=True) / torch._dynamo.mark_dynamic)."
            ),
            code=(
                "buckets = [128, 256, 512]\n"
                "n = next(b for b in buckets if b >= seq_len)      # pad to the bucket\n"
                "graphs[n].replay()                               # one captured CUDA Graph per bucket"
            ),
        ),
    }
    fixes_when = {
        INDUCTOR_VARIANTS: {
            "cuda": Fix(
                text=(
                    "Mark the varying dimension dynamic (torch._dynamo.mark_dynamic(x, dim) or "
                    "torch.compile(dynamic=True)) so one shape-generic kernel serves all sizes, or pad inputs "
                    "to a few buckets."
                ),
                code="torch._dynamo.mark_dynamic(x, 1)   # sequence length varies",
            ),
        },
    }

    @staticmethod
    def changing_shapes(p: ProgramContext) -> dict[str, set]:
        """Kernel (demangled) -> its launch shapes that do not recur over its launches: first launched after the
        first third of the kernel's launches, or last launched before the last third."""
        name_of = {k.id: k.demangled for k in p.kernels}
        seqs: dict[str, list[tuple]] = {}
        for x in p.launches:
            name = name_of.get(str(x.get("kernel_id")))
            if name is not None:
                seqs.setdefault(name, []).append((x.get("grid"), x.get("block")))
        out: dict[str, set] = {}
        for name, seq in seqs.items():
            first: dict[tuple, int] = {}
            last: dict[tuple, int] = {}
            for i, shape in enumerate(seq):
                first.setdefault(shape, i)
                last[shape] = i
            n = len(seq)
            out[name] = {s for s in first if not (first[s] < n / 3 and last[s] >= 2 * n / 3)}
        return out

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        shapes: dict[str, set] = {}
        ids: dict[str, list[str]] = {}
        time_ns: dict[str, float] = {}
        for k in p.kernels:
            shapes.setdefault(k.demangled, set()).add((k.grid, k.block))
            ids.setdefault(k.demangled, []).append(k.id)
            time_ns[k.demangled] = time_ns.get(k.demangled, 0.0) + float(k.duration_ns or 0.0)
        findings = []
        # One finding for the program: varying shapes are a property of how it is driven (sequence lengths, batch
        # sizes), not of one kernel; the kernels are listed by GPU time.
        # without the launch order (no launches given) every shape counts as changing
        changing = self.changing_shapes(p) if p.launches else shapes
        many = sorted(
            (
                n
                for n, s in shapes.items()
                if len(s) >= self.thresholds["min_shapes"]
                and len(changing.get(n, s)) >= self.thresholds["min_changing"]
            ),
            key=lambda n: -time_ns[n],
        )
        if many:
            short = {n: next(k.name for k in p.kernels if k.demangled == n) for n in many}
            counts = sorted({len(shapes[n]) for n in many})
            typical = max(counts, key=lambda c: sum(1 for n in many if len(shapes[n]) == c))
            share = sum(time_ns[n] for n in many) / p.total_ns if p.total_ns else 0.0
            listed = ", ".join(f"{short[n]} ({len(shapes[n])})" for n in many[:6]) + (" …" if len(many) > 6 else "")
            findings.append(
                self.finding(
                    title=(
                        f"{len(many)} kernel{'s' if len(many) > 1 else ''} run with {typical} or more launch shapes"
                        if len(many) > 1
                        else f"{short[many[0]]} runs with {len(shapes[many[0]])} launch shapes"
                    ),
                    message=(
                        f"{len(many)} kernel{'s' if len(many) > 1 else ''} ({share:.0%} of the GPU time) were "
                        f"launched with several grid/block shapes ({listed}): the program runs about {typical} "
                        "problem sizes, so shapes vary between calls, which defeats CUDA Graphs (a graph fixes its "
                        "shapes), recompiles torch.compile'd code per shape and leaves kernels tuned for one shape "
                        "running on others."
                    ),
                    fix=self.fix_in("cuda"),
                    kernels=[short[n] for n in many],
                    kernel_ids=[i for n in many for i in ids[n]],
                    estimated_saving_ns=0.0,
                    saving_model="Not estimated: the cost is in recompilation and lost graph replays.",
                    confidence="low",
                    evidence=[
                        Evidence("kernels_with_many_shapes", len(many)),
                        Evidence("launch_shapes_max", max(counts), self.thresholds["min_shapes"]),
                    ],
                )
            )
        variants: dict[str, list[KernelEntry]] = {}
        for k in p.kernels:
            m = INDUCTOR_VARIANT.match(k.name)
            if m:
                variants.setdefault(m.group(1), []).append(k)
        for base, ks in variants.items():
            if len(ks) >= self.thresholds["min_variants"]:
                findings.append(
                    self.finding(
                        title=f"{len(ks)} compiled variants of {base}",
                        message=(
                            f"TorchInductor emitted {len(ks)} kernels named {base}_N: the same fused op compiled "
                            "again, typically once per input shape."
                        ),
                        fix=self.fix_in("cuda", INDUCTOR_VARIANTS),
                        kernels=[k.name for k in ks],
                        kernel_ids=[k.id for k in ks],
                        estimated_saving_ns=0.0,
                        saving_model="Not estimated: the cost is in compilation and code size.",
                        confidence="low",
                        evidence=[Evidence("variants", len(ks), self.thresholds["min_variants"])],
                    )
                )
        return findings
