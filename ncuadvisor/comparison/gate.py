"""`ncuadvisor diff --fail-on` and `--threshold`: when a diff fails the CI gate, and the threshold as the user writes it;
`compared` (the diff with its partial sides said first) and `refuse_gate` (no gate on a partial report or on two
GPUs, unless allowed)."""

from __future__ import annotations

import re
from typing import Any

from ncuadvisor.comparison.compare import DEFAULT_THRESHOLD, change_text, compare, ns_text
from ncuadvisor.comparison.types import DiffResult, KernelChange
from ncuadvisor.errors import InputError
from ncuadvisor.result.types import Result

FAIL_ON = ("regression", "findings")


def parse_threshold(text: str | float | None) -> float:
    """'5%' -> 0.05, '0.05' -> 0.05, '2.5%' -> 0.025. A bare number above 1 is refused (write '5%')."""
    if text is None:
        return DEFAULT_THRESHOLD
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        raw = str(text).strip()
        m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(%?)", raw)
        if not m:
            raise InputError(f"--threshold {raw!r}: write a percentage such as 5% (or a fraction such as 0.05)")
        value = float(m.group(1))
        if m.group(2):
            value /= 100.0
        elif value > 1:
            raise InputError(f"--threshold {raw!r}: a bare number is a fraction (0.05 = 5%); write {raw}% for percent")
    if not 0 <= value <= 10:
        raise InputError(f"--threshold {text!r}: out of range (0% to 1000%)")
    return value


def gate(diff: DiffResult | dict[str, Any], fail_on: str | None) -> list[str]:
    """Why `--fail-on` fails (one short reason per offender, worst first); empty when it passes or fail_on is None.
    `regression`: a matched kernel or the program total regressed; `findings`: a finding is new."""
    if not fail_on:
        return []
    if fail_on not in FAIL_ON:
        raise InputError(f"--fail-on {fail_on!r}: one of {', '.join(FAIL_ON)}")
    d = diff if isinstance(diff, DiffResult) else DiffResult.from_dict(diff)
    reasons: list[str] = []
    if fail_on == "regression":
        t = d.total
        if t.status == "regressed":
            reasons.append(f"program total {change_text(t.change)} ({ns_text(t.before_ns)} → {ns_text(t.after_ns)})")
        for k in d.kernels:
            if k.status == "regressed":
                b_ns = k.before.duration_ns if k.before else None
                a_ns = k.after.duration_ns if k.after else None
                reasons.append(f"{kernel_label(k)} {change_text(k.change)} ({ns_text(b_ns)} → {ns_text(a_ns)})")
    else:
        for k in d.kernels:
            for f in k.findings.new:
                reasons.append(f"new {f.rule} in {kernel_label(k)}: {f.title}")
        for f in d.program_findings.new:
            reasons.append(f"new {f.rule} (program-wide): {f.title}")
    return reasons


def kernel_label(k: KernelChange) -> str:
    """A diff entry's kernel name, with its process when matched per process: "scale_add (rank 1)"."""
    label = k.process.label if k.process is not None else None
    return f"{k.name} ({label})" if label else str(k.name)


def partial_sides(before: Result, after: Result) -> list[tuple[str, str]]:
    """(side, its first `partial:` warning) for each result that is partial (a report cut short or damaged, a profile
    run interrupted)."""
    out = []
    for side, res in (("before", before), ("after", after)):
        prof = res.report.profile
        warns = [str(w) for w in res.report.warnings if str(w).startswith("partial")]
        if warns or (prof is not None and prof.partial):
            out.append((side, warns[0].split(": ", 1)[-1] if warns else "the profile run was partial"))
    return out


def devices_differ(before: Result, after: Result) -> tuple[str, str] | None:
    """(before's GPU, after's) when both name their GPU and the names differ."""
    b, a = before.report.device.name, after.report.device.name
    return (b, a) if b and a and b != a else None


def compared(before: Result, after: Result, threshold: float | None) -> tuple[DiffResult, list[tuple[str, str]]]:
    """The diff of two results, and the sides that are partial, each said first among the diff's warnings, in every
    format: the comparison is not of whole reports."""
    d = compare(before, after, threshold=threshold)
    partial = partial_sides(before, after)
    for side, why in reversed(partial):
        d.warnings.insert(0, f"partial: the {side} report is incomplete, so its times are too ({why})")
    return d, partial


def refuse_gate(
    fail_on: str,
    partial: list[tuple[str, str]],
    devices: tuple[str, str] | None,
    allow_partial: bool,
    allow_cross_device: bool,
) -> None:
    """Refuse to gate (one input error) on a partial report or on reports of two GPUs, unless allowed."""
    if partial and not allow_partial:
        sides = " and ".join(side for side, _ in partial)
        raise InputError(
            f"--fail-on {fail_on}: the {sides} report is partial, so the gate cannot tell a speedup from lost "
            "kernels (pass --allow-partial to gate anyway)"
        )
    if devices and not allow_cross_device:
        raise InputError(
            f"--fail-on {fail_on}: the reports come from different GPUs ({devices[0]} before, {devices[1]} "
            "after), so their times are not comparable (pass --allow-cross-device to gate anyway)"
        )
