"""Comparing two results: each matched kernel and the program total, on totals or per launch, and the findings of each
side by rule code (new, resolved, unchanged). The rules are in the package's docstring."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from typing import Any, Literal

from ncuadvisor.comparison.checks import counter_checks, program_counter_checks
from ncuadvisor.comparison.match import (
    ROLE_MIN_FLOPS,
    MatchHow,
    Pair,
    ProcessKeys,
    demangled_name,
    match_kernels,
    process_keys,
)
from ncuadvisor.comparison.types import (
    KIND,
    SCHEMA_VERSION,
    Comparison,
    DiffResult,
    FindingChange,
    FindingChanges,
    FirstFix,
    KernelChange,
    KernelSide,
    Noise,
    ProcessMatch,
    ProcessMatching,
    ProcessSide,
    ReportSide,
    Status,
    Summary,
    TotalChange,
    Verdict,
)
from ncuadvisor.result.types import Generator, KernelEntry, Result, TopAction
from ncuadvisor.units import finite, fmt_bytes, fmt_ns
from ncuadvisor.version import __version__

DEFAULT_THRESHOLD = 0.05
MIN_CHANGE_NS = 1000.0
AT_ROOFLINE = "at-roofline"
STATUSES = ("regressed", "improved", "unchanged", "added", "removed")
COVERAGE_TOLERANCE = 0.25
COVERAGE_MIN_RESULTS = 20  # below, a launch more or less cannot tell a longer capture from a changed program


def ns_text(ns: Any) -> str:
    """Nanoseconds as the diff's notes write them: '1.2 µs', never in seconds."""
    return fmt_ns(finite(ns), seconds=False)


def change_text(x: Any) -> str:
    """A relative change as the diff's notes write it: '+4.3%' ('–' when unknown)."""
    x = finite(x)
    return "–" if x is None else f"{x * 100:+.1f}%"


# -- one side of a kernel entry -------------------------------------------------------------------------------------


def kernel_side(group: list[KernelEntry]) -> KernelSide | None:
    """The kernel entries of one side of a pair as one: times summed, bound and headroom of the largest."""
    if not group:
        return None
    main = max(group, key=lambda k: k.duration_ns)
    duration = sum(float(k.duration_ns) for k in group)
    launches = sum(int(k.launches) for k in group)
    return KernelSide(
        ids=[k.id for k in group],
        launches=launches,
        grid=main.grid,
        block=main.block,
        shapes=[f"grid {k.grid} block {k.block}" for k in group] if len(group) > 1 else [],
        duration_ns=duration,
        per_launch_ns=duration / launches if launches else None,
        time_share=sum(float(k.time_share) for k in group),
        bound=main.bound,
        headroom=None if main.headroom is None else float(main.headroom),
        at_roofline=all(k.at_roofline for k in group),
    )


def findings_of(group: list[KernelEntry]) -> dict[str, FindingChange]:
    """Rule code -> the rule's finding and the time it saves (the largest where a rule fires on several shapes),
    at-roofline left out. One rule's savings over the sizes of one kernel (its own launches, its variants') add up."""
    out: dict[str, FindingChange] = {}
    for k in group:
        for code, (f, saving, _) in k.savings_by_rule().items():
            prev = out.get(code)
            if prev is None or saving > prev.estimated_saving_ns:
                out[code] = FindingChange(
                    rule=f.rule,
                    category=f.category,
                    title=f.title,
                    estimated_speedup=float(f.estimated_speedup),
                    estimated_saving_ns=saving,
                    fix=f.fix,
                    location=f.location,
                )
    return out


def program_findings_of(result: Result) -> dict[str, FindingChange]:
    """Rule code -> the program rule's finding (its largest saving)."""
    out: dict[str, FindingChange] = {}
    for p in result.program_findings:
        if not p.rule:
            continue
        saving = float(p.estimated_saving_ns)
        if p.rule not in out or saving > out[p.rule].estimated_saving_ns:
            out[p.rule] = FindingChange(
                rule=p.rule,
                category=p.category,
                title=p.title,
                estimated_speedup=None,
                estimated_saving_ns=saving,
                fix=p.fix,
                location=None,
                kernels=list(p.kernels)[:5],
            )
    return out


def compare_findings(before: dict[str, FindingChange], after: dict[str, FindingChange]) -> FindingChanges:
    """Findings only after (new), only before (resolved) and on both sides (unchanged), largest saving first."""
    new = [after[c] for c in after if c not in before]
    resolved = [before[c] for c in before if c not in after]
    unchanged = [
        dataclasses.replace(after[c], before_saving_ns=before[c].estimated_saving_ns) for c in after if c in before
    ]
    key = lambda b: -b.estimated_saving_ns  # noqa: E731
    return FindingChanges(
        new=sorted(new, key=key), resolved=sorted(resolved, key=key), unchanged=sorted(unchanged, key=key)
    )


def measured(f: FindingChange, saved_ns: float) -> FindingChange:
    """A resolved finding with the time its kernel saved, measured, beside the saving it predicted."""
    predicted = f.estimated_saving_ns
    fraction = saved_ns / predicted if predicted > 0 else None
    return dataclasses.replace(f, measured_saving_ns=saved_ns, measured_fraction=fraction)


def classify(before_ns: float | None, after_ns: float | None, threshold: float, min_change_ns: float) -> Status:
    """regressed | improved | unchanged (within the noise), added | removed (one side missing)."""
    if before_ns is None and after_ns is None:
        return "unchanged"
    if before_ns is None:
        return "added"
    if after_ns is None:
        return "removed"
    delta = after_ns - before_ns
    if abs(delta) <= max(threshold * before_ns, min_change_ns):
        return "unchanged"
    return "regressed" if delta > 0 else "improved"


def _shape(side: KernelSide | None) -> str:
    if side is None:
        return "–"
    if side.shapes:
        return "; ".join(side.shapes)
    return f"grid {side.grid} block {side.block}"


def _process_side(group: list[KernelEntry]) -> ProcessSide | None:
    proc = group[0].process if group else None
    return None if proc is None else ProcessSide(pid=proc.pid, rank=proc.rank)


def process_match(
    bgroup: list[KernelEntry], agroup: list[KernelEntry], bkeys: ProcessKeys, akeys: ProcessKeys
) -> ProcessMatch:
    """The process of a per-process entry: its key, its label ("rank 1" when a side knows the rank, else "process 1",
    the place in start order) and the pid (and rank) on each side."""
    key = bkeys.of(bgroup[0]) if bgroup else akeys.of(agroup[0])
    ranked = bool(bgroup and bkeys.ranks) or bool(agroup and akeys.ranks)
    return ProcessMatch(
        key=key,
        label=f"{'rank' if ranked else 'process'} {'?' if key is None else key}",
        before=_process_side(bgroup),
        after=_process_side(agroup),
    )


def role_note(b: KernelEntry, a: KernelEntry, bs: KernelSide | None, as_: KernelSide | None) -> str:
    """How a pair matched by role was told to be one kernel: the names, the place, the work, the launch shapes."""
    where = f"NVTX range '{b.nvtx}'" if b.nvtx else "no NVTX range"
    if b.python_line is not None and a.python_line is not None:
        where += f", line {b.python_line.file}:{b.python_line.line}"
    if b.torch is not None and a.torch is not None and b.torch.torch_op:
        where += f", {b.torch.torch_op}"
    fb, fa = finite(b.roofline.flops) or 0.0, finite(a.roofline.flops) or 0.0
    if max(fb, fa) >= ROLE_MIN_FLOPS:
        work = f"{fb / 1e9:.4g} → {fa / 1e9:.4g} GFLOP"
    else:
        work = f"compulsory bytes {fmt_bytes(finite(b.roofline.compulsory_bytes))} → "
        work += fmt_bytes(finite(a.roofline.compulsory_bytes))
    return (
        f"matched by role: the name changed ({demangled_name(b)} before); the same place ({where}) and the same "
        f"work ({work}); {_shape(bs)} before, {_shape(as_)} after"
    )


def kernel_change(
    bgroup: list[KernelEntry],
    agroup: list[KernelEntry],
    how: MatchHow,
    threshold: float,
    min_change_ns: float,
    process: ProcessMatch | None = None,
    per_launch: bool = False,
) -> KernelChange:
    """One pair compared: its status, change and notes, and its findings new, resolved and unchanged."""
    b, a = kernel_side(bgroup), kernel_side(agroup)
    ref = (agroup or bgroup)[0]
    b_ns = b.duration_ns if b else None
    a_ns = a.duration_ns if a else None
    launches_note, scaled = None, None
    if b and a and b.launches and a.launches and b.launches != a.launches:
        launches_note = (
            f"launches {b.launches} → {a.launches}; per launch {ns_text(b.per_launch_ns)} → "
            f"{ns_text(a.per_launch_ns)} ({change_text((a.per_launch_ns or 0.0) / b.per_launch_ns - 1)})"
            if b.per_launch_ns
            else f"launches {b.launches} → {a.launches}"
        )
        if per_launch and b_ns is not None:
            scaled = b_ns * a.launches / b.launches
            launches_note += ": compared per launch"
        else:
            launches_note += ": the times above are totals over each side's launches"
    ref_ns = scaled if scaled is not None else b_ns
    note = None
    if how == "name":
        note = f"matched by name alone: the launch shape changed ({_shape(b)} before, {_shape(a)} after)"
    elif how == "role":
        note = role_note(max(bgroup, key=lambda k: k.duration_ns), max(agroup, key=lambda k: k.duration_ns), b, a)
    elif how == "identity" and (len(bgroup) > 1 or len(agroup) > 1):
        note = "several results share this name and launch shape; compared as one"
    change_ns = (a_ns or 0.0) - (ref_ns or 0.0)
    findings = compare_findings(findings_of(bgroup), findings_of(agroup))
    if ref_ns is not None and a_ns is not None:
        findings.resolved = [measured(f, ref_ns - a_ns) for f in findings.resolved]
    change = change_ns / ref_ns if (ref_ns and a_ns is not None) else None
    return KernelChange(
        name=ref.name or ref.demangled,
        demangled=demangled_name(ref),
        status=classify(ref_ns, a_ns, threshold, min_change_ns),
        match=how,
        match_note=note,
        change_ns=change_ns,
        change=change,
        launches_note=launches_note,
        before=b,
        after=a,
        findings=findings,
        before_scaled_ns=scaled,
        process=process,
        counter_checks=counter_checks(bgroup, agroup, findings, change) or None,
    )


def coverage_scale(pairs: list[Pair], before: ReportSide, after: ReportSide, threshold: float) -> float | None:
    """results after ÷ results before when the two captures cover different lengths of one program (every kernel
    matched by identity has its launches scaled by that ratio, within ±COVERAGE_TOLERANCE or one launch on each side
    of the capture's cut); None otherwise."""
    rb, ra = before.results, after.results
    if not rb or not ra or min(rb, ra) < COVERAGE_MIN_RESULTS or abs(ra / rb - 1) <= threshold:
        return None
    ratio = ra / rb
    seen = 0
    for bg, ag, how in pairs:
        if how != "identity":
            continue
        b, a = kernel_side(bg), kernel_side(ag)
        if not b or not a or not b.launches or not a.launches:
            return None
        expected = b.launches * ratio  # a capture cut mid-step can miss one launch of a kernel on either side
        if abs(a.launches - expected) > max(COVERAGE_TOLERANCE * expected, ratio + 1):
            return None
        seen += 1
    return ratio if seen else None


# -- the diff ----------------------------------------------------------------------------------------------------


def report_side(result: Result) -> ReportSide:
    rep = result.report
    return ReportSide(
        name=rep.name,
        path=rep.path,
        ncu_version=rep.ncu_version,
        device=rep.device.name,
        kernels=len(result.kernels),
        results=rep.results,
        total_duration_ns=float(rep.total_duration_ns),
        created=result.created,
        warnings=list(rep.warnings),
    )


def _sort_key(e: KernelChange) -> tuple[float, ...]:
    size = max(e.before.duration_ns if e.before else 0.0, e.after.duration_ns if e.after else 0.0)
    if e.status == "unchanged":
        return (1, -size)
    return (0, -abs(e.change_ns), -size)


def first_fix(after: Result) -> FirstFix | None:
    """The after side's first top action, with the launch shape of its kernel when others share its name."""
    if not after.top_actions:
        return None
    action = after.top_actions[0]
    fields = {f.name: getattr(action, f.name) for f in dataclasses.fields(TopAction)}
    shape = after.shape_tags().get(str(action.kernel_id)) or None if action.scope != "program" else None
    return FirstFix(**fields, kernel_shape=shape)


def as_result(result: Result | dict[str, Any]) -> Result:
    """A result as it is, or read from its dict (`Result.from_dict`: a wrong type is an InputError)."""
    return result if isinstance(result, Result) else Result.from_dict(result)


def diff_results(
    before: Result | dict[str, Any],
    after: Result | dict[str, Any],
    threshold: float | None = None,
    min_change_ns: float = MIN_CHANGE_NS,
) -> dict[str, Any]:
    """The diff of two results (or their dicts) as its JSON-ready dict: `compare(...).to_dict()`."""
    return compare(as_result(before), as_result(after), threshold, min_change_ns).to_dict()


def compare(
    before: Result, after: Result, threshold: float | None = None, min_change_ns: float = MIN_CHANGE_NS
) -> DiffResult:
    """The diff of two results (the package's docstring). `threshold` None: DEFAULT_THRESHOLD, said to be the
    default in `noise.threshold_source`."""
    source: Literal["default", "option"] = "default" if threshold is None else "option"
    threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    bkeys, akeys = process_keys(before), process_keys(after)
    if bkeys is not None and akeys is not None:
        pairs = match_kernels(before.kernels, after.kernels, bkeys, akeys)
    else:
        pairs = match_kernels(before.kernels, after.kernels)
    mb, ma = report_side(before), report_side(after)
    scale = coverage_scale(pairs, mb, ma, threshold)
    kernels = [
        kernel_change(
            bg,
            ag,
            how,
            threshold,
            min_change_ns,
            process_match(bg, ag, bkeys, akeys) if bkeys is not None and akeys is not None else None,
            per_launch=scale is not None,
        )
        for bg, ag, how in pairs
    ]
    kernels.sort(key=_sort_key)
    b_total, a_total = mb.total_duration_ns, ma.total_duration_ns
    b_ref = b_total * scale if scale is not None else b_total
    total_change = a_total - b_ref
    total_status = classify(b_ref, a_total, threshold, min_change_ns)
    program = compare_findings(program_findings_of(before), program_findings_of(after))
    summary = Summary(
        **{s: sum(1 for k in kernels if k.status == s) for s in STATUSES},
        new_findings=sum(len(k.findings.new) for k in kernels) + len(program.new),
        resolved_findings=sum(len(k.findings.resolved) for k in kernels) + len(program.resolved),
        name_matches=sum(1 for k in kernels if k.match == "name"),
        role_matches=sum(1 for k in kernels if k.match == "role"),
    )
    warnings, match = _warnings(before, after, mb, ma, kernels, summary, scale, bkeys, akeys)
    verdict: Verdict
    if summary.regressed > 0 or total_status == "regressed":
        verdict = "regressed"
    elif total_status == "improved" or summary.improved > 0:
        verdict = "improved"
    else:
        verdict = "unchanged"
    return DiffResult(
        schema_version=SCHEMA_VERSION,
        kind=KIND,
        generator=Generator(name="ncuadvisor", version=__version__),
        created=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        noise=Noise(threshold=threshold, min_change_ns=min_change_ns, threshold_source=source),
        before=mb,
        after=ma,
        total=TotalChange(
            before_ns=b_total,
            after_ns=a_total,
            change_ns=total_change,
            change=total_change / b_ref if b_ref else None,
            status=total_status,
            before_scaled_ns=b_ref if scale is not None else None,
        ),
        comparison=Comparison(mode="per-launch" if scale is not None else "total", launch_scale=scale),
        process_match=match,
        kernels=kernels,
        program_findings=program,
        summary=summary,
        verdict=verdict,
        first_fix=first_fix(after),
        warnings=warnings,
        program_counter_checks=program_counter_checks(
            before.program_findings, [(bg, ag) for bg, ag, _ in pairs], program
        )
        or None,
    )


def _warnings(
    before: Result,
    after: Result,
    mb: ReportSide,
    ma: ReportSide,
    kernels: list[KernelChange],
    summary: Summary,
    scale: float | None,
    bkeys: ProcessKeys | None,
    akeys: ProcessKeys | None,
) -> tuple[list[str], ProcessMatching]:
    """What the reader must know to trust the comparison, and how processes were matched (None: one process each)."""
    warnings: list[str] = []
    if scale is not None:
        warnings.append(
            f"before holds {mb.results} results, after {ma.results}, and every kernel's launches scale alike "
            f"(×{scale:.2f}): the captures cover different lengths of the same program, so kernels are compared per "
            "launch and the program total per result"
        )
    elif mb.results and ma.results and mb.results != ma.results and any(k.launches_note for k in kernels):
        warnings.append(
            f"before holds {mb.results} results, after {ma.results}: kernels whose launch count changed are "
            "compared on their total time (a change that launches a kernel more often costs time); their per-launch "
            "times are in the details"
        )
    if mb.device and ma.device and mb.device != ma.device:
        warnings.append(
            f"the reports come from different GPUs ({mb.device} before, {ma.device} after): "
            "their times are not comparable"
        )
    match: ProcessMatching
    if bkeys is not None and akeys is not None:
        match = "per-process"
        unranked = [side for side, keys in (("before", bkeys), ("after", akeys)) if not keys.ranks]
        if unranked:
            warnings.append(
                f"ranks not recorded for {' and '.join(unranked)} (`ncuadvisor profile` records them): processes "
                "matched by start order, lowest pid first (process 0, 1, …)"
            )
    elif bkeys is not None or akeys is not None:
        match = "summed"
        n_before, n_after = (max(1, len(r.report.processes)) for r in (before, after))
        warnings.append(
            f"{n_before} process{'es' if n_before != 1 else ''} before, {n_after} after: each kernel's time is summed "
            "over all processes, not compared per rank"
        )
    else:
        match = None
    if summary.name_matches:
        warnings.append(
            f"{summary.name_matches} kernel(s) matched by name alone because their launch shape changed: "
            "a different grid or block changes the work per launch"
        )
    if summary.role_matches:
        warnings.append(
            f"{summary.role_matches} kernel(s) matched by role because their name changed (a library that picks "
            "another kernel, a rewrite): the same place in the program and the same work; each entry's note says how"
        )
    if kernels and all(k.status in ("added", "removed") for k in kernels):
        warnings.append("no kernel of one report appears in the other: are these two versions of the same program?")
    return warnings, match
