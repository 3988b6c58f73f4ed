"""What phase 2 of `ncuadvisor profile` collects by default: the metrics the analysis reads, by name, for the
languages the chosen kernels may be in, with the sections that carry per-instruction data."""

from __future__ import annotations

from typing import Any

from ncuadvisor.profile import ncu as ncu_mod


def declared_collection(
    rules: list[Any], kernels: list[tuple[str, str]] | None, tensor_counts: bool = True, instructions: bool = False
) -> tuple[list[str], list[str]]:
    """(sections, metrics) of the declared collection for kernels of these (name, demangled) names: the roofline's
    and the cards' metrics, and those of the program rules and of the kernel rules for every language the kernels
    may be written in (`language.possible_languages`); SourceCounters only when one of those rules reads
    per-instruction data. `kernels` None: every rule.

    Not NCU's two Speed Of Light percentages nor L1's throughput (`roofline.NOT_COLLECTED`: maxima over breakdowns,
    9, 6 and 5 replay passes alone on the H200, derived from single unit counters instead, `roofline.derive_sol`),
    and not the SpeedOfLight section that holds them: the metrics NCU's own rules derive (`derived__*`, the excessive
    sectors and wavefronts the CUDA and Triton rules read) come with SourceCounters; SpeedOfLight is kept only for a
    rule that reads them without per-instruction data.

    Kernels that carry no source lines and whose instruction-reading rules are all gated (ATen's and the libraries':
    `engine.deferred_instructions`) get no SourceCounters unless `instructions` is True: their per-instruction data
    is collected by a later round for the kernels a gate admits (`engine.instructions_wanted`).

    `tensor_counts` False (phase 1 saw the kernels' tensor pipe idle, `ceiling.tensor_idle`): not the six tensor paths'
    FLOP counts (`sm__ops_path_tensor_*.sum`, 4 of the PyTorch collection's 14 replay passes on the H200 with their
    peaks); their peaks stay (TEN002 prices TF32 with one), and the roofline reads an idle pipe's counts as 0."""
    from ncuadvisor.analysis import roofline
    from ncuadvisor.analysis.language import possible_languages
    from ncuadvisor.pipeline.analyze import CARD_METRICS
    from ncuadvisor.rulekit import engine

    langs: set[str] | None = None
    if kernels is not None:
        langs = {lang for name, demangled in kernels for lang in possible_languages(name, demangled)}
        kernel_rules = engine.kernel_rules(rules)
        rules = [r for r in rules if r not in kernel_rules or set(r.languages) & langs]
    left_out = {*roofline.NOT_COLLECTED, *roofline.ACTIVE_FALLBACKS}  # derived, or read only where a report has them
    scalars = [m for m in roofline.METRICS if m not in left_out] + CARD_METRICS
    scalars += engine.required_metrics(rules, langs)
    sections = list(ncu_mod.DECLARED_SECTIONS)
    read = engine.required_metrics(rules) + engine.per_instruction_metrics(rules)
    deferred = langs is not None and not instructions and engine.deferred_instructions(rules, langs)
    if not engine.per_instruction_metrics(rules) or deferred:
        sections.remove("SourceCounters")
    if "SourceCounters" in sections or not any(m.startswith("derived__") for m in read):
        # the derived__ metrics of the CUDA rules come with SourceCounters' own rules: on the H200 (2026-12-01) a
        # collection of LaunchStats, Occupancy and SourceCounters held both, at 20 replay passes instead of 25
        sections.remove("SpeedOfLight")
    if not tensor_counts:
        counts = {p + ".sum" for p in roofline.TENSOR_PATHS.values()}
        scalars = [m for m in scalars if m not in counts]
    return sections, ncu_mod.declared_metrics([ncu_mod.DURATION_METRIC, *scalars])
