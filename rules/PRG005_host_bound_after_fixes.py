from ncuadvisor.rulekit import (
    Evidence,
    Fix,
    ProgramContext,
    ProgramFinding,
    ProgramRule,
    SpeedOfLight,
    count,
    fmt_ns,
    kernel_steps,
    saved_parts,
)

# ATen ops and the library calls they make: the host work per launch is PyTorch's dispatch, autograd and optimizer
# bookkeeping in Python and C++
_EAGER = ("pytorch", "library")


# the fallback rules: their findings name a mechanism and bound its saving, they are not fixes to count
FALLBACK_RULES = frozenset({"GEN001"})


class HostBoundAfterFixes(ProgramRule):
    """The kernel fixes found would leave so little GPU work per launch that an eager PyTorch program would then wait
    on its host: a caution with the fix for it, not a saving.

    What it detects:
        A program of ATen and library kernels whose kernel findings (each kernel's first, as "where to start" ranks
        them) save at least `min_saving_fraction` of its GPU time, and whose launches would then average less than
        `host_ns_per_launch` of GPU work each: the time eager PyTorch spends on the host per op (dispatch, autograd,
        the optimizer's Python), or the host's time per launch measured in a host timeline of the program when
        the report has one. Every launch the report holds counts.

    Why it costs time:
        The GPU runs a step no faster than the host issues it. Eager PyTorch needs tens of microseconds of host time
        per op; while the kernels are slow the GPU is the bottleneck and the host runs ahead, but once the kernels
        take less than the host's time per launch the step waits on the host, and a kernel fix saves wall time only
        down to it. On an H200 host, the planted fp32 training step (`workloads/torch/planted.py train_step`, 52
        launches) took 2,841 µs of kernels and 2,955 µs a call; with TF32 its kernels took 992 µs, 1,848 µs less, but
        the call 2,148 µs, 807 µs less: about 44 µs of host time per launch (fixtures/torch-loop-2026-12-01).

    Example:
        torch.backends.cuda.matmul.allow_tf32 = True   # the GEMMs of a small training step get 4x faster, the step 1.4x

    Use instead:
        Make the kernel fixes, then take the host out of the step: capture it as a CUDA graph
        (`torch.compile(mode="reduce-overhead")`, or `torch.cuda.graphs` by hand with static inputs), or give the GPU
        more work per launch (a larger batch). Time the step, not only its kernels, after each fix.

    Speedup estimate:
        None claimed: the kernel findings hold their own savings. Without a host timeline the host's time is not
        known: the finding states the GPU time per launch the fixes would leave against `host_ns_per_launch`. With
        one (`--host-trace`, `profile --host-time`) the host's time per launch is the one measured, and the finding
        states the wall time the fixes would keep: the measured timeline replayed with the fixed kernels at their
        estimated durations (`analysis.replay`), per report window.
        Predicts no counter: what it speaks of is the host's time per launch, which an ncu report does not hold (a
        host timeline of each side does: `--host-trace`).

    False positives:
        A program whose host work per op is already small (ops issued from C++, a captured graph replayed: then its
        launches show no host gaps), or launches on several streams that overlap.
    """

    code = "PRG005"
    slug = "host-bound-after-fixes"
    category = "launch-overhead"
    title = "After the kernel fixes the step would wait on the host"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {
        "min_saving_fraction": 0.3,  # of the program's GPU time, saved by the kernels' first findings
        "host_ns_per_launch": 20000.0,  # eager PyTorch's host time per op, on the low side (44 µs measured, H200 host)
        "min_launches": 10,
    }
    fixes = {
        "pytorch": Fix(
            text=(
                "Make the kernel fixes first, then time the whole step: once its kernels take less than the host "
                "needs to issue them, capture the step as a CUDA graph so that the host issues it once "
                '(torch.compile(mode="reduce-overhead"); or torch.cuda.graphs with static input tensors), or give '
                "each launch more work (a larger batch)."
            ),
            code=(
                'step = torch.compile(step, mode="reduce-overhead")   # replayed as a CUDA graph: one host call\n'
                "# or: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): loss = step(static_x, static_y)"
            ),
        ),
    }

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        t = self.thresholds
        launches = len(p.launches)
        if launches < t["min_launches"] or not p.total_ns:
            return []
        if any((k.language or "cuda") not in _EAGER for k in p.kernels):
            return []  # the user's CUDA or Triton kernels: host costs of another kind
        saved, fixed, fixed_ids, parts = _first_fixes(p)
        if saved < t["min_saving_fraction"] * p.total_ns:
            return []
        after = p.total_ns - saved
        per_launch = after / launches
        host = p.host
        host_ns = host.host_ns_per_launch if host is not None else t["host_ns_per_launch"]
        if per_launch >= host_ns:
            return []
        by_rule: dict[str, int] = {}
        for rule in fixed:
            by_rule[rule] = by_rule.get(rule, 0) + 1
        shown = ", ".join(f"{rule} on {count(n, 'kernel')}" for rule, n in by_rule.items())
        evidence = [
            Evidence("launches", launches, t["min_launches"], "launches in the report"),
            Evidence("saved_ns", round(saved), None, "GPU time the kernel findings save (ns)"),
            Evidence(
                "gpu_ns_per_launch_after",
                round(per_launch),
                t["host_ns_per_launch"] if host is None else round(host_ns),
                "GPU time per launch after the fixes (ns)",
            ),
        ]
        cost = (
            f"{fmt_ns(host_ns)} of host time per launch measured in the host timeline"
            if host is not None
            else f"{fmt_ns(host_ns)} or more of host time eager PyTorch spends per op"
        )
        message = (
            f"The kernel findings ({shown}) would take the GPU time of these "
            f"{count(launches, 'launch', 'launches')} from {fmt_ns(p.total_ns)} to about {fmt_ns(after)}, "
            f"{fmt_ns(per_launch)} per launch, less than the {cost}: the step would then run at the host's pace and "
            "keep only part of the saving."
        )
        more, model = _replayed(p, parts, saved, evidence)
        message += more
        return [
            self.finding(
                title=(
                    f"After the kernel fixes the GPU would do {fmt_ns(per_launch)} of work per launch: "
                    "the step would wait on the host"
                ),
                message=message,
                fix=self.fix_in("pytorch"),
                estimated_saving_ns=0.0,
                saving_model=model,
                kernels=list(dict.fromkeys(p.by_id[i].name for i in fixed_ids)),
                kernel_ids=fixed_ids,
                confidence="low" if host is None else "medium",
                evidence=evidence,
            )
        ]


def _first_fixes(p: ProgramContext) -> tuple[float, list[str], list[str], dict[str, list[tuple[float | None, float]]]]:
    """Each kernel's first fix as "where to start" heads its entry: the GPU time they save in all, their rules, their
    kernels' ids, and per kernel the parts of its time the fix saves, as the ranking and the wall-time replay give
    them."""
    saved = 0.0
    fixed: list[str] = []
    fixed_ids: list[str] = []
    parts: dict[str, list[tuple[float | None, float]]] = {}
    for entry in p.kernels:
        # a fallback's named mechanism (GEN001) bounds what a fix could save; it is no fix this sum counts on
        steps = [s for s in kernel_steps(entry, p.total_ns) if s.rule not in FALLBACK_RULES]
        if not steps:
            continue
        saved += steps[0].estimated_saving_ns
        fixed.append(steps[0].rule)
        fixed_ids.append(entry.id)
        parts[entry.id] = saved_parts(entry, steps[0].rule)
    return saved, fixed, fixed_ids, parts


def _replayed(
    p: ProgramContext, parts: dict[str, list[tuple[float | None, float]]], saved: float, evidence: list[Evidence]
) -> tuple[str, str]:
    """What the message adds and the saving model: with a measured host timeline, the step replayed with all the
    fixes at once (its wall times appended to `evidence`); without one, that no saving is claimed."""
    host = p.host
    if host is None:
        return " No saving is claimed for this: the host's time is not in the report.", (
            "No saving claimed: a caution on the kernel findings' savings, which hold in GPU time; the step's wall "
            "time falls by as much only while the GPU, not the host, sets its pace."
        )
    wall = host.wall_saving_ns(parts) or 0.0
    before = host.wall_per_window_ns()
    evidence.append(Evidence("wall_saving_ns", round(wall), None, "wall time all the fixes save (ns)"))
    evidence.append(Evidence("wall_ns_before", round(before), None, "wall time of the step, measured (ns)"))
    return (
        f" Replayed with these kernels that much faster, the measured host timeline's step takes "
        f"{fmt_ns(before - wall)} instead of {fmt_ns(before)}: {fmt_ns(wall)} of wall time saved of the "
        f"{fmt_ns(saved)} of GPU time."
    ), (
        "No further saving claimed: the kernel findings' wall-time savings, from the measured host timeline "
        "replayed with each fix, are on their own entries; this one replays all of them at once."
    )
