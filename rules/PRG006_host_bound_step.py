from pathlib import Path

from ncuadvisor.rulekit import Evidence, Fix, ProgramContext, ProgramFinding, ProgramRule, SpeedOfLight, count, fmt_ns

_TORCH = Fix(
    text=(
        "The GPU waits on the host for most of the step: capture the step as a CUDA graph so that the host issues "
        'it in one call (torch.compile(step, mode="reduce-overhead"); or torch.cuda.graphs with static input '
        "tensors, replaying the captured graph each step). Keep host synchronisations (.item(), .cpu(), printing a "
        "tensor) out of the captured region: each one ends a graph."
    ),
    code=(
        'step = torch.compile(step, mode="reduce-overhead")   # replayed as a CUDA graph: one host call\n'
        "# or by hand, with static inputs:\n"
        "g = torch.cuda.CUDAGraph()\n"
        "with torch.cuda.graph(g):\n"
        "    static_loss = step(static_x, static_y)\n"
        "# each step: static_x.copy_(x); static_y.copy_(y); g.replay()"
    ),
)


class HostBoundStep(ProgramRule):
    """The GPU idles for most of the window while the host issues the next launches: the step is host-bound now;
    replay it as a CUDA graph.

    What it detects:
        A host timeline measured beside the report (`--host-trace`, `profile --host-time`) in which the GPU is idle
        `min_idle_share` or more of the steady state's wall time, over at least `min_launches` GPU operations per
        report window, and where issuing them as CUDA graphs would save at least `min_saving_fraction` of the wall
        time. Without a host timeline the rule does not run: a kernel profile holds no host time.

    Why it costs time:
        Each eager PyTorch op costs the host tens of microseconds (Python, dispatch, autograd, the launch call); when
        the kernels take less than that, the GPU finishes each one before the host has issued the next, and the
        step runs at the host's pace. Faster kernels save nothing then. A CUDA graph issues the whole captured
        sequence with one host call; the GPU runs its kernels back to back.

    Example:
        for x, y in loader:            # a small model: each of its ~60 launches waits on the host
            loss = step(x, y)

    Use instead:
        `torch.compile(step, mode="reduce-overhead")` (CUDA graphs, with the fusions of Inductor), or
        `torch.cuda.graphs` by hand with static inputs; in CUDA C++, capture the stream
        (cudaStreamBeginCapture/EndCapture) and `cudaGraphLaunch` it.

    Speedup estimate:
        The measured host timeline replayed as graphs (`analysis.replay`, graphs=True): between two blocking calls
        (synchronisations, copies to the host) every launch is issued at once, by one host call that costs the
        median launch call of the trace; the GPU runs the operations back to back at their measured durations and
        gaps. The saving is the measured wall time per report window less that replay's. It assumes the whole window
        can be captured (its host work between launches is launch overhead, not data loading or logging that would
        stay) and that the captured kernels run as long as the eager ones: an upper bound where the step does other
        host work.
        Predicts no counter: a captured step saves host time, which an ncu report does not hold, and ncu still
        profiles each kernel node of the graph.

    False positives:
        Dynamic shapes or data-dependent control flow (each shape needs a graph of its own; a host decision cannot
        be captured), allocations inside the step that graphs cannot hold; a trace whose host is slowed by the
        profiler itself (record CUDA activities only: with CPU ops the host's time per op doubles).
    """

    code = "PRG006"
    slug = "host-bound-step"
    category = "launch-overhead"
    title = "The GPU waits on the host: replay the step as a CUDA graph"
    requires = (SpeedOfLight.DURATION,)  # the kernels' times; the host's come from the host timeline
    thresholds = {
        "min_idle_share": 0.5,  # of the steady state's wall time, the GPU idle
        "min_launches": 10,  # GPU operations per report window
        "min_saving_fraction": 0.05,  # of the wall time per window, saved by graphs
    }
    fixes = {
        "pytorch": _TORCH,
        "library": _TORCH,
        "triton": _TORCH,
        "cuda": Fix(
            text=(
                "The GPU waits on the host for most of the window: capture the launches in a CUDA graph "
                "(cudaStreamBeginCapture ... cudaStreamEndCapture, cudaGraphInstantiate) and launch the graph "
                "once per step (cudaGraphLaunch)."
            ),
            code=(
                "cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);\n"
                "step(stream);                                  // the launches, as before\n"
                "cudaStreamEndCapture(stream, &graph);\n"
                "cudaGraphInstantiate(&exec, graph, 0);\n"
                "for (...) cudaGraphLaunch(exec, stream);      // each step: one host call"
            ),
        ),
    }

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        t, host = self.thresholds, p.host
        if host is None or not host.windows:
            return []
        idle = 1.0 - host.gpu_busy_share
        per_window = host.launches_per_window
        wall = host.wall_per_window_ns()
        if idle < t["min_idle_share"] or per_window < t["min_launches"] or not wall > 0:
            return []
        saving = host.graphs_saving_ns()
        if saving < t["min_saving_fraction"] * wall:
            return []
        languages = [str(k.language or "cuda") for k in p.kernels]
        language = max(sorted(set(languages)), key=languages.count) if languages else "pytorch"
        return [
            self.finding(
                title=(
                    f"The GPU is idle {idle:.0%} of the step, waiting on the host: "
                    f"{fmt_ns(host.host_ns_per_launch)} of host time per launch"
                ),
                message=(
                    f"In the measured host timeline ({Path(host.timeline.path).name}) one report window takes {fmt_ns(wall)} of "
                    f"wall time and the GPU is busy {host.gpu_busy_share:.0%} of it: the host needs "
                    f"{fmt_ns(host.host_ns_per_launch)} per launch to issue its "
                    f"{count(round(per_window), 'GPU operation')} and the kernels finish before the next is issued. "
                    f"Issued as CUDA graphs, the window would take about {fmt_ns(wall - saving)}."
                ),
                fix=self.fix_in(language),
                estimated_saving_ns=saving,
                saving_model=(
                    "Wall time, not GPU time: the measured host timeline replayed with every launch between two "
                    "blocking calls issued at once (one graph launch), the kernels at their measured durations."
                ),
                kernels=[],  # the whole window: every launch
                kernel_ids=[],
                speedup_type="wall",
                confidence="medium",
                evidence=[
                    Evidence("gpu_idle_share", round(idle, 3), t["min_idle_share"], "GPU idle, share of the window"),
                    Evidence("host_ns_per_launch", round(host.host_ns_per_launch), None, "host time per launch (ns)"),
                    Evidence("wall_ns", round(wall), None, "wall time per report window, measured (ns)"),
                    Evidence(
                        "launches_per_window", round(per_window, 1), t["min_launches"], "GPU operations per window"
                    ),
                ],
            )
        ]
