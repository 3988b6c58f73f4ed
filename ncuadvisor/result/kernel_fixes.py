"""A kernel entry's fixes as "where to start" costs them: its steps (its largest saving first, each further fix
costed on the time left after the ones before it) and the parts of its time one rule's fix saves. The ranking
(`pipeline.ranking`), the wall-time replay of an entry (`pipeline.hostwall`) and the program rules that weigh what the
kernel fixes would leave (PRG005) read them here, so that they cannot disagree."""

from __future__ import annotations

from ncuadvisor.result.types import FindingEntry, FollowUp, KernelEntry

MIN_PROGRAM_FRACTION = 0.001  # below 0.1% of the program's GPU time a fix saves ~0


def kernel_steps(k: KernelEntry, total_ns: float, floor_ns: float | None = None) -> list[FollowUp]:
    """The kernel's fixes, largest first, each costed on the time left after the ones before it; those that save less
    than `floor_ns` (default: `MIN_PROGRAM_FRACTION` of `total_ns`) are left out. The first is the fix that heads the
    kernel's "where to start" entry."""
    floor_ns = MIN_PROGRAM_FRACTION * total_ns if floor_ns is None else floor_ns
    kernel_ns = sum(ns for _, ns, _ in k.findings_with_time())
    left = kernel_ns
    steps = []
    for f, saving, variant in sorted(k.savings_by_rule().values(), key=lambda t: -t[1]):
        if kernel_ns > 0:
            saving = left * min(1.0, max(0.0, saving / kernel_ns))
            left -= saving
        if saving <= 0 or saving < floor_ns:
            continue
        steps.append(
            FollowUp(
                rule=f.rule,
                category=f.category,
                title=f.title,
                estimated_saving_ns=saving,
                program_fraction=saving / total_ns if total_ns else 0.0,
                variant=variant,
            )
        )
    return steps


def _speedup(findings: list[FindingEntry], rule: str) -> float:
    return next((float(f.estimated_speedup) for f in findings if f.rule == rule), 0.0)


def saved_parts(k: KernelEntry, rule: str) -> list[tuple[float | None, float]]:
    """(per-launch ns, fraction saved) of each part of a kernel group for one rule's fix: its own analysed launches,
    then each variant; a part the rule did not fire on saves nothing."""
    own = k.analysed_duration_ns / k.analysed_launches if k.analysed_launches else None
    return [(own, _speedup(k.findings, rule))] + [(v.per_launch_ns, _speedup(v.findings, rule)) for v in k.variants]
