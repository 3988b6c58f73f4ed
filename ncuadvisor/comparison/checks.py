"""The counter checks of a diff: for each finding before that predicted which counter its fix must move
(`FindingEntry.predicts`), the counter measured after (`KernelEntry.counters`), whether it reached the bound, and the
kernel's time change beside the one the finding estimated:

    MEM002 resolved: shared wavefronts per wavefront needed 16.5 → 1.0 (predicted ≤ 1.25), kernel −35% (predicted −40%)
    MEM002 persists: the change did not do what the fix was for: shared wavefronts per wavefront needed unchanged (16.5)
    PYT001 resolved: launches 2 → 0 (predicted ≤ 1)

A kernel's `launches` after are those of the kernel it was matched to (0 when it is gone: then only that prediction is
checked); a program finding's `kernel_launches` after, those of the kernels matched to the ones it names.
"""

from __future__ import annotations

from collections.abc import Sequence

from ncuadvisor.comparison.types import CounterCheck, FindingChanges
from ncuadvisor.result.types import KernelEntry, PredictionEntry, ProgramFindingEntry
from ncuadvisor.units import fmt_change

UNCHANGED = 0.05  # a counter within 5% of its value before has not moved (the diff's default noise threshold)


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "–"
    text = f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return text + ("%" if unit == "%" else "")


def _met(p: PredictionEntry, after: float) -> bool:
    return after <= p.bound if p.expect == "<=" else after >= p.bound


def _text(
    rule: str, state: str, p: PredictionEntry, after: float | None, met: bool | None, change: float | None
) -> str:
    head = f"{rule} {state}: "
    sign = "≤" if p.expect == "<=" else "≥"
    predicted = f"predicted {sign} {_value(p.bound, p.unit)}"
    if met is None:
        return head + f"{p.label} not measured in the after report ({predicted})"
    moved = f"{p.label} {_value(p.current, p.unit)} → {_value(after, p.unit)}"
    if met:
        return head + f"{moved} ({predicted})"
    before = p.current
    unchanged = before is not None and after is not None and abs(after - before) <= UNCHANGED * max(abs(before), 1e-9)
    if unchanged:
        return head + f"the change did not do what the fix was for: {p.label} unchanged ({_value(before, p.unit)})"
    return head + f"the change did not do what the fix was for: {moved}, short of the {predicted}"


def counter_checks(
    bgroup: list[KernelEntry], agroup: list[KernelEntry], findings: FindingChanges, change: float | None
) -> list[CounterCheck]:
    """The checks of a kernel pair (the first entry of each side: its representative launch's counters); a kernel gone
    after the change (`agroup` empty) has only its launches checked."""
    if not bgroup:
        return []
    after_counters = dict(agroup[0].counters or {}) if agroup else {}
    after_counters["launches"] = float(sum(int(a.launches) for a in agroup))
    resolved = {f.rule for f in findings.resolved}
    out = []
    for f in bgroup[0].findings:
        state = "resolved" if f.rule in resolved else "persists"
        for p in f.predicts or []:
            if not agroup and p.metric != "launches":
                continue
            predicted_change = -f.estimated_speedup if f.estimated_speedup else None
            out.append(_check(f.rule, state, p, after_counters.get(p.metric), change, predicted_change))
    return out


def _check(
    rule: str,
    state: str,
    p: PredictionEntry,
    after: float | None,
    change: float | None,
    predicted_change: float | None,
) -> CounterCheck:
    met = None if after is None else _met(p, after)
    text = _text(rule, state, p, after, met, change)
    if met and change is not None:
        text += f", kernel {fmt_change(change)}" + (
            f" (predicted {fmt_change(predicted_change)})" if predicted_change is not None else ""
        )
    return CounterCheck(
        rule=rule,
        finding="resolved" if state == "resolved" else "persists",
        metric=p.metric,
        label=p.label,
        before=p.current,
        after=after,
        predicted=p.predicted,
        bound=p.bound,
        expect=p.expect,
        met=met,
        kernel_change=change,
        predicted_change=predicted_change,
        text=text,
    )


def program_counter_checks(
    findings: Sequence[ProgramFindingEntry],
    pairs: Sequence[tuple[Sequence[KernelEntry], Sequence[KernelEntry]]],
    changes: FindingChanges,
) -> list[CounterCheck]:
    """The checks of the program findings before: `kernel_launches`, the launches after of the kernels matched to the
    ones a finding names (each pair counted once), against its prediction."""
    pair_of: dict[str, int] = {}
    after_launches: list[float] = []
    for i, (bg, ag) in enumerate(pairs):
        after_launches.append(float(sum(int(a.launches) for a in ag)))
        for k in bg:
            pair_of[k.id] = i
    resolved = {f.rule for f in changes.resolved}
    out = []
    for f in findings:
        state = "resolved" if f.rule in resolved else "persists"
        for p in f.predicts or []:
            touched = {pair_of[kid] for kid in (p.kernel_ids or f.kernel_ids) if kid in pair_of}
            after = sum(after_launches[i] for i in touched) if touched and p.metric == "kernel_launches" else None
            out.append(_check(f.rule, state, p, after, None, None))
    return out
