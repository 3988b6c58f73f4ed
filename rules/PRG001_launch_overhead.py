from ncuadvisor.rulekit import Evidence, Fix, ProgramContext, ProgramFinding, ProgramRule, SpeedOfLight

# PyTorch and Triton (TorchInductor) programs capture graphs through torch.cuda
_TORCH_GRAPHS = Fix(
    text=(
        "Capture the repeated sequence in a CUDA Graph and replay it; in PyTorch use "
        'torch.compile(mode="reduce-overhead") or torch.cuda.CUDAGraph for stable shapes. Batch many small '
        "problems into one launch, or fuse the kernels."
    ),
    code=(
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n    out = step(static_input)\n"
        "g.replay()   # one launch for the whole sequence"
    ),
)


class LaunchOverhead(ProgramRule):
    """Many launches of kernels that run for only a few microseconds: launch overhead dominates.

    What it detects:
        At least `min_launches` launches shorter than `short_ns` (`gpu__time_duration.sum` per result), making up at
        least `min_share` of all launches.

    Why it costs time:
        Each launch costs a few microseconds of host and driver work and leaves the GPU idle between kernels when the
        kernels are shorter than that. ncu serializes kernels, so these gaps do not appear in the report: the kernels
        look cheap while the program waits on launches.

    Example:
        for (int i = 0; i < 2000; ++i) tiny_add<<<4, 1024>>>(x, y, 4096);

    Use instead:
        Capture the sequence once in a CUDA Graph and replay it (`cudaStreamBeginCapture` / `cudaGraphLaunch`;
        PyTorch: `torch.cuda.CUDAGraph` or `torch.compile(mode="reduce-overhead")`), batch the small problems into one
        launch, or fuse the kernels.

    Speedup estimate:
        `overhead_ns` (a typical launch cost on x86 hosts) per short launch; confirm the real gaps with Nsight
        Systems, which sees them.
        Predicts no counter: the fix (a CUDA Graph) removes host time between launches, which an ncu report does not
        hold, and ncu still profiles every kernel node of a graph, so the launches it counts stay.

    False positives:
        Short kernels that overlap with long ones on other streams, or a program already replaying CUDA Graphs (ncu
        then still sees each kernel node).
    """

    code = "PRG001"
    slug = "launch-overhead"
    category = "launch-overhead"
    title = "Many tiny launches: launch overhead"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {"short_ns": 5000.0, "min_launches": 50, "min_share": 0.2, "overhead_ns": 2000.0}
    fixes = {
        "cuda": Fix(
            text=(
                "Capture the repeated sequence (one step, one layer) once in a CUDA Graph with stream capture and "
                "replay it with cudaGraphLaunch: one launch instead of one per kernel; keep the pointers and sizes "
                "fixed (or update the graph's nodes with cudaGraphExecUpdate). Batch many small problems into one "
                "launch, or fuse the kernels."
            ),
            code=(
                "cudaGraph_t graph; cudaGraphExec_t exec;\n"
                "cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);\n"
                "step(stream);                                 // the step's launches, unchanged\n"
                "cudaStreamEndCapture(stream, &graph);\n"
                "cudaGraphInstantiate(&exec, graph, 0);\n"
                "for (int s = 0; s < steps; ++s) cudaGraphLaunch(exec, stream);   // one launch per step"
            ),
        ),
        "pytorch": _TORCH_GRAPHS,
        "triton": _TORCH_GRAPHS,
    }

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        t = self.thresholds
        short = [x for x in p.launches if x["duration_ns"] is not None and x["duration_ns"] < t["short_ns"]]
        if len(short) < t["min_launches"] or len(short) < t["min_share"] * len(p.launches):
            return []
        counts: dict[str, int] = {}
        for x in short:
            counts[x["kernel_id"]] = counts.get(x["kernel_id"], 0) + 1
        top = sorted(counts.items(), key=lambda kv: -kv[1])
        names = [p.by_id[kid].name for kid, _ in top if kid in p.by_id]
        gpu_ns = sum(x["duration_ns"] for x in short)
        saving = len(short) * t["overhead_ns"]
        # The fix in the language of the short launches (by their GPU time): stream capture for CUDA code,
        # torch.cuda.CUDAGraph / reduce-overhead for PyTorch and Triton (TorchInductor) kernels.
        by_lang: dict[str, float] = {}
        for x in short:
            k = p.by_id.get(x["kernel_id"])
            lang = (k.language if k is not None else None) or "cuda"
            by_lang[lang] = by_lang.get(lang, 0.0) + x["duration_ns"]
        torch_ns = sum(v for lang, v in by_lang.items() if lang in ("pytorch", "triton"))
        fix = self.fix_in("pytorch" if torch_ns >= sum(by_lang.values()) - torch_ns else "cuda")
        return [
            self.finding(
                title=f"{len(short)} launches shorter than {t['short_ns'] / 1000:.0f} µs",
                message=(
                    f"{len(short)} of {len(p.launches)} launches run under {t['short_ns'] / 1000:.0f} µs "
                    f"({gpu_ns / 1000:.0f} µs of GPU time in all); at ~{t['overhead_ns'] / 1000:.0f} µs of launch "
                    "overhead each, the program spends more time launching them than running them."
                ),
                fix=fix,
                kernels=names,
                kernel_ids=[kid for kid, _ in top],
                estimated_saving_ns=saving,
                saving_model=(
                    f"{t['overhead_ns'] / 1000:.0f} µs of host launch overhead per short launch (ncu cannot see "
                    "the gaps; Nsight Systems can)."
                ),
                confidence="low",
                evidence=[
                    Evidence("short_launches", len(short), t["min_launches"], f"launches < {t['short_ns']:.0f} ns")
                ],
            )
        ]
