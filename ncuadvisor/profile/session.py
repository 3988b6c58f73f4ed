"""One `ncuadvisor profile` session: the phases (or `--full`), the rounds of phase 2, where the reports go, and
the result with what was done (`report.profile`).

Two phases by default:

1. one cheap pass over every launch the filters let through (`ncu.PHASE1_COLLECTED`: duration, DRAM bytes, tensor
   pipe share; one replay pass on the H200): the distinct kernels ranked by total GPU time, each launch's DRAM bytes
   for the program rules, the kernels at their tensor ceiling placed without phase 2 (`profile.ceiling`);
2. the metrics and sections the rules of the chosen kernels' languages read (`profile.collection`) on ONE launch of each
   kernel that matters (`--top K`, or the fewest kernels that cover `--coverage` of the GPU time, 0.9 by default),
   selected with `--kernel-id ::regex:^(names)$:1`. Kernels that round misses are retried with
   `--filter-mode per-launch-config --launch-count 1`, at most `MAX_ROUNDS` rounds in all (each round runs the
   program again). Measured on the H200 with ncu 2025.3.1 and `--nvtx-range step` after warm-up steps: round 1
   caught the ATen kernels but none of the cuBLAS `nvjet_*` kernels; per-launch-config caught those, one per launch
   configuration (grid, block, shared memory; two kernels of the same configuration need two rounds).

Kernels seen only in phase 1 keep name, launches and time (`"profiled": false`, `bound: "unknown"`) and count for the
program rules; the chosen ones get their deep metrics. `--full`: ncu's `--set full` on every launch instead.

Reports are kept next to the output (`<stem>.phase1.ncu-rep`, `<stem>.ncu-rep`, `<stem>.round2.ncu-rep`, ...; ncu
2026.3+ writes `.ncu-repz`), never over an existing file without `--force`.

Multi-process: ncu follows child processes by default (`--target-processes all`): workers and `torchrun` ranks land
in the one report (`application-only`: the launched process alone); the analysis splits kernels per process (the
report's process blocks) and shows each rank, read from the RANK / LOCAL_RANK / WORLD_SIZE environment of the
processes ncu starts (kept beside the report in `<report>.processes.json`).

The exit codes are in `ncuadvisor.errors`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ncuadvisor.errors import NothingProfiledError, OutputError, ProfileInterrupted
from ncuadvisor.profile import early as early_mod
from ncuadvisor.profile import ncu as ncu_mod
from ncuadvisor.profile.ceiling import at_tensor_ceiling, tensor_idle
from ncuadvisor.profile.collection import declared_collection
from ncuadvisor.profile.hosttime import record_host_timeline
from ncuadvisor.profile.instructions import collect_instructions
from ncuadvisor.profile.launchbytes import fill_launch_bytes, profiled_bytes
from ncuadvisor.profile.launchrate import LaunchRate, for_rules, measure_before
from ncuadvisor.profile.merge import Phase1Time, analyze_phase1, merge_results, torch_context
from ncuadvisor.profile.meta import profile_meta
from ncuadvisor.profile.progress import ProgressUI
from ncuadvisor.profile.pylines import KERNEL_LINES_ENV, attach_python_lines, read_kernel_lines
from ncuadvisor.profile.reports import place_report, report_base, write_sidecars
from ncuadvisor.profile.runner import PhaseRun, check_run, run_ncu
from ncuadvisor.profile.selection import (
    DEFAULT_COVERAGE,
    MAX_ROUNDS,
    config_launch_count,
    first_strategy,
    kernel_key,
    kernel_names,
    round_name_base,
    round_strategy,
    select_kernels,
    window_launch_count,
)
from ncuadvisor.profile.target import Target
from ncuadvisor.reportfile.sniff import private_dir
from ncuadvisor.result.types import ProfileInfo, Result
from ncuadvisor.units import clip

if TYPE_CHECKING:  # the pipeline is imported when a phase is analysed
    from ncuadvisor.pipeline.build import Analysis


@dataclass
class Session:
    """One `ncuadvisor profile`: runs the phases, places the reports, builds the result."""

    ncu: str
    info: ncu_mod.NcuInfo
    target: Target
    filters: ncu_mod.Filters
    ui: ProgressUI
    env: dict[str, str]
    work: Path
    base: Path
    force: bool
    rules: list[Any]
    torch_ops: bool = False
    python_lines: bool = False
    host: Any = None  # `--host-time`: the host timeline of a plain run (`profile.hosttime`), for the wall estimates
    launch: LaunchRate | None = None  # the host's launch interval, measured before phase 1 (`profile.launchrate`)
    placed: list[Path] = field(default_factory=list)
    runs: list[PhaseRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    incomplete: str | None = None  # why the result is partial (exit 4)
    timeout_s: float | None = None  # `--timeout`: each run of the program under ncu is stopped after this long
    early: early_mod.EarlyStart | None = None  # phase 2's program, started while phase 1 runs (profile.early)
    early_note: dict[str, Any] | None = None  # what became of it, for report.profile

    runner: Callable[..., PhaseRun] = run_ncu
    # what phase 2 collects: "declared" (the default: the metrics the rules of the chosen kernels' languages read, by
    # name, with `ncu.DECLARED_SECTIONS`, SourceCounters where those rules read per-instruction data and cannot wait,
    # `profile.instructions`), "sections" (`pipeline.ANALYSIS_SECTIONS` with NCU's own rules:
    # NCUADVISOR_COLLECTION=sections) or "declared-all" (the metrics of every rule, whatever the kernels).
    collection: str = field(default_factory=lambda: os.environ.get("NCUADVISOR_COLLECTION", "declared"))

    def phase2_collection(
        self, chosen: list[Any] | None = None, tensor_counts: bool = True
    ) -> tuple[list[str], list[str]]:
        """(sections, metrics) of phase 2 for the `chosen` kernels (every rule's metrics when None), without the
        tensor paths' FLOP counts when `tensor_counts` is False (phase 1 saw their tensor pipe idle)."""
        from ncuadvisor.pipeline.analyze import ANALYSIS_SECTIONS

        if self.collection == "sections":
            return list(ANALYSIS_SECTIONS), []
        every = self.collection == "declared-all" or chosen is None
        kernels = None if every else [(k.name, k.demangled) for k in chosen or []]
        return declared_collection(self.rules, kernels, tensor_counts=tensor_counts)

    def _run(self, command: list[str], out_base: str, label: str, expected: int | None) -> PhaseRun:
        limit = {"timeout_s": self.timeout_s} if self.timeout_s else {}
        run = self.runner(command, out_base, label, self.ui, expected=expected, env=self.env, **limit)
        return self._account(run, label)

    def _account(self, run: PhaseRun, label: str) -> PhaseRun:
        """A run of the program under ncu counted in: its warnings, interruption, timeout and exit code."""
        self.runs.append(run)
        if run.interrupted:
            self.interrupted = True
        if getattr(run, "timed_out", False):
            phase = label.split(":")[0]
            self.warnings.insert(
                0,
                f"partial: the program was stopped at --timeout {self.timeout_s:g} s during {phase}; this analyses "
                "what ncu had collected",
            )
            self.incomplete = self.incomplete or f"the program was stopped at --timeout {self.timeout_s:g} s"
        for e in run.parser.errors:
            if e.error_kind != "permission":
                self.warnings.append(f"ncu ({label.split(':')[0]}): {e.text.strip()} — {e.reading}")
        if run.parser.app_exit not in (None, 0):
            msg = f"the program exited with code {run.parser.app_exit} during {label.split(':')[0]}: the result is partial"
            self.warnings.append(msg)
            self.incomplete = self.incomplete or f"the program exited with code {run.parser.app_exit}"
        return run

    def _run_saved(self, command: list[str], out_base: str, label: str, phase: str) -> PhaseRun:
        """A run the rest depends on: ncu's failures raised as one clear error, an interruption before a report too."""
        run = self._run(command, out_base, label, None)
        check_run(run, self.filters, self.target, phase)
        if run.report is None and run.timed_out:
            raise NothingProfiledError(f"--timeout {self.timeout_s:g} s reached before ncu saved anything ({phase})")
        if run.report is None:  # interrupted before ncu saved anything
            raise ProfileInterrupted("interrupted before ncu saved anything: nothing to analyze")
        return run

    def _place(self, run: PhaseRun, stem: str) -> Path | None:
        if run.report is None:
            return None
        dest = place_report(run.report, self.base.parent / stem, self.force)
        self.placed += [dest, *write_sidecars(dest, run.processes, self.launch)]
        self._check_count(run, dest)
        return dest

    def _check_count(self, run: PhaseRun, report: Path) -> None:
        """ncu prints one `==PROF== Profiling` line per launch it profiled, and writes one result for each (equal in
        every captured run: flaws 31, tiny_sections 20, tiny_phase1 2,001, torch_eager 25). A report holding fewer,
        with no ncu error and no interruption, was cut short: a cut at a block boundary reads as a whole report, and
        only this count shows it. A report not in the plain layout (.ncu-repz) is not counted here."""
        from ncuadvisor.reportfile.blocks import scan_blocks

        if run.interrupted or run.parser.errors or not run.parser.profiled:
            return
        held = scan_blocks(report).processes
        if held is None or len(held) >= run.parser.profiled:
            return
        phase = run.label.split(":")[0]
        self.warnings.append(
            f"partial: the report ncu wrote in {phase} holds {len(held)} results of the {run.parser.profiled} "
            "launches it profiled: the file is cut short"
        )
        self.incomplete = self.incomplete or (
            f"ncu's report of {phase} holds {len(held)} results of the {run.parser.profiled} launches it profiled"
        )

    def _meta(self, mode: str, extra: dict[str, Any]) -> dict[str, Any]:
        return profile_meta(self, mode, extra)

    def _finish(self, result: Result, mode: str, extra: dict[str, Any]) -> Result:
        warnings = result.report.warnings
        damaged = next((w for w in warnings if str(w).startswith("partial: the report file is ")), None)
        if damaged and not self.incomplete:  # ncu wrote a report cut short or damaged: the run is partial (exit 4)
            self.incomplete = "ncu wrote a damaged report (" + str(damaged).split(": ", 1)[1] + ")"
        if self.interrupted:
            warnings.insert(0, "partial: interrupted (Ctrl-C) before ncu finished; this analyses what was collected")
        first = [w for w in self.warnings if w.startswith("partial") and w not in warnings]
        warnings[:0] = first  # a partial result says so first, in every format
        for w in self.warnings:
            if w not in warnings:
                warnings.append(w)
        result.report.profile = ProfileInfo.from_dict(self._meta(mode, extra), "report.profile")
        return result

    def remove_reports(self) -> None:
        """`--no-keep`: remove the reports placed beside the output (and their rank files)."""
        for p in self.placed:
            with contextlib.suppress(OSError):
                p.unlink()

    def _python_lines(self, result: Result | Analysis) -> None:
        """--python-lines: each kernel's line from its NVTX ranges (`profile.pylines`), before the merge reads them."""
        if self.python_lines:
            attach_python_lines(result.kernels, read_kernel_lines(self.env.get(KERNEL_LINES_ENV)))

    # -- modes ----------------------------------------------------------------------------------------------------
    def full(self) -> Result:
        from ncuadvisor.pipeline.analyze import analyze

        out_base = str(self.work / "full")
        cmd = ncu_mod.full_command(self.ncu, out_base, self.target.argv, self.filters)
        run = self._run_saved(cmd, out_base, "full: every launch, ncu's full set", "full run")
        dest = self._place(run, f"{self.base.name}")
        assert dest is not None
        result = analyze(dest, rules=self.rules, host=self.host, launch_interval=for_rules(self.launch))
        self._python_lines(result)
        for k in result.kernels:
            k.profiled = True
            if self.torch_ops:
                k.torch = torch_context(k.nvtx or "")
        return self._finish(result, "full", {})

    def two_phase(self, top: int | None, coverage: float | None) -> Result:
        if early_mod.wanted(self.target.script, self.filters, self.env):
            self.early = early_mod.start(self.ncu, self.target.argv, self.filters, self.env, self.work)
        try:
            return self._two_phase(top, coverage)
        finally:
            self._give_up_early("")

    def _give_up_early(self, why: str) -> None:
        """End the early program (profile.early) unused; `why` goes into report.profile when it was not used."""
        if self.early is None:
            return
        self.early.stop()
        self.early = None
        if why:
            self.early_note = {"used": False, "why": why}

    def _two_phase(self, top: int | None, coverage: float | None) -> Result:
        out1 = str(self.work / "phase1")
        cmd1 = ncu_mod.phase1_command(self.ncu, out1, self.target.argv, self.filters)
        run1 = self._run_saved(cmd1, out1, "phase 1/2: timing every kernel launch", "phase 1")
        p1_path = self._place(run1, f"{self.base.name}.phase1")
        assert p1_path is not None
        p1_result, launches, kernels = analyze_phase1(p1_path, self.rules)
        self._python_lines(p1_result)
        chosen = select_kernels(kernels, top=top, coverage=coverage)
        total = sum(k.duration_ns for k in kernels)
        covered = sum(k.duration_ns for k in chosen) / total if total else 0.0
        # kernels phase 1 already places at their tensor ceiling get that verdict, not a phase-2 launch
        at_ceiling = at_tensor_ceiling(chosen, kernels, launches, self.rules)
        deep_chosen = [k for k in chosen if kernel_key(k) not in at_ceiling]
        if not deep_chosen:
            self._give_up_early("phase 1 chose no kernel for phase 2")
        elif len({k.process_label for k in p1_result.kernels if getattr(k, "process_label", None)}) > 1:
            self._give_up_early("phase 1 saw kernels of more than one process")
        selection: dict[str, Any] = {
            "top": top,
            "coverage": coverage if coverage is not None else (None if top is not None else DEFAULT_COVERAGE),
            "phase1_kernels": len(kernels),
            "phase1_launches": int(len(launches)),
            "chosen": [k.name for k in chosen],
            "chosen_share": covered,
            "at_tensor_ceiling": [k.name for k in chosen if kernel_key(k) in at_ceiling] or None,
            "rounds": [],
        }
        placed = (
            f"; {len(at_ceiling)} more placed near their tensor ceiling by phase 1 (leave them: not profiled)"
            if at_ceiling
            else ""
        )
        self.ui.note(
            f"  {len(kernels)} distinct kernels in {len(launches)} launches; profiling {len(deep_chosen)} in depth"
            f"{placed} ({covered:.0%} of GPU time)"
        )
        # the deep analysis judges each kernel by the time phase 1 measured for it, not by its one profiled launch
        deep, missing = (
            self._phase2(deep_chosen, kernels, launches, Phase1Time(p1_result, launches), selection)
            if deep_chosen
            else ([], [])
        )
        if missing:
            names = ", ".join(clip(k.name, 40) for k in missing[:5]) + (" …" if len(missing) > 5 else "")
            self.warnings.append(
                f"{len(missing)} of the {len(deep_chosen)} chosen kernels could not be profiled in depth ({names}): "
                "they are listed with their phase-1 time only"
            )
            if len(missing) == len(deep_chosen) and not self.interrupted:
                self.incomplete = self.incomplete or "no chosen kernel could be profiled in depth"
        # the program rules weigh the bytes kernels pass through DRAM: phase 1 measures every launch's; a phase-1
        # report without them (an older ncuadvisor's) gets those of one launch of each kernel phase 2 profiled,
        # scaled by duration (profile.launchbytes)
        if any(x.get("dram_read_bytes") is None or x.get("dram_write_bytes") is None for x in launches):
            fill_launch_bytes(launches, p1_result.kernels, profiled_bytes(path for path, _ in deep))
        result = merge_results(
            p1_result, deep, launches, self.rules, self.torch_ops, at_ceiling, self.host, for_rules(self.launch)
        )
        if deep and self.collection != "sections":
            # the declared collection holds every metric the rules read, not the whole sections: the analysis
            # skipped nothing for want of a section; only NCU's own rules of the other sections did not run
            warnings = result.report.warnings
            warnings[:] = [w for w in warnings if "lacks sections" not in w]
            warnings.append(
                "phase 2 collected the metrics the analysis reads by name, with the sections "
                + ", ".join(selection.get("collection", {}).get("sections") or ncu_mod.DECLARED_SECTIONS)
                + ": NCU's own rule results are those of these sections"
            )
        if not deep:
            result.report.path = str(p1_path)
            result.report.name = p1_path.name
        result.report.phase1_report = str(p1_path)
        return self._finish(result, "two-phase", {"selection": selection})

    def _phase2(
        self,
        chosen: list[Any],
        kernels: list[Any],
        launches: list[dict[str, Any]],
        group_time: Phase1Time,
        selection: dict[str, Any],
    ) -> tuple[list[tuple[str, Analysis]], list[Any]]:
        """The rounds of phase 2, until every chosen kernel was profiled in depth or a round finds none: the deep
        analyses (report path, kernel entries and facts before the program level, which run once on the merged
        result) and the chosen kernels still missing. Records each round in `selection`."""
        from ncuadvisor.pipeline.analyze import kernel_analysis
        from ncuadvisor.result.helpers import no_surrogates

        idle = tensor_idle(chosen, kernels, launches)  # then no tensor FLOP counts: 4 replay passes fewer
        sections, metrics = self.phase2_collection(chosen, tensor_counts=not idle)
        selection["collection"] = {"mode": self.collection, "sections": sections, "metrics": len(metrics)}
        if idle and metrics:
            self.ui.note("  the tensor pipe was idle in every launch of them: no tensor FLOP counts in phase 2")

        deep: list[tuple[str, Analysis]] = []
        found: set[tuple[str, str, str]] = set()
        missing = list(chosen)
        name_base = "demangled"
        window = window_launch_count(launches, kernels, chosen)
        configs = config_launch_count(kernels, chosen)
        first = first_strategy(bool(self.filters.kernel), window, configs)
        selection["window_launches"] = window
        selection["config_launches"] = configs
        for rnd in range(1, MAX_ROUNDS + 1):
            if not missing or self.interrupted:
                break
            strategy = round_strategy(rnd, first)
            base = round_name_base(strategy, name_base)
            launch_count = {"window": window, "config": configs}.get(strategy)
            run2 = self._phase2_round(rnd, strategy, base, missing, sections, metrics, launch_count)
            new: set[tuple[str, str, str]] = set()
            if run2.report is not None:
                res = no_surrogates(kernel_analysis(run2.report, rules=self.rules, group_time=group_time))
                self._python_lines(res)
                keys = {kernel_key(k) for k in res.kernels}
                new = {kernel_key(k) for k in missing} & keys
                if new or not deep:
                    stem = f"{self.base.name}" if not deep else f"{self.base.name}.round{rnd}"
                    dest = self._place(run2, stem)
                    res.report.path = str(dest)
                    res.report.name = dest.name if dest else res.report.name
                    deep.append((str(dest), res))
                found |= keys
            selection["rounds"].append(
                {
                    "round": rnd,
                    "strategy": strategy,
                    "kernel_name_base": base,
                    "asked": len(missing),
                    "found": len(new),
                    "launches_profiled": run2.parser.profiled,
                }
            )
            still = [k for k in missing if kernel_key(k) not in found]
            if not new and name_base == "demangled" and run2.parser.profiled == 0 and rnd >= 2:
                name_base = "function"  # the demangled names did not match at all: try the plain function names
            elif not new and rnd >= 2:
                break
            missing = still
        collect_instructions(self, kernels, chosen, deep, (sections, metrics), selection, group_time)
        return deep, missing

    def _phase2_round(
        self,
        rnd: int,
        strategy: str,
        base: str,
        missing: list[Any],
        sections: list[str],
        metrics: list[str],
        launch_count: int | None,
    ) -> PhaseRun:
        """One round of phase 2: ncu run on one launch of each `missing` kernel, asked for by its `base` name."""
        out2 = str(self.work / f"phase2_{rnd}")
        cmd2 = ncu_mod.phase2_command(
            self.ncu,
            out2,
            self.target.argv,
            self.filters,
            kernel_names(missing, base),
            sections,
            strategy=strategy,
            name_base=base,
            launch_count=launch_count if strategy == "window" else None,
            metrics=metrics,
        )
        what = "the analysis metrics" if metrics else "full analysis sections"
        label = f"phase 2/2: {what}, one launch per kernel" + (f" (round {rnd})" if rnd > 1 else "")
        # what the bar counts up to: the launches this round profiles (one per kernel and launch shape, as
        # far as phase 1 saw them), until ncu's own count replaces it
        expected = launch_count or len(missing)
        self.ui.display_names = {k.mangled: k.name for k in missing if k.mangled} if base == "mangled" else {}
        attached = self._attached_round(cmd2, out2, label, expected) if self.early is not None else None
        run2 = attached if attached is not None else self._run(cmd2, out2, label, expected)
        self.ui.display_names = {}
        if run2.parser.permission_denied:
            check_run(run2, self.filters, self.target, "phase 2")
        return run2

    def _attached_round(self, phase2: list[str], out_base: str, label: str, expected: int | None) -> PhaseRun | None:
        """Round 1 of phase 2 on the program started early (`early.attach_round`); None when it cannot be used."""
        early, self.early = self.early, None
        assert early is not None
        limit = self.timeout_s
        run, self.early_note = early_mod.attach_round(early, self, phase2, out_base, label, expected, limit)
        return self._account(run, label) if run is not None else None


def run_profile(
    output: Path,
    target: Target,
    ncu: ncu_mod.NcuInfo,
    filters: ncu_mod.Filters,
    rules: list[Any],
    *,
    full: bool = False,
    top: int | None = None,
    coverage: float | None = None,
    force: bool = False,
    torch_ops: bool = False,
    python_lines: bool = False,
    verbose: bool = False,
    quiet: bool = False,
    host_time: bool = False,
    timeout_s: float | None = None,
) -> tuple[Session, Result]:
    """Profile `target` (both phases, or `--full`) and analyze it; the reports are placed beside `output`.

    Returns the session (what was placed, whether it was interrupted or is incomplete) and the result, whose
    `report.profile` says what was done. ncu works in a private folder beside `output`, removed at the end."""
    env = dict(os.environ)
    if target.script is not None:
        env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        # removed at exit too: a Ctrl-C before the `finally` below is in force leaves nothing beside the output
        work = private_dir(output.resolve().parent, ".ncuadvisor-")
    except OSError as exc:
        raise OutputError(f"{output}: cannot write in its folder ({exc.strerror or exc})") from exc
    if python_lines:  # where the runner writes the lines of the kernels torch.compile generated
        env.setdefault(KERNEL_LINES_ENV, str(work / "kernel_lines.json"))
    session = Session(
        ncu=ncu.path,
        info=ncu,
        target=target,
        filters=filters,
        ui=ProgressUI(verbose=verbose, quiet=quiet),
        env=env,
        work=work,
        base=report_base(output),
        force=force,
        rules=rules,
        torch_ops=torch_ops,
        python_lines=python_lines,
        timeout_s=timeout_s,
    )
    t0 = time.monotonic()
    try:
        session.launch = measure_before(session)  # the host's launch interval, outside ncu (milliseconds)
        session.host = record_host_timeline(session) if host_time else None  # a plain run first (profile.hosttime)
        result = session.full() if full else session.two_phase(top=top, coverage=coverage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if result.report.profile is not None:
        result.report.profile.wall_s = round(time.monotonic() - t0, 2)
    return session, result
