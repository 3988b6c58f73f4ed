"""The pipeline, the only place the stages are composed, each once and in order:

    report -> load (scalars) -> model (kernels) -> load (deep data, SASS) -> roofline -> rules -> locate -> build

Rules run once, on plain data read before them; the source lines of the findings they emit are read afterwards,
for all kernels in one batch. The result is the typed `ncuadvisor.result.Result` (schema_version 1), built once
by `pipeline.build` from the analysis made here; `Result.to_dict()` is its JSON.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ncuadvisor.analysis import archfacts, ceilings, needed, roofline
from ncuadvisor.analysis.language import LIBRARY_LANGUAGES, kernel_language, library_evidence, other_language
from ncuadvisor.load import ReportReader, RowsDisagree, read_results
from ncuadvisor.load.launchinterval import read_sidecar, sidecar_path
from ncuadvisor.metrics import STACK_SIZE_BEFORE, LaunchStats
from ncuadvisor.model import Kernel, Profile, ResultDetail, group_kernels, num
from ncuadvisor.pipeline import locate
from ncuadvisor.pipeline.build import Analysed, Analysis, Evaluation, build, kernel_entries
from ncuadvisor.pipeline.entries import device_entry, launch_list, processes_entry
from ncuadvisor.result.helpers import no_surrogates
from ncuadvisor.result.types import KernelEntry, LaunchInterval, ReportInfo, Result, SkippedRule
from ncuadvisor.rulekit import engine
from ncuadvisor.rulekit.contract import KernelContext, ProgramRule, Rule

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
    launch_interval: LaunchInterval | None = None,
) -> Result:
    """Analyze one report and return its result (schema_version 1). `pick`: which launch of a kernel group the
    deep analysis looks at (`model.group_kernels`: "median", "first" or "each"). `group_time`: the launches and time
    a kernel stands for when the report holds only some of its launches (`ncuadvisor profile`'s phase 2 profiles
    one launch of each kernel; phase 1 timed them all), so that rules judging a kernel by its share of the program's
    time see the true share. `host`: a host timeline of the same program (`analysis.hosttrace`), for the wall-time
    estimates (`pipeline.hostwall`). `launch_interval`: the host's launch interval, for the program rules (PRG004);
    when None, the one `ncuadvisor profile` measured and kept beside the report (`load.launchinterval`), if any."""
    rules = rules if rules is not None else engine.discover(rule_folders)
    if launch_interval is None and (kept := read_sidecar(path)) is not None:
        launch_interval = LaunchInterval(
            interval_ns=kept, source=f"measured by ncuadvisor profile, kept in {sidecar_path(path).name}"
        )
    # report text that is not UTF-8 (ncu_report hands each bad byte over as a surrogate escape) becomes U+FFFD here,
    # once, so that every output can encode the result
    analysis = kernel_analysis(path, rules=rules, pick=pick, group_time=group_time)
    return no_surrogates(build(analysis, rules, host, launch_interval))


def kernel_analysis(
    path: str | os.PathLike[str],
    rule_folders: Iterable[Path] = (),
    rules: list[Rule | ProgramRule] | None = None,
    pick: str = "median",
    group_time: GroupTime | None = None,
) -> Analysis:
    """`analyze` up to the program level: the kernel entries with the kernel rules' verdicts, the report's facts and
    its launches, which `pipeline.build` makes the result of (`ncuadvisor profile` builds one result from the
    analyses of its phases, `profile.merge`)."""
    rules = rules if rules is not None else engine.discover(rule_folders)
    try:
        return _analyze(path, rules, pick, group_time, defer_check=True)
    except RowsDisagree:  # the rows read from the file were not ncu_report's: read again, through ncu_report
        return _analyze(path, rules, pick, group_time, defer_check=False)


def _analyze(
    path: str | os.PathLike[str],
    rules: list[Rule | ProgramRule],
    pick: str,
    group_time: GroupTime | None,
    defer_check: bool,
) -> Analysis:
    """`analyze`, in order: read (the scalars, the kernel groups, the deep data), derive (each analysed launch's
    language, machine-model facts and roofline), read the SASS the gated rules admit on what was derived, run the
    rules, locate their findings in the source, and hand it all to the builder. `defer_check`: the rows read from the
    report file are checked against ncu_report's in a worker while the analysis goes on (`ReportReader.confirm`,
    before the device is needed), RowsDisagree where they differ."""
    # read
    metrics = list(dict.fromkeys(roofline.METRICS + CARD_METRICS + engine.required_metrics(rules)))
    # the SASS is read with the deep data, for the kernels in a language whose rules read instructions (a library
    # kernel's thousands of instructions are not read), unless every such rule is gated (`Rule.sass_when`): those
    # kernels' SASS is read afterwards, for the ones a gate admits
    gated = engine.gated_sass_languages(rules)
    reader = ReportReader(path, metrics, defer_check=defer_check, sass_later=bool(gated))
    profile = read_results(reader, metrics)
    kernels = group_kernels(profile.results, pick=pick)
    names = {rid: (k.name, k.demangled) for rid, k in _analysed_launches(kernels)}
    sass_wanted = engine.sass_languages(rules)
    first = frozenset(sass_wanted - gated)
    sass_for = partial(_wants_sass, names, first) if first else None
    # the rules' per-instruction metrics, and those the roofline reads (`needed.py`: the load/store split, XU work)
    per_instruction = list(dict.fromkeys(engine.per_instruction_metrics(rules) + needed.PER_INSTRUCTION))
    # a kernel without source lines (the report file says so) is in the language its names give; where no rule of
    # that language reads instructions (cuBLAS), its per-instruction data is not read at all
    no_lines = reader.without_lines(names)
    debug = reader.debug_built(set(names) - no_lines)  # a -G build has line tables: only those can be one
    if debug:
        profile.warnings.insert(0, _debug_warning(sorted({str(names[rid][0]) for rid in debug})))
    unread = {r for r, (n, d) in names.items() if r in no_lines and kernel_language(n, d, []) not in sass_wanted}
    # and it needs only the per-instruction metrics of its language's rules (an ATen kernel: not the CUDA rules')
    of_language = {
        lang: list(dict.fromkeys(engine.per_instruction_metrics(_of_language(rules, lang)) + needed.PER_INSTRUCTION))
        for lang in sass_wanted
    }
    only = {
        r: of_language[lang]
        for r, (n, d) in names.items()
        if r in no_lines and (lang := kernel_language(n, d, [])) in of_language
    }
    profile.details = reader.details(list(names), per_instruction, sass_for, unread, only)
    if reader.unreadable:  # the scalars came from the file; ncu_report could not parse the rest of these results
        profile.warnings.insert(0, _unreadable_warning([str(names[rid][0]) for rid in sorted(reader.unreadable)]))
    if reader.check_pending:
        profile.device = reader.confirm()
        profile.reader_version = reader.reader_version  # told by the check where the reader had not loaded the report
    # derive
    derived = derive(profile, kernels, frozenset(sass_wanted), first)
    # the SASS of the gated languages' launches that their rules admit (`Rule.sass_when`), decided on the scalars and
    # rooflines derived above, before any rule runs
    later = sass_admitted(profile, kernels, derived, rules, gated)
    reader.add_sass(profile.details, later)
    for rid in later:  # the facts the SASS tells where the counts do not (what HFMA2 computed), and their roofline
        if derived.facts.get(rid) is None:
            derived.facts[rid] = needed.instruction_facts(profile.details[rid].per_instruction)
            derived.rooflines[rid] = _roofline(
                profile, derived.machine, rid, derived.facts[rid], derived.languages.get(rid)
            )
    # run the rules
    evaluation = evaluate(profile, kernels, rules, group_time, derived.languages, derived.rooflines)
    # locate: the source lines of the findings, for all kernels in one batch
    findings = evaluation.findings()
    entries = [(rid, d.entry[0] if d.entry else None) for rid, d in profile.details.items()]
    located = reader.locations(locate.wanted(findings, entries))
    mangled = {int(rid): m for rid, m in zip(profile.results["result_id"], profile.results["mangled"])}
    chains = reader.call_chains(locate.selected(findings, located, mangled))
    locate.resolve(findings, located, chains)
    # build (`pipeline.build`): the caller finishes the result
    analysis = analysis_of(profile, kernels, evaluation, located)
    analysis.wants_instructions = instructions_wanted(profile, kernels, derived, rules)
    return analysis


def _debug_warning(debug_names: list[str]) -> str:
    """The warning that opens a report of debug-built kernels (at most three named)."""
    return (
        f"this is a debug build (nvcc -G: its modules carry full debug information): {len(debug_names)} kernel"
        f"{'s' if len(debug_names) != 1 else ''} ({', '.join(debug_names[:3])}"
        f"{', ...' if len(debug_names) > 3 else ''}) ran "
        "unoptimised, every variable in local memory, so their findings describe the debug build; profile a "
        "release build with -lineinfo"
    )


def _unreadable_warning(bad: list[str]) -> str:
    """The warning for results whose scalars came from the file and whose deep data ncu_report could not parse."""
    shown = ", ".join(bad[:5]) + (" …" if len(bad) > 5 else "")
    return (
        f"partial: the report file is damaged: ncu_report cannot parse {len(bad)} of its results ({shown}): "
        "their times and metrics are read from the file, their per-instruction data and source lines are missing"
    )


def timing_analysis(
    profile: Profile, kernels: list[Kernel], rules: list[Rule | ProgramRule], group_time: GroupTime | None = None
) -> Analysis:
    """The analysis of a profile read without deep data (`ncuadvisor profile`'s timing pass): rules that need none
    still run."""
    languages = kernel_languages(kernels, profile.details)
    return analysis_of(profile, kernels, evaluate(profile, kernels, rules, group_time, languages), {})


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
                sm_count, launch_floor, dram_peak, model = machine
                rl = roofline.compute(row, sm_count, counted, launch_floor, dram_peak, model)
                if rl.executed_floor_unit == "sfu":
                    counted = None
            out[rid] = counted
            if out[rid] is None and languages.get(rid) in sass_read:
                out[rid] = needed.instruction_facts(detail.per_instruction)
        else:
            out[rid] = needed.instruction_facts(detail.per_instruction)
    return out


@dataclass
class Derived:
    """What the analysis derives of each analysed launch before the rules run, by result id: its language, the
    machine model's facts (`instruction_facts`) and its roofline; `machine`: the report's device, as the roofline
    takes it."""

    machine: Machine
    languages: dict[int, str]
    facts: dict[int, needed.InstructionFacts | None]
    rooflines: dict[int, roofline.Roofline]


def derive(
    profile: Profile, kernels: list[Kernel], sass_languages: frozenset[str], sass_read: frozenset[str]
) -> Derived:
    """The language, facts and roofline of every analysed launch, from the scalars and deep data read
    (`instruction_facts` for `sass_languages` and `sass_read`)."""
    machine = _machine(profile)
    languages = kernel_languages(kernels, profile.details)
    facts = instruction_facts(profile, machine, kernels, languages, sass_languages, sass_read)
    rooflines = {
        rid: _roofline(profile, machine, rid, facts.get(rid), languages.get(rid))
        for rid, _ in _analysed_launches(kernels)
    }
    return Derived(machine, languages, facts, rooflines)


def _roofline(
    profile: Profile, machine: Machine, rid: int, facts: needed.InstructionFacts | None, language: str | None
) -> roofline.Roofline:
    sm_count, launch_floor, dram_peak, model = machine
    library_code = language in LIBRARY_LANGUAGES
    return roofline.compute(profile.results.row(rid), sm_count, facts, launch_floor, dram_peak, model, library_code)


def sass_admitted(
    profile: Profile, kernels: list[Kernel], derived: Derived, rules: list[Rule | ProgramRule], gated: set[str]
) -> list[int]:
    """The launches with deep data, in a language whose instruction-reading rules are all gated (`gated`), whose SASS
    is to be read: those whose facts do not come from the counts, and those a rule may fire on
    (`engine.sass_admitted`, on the launch's scalars and derived roofline: no per-instruction data)."""
    out = []
    for rid, k in _analysed_launches(kernels):
        language = derived.languages[rid]
        if language not in gated or rid not in profile.details:
            continue
        if derived.facts.get(rid) is not None:
            ctx = KernelContext(k, profile.results.row(rid), derived.rooflines[rid], profile.device, {}, language, 0.0)
            if not engine.sass_admitted(rules, ctx):
                continue
        out.append(rid)
    return out


def instructions_wanted(
    profile: Profile, kernels: list[Kernel], derived: Derived, rules: list[Rule | ProgramRule]
) -> list[int]:
    """The launches of a language without source lines read without the per-instruction data a rule deciding on it
    reads (a collection without SourceCounters) on which that rule may fire (`engine.instructions_wanted`)."""
    out = []
    for rid, k in _analysed_launches(kernels):
        language, detail = derived.languages[rid], profile.details.get(rid)
        if language not in engine.LINELESS_LANGUAGES or detail is None:
            continue
        have = {m for m, entries in detail.per_instruction.items() if entries}
        ctx = KernelContext(k, profile.results.row(rid), derived.rooflines[rid], profile.device, {}, language, 0.0)
        if engine.instructions_wanted(rules, ctx, have):
            out.append(rid)
    return out


# (SM count, launch floor, DRAM peak, machine model) of the report's device, as the roofline takes them
Machine = tuple[float | None, tuple[float, str], float | None, archfacts.Machine]


def _machine(profile: Profile) -> Machine:
    """(SM count, launch floor, DRAM peak, machine model) of the report's device, as `evaluate` hands them to the
    roofline (`archfacts`: the report's numbers where it has them, the architecture's table otherwise)."""
    return (
        num(profile.device.get("sm_count")),
        ceilings.launch_floor(profile.device.get("name"), profile.results, profile.device),
        ceilings.DRAM_PEAKS.get(str(profile.device.get("name"))),
        archfacts.machine(profile.device, profile.results, profile.clocks_locked),
    )


def _library_skips(rules: list[Rule | ProgramRule], k: Kernel, files: list[str]) -> list[SkippedRule]:
    """The rules for the user's CUDA code that did not run on a kernel taken for library code, said with the
    evidence it was taken on (`language.library_evidence`): one entry, so a user's kernel mistaken for a library's is
    seen."""
    codes = [r.code for r in engine.kernel_rules(rules) if "cuda" in r.languages and "library" not in r.languages]
    why = library_evidence(k.name, k.demangled, files) or "its name"
    if not codes:
        return []
    return [
        SkippedRule(
            rule="cuda-rules",
            reason=f"taken for library code ({why}, no source lines of its own): the {len(codes)} rules for the "
            f"user's CUDA code were not run: {', '.join(codes)}",
        )
    ]


def _analysed_launches(kernels: list[Kernel]) -> list[tuple[int, Kernel]]:
    """(result id, kernel group) of every launch the analysis looks at closely: each group's representative, then
    its variants' ones."""
    return [(k.representative, k) for k in kernels] + [(v.representative, k) for k in kernels for v in k.variants]


def _stack_before(profile: Profile) -> dict[int, float | None]:
    """For each result, the per-thread stack limit of the result launched just before it in its process (None for
    the first: CUDA's default then); empty where the report does not record the limit (before ncu 2025.1)."""
    results = profile.results
    if LaunchStats.STACK_SIZE not in results.columns:
        return {}
    out: dict[int, float | None] = {}
    last: dict[str, float | None] = {}
    for row in sorted(results, key=lambda r: r["result_id"]):
        process = str(row.get("process") or "")
        out[row["result_id"]] = last.get(process)
        last[process] = num(row.get(LaunchStats.STACK_SIZE))
    return out


def _of_language(rules: list[Rule | ProgramRule], language: str) -> list[Rule]:
    """The kernel rules that run on kernels of `language`."""
    return [r for r in engine.kernel_rules(rules) if language in r.languages]


def _wants_sass(names: dict[int, tuple[str, str]], wanted: frozenset[str], rid: int, first_file: str | None) -> bool:
    """Whether the instructions of result `rid` are disassembled with its deep data: its language (as
    `kernel_languages` decides it) is one whose rules read instructions."""
    name, demangled = names.get(rid, ("", ""))
    return kernel_language(name, demangled, [first_file] if first_file else []) in wanted


def evaluate(
    profile: Profile,
    kernels: list[Kernel],
    rules: list[Rule | ProgramRule],
    group_time: GroupTime | None,
    languages: dict[int, str],
    rooflines: dict[int, roofline.Roofline] | None = None,
) -> Evaluation:
    """The rules, once, on the representative launch of every kernel group and variant, with its roofline: derived
    before (`rooflines`, by result id: `derive`), else computed here from its per-instruction data."""
    results = profile.results
    total_ns = sum(k.duration_ns for k in kernels)
    rule_total_ns = group_time.total_ns if group_time is not None and group_time.total_ns else total_ns
    machine = _machine(profile) if rooflines is None else None
    evaluation = Evaluation(groups=[], sections_seen=set(), warnings=[])
    stack_before = _stack_before(profile)

    def run(k: Kernel, share: float) -> Analysed:
        row = results.row(k.representative)
        if k.result_ids and stack_before.get(min(k.result_ids)) is not None:
            row[STACK_SIZE_BEFORE] = stack_before[min(k.result_ids)]
        detail = profile.details.get(k.representative)
        language = languages.get(k.representative) or kernel_language(k.name, k.demangled, [])
        if rooflines is not None and k.representative in rooflines:
            rl = rooflines[k.representative]
        else:
            known = needed.instruction_facts(detail.per_instruction) if detail else None
            rl = _roofline(profile, machine or _machine(profile), k.representative, known, language)
        evaluation.sections_seen.update(detail.sections if detail else [])
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
        if language == "library":
            files = [detail.first_file] if detail is not None and detail.first_file else []
            verdict.skipped.extend(_library_skips(rules, k, files))
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


def report_info(
    profile: Profile, kernels: list[Kernel], evaluation: Evaluation, entries: list[KernelEntry]
) -> ReportInfo:
    """The report's facts: its file, ncu, device and processes, its sections and what it lacks, the warnings of the
    reading and of the rules."""
    total_ns = sum(k.duration_ns for k in kernels)
    warnings = list(profile.warnings) + evaluation.warnings
    foreign: dict[str, list[str]] = {}
    for k, (main, _v) in zip(kernels, evaluation.groups):
        if main.language == "cuda" and (lang := other_language(k.name, k.demangled)):
            foreign.setdefault(lang, []).append(k.name)
    for lang, written in foreign.items():
        warnings.append(
            f"kernels written in {lang} ({', '.join(written[:3])}{', ...' if len(written) > 3 else ''}): their fixes "
            f"are written in CUDA C where a rule has no {lang.split(' ')[0]} text; the mechanism each names (the access pattern, the tiling, the data type, the "
            f"launch shape) is what to change, in {lang.split(' ')[0]}"
        )
    empty = [k.name for k, (main, _v) in zip(kernels, evaluation.groups) if main.roofline.duration_ns is None]
    if empty:
        warnings.append(
            f"ncu recorded nothing for {len(empty)} kernel{'s' if len(empty) != 1 else ''} ("
            + ", ".join(empty[:3])
            + (", ..." if len(empty) > 3 else "")
            + f"): no duration and no metric, so {'they show' if len(empty) != 1 else 'it shows'} as 0 ns; ncu did "
            "not measure it (a failed replay, an interrupted run): profile again"
        )
    missing_sections = [s for s in ANALYSIS_SECTIONS if s not in evaluation.sections_seen]
    if missing_sections and kernels:
        warnings.append(
            "the report lacks sections the full analysis uses ("
            + ", ".join(missing_sections)
            + "): findings that need them are skipped; re-profile with `ncuadvisor profile` for all of them"
        )
    return ReportInfo(
        path=profile.path,
        name=Path(profile.path).name,
        ncu_version=profile.ncu_version,
        reader_version=profile.reader_version,
        command_line=profile.command_line,
        device=device_entry(profile.device, entries),
        results=int(len(profile.results)),
        kernels=len(kernels),
        total_duration_ns=total_ns,
        sections=sorted(evaluation.sections_seen),
        missing_sections=missing_sections,
        warnings=warnings,
        processes=processes_entry(profile.processes, entries),
        devices=sorted({int(d) for d in profile.results.get("device_id", []) if num(d) is not None}),
    )


def analysis_of(profile: Profile, kernels: list[Kernel], evaluation: Evaluation, located: locate.Located) -> Analysis:
    """The builder's input (`pipeline.build`): the kernel entries, the report's facts, the launches in order."""
    entries = kernel_entries(profile, kernels, evaluation, located)
    return Analysis(report_info(profile, kernels, evaluation, entries), entries, launch_list(profile, kernels))
