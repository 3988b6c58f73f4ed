"""The result, built in one place from typed inputs: the kernel entries (each analysed launch with the rules' verdict on
it, `kernel_entries`), the report's facts (`ReportInfo`) and the launches in order make an `Analysis`; `build` runs
the program rules over it once and returns the finished `Result` (the program findings, the kernels they own or
cover, "where to start" and, with a host timeline, the wall-time savings).

`pipeline.analyze` feeds it one report's analysis; `ncuadvisor profile` feeds it the merge of its two phases
(`profile.merge`), whose parts are analyses, never finished results.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ncuadvisor.analysis import roofline
from ncuadvisor.analysis.language import display_name
from ncuadvisor.model import Kernel, Profile, ResultDetail, num
from ncuadvisor.pipeline import locate
from ncuadvisor.pipeline.entries import (
    covered_by_program,
    launch_entry,
    owned_by_program,
    process_fields,
    roofline_entry,
    variant_entry,
    with_no_rule,
)
from ncuadvisor.pipeline.ranking import rank
from ncuadvisor.result import ncu_guidance
from ncuadvisor.result.types import (
    Bound,
    Generator,
    KernelEntry,
    LaunchInterval,
    NcuRuleEntry,
    ProgramFindingEntry,
    ReportInfo,
    Result,
)
from ncuadvisor.rulekit import engine
from ncuadvisor.rulekit.contract import Finding, ProgramContext, ProgramRule, Rule
from ncuadvisor.rulekit.counters import derived as derived_counters
from ncuadvisor.rulekit.counters import measure as measure_counters
from ncuadvisor.version import __version__

if TYPE_CHECKING:  # a host timeline is read, and its model built, only with --host-trace (`analysis.walltime`)
    from ncuadvisor.analysis.hosttrace import Timeline


@dataclass
class Analysed:
    """One analysed launch: of a kernel group (`variant` None) or of one of its variants."""

    kernel: Kernel  # the group, or the launches it stands for (its own time and launches)
    row: dict[str, Any]
    roofline: roofline.Roofline
    detail: ResultDetail | None
    language: str
    verdict: engine.KernelVerdict


@dataclass
class Evaluation:
    """The rules' verdicts on every kernel group and variant, in the order of `kernels`."""

    groups: list[tuple[Analysed, list[Analysed]]]
    sections_seen: set[str]
    warnings: list[str]

    def findings(self) -> list[tuple[int, Finding]]:
        """(result id, finding) of every kept finding: the findings whose source is placed after the rules."""
        out: list[tuple[int, Finding]] = []
        for main, variants in self.groups:
            for a in [main, *variants]:
                out.extend((a.kernel.representative, f) for f in a.verdict.findings)
        return out


@dataclass
class Analysis:
    """What the kernel rules made of a report, before the program level: the report's facts, one entry per kernel
    group (by total time) and every launch in order, as program rules read them (`ProgramContext.launches`)."""

    report: ReportInfo
    kernels: list[KernelEntry]
    launches: list[dict[str, Any]] = field(default_factory=list)
    # the launches profiled without per-instruction data that a rule deciding on it may fire on
    # (`engine.instructions_wanted`): `profile` collects it for them in a later round
    wants_instructions: list[int] = field(default_factory=list)


def kernel_entries(
    profile: Profile, kernels: list[Kernel], evaluation: Evaluation, located: locate.Located
) -> list[KernelEntry]:
    """One entry per kernel group: its launches and time, the roofline and the rules' verdict on its representative
    launch, its variants', its source anchor and NCU's own rule results."""
    total_ns = sum(k.duration_ns for k in kernels)
    procs = {str(p["pid"]): p for p in profile.processes}
    # several GPUs in one report (a multi-GPU program): each kernel says which one ran it
    devices = sorted({int(d) for d in profile.results.get("device_id", []) if num(d) is not None})
    out = []
    for idx, (k, (main, variants)) in enumerate(zip(kernels, evaluation.groups)):
        row, rl, detail, verdict = main.row, main.roofline, main.detail, main.verdict
        texts = located.get(k.representative, ({}, {}))[1]
        process, process_label = process_fields(k.process, procs)
        shown = display_name(k.name, k.demangled)
        entry = KernelEntry(
            id=f"k{idx}",
            name=k.name,
            demangled=k.demangled,
            mangled=k.mangled,
            display_name=shown if shown != k.name else None,
            language=main.language,
            launches=k.launches,
            grid=k.grid,
            block=k.block,
            nvtx=k.nvtx,
            process=process,
            process_label=process_label,
            device_id=int(row["device_id"]) if len(devices) > 1 and num(row.get("device_id")) is not None else None,
            duration_ns=k.duration_ns,
            per_launch_ns=k.per_launch_ns,
            launch_range_ns=[k.launch_min_ns, k.launch_max_ns],
            launch_note=k.launch_note,
            analysed_launches=main.kernel.launches,
            analysed_duration_ns=main.kernel.duration_ns,
            variants=[variant_entry(v, total_ns, a.roofline, a.verdict) for v, a in zip(k.variants, variants)],
            time_share=k.duration_ns / total_ns if total_ns else 0.0,
            bound=cast(Bound, roofline.shown_bound(rl)[0]),
            bound_reason=roofline.shown_bound(rl)[1],
            headroom=rl.headroom,
            roofline=roofline_entry(rl),
            launch=launch_entry(row),
            findings=[f.entry() for f in verdict.findings],
            suppressed=list(verdict.suppressed),
            skipped_rules=list(verdict.skipped),
            source_anchor=locate.anchor(detail.entry if detail else None, texts),
            ncu_rules=[NcuRuleEntry(**r) for r in ncu_guidance(detail.ncu_rules if detail else [])],
            sections=sorted(detail.sections) if detail else [],
            result_ids=k.result_ids,
            counters=measure_counters(row, derived_counters(rl)) or None,
        )
        out.append(with_no_rule(entry, row))
    return out


def build(
    analysis: Analysis,
    rules: list[Rule | ProgramRule],
    host: Timeline | None = None,
    launch_interval: LaunchInterval | None = None,
) -> Result:
    """The finished result of an analysis: the program rules run once over its kernel entries (typed, read only) and
    launches, with the host's launch interval when known (`launch_interval`, kept in `report.launch_interval`), and
    the host timeline matched to them when there is one; the entries a program finding owns
    (`ProgramRule.owns`) or covers are marked so; "where to start" is ranked across both levels; each entry gets its
    wall-time saving (`pipeline.hostwall`). A failing program rule becomes a warning."""
    rep = analysis.report
    if launch_interval is not None:
        rep.launch_interval = launch_interval
    model = None
    if host is not None:
        from ncuadvisor.analysis.walltime import HostModel

        model = HostModel.build(host, analysis.kernels)
    ctx = ProgramContext(
        kernels=list(analysis.kernels),
        launches=analysis.launches,
        device=rep.device.to_dict(),
        total_ns=rep.total_duration_ns,
        host=model if model is not None and model.matched else None,
        launch_interval=rep.launch_interval,
    )
    program_findings, errors = engine.run_program_rules(rules, ctx)
    for e in errors:
        rep.warnings.append(f"program rule {e['rule']} failed: {e['error']}")
    fallbacks = frozenset(r.code for r in engine.kernel_rules(rules) if r.fallback)
    kernels = _program_marks(analysis.kernels, program_findings, ctx.owned, fallbacks)
    switches = {r.code: r.title for r in engine.kernel_rules(rules) if r.switch}
    actions, printed = rank(kernels, rep.total_duration_ns, program_findings, switches=switches)
    result = Result(
        generator=Generator(name="ncuadvisor", version=__version__),
        created=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        report=rep,
        kernels=kernels,
        program_findings=printed,
        top_actions=actions,
    )
    if model is not None:
        from ncuadvisor.pipeline.hostwall import add_wall_estimates

        add_wall_estimates(result, model)
    return result


def _program_marks(
    kernels: list[KernelEntry],
    program_findings: list[ProgramFindingEntry],
    owned: dict[str, str],
    fallbacks: frozenset[str] = frozenset(),
) -> list[KernelEntry]:
    """The kernel entries with what the program findings say of them: a kernel a program rule owns has its kernel
    findings suppressed (`entries.owned_by_program`); a kernel no kernel rule spoke to, or only a fallback rule
    (`fallbacks`: GEN001), names the first program finding that covers it (`entries.covered_by_program`)."""
    covering: dict[str, ProgramFindingEntry] = {}  # kernel id -> the first program finding that speaks to it
    owning: dict[str, ProgramFindingEntry] = {}  # kernel id -> the finding of the rule that owns it
    for f in program_findings:
        for kid in f.kernel_ids:
            covering.setdefault(str(kid), f)
            if owned.get(str(kid)) == f.rule:
                owning.setdefault(str(kid), f)
    covering.update(owning)
    return [
        covered_by_program(owned_by_program(k, owning[k.id]) if k.id in owning else k, covering, fallbacks)
        for k in kernels
    ]
