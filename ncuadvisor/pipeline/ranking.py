"""Where to start: one entry per kernel (or program finding), ranked by the time its first fix saves.

A kernel's findings are fixes of the same time: a layout copy that removes the whole kernel and index arithmetic that
removes 40% of it cannot save 140%. The kernel's largest saving heads its entry; every other finding on it becomes a
follow-up costed on the time left after the fixes before it (fraction of the kernel × time left), so an entry and its
follow-ups never promise more than the kernel takes. An entry says which launches its saving is over (`launches`,
`duration_ns`): every size of the kernel its first fix was found on, so its title, time and saving speak of the same
launches. A fix (or follow-up) that saves less than `MIN_PROGRAM_FRACTION`
of the program is left out: it would save ~0 ns. A kernel's steps are `result.kernel_fixes.kernel_steps`, which the
program rules that weigh the kernel fixes read too. A rule whose fix is one setting for the whole program (`switch`:
TF32) heads one entry for every kernel it heads, their savings summed: the user makes that change once. A kernel's
time is spent once across all entries (`_spent_once`): a program finding and a kernel finding on one kernel never
claim more than it takes together, and the program findings are printed with the saving that pass left them
(`spent_program_findings`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ncuadvisor.result.kernel_fixes import MIN_PROGRAM_FRACTION, kernel_steps
from ncuadvisor.result.types import KernelEntry, ProgramFindingEntry, TopAction
from ncuadvisor.units import fmt_ns


def _covered(k: KernelEntry, rule: str) -> tuple[int, float]:
    """The launches and GPU time of the parts of a kernel group (its own analysed launches, its variants) on which
    `rule` found something: what the rule's saving is summed over."""
    parts = [(k.findings, k.analysed_launches or k.launches, float(k.analysed_duration_ns))]
    parts += [(v.findings, v.launches, float(v.duration_ns)) for v in k.variants]
    hit = [(n, ns) for findings, n, ns in parts if any(f.rule == rule for f in findings)]
    return sum(n for n, _ in hit), sum(ns for _, ns in hit)


def _one_setting(actions: list[TopAction], switches: Mapping[str, str], total_ns: float) -> list[TopAction]:
    """The kernel entries headed by a switch rule, two or more, as one program-wide entry (`switches`: code -> the
    rule's title); their follow-ups stay with the kernels' own findings."""
    out = [a for a in actions if not (a.scope == "kernel" and a.rule in switches)]
    for code, title in switches.items():
        group = [a for a in actions if a.scope == "kernel" and a.rule == code]
        if len(group) < 2:
            out += group
            continue
        saving = sum(a.estimated_saving_ns for a in group)
        names = list(dict.fromkeys(a.kernel if len(a.kernel) <= 28 else a.kernel[:27] + "…" for a in group))
        out.append(
            TopAction(
                kernel=f"{len(group)} kernels: " + ", ".join(names[:3]) + (" …" if len(names) > 3 else ""),
                kernel_id=group[0].kernel_id,
                kernel_ids=[str(a.kernel_id) for a in group],
                rule=code,
                category=group[0].category,
                title=f"{title} (one setting)",
                estimated_saving_ns=saving,
                program_fraction=saving / total_ns if total_ns else 0.0,
                scope="program",
                launches=sum(a.launches or 0 for a in group) or None,
                duration_ns=sum(a.duration_ns or 0.0 for a in group) or None,
            )
        )
    return out


def top_actions(
    kernels: Sequence[KernelEntry],
    total_ns: float,
    program: Sequence[ProgramFindingEntry] = (),
    limit: int = 10,
    switches: Mapping[str, str] | None = None,
) -> list[TopAction]:
    """Where to start: program findings and one entry per kernel (its largest fix, the others as `follow_ups`),
    ranked by the time the entry's fix saves; the kernels a switch rule heads as one entry (`switches`: code ->
    title)."""
    return rank(kernels, total_ns, program, limit, switches)[0]


def rank(
    kernels: Sequence[KernelEntry],
    total_ns: float,
    program: Sequence[ProgramFindingEntry] = (),
    limit: int = 10,
    switches: Mapping[str, str] | None = None,
) -> tuple[list[TopAction], list[ProgramFindingEntry]]:
    """The top actions (`top_actions`) and the program findings as printed (`spent_program_findings`) from one pass
    over the kernels' time."""
    actions, left = _ranked(kernels, total_ns, program, switches)
    floor_ns = MIN_PROGRAM_FRACTION * total_ns
    shown = [
        a for a in actions if a.scope == "kernel" or (a.estimated_saving_ns > 0 and a.estimated_saving_ns >= floor_ns)
    ]
    return shown[:limit], _spent(program, left)


def spent_program_findings(
    kernels: Sequence[KernelEntry],
    total_ns: float,
    program: Sequence[ProgramFindingEntry],
    switches: Mapping[str, str] | None = None,
) -> list[ProgramFindingEntry]:
    """The program findings as "across the program" prints them: each saving what the top actions' one pass over the
    kernels' time left it after the kernel entries (`_spent_once`), so a fusion of two kernels that kernel findings
    remove whole saves nothing more, and its saving model says what took the time."""
    return rank(kernels, total_ns, program, switches=switches)[1]


def _spent(program: Sequence[ProgramFindingEntry], left: list[tuple[float, list[str]]]) -> list[ProgramFindingEntry]:
    """Each program finding with the saving the pass left it, its saving model naming what took the rest."""
    out = []
    for p, (saving, takers) in zip(program, left):
        if saving >= p.estimated_saving_ns * (1 - 1e-9):
            out.append(p)
            continue
        by = ", ".join(takers) or "the kernel findings on them"
        kept = f"Capped at {fmt_ns(saving)} of the" if saving > 0 else "None of the"
        note = (
            f" {kept} {fmt_ns(p.estimated_saving_ns)} modelled: {by} already"
            f" {'claims' if len(takers) == 1 else 'claim'} the rest of its kernels' time"
            " (a kernel's time is spent once)."
        )
        out.append(replace(p, estimated_saving_ns=saving, saving_model=(p.saving_model + note).strip()))
    return out


def _ranked(
    kernels: Sequence[KernelEntry],
    total_ns: float,
    program: Sequence[ProgramFindingEntry],
    switches: Mapping[str, str] | None,
) -> tuple[list[TopAction], list[tuple[float, list[str]]]]:
    """Every entry, ranked, each kernel's time spent once; and, for each program finding, the saving that pass left
    it and the entries that took its kernels' time before it."""
    floor_ns = MIN_PROGRAM_FRACTION * total_ns
    actions = [
        TopAction(
            kernel=(", ".join(p.kernels[:3]) + (" …" if len(p.kernels) > 3 else "")) if p.kernels else "the program",
            kernel_id=p.kernel_ids[0] if p.kernel_ids else None,
            rule=p.rule,
            category=p.category,
            title=p.title,
            estimated_saving_ns=p.estimated_saving_ns,
            program_fraction=p.estimated_saving_ns / total_ns if total_ns else 0.0,
            scope="program",
            kernel_ids=[str(i) for i in p.kernel_ids] or None,
        )
        for p in program
    ]
    programs = list(actions)
    for k in kernels:
        steps = kernel_steps(k, total_ns, floor_ns)
        if not steps:
            continue
        head, rest = steps[0], steps[1:]
        variant = head.variant
        label = k.name if variant is None else f"{k.name} ({fmt_ns(k.variants[variant].per_launch_ns)} launches)"
        launches, duration_ns = _covered(k, head.rule)
        actions.append(
            TopAction(
                kernel=label,
                kernel_id=k.id,
                rule=head.rule,
                category=head.category,
                title=head.title,
                estimated_saving_ns=head.estimated_saving_ns,
                program_fraction=head.program_fraction,
                scope="kernel",
                variant=variant,
                launches=launches or None,
                duration_ns=duration_ns or None,
                follow_ups=rest or None,
            )
        )
    if switches:
        actions = _one_setting(actions, switches, total_ns)
    kernel_ns = {str(k.id): float(k.duration_ns or 0.0) for k in kernels}
    spent, left = _spent_once(actions, kernel_ns, total_ns, floor_ns, {id(a) for a in programs})
    spent.sort(key=lambda a: -a.estimated_saving_ns)
    return spent, [left.get(id(a), (a.estimated_saving_ns, [])) for a in programs]


# program findings whose saving lies outside the kernels' GPU time (launch gaps, host time, recompilation)
OUTSIDE_KERNEL_TIME = frozenset({"launch-overhead", "dynamic-shapes"})


def _spent_once(
    actions: list[TopAction],
    kernel_ns: Mapping[str, float],
    total_ns: float,
    floor_ns: float,
    program_ids: frozenset[int] | set[int] = frozenset(),
) -> tuple[list[TopAction], dict[int, tuple[float, list[str]]]]:
    """The entries with a kernel's time spent once across all of them: the kernel entries first (each saves what its
    finding's card says), then the program findings (`program_ids`: their `id()`s), each from the largest saving
    down; each entry's saving (its follow-ups' included) is capped at the time its kernels have left, and takes it
    from them (a program finding's share of each of its kernels in proportion to what each has left). A cast that a
    kernel finding removes whole leaves nothing for a fusion finding to claim on the same kernel. Entries that fall
    under the program's floor are left out. Also returns, by `id()` of each program entry given, the saving it keeps
    and the entries that took its kernels' time before it."""
    left = dict(kernel_ns)
    out: list[TopAction] = []
    kept: dict[int, tuple[float, list[str]]] = {}
    took: dict[str, list[str]] = {}  # kernel id -> the rules of the entries that spent its time
    for a in sorted(actions, key=lambda a: (id(a) in program_ids, -a.estimated_saving_ns)):
        original = id(a)
        ids = [i for i in (a.kernel_ids or ([str(a.kernel_id)] if a.kernel_id is not None else [])) if i in left]
        if not ids or (a.scope == "program" and a.category in OUTSIDE_KERNEL_TIME):
            out.append(a)
            continue
        if a.scope == "program":
            takers = [r for i in ids for r in took.get(i, [])]
            kept[original] = (min(a.estimated_saving_ns, sum(left[i] for i in ids)), list(dict.fromkeys(takers)))
        follow = [f.estimated_saving_ns for f in a.follow_ups or []]
        claim = a.estimated_saving_ns + sum(follow)
        avail = sum(left[i] for i in ids)
        scale = min(1.0, avail / claim) if claim > 0 else 1.0
        if scale < 1.0:
            saving = a.estimated_saving_ns * scale
            ups = [
                replace(
                    f, estimated_saving_ns=f.estimated_saving_ns * scale, program_fraction=f.program_fraction * scale
                )
                for f in a.follow_ups or []
            ]
            a = replace(
                a,
                estimated_saving_ns=saving,
                program_fraction=saving / total_ns if total_ns else 0.0,
                follow_ups=[f for f in ups if f.estimated_saving_ns >= floor_ns] or None,
            )
        spent = min(claim, avail)
        for i in ids:
            left[i] -= left[i] * (spent / avail) if avail > 0 else 0.0
            if spent > 0:
                took.setdefault(i, []).append(a.rule)
        if a.estimated_saving_ns > 0 and a.estimated_saving_ns >= floor_ns:
            out.append(a)
    return out, kept
