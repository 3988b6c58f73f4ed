"""The round of phase 2 that collects per-instruction data (the SourceCounters section) for the kernels that need it.

Phase 2 leaves SourceCounters out when every chosen kernel carries no source lines and every rule of theirs that reads
instructions is gated (ATen's kernels and the libraries': `engine.deferred_instructions`): the section is the dearest
part of a PyTorch program's phase-2 collection per launch (`benchmarks/RESULTS.md`, "Per-instruction data only where a
rule needs it"). The analyses of the rounds then say which launches a rule deciding on per-instruction data may fire
on, judged by its gate on the scalars and the roofline (`Analysis.wants_instructions`); one more round profiles those
kernels with SourceCounters, and its analysis replaces theirs. A training step whose ATen kernels are all near their
floor needs no such round."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncuadvisor.profile.selection import config_launch_count, first_strategy, kernel_key, round_name_base

if TYPE_CHECKING:
    from ncuadvisor.pipeline.build import Analysis

SECTION = "SourceCounters"


def wanted(deep: list[tuple[str, Analysis]], chosen: list[Any]) -> list[Any]:
    """The chosen kernels whose deep analysis wants per-instruction data."""
    keys: set[tuple[str, str, str]] = set()
    for _path, res in deep:
        ids = set(res.wants_instructions)
        keys |= {kernel_key(e) for e in res.kernels if ids & set(e.result_ids)}
    return [k for k in chosen if kernel_key(k) in keys]


def collect_instructions(
    session: Any,  # the `profile.session.Session` running phase 2 (its rounds, placing and analysis)
    kernels: list[Any],
    chosen: list[Any],
    deep: list[tuple[str, Analysis]],
    collection: tuple[list[str], list[str]],
    selection: dict[str, Any],
    group_time: Any,
) -> None:
    """After the rounds of phase 2 collected without SourceCounters (`collection`: their sections and metrics), one
    more round on the chosen kernels that want per-instruction data (`wanted`), with SourceCounters: their new
    analyses replace those of the earlier rounds in `deep` (placed as `<stem>.roundN`). `kernels`: phase 1's, for the
    launch count; `group_time`: phase 1's times, as the other rounds take them. Nothing when none wants it, the
    section was collected, or the session was interrupted."""
    from ncuadvisor.pipeline.analyze import kernel_analysis
    from ncuadvisor.result.helpers import no_surrogates

    sections, metrics = collection
    wanting = wanted(deep, chosen) if SECTION not in sections and not session.interrupted else []
    if not wanting:
        return
    rnd = len(selection["rounds"]) + 1
    configs = config_launch_count(kernels, wanting)
    strategy = first_strategy(bool(session.filters.kernel), None, configs)
    base = round_name_base(strategy, "demangled")
    many = f"{len(wanting)} kernels" if len(wanting) != 1 else "1 kernel"
    session.ui.note(
        f"  {many} may need their per-instruction data (a rule's gate admits them): one more run with {SECTION}"
    )
    run = session._phase2_round(rnd, strategy, base, wanting, [*sections, SECTION], metrics, configs)
    found: set[tuple[str, str, str]] = set()
    if run.report is not None:
        res = no_surrogates(kernel_analysis(run.report, rules=session.rules, group_time=group_time))
        session._python_lines(res)
        found = {kernel_key(k) for k in wanting} & {kernel_key(e) for e in res.kernels}
        if found:
            res.kernels = [e for e in res.kernels if kernel_key(e) in found]
            for _path, earlier in deep:
                earlier.kernels = [e for e in earlier.kernels if kernel_key(e) not in found]
            dest = session._place(run, f"{session.base.name}.round{rnd}")
            res.report.path = str(dest)
            res.report.name = dest.name if dest else res.report.name
            deep.append((str(dest), res))
    selection["rounds"].append(
        {
            "round": rnd,
            "strategy": strategy,
            "kernel_name_base": base,
            "asked": len(wanting),
            "found": len(found),
            "launches_profiled": run.parser.profiled,
            "purpose": "per-instruction data",
        }
    )
