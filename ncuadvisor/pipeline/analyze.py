"""The pipeline, the only place the stages are composed, each once and in order:

    report -> load (scalars) -> model (kernels) -> load (deep data, SASS) -> roofline -> rules -> locate -> result

Rules run once, on plain data read before them; the source lines of the findings they emit are read afterwards,
for all kernels in one batch. The result is the typed `ncuadvisor.result.Result` (schema_version 1), built here
once; `Result.to_dict()` is its JSON.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from ncuadvisor import __version__
from ncuadvisor.analysis import ceilings, needed, roofline
from ncuadvisor.analysis.language import display_name, kernel_language
from ncuadvisor.load import ReportReader, RowsDisagree, read_results
from ncuadvisor.model import Kernel, Profile, ResultDetail, group_kernels, num
from ncuadvisor.pipeline import locate
from ncuadvisor.pipeline.entries import (
    covered_by_program,
    device_entry,
    launch_entry,
    launch_list,
    owned_by_program,
    process_fields,
    processes_entry,
    roofline_entry,
    variant_entry,
    with_no_rule,
)
from ncuadvisor.pipeline.ranking import top_actions
from ncuadvisor.result import ncu_guidance
from ncuadvisor.result.helpers import no_surrogates
from ncuadvisor.result.types import Bound, Generator, KernelEntry, NcuRuleEntry, ReportInfo, Result
from ncuadvisor.rulekit import engine
from ncuadvisor.rulekit.contract import Finding, KernelContext, ProgramContext, ProgramRule, Rule

if TYPE_CHECKING:  # a host timeline is read, and its model built, only with --host-trace (`analysis.walltime`)
    from ncuadvisor.analysis.hosttrace import Timeline

# The sections the full analysis uses (ncu --section identifiers); `ncuadvisor profile` collects these.
ANALYSIS_SECTIONS = [
    "SpeedOfLight",
    "LaunchStats",
    "Occupancy",
    "MemoryWorkloadAnalysis",
    "MemoryWorkloadAnalysis_Chart",
    "MemoryWorkloadAnalysis_Tables",
    "ComputeWorkloadAnalysis",
    "SourceCounters",
    "WarpStateStats",
    "InstructionStats",
    "SchedulerStats",
    "SpeedOfLight_RooflineChart",
    "SpeedOfLight_HierarchicalTensorRooflineChart",
]

# Shown on each kernel card, whatever the rules need.
CARD_METRICS = [
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__stream_id",
]


class GroupTime(Protocol):
    """(launches, nanoseconds) a kernel's representative launch (`launch_ns` long) stands for, and the program's
    total nanoseconds; None when unknown."""

    total_ns: float

    def __call__(self, kernel: Kernel, launch_ns: float | None) -> tuple[int, float] | None: ...


def analyze(
    path: str | os.PathLike[str],
    rule_folders: Iterable[Path] = (),
    rules: list[Rule | ProgramRule] | None = None,
    pick: str = "median",
    group_time: GroupTime | None = None,
    host: Timeline | None = None,
) -> Result:
    """Analyze one report and return its result (schema_version 1). `pick`: which launch of a kernel group the
    deep analysis looks at (`model.group_kernels`: "median", "first" or "each"). `group_time`: the launches and time
    a kernel stands for when the report holds only some of its launches (`ncuadvisor profile`'s phase 2 profiles
    one launch of each kernel; phase 1 timed them all), so that rules judging a kernel by its share of the program's
    time see the true share. `host`: a host timeline of the same program (`analysis.hosttrace`), for the wall-time
    estimates (`pipeline.hostwall`)."""
    rules = rules if rules is not None else engine.discover(rule_folders)
    try:
        return _analyze(path, rules, pick, group_time, host, defer_check=True)
    except RowsDisagree:  # the rows read from the file were not ncu_report's: read again, through ncu_report
        return _analyze(path, rules, pick, group_time, host, defer_check=False)


def _analyze(
    path: str | os.PathLike[str],
    rules: list[Rule | ProgramRule],
    pick: str,
    group_time: GroupTime | None,
    host: Timeline | None,
    defer_check: bool,
) -> Result:
    """`analyze`; `defer_check`: the rows read from the report file are checked against ncu_report's in a worker
    while the analysis goes on (`ReportReader.confirm`, before the device is needed), RowsDisagree where they differ."""
    metrics = list(dict.fromkeys(roofline.METRICS + CARD_METRICS + engine.required_metrics(rules)))
    reader = ReportReader(path, metrics, defer_check=defer_check)
    profile = read_results(reader, metrics)
    kernels = group_kernels(profile.results, pick=pick)
    names = {rid: (k.name, k.demangled) for rid, k in _analysed_launches(kernels)}
    sass_wanted = engine.sass_languages(rules)
    # the SASS is read with the deep data, for the kernels in a language whose rules read instructions (a library
    # kernel's thousands of instructions are not read), unless every such rule is gated (`Rule.sass_when`): those
    # kernels' SASS is read afterwards, for the ones a gate admits
    gated = engine.gated_sass_languages(rules)
    first = frozenset(sass_wanted - gated)
    sass_for = partial(_wants_sass, names, first) if first else None
    # the rules' per-instruction metrics, and those the roofline reads (`needed.py`: the load/store split, XU work)
    per_instruction = list(dict.fromkeys(engine.per_instruction_metrics(rules) + needed.PER_INSTRUCTION))
    # a kernel without source lines (the report file says so) is in the language its names give; where no rule of
    # that language reads instructions (cuBLAS), its per-instruction data is not read at all
    no_lines = reader.without_lines(names)
    unread = {r for r, (n, d) in names.items() if r in no_lines and kernel_language(n, d, []) not in sass_wanted}
    profile.details = reader.details(list(names), per_instruction, sass_for, unread)
    if reader.unreadable:  # the scalars came from the file; ncu_report could not parse the rest of these results
        bad = sorted(reader.unreadable)
        shown = ", ".join(str(names[rid][0]) for rid in bad[:5]) + (" …" if len(bad) > 5 else "")
        profile.warnings.insert(
            0,
            f"partial: the report file is damaged: ncu_report cannot parse {len(bad)} of its results ({shown}): "
            "their times and metrics are read from the file, their per-instruction data and source lines are missing",
        )
    if reader.check_pending:
        profile.device = reader.confirm()
    languages = kernel_languages(kernels, profile.details)
    machine = _machine(profile)
    facts = instruction_facts(profile, machine, kernels, languages, frozenset(sass_wanted), first)
    later = [
        rid
        for rid, k in _analysed_launches(kernels)
        if languages[rid] in gated
        and rid in profile.details
        and _sass_needed(profile, machine, k, rid, languages[rid], facts.get(rid), rules)
    ]
    reader.add_sass(profile.details, later)
    for rid in later:  # the facts the SASS tells where the counts do not (what HFMA2 computed)
        if facts.get(rid) is None:
            facts[rid] = needed.instruction_facts(profile.details[rid].per_instruction)
    evaluation = evaluate(profile, kernels, rules, group_time, languages, facts, machine)
    findings = evaluation.findings()
    entries = [(rid, d.entry[0] if d.entry else None) for rid, d in profile.details.items()]
    located = reader.locations(locate.wanted(findings, entries))
    mangled = {int(rid): m for rid, m in zip(profile.results["result_id"], profile.results["mangled"])}
    chains = reader.call_chains(locate.selected(findings, located, mangled))
    locate.resolve(findings, located, chains)
    # report text that is not UTF-8 (ncu_report hands each bad byte over as a surrogate escape) becomes U+FFFD here,
    # once, so that every output can encode the result
    return no_surrogates(assemble(profile, kernels, rules, evaluation, located, host))


def build_result(
    profile: Profile, kernels: list[Kernel], rules: list[Rule | ProgramRule], group_time: GroupTime | None = None
) -> Result:
    """The result of a profile read without deep data (`ncuadvisor profile`'s timing pass): rules that need none
    still run."""
    languages = kernel_languages(kernels, profile.details)
    return assemble(profile, kernels, rules, evaluate(profile, kernels, rules, group_time, languages), {})


def kernel_languages(kernels: list[Kernel], details: dict[int, ResultDetail]) -> dict[int, str]:
    """The language of each analysed launch (cuda, triton, pytorch, library), by result id: its name and the source
    file of its first instruction tell it."""
    out = {}
    for rid, k in _analysed_launches(kernels):
        detail = details.get(rid)
        files = [detail.first_file] if detail is not None and detail.first_file else []
        out[rid] = kernel_language(k.name, k.demangled, files)
    return out


def instruction_facts(
    profile: Profile,
    machine: Machine,
    kernels: list[Kernel],
    languages: dict[int, str],
    sass_languages: frozenset[str],
    sass_read: frozenset[str],
) -> dict[int, needed.InstructionFacts | None]:
    """The machine model's facts of each analysed launch with deep data (`needed`): in a language whose rules read
    instructions (`sass_languages`), from the report's counts per opcode and access types (`needed.counted_facts`:
    the same facts as its SASS, but for the order of XU opcodes that ran equally often, which only an XU-bound
    kernel's words show), else from its SASS where it was read with the deep data (`sass_read`), else None (its SASS
    is to be read); in other languages from the per-instruction data alone, without SASS."""
    out: dict[int, needed.InstructionFacts | None] = {}
    for rid, _ in _analysed_launches(kernels):
        detail = profile.details.get(rid)
        if detail is None:
            continue
        if languages.get(rid) in sass_languages:
            row = profile.results.row(rid)
            counted = needed.counted_facts(
                detail.per_instruction, detail.opcodes, detail.access_types, roofline.hfma_kinds_matter(row)
            )
            if counted is not None and not counted.xu_order_known:
                sm_count, launch_floor, dram_peak = machine
                if roofline.compute(row, sm_count, counted, launch_floor, dram_peak).executed_floor_unit == "sfu":
                    counted = None
            out[rid] = counted
            if out[rid] is None and languages.get(rid) in sass_read:
                out[rid] = needed.instruction_facts(detail.per_instruction)
        else:
            out[rid] = needed.instruction_facts(detail.per_instruction)
    return out


def _sass_needed(
    profile: Profile,
    machine: Machine,
    kernel: Kernel,
    rid: int,
    language: str,
    facts: needed.InstructionFacts | None,
    rules: list[Rule | ProgramRule],
) -> bool:
    """Whether a launch whose SASS was not read with its deep data needs it: its facts do not come from the counts,
    or a rule that reads instructions may fire on it (`engine.sass_admitted`, on its scalars and its roofline as
    `evaluate` computes it)."""
    if facts is None:
        return True
    row = profile.results.row(rid)
    sm_count, launch_floor, dram_peak = machine
    rl = roofline.compute(row, sm_count, facts, launch_floor, dram_peak)
    ctx = KernelContext(kernel, row, rl, profile.device, {}, language, 0.0)
    return engine.sass_admitted(rules, ctx)


# (SM count, launch floor, DRAM peak) of the report's device, as the roofline takes them
Machine = tuple[float | None, tuple[float, str], float | None]


def _machine(profile: Profile) -> Machine:
    """(SM count, launch floor, DRAM peak) of the report's device, as `evaluate` hands them to the roofline."""
    return (
        num(profile.device.get("sm_count")),
        ceilings.launch_floor(profile.device.get("name"), profile.results),
        ceilings.DRAM_PEAKS.get(str(profile.device.get("name"))),
    )


def _analysed_launches(kernels: list[Kernel]) -> list[tuple[int, Kernel]]:
    """(result id, kernel group) of every launch the analysis looks at closely: each group's representative, then
    its variants' ones."""
    return [(k.representative, k) for k in kernels] + [(v.representative, k) for k in kernels for v in k.variants]


def _wants_sass(names: dict[int, tuple[str, str]], wanted: frozenset[str], rid: int, first_file: str | None) -> bool:
    """Whether the instructions of result `rid` are disassembled with its deep data: its language (as
    `kernel_languages` decides it) is one whose rules read instructions."""
    name, demangled = names.get(rid, ("", ""))
    return kernel_language(name, demangled, [first_file] if first_file else []) in wanted


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


def evaluate(
    profile: Profile,
    kernels: list[Kernel],
    rules: list[Rule | ProgramRule],
    group_time: GroupTime | None,
    languages: dict[int, str],
    facts: dict[int, needed.InstructionFacts | None] | None = None,
    machine: Machine | None = None,
) -> Evaluation:
    """The roofline and the rules, once, on the representative launch of every kernel group and variant. `facts`:
    the machine model's facts by result id (`instruction_facts`); where it has none, from the per-instruction data.
    `machine`: `_machine(profile)`, where the caller has it."""
    results = profile.results
    total_ns = sum(k.duration_ns for k in kernels)
    rule_total_ns = group_time.total_ns if group_time is not None and group_time.total_ns else total_ns
    sm_count, launch_floor, dram_peak = machine or _machine(profile)
    evaluation = Evaluation(groups=[], sections_seen=set(), warnings=[])

    def run(k: Kernel, share: float) -> Analysed:
        row = results.row(k.representative)
        detail = profile.details.get(k.representative)
        if facts is not None and k.representative in facts:
            known = facts[k.representative]
        else:
            known = needed.instruction_facts(detail.per_instruction) if detail else None
        rl = roofline.compute(row, sm_count, known, launch_floor, dram_peak)
        evaluation.sections_seen.update(detail.sections if detail else [])
        language = languages.get(k.representative) or kernel_language(k.name, k.demangled, [])
        ctx = KernelContext(
            kernel=k,
            metrics=row,
            roofline=rl,
            device=profile.device,
            per_instruction=detail.per_instruction if detail else {},
            language=language,
            time_share=share,
            sections=detail.sections if detail else (),
        )
        verdict = engine.run_rules(rules, ctx)
        for e in verdict.errors:
            evaluation.warnings.append(f"rule {e['rule']} failed on {k.name}: {e['error']}")
        return Analysed(k, row, rl, detail, language, verdict)

    for k in kernels:
        # with variants, the group's own analysis speaks for its other launches only
        main = (
            replace(
                k,
                launches=k.analysed_launches,
                duration_ns=k.analysed_ns,
                variants=[],
                result_ids=sorted(set(k.result_ids) - {r for v in k.variants for r in v.result_ids}),
            )
            if k.variants
            else k
        )
        told = group_time(k, num(results.row(k.representative).get("gpu__time_duration.sum"))) if group_time else None
        if told is not None:
            main = replace(main, launches=told[0], duration_ns=told[1])
        analysed = run(main, main.duration_ns / rule_total_ns if rule_total_ns else 0.0)
        variants = []
        for v in k.variants:
            vk = replace(
                k,
                result_ids=v.result_ids,
                representative=v.representative,
                launches=v.launches,
                duration_ns=v.duration_ns,
                launch_min_ns=v.launch_min_ns,
                launch_max_ns=v.launch_max_ns,
                variants=[],
            )
            variants.append(run(vk, v.duration_ns / rule_total_ns if rule_total_ns else 0.0))
        evaluation.groups.append((analysed, variants))
    return evaluation


def assemble(
    profile: Profile,
    kernels: list[Kernel],
    rules: list[Rule | ProgramRule],
    evaluation: Evaluation,
    located: locate.Located,
    host: Timeline | None = None,
) -> Result:
    """The result: one entry per kernel group, the report's facts, the program-level findings and the ranking."""
    total_ns = sum(k.duration_ns for k in kernels)
    warnings = list(profile.warnings) + evaluation.warnings
    procs = {str(p["pid"]): p for p in profile.processes}
    # several GPUs in one report (a multi-GPU program): each kernel says which one ran it
    devices = sorted({int(d) for d in profile.results.get("device_id", []) if num(d) is not None})
    kernel_entries = []
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
            bound=cast(Bound, rl.bound),
            bound_reason=rl.bound_reason,
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
        )
        kernel_entries.append(with_no_rule(entry, row))
    missing_sections = [s for s in ANALYSIS_SECTIONS if s not in evaluation.sections_seen]
    if missing_sections and kernels:
        warnings.append(
            "the report lacks sections the full analysis uses ("
            + ", ".join(missing_sections)
            + "): findings that need them are skipped; re-profile with `ncuadvisor profile` for all of them"
        )
    result = Result(
        generator=Generator(name="ncuadvisor", version=__version__),
        created=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        report=ReportInfo(
            path=profile.path,
            name=Path(profile.path).name,
            ncu_version=profile.ncu_version,
            reader_version=profile.reader_version,
            command_line=profile.command_line,
            device=device_entry(profile.device, kernel_entries),
            results=int(len(profile.results)),
            kernels=len(kernels),
            total_duration_ns=total_ns,
            sections=sorted(evaluation.sections_seen),
            missing_sections=missing_sections,
            warnings=warnings,
            processes=processes_entry(profile.processes, kernel_entries),
            devices=devices,
        ),
        kernels=kernel_entries,
    )
    add_program_level(result, launch_list(profile, kernels), rules, host)
    return result


def add_program_level(
    result: Result, launches: list[dict[str, Any]], rules: list[Rule | ProgramRule], host: Timeline | None = None
) -> None:
    """Run the program rules over the result's kernels and launches, and rank "where to start" across both levels:
    sets `program_findings` and `top_actions`; a failing program rule becomes a warning. Program rules read the
    kernel entries and the device as the JSON has them (`ProgramContext`), and the host timeline matched to them
    when there is one; then each entry gets its wall-time saving (`pipeline.hostwall`)."""
    rep = result.report
    total_ns = rep.total_duration_ns
    kernels = [k.to_dict() for k in result.kernels] if engine.program_rules(rules) or host else []
    model = None
    if host is not None:
        from ncuadvisor.analysis.walltime import HostModel

        model = HostModel.build(host, kernels)
    ctx = ProgramContext(
        kernels=kernels,
        launches=launches,
        device=rep.device.to_dict(),
        total_ns=total_ns,
        host=model if model is not None and model.matched else None,
    )
    program_findings, errors = engine.run_program_rules(rules, ctx)
    for e in errors:
        rep.warnings.append(f"program rule {e['rule']} failed: {e['error']}")
    result.program_findings = program_findings
    covering: dict[str, Any] = {}  # kernel id -> the first program finding that speaks to it
    owning: dict[str, Any] = {}  # kernel id -> the finding of the rule that owns it (`ProgramRule.owns`)
    for f in program_findings:
        for kid in f.kernel_ids:
            covering.setdefault(str(kid), f)
            if ctx.owned.get(str(kid)) == f.rule:
                owning.setdefault(str(kid), f)
    covering.update(owning)
    fallbacks = frozenset(r.code for r in engine.kernel_rules(rules) if r.fallback)
    result.kernels = [
        covered_by_program(owned_by_program(k, owning[k.id]) if k.id in owning else k, covering, fallbacks)
        for k in result.kernels
    ]
    switches = {r.code: r.title for r in engine.kernel_rules(rules) if r.switch}
    result.top_actions = top_actions(result.kernels, total_ns, program_findings, switches=switches)
    if model is not None:
        from ncuadvisor.pipeline.hostwall import add_wall_estimates

        add_wall_estimates(result, model)
