"""One result from the two phases: phase 1's time of every kernel, phase 2's deep analysis of the chosen ones.

`analyze_phase1` reads a phase-1 report (structure and time only); `Phase1Time` lets the deep analysis judge each
kernel by the time phase 1 measured for it; `merge_results` merges the analyses of the two phases (kernel entries
and the report's facts, before the program level) and builds the result the renderers take (`pipeline.build`).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ncuadvisor.profile.selection import kernel_key
from ncuadvisor.result.types import KernelEntry, ReportInfo, Result, TorchContext


class Analysed(Protocol):
    """An analysis of one report (`pipeline.build.Analysis`; a finished `Result` reads the same): its facts, its
    kernel entries."""

    report: ReportInfo
    kernels: list[KernelEntry]


# Phase 1 reads only these per result (reading a metric costs ~25 µs; phase 1 may hold 100k launches).
PHASE1_METRICS = [
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",  # phase 1 collects these since it places kernels at their tensor ceiling
    "dram__bytes_write.sum",  # (ncu.PHASE1_COLLECTED); older phase-1 reports have the duration only
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "launch__stream_id",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
]


def phase1_durations(phase1: Analysed, launches: Sequence[dict[str, Any]]) -> dict[str, tuple[list[int], list[float]]]:
    """Phase-1 kernel id -> (result ids, durations) of its launches, in launch order (a kernel of each process has
    an id of its own)."""
    out: dict[str, tuple[list[int], list[float]]] = {k.id: ([], []) for k in phase1.kernels}
    for x in launches:
        if x.get("kernel_id") in out:
            ids, durs = out[x["kernel_id"]]
            ids.append(int(x["result_id"]))
            durs.append(float(x.get("duration_ns") or 0.0))
    return out


def split_at(ids: list[int], durations: list[float], launch_ns: float | None) -> tuple[int, float, list[Any]]:
    """(launches, ns, variants): the phase-1 launches a profiled launch of `launch_ns` stands for (its size: the
    phase-1 launch nearest in duration, and the launches like it) and the other sizes (model.split_variants)."""
    from ncuadvisor.model import split_variants

    if not ids:
        return 0, 0.0, []
    if launch_ns and launch_ns > 0:
        near = min(range(len(ids)), key=lambda i: abs(math.log(max(durations[i], 1e-9) / launch_ns)))
    else:
        near = sorted(range(len(ids)), key=lambda i: durations[i])[(len(ids) - 1) // 2]
    variants = split_variants(ids, durations, ids[near])
    return (
        len(ids) - sum(v.launches for v in variants),
        sum(durations) - sum(v.duration_ns for v in variants),
        variants,
    )


class Phase1Time:
    """analyze()'s group_time for phase-2 reports: the launches and time phase 1 measured for the size of launch
    that phase 2 profiled, so that rules see each kernel's true share of the program's GPU time. A kernel that
    several processes ran counts as one process's (the mean over them), as the analysis of one process sees it."""

    def __init__(self, phase1: Analysed, launches: Sequence[dict[str, Any]]):
        durations = phase1_durations(phase1, launches)
        self.by_key: dict[tuple[str, str, str], list[tuple[list[int], list[float]]]] = {}
        for k in phase1.kernels:
            self.by_key.setdefault(kernel_key(k), []).append(durations[k.id])
        self.total_ns = float(phase1.report.total_duration_ns or 0.0)

    def __call__(self, kernel: Any, launch_ns: float | None) -> tuple[int, float] | None:
        found = [split_at(ids, durs, launch_ns) for ids, durs in self.by_key.get(kernel_key(kernel), []) if ids]
        if not found:
            return None
        return round(sum(f[0] for f in found) / len(found)), sum(f[1] for f in found) / len(found)


_ATEN_RE = re.compile(r"\b((?:aten|c10d?|torchvision|triton|prims|inductor)::[A-Za-z0-9_.]+)")
_MODULE_RE = re.compile(r"\bmodule:([A-Za-z0-9_.]+)")


def torch_context(nvtx: str) -> TorchContext:
    """The innermost ATen op and nn.Module of a kernel, from its NVTX ranges (--torch-ops)."""
    ops = _ATEN_RE.findall(nvtx or "")
    mods = _MODULE_RE.findall(nvtx or "")
    return TorchContext(torch_op=ops[-1] if ops else None, torch_module=mods[-1] if mods else None)


def _unprofiled(entry: KernelEntry) -> KernelEntry:
    e = copy.deepcopy(entry)
    # phase 1's few metrics (the duration, DRAM bytes, the tensor pipe) place no floor and name no limiter: a
    # roofline computed from them alone would call every kernel latency-bound against the launch floor
    rl = replace(
        e.roofline,
        theoretical_ns=None,
        memory_floor_ns=None,
        compute_floor_ns=None,
        headroom=None,
        limiter=None,
        limiter_reason="",
        limiter_share=None,
        floors={},
        ceilings={},
        floor_reason="",
        executed_floor_ns=None,
        executed_floor_unit=None,
        executed_reason="",
    )
    return replace(
        e,
        roofline=rl,
        bound="unknown",
        bound_reason="not profiled in depth: phase 1 measured its time only (raise --top or --coverage to include it)",
        headroom=None,
        findings=[],
        suppressed=[],
        skipped_rules=[],
        ncu_rules=[],
        sections=[],
        profiled=False,
        variants=[
            replace(v, profiled=False, bound="unknown", bound_reason=None, headroom=None, findings=[], suppressed=[])
            for v in e.variants
        ],
    )


def merge_results(
    phase1: Analysed,
    deep: Sequence[tuple[str, Analysed]],
    launches: list[dict[str, Any]] | None = None,
    rules: list[Any] | None = None,
    torch_ops: bool = False,
    at_ceiling: dict[tuple[str, str, str], float] | None = None,
    host: Any = None,
    launch_interval: Any = None,
) -> Result:
    """One result from the phase-1 analysis (every kernel, its time) and the phase-2 analyses (deep metrics of a few).

    Every phase-1 kernel appears, in phase-1 order (total time), with phase-1 launches, duration and time share;
    a kernel with a deep entry gets that entry's bound, roofline, findings and launch details, and
    `"profiled": true`; the others `"profiled": false`, `bound: "unknown"`, no findings. The merged entries and
    report are built into the result once (`pipeline.build`): the program rules run on the merged kernels and the
    phase-1 launches, top actions are ranked with phase-1 times.
    `deep` is a list of (report path, `pipeline.analyze.kernel_analysis` of it). `at_ceiling`: kernel key -> tensor pipe busy % of the
    kernels phase 1 placed at their tensor ceiling (`profile.ceiling`): not profiled, with the at-roofline verdict
    (one phase 2 profiled anyway, a launch shape of a chosen kernel's name, keeps its deep entry). `host`: the host
    timeline of `profile --host-time` (`analysis.hosttrace.Timeline`), for the wall-time estimates.
    `launch_interval`: the host's launch interval `profile` measured (`result.types.LaunchInterval`), for PRG004.
    """
    from ncuadvisor.pipeline.build import Analysis, build
    from ncuadvisor.pipeline.entries import with_no_rule
    from ncuadvisor.profile.ceiling import placed_entry

    total = float(phase1.report.total_duration_ns or 0.0)
    p1_durations = phase1_durations(phase1, launches or [])
    deep_by_key, deep_by_rank = _deep_entries(deep)
    used: set[tuple[str, str, str]] = set()
    merged = []
    for p in phase1.kernels:
        key = kernel_key(p)
        if key in deep_by_key:
            rank = p.process.rank if p.process is not None else None
            path, d = deep_by_rank.get((key, rank)) or deep_by_key[key]
            used.add(key)
            e = _profiled_entry(p, path, d, p1_durations.get(p.id), total)
        else:
            e = replace(_unprofiled(p), time_share=(p.duration_ns / total) if total else 0.0)
            if at_ceiling and key in at_ceiling:
                e = placed_entry(e, at_ceiling[key], rules or [])
        if torch_ops or _ATEN_RE.search(e.nvtx or "") or _MODULE_RE.search(e.nvtx or ""):
            e.torch = torch_context(e.nvtx or "")
        if e.profiled is False:  # timed only: its bound_reason says so, no verdict on what was not analysed
            e.no_rule = None
        else:  # the verdict speaks of the phase-1 time share
            e = with_no_rule(e)
        merged.append(e)
    left_out = [d for key, (_path, d) in deep_by_key.items() if key not in used]
    rep = _merged_report(phase1, deep, left_out, len(merged), total)
    return build(Analysis(rep, merged, launches or []), rules if rules is not None else [], host, launch_interval)


_Key = tuple[str, str, str]


def _deep_entries(
    deep: Sequence[tuple[str, Analysed]],
) -> tuple[dict[_Key, tuple[str, KernelEntry]], dict[tuple[_Key, Any], tuple[str, KernelEntry]]]:
    """The deep entries by kernel key (the first of each), and by kernel key and rank: in multi-process programs the
    pids differ from run to run, the ranks do not; a kernel is matched to the deep entry of the same rank when both
    know it, else to the first deep entry of the same kernel and shape."""
    deep_by_key: dict[_Key, tuple[str, KernelEntry]] = {}
    deep_by_rank: dict[tuple[_Key, Any], tuple[str, KernelEntry]] = {}
    for path, res in deep:
        for d in res.kernels:
            deep_by_key.setdefault(kernel_key(d), (path, d))
            rank = d.process.rank if d.process is not None else None
            if rank is not None:
                deep_by_rank.setdefault((kernel_key(d), rank), (path, d))
    return deep_by_key, deep_by_rank


def _profiled_entry(
    p: KernelEntry, path: str, d: KernelEntry, found: tuple[list[int], list[float]] | None, total: float
) -> KernelEntry:
    """A phase-1 kernel with its deep entry `d` (from the report `path`): the deep analysis with phase 1's launches,
    time and process. `found`: the result ids and durations of its phase-1 launches (`phase1_durations`)."""
    from ncuadvisor.model import spread_note
    from ncuadvisor.pipeline.entries import variant_entry

    # the profiled launch speaks for the phase-1 launches of its size; other sizes were timed only
    n, ns, variants = (
        split_at(found[0], found[1], d.roofline.duration_ns) if found and found[0] else (p.launches, p.duration_ns, [])
    )
    launch_note = p.launch_note
    if variants:
        lo, hi = p.launch_range_ns or (None, None)
        launch_note = spread_note(
            lo,
            hi,
            f"the launch profiled in depth stands for {n} of the "
            f"{p.launches} launches, the other sizes were timed in phase 1 only",
        )
    return replace(
        copy.deepcopy(d),
        process=copy.deepcopy(p.process),
        process_label=(p.process_label if p.process_label is not None else "") if p.process else None,
        id=p.id,
        launches=p.launches,
        duration_ns=p.duration_ns,
        per_launch_ns=p.per_launch_ns,
        launch_range_ns=list(p.launch_range_ns),
        launch_note=launch_note,
        time_share=(p.duration_ns / total) if total else 0.0,
        result_ids=list(p.result_ids),
        nvtx=d.nvtx or p.nvtx,
        profiled=True,
        deep_report=path,
        deep_result_ids=list(d.result_ids),
        deep_launches=d.launches,
        analysed_launches=n,
        analysed_duration_ns=ns,
        variants=[variant_entry(v, total) for v in variants],
    )


def _merged_report(
    phase1: Analysed, deep: Sequence[tuple[str, Analysed]], left_out: list[KernelEntry], kernels: int, total: float
) -> ReportInfo:
    """The report's facts: the first deep report's (its file, ncu, device), with phase 1's kernels, time and
    processes, the sections of every deep report and the warnings of all (`left_out`: deep entries phase 1 never
    saw)."""
    from ncuadvisor.pipeline.analyze import ANALYSIS_SECTIONS

    rep = copy.deepcopy(deep[0][1].report if deep else phase1.report)
    warnings: list[str] = [w for w in phase1.report.warnings if "lacks sections" not in w]
    sections: set[str] = set()
    for _path, res in deep:
        sections.update(res.report.sections)
        for w in res.report.warnings:
            if w not in warnings:
                warnings.append(w)
    for d in left_out:
        warnings.append(f"{d.name} {d.grid}x{d.block} was profiled in phase 2 but not seen in phase 1: left out")
    rep.processes = copy.deepcopy(phase1.report.processes)
    rep.results = phase1.report.results
    rep.kernels = kernels
    rep.total_duration_ns = total
    rep.sections = sorted(sections)
    rep.missing_sections = [s for s in ANALYSIS_SECTIONS if s not in sections] if deep else list(ANALYSIS_SECTIONS)
    rep.warnings = warnings
    return rep


def analyze_phase1(path: Path, rules: list[Any]) -> tuple[Result, list[dict[str, Any]], list[Any]]:
    """Phase-1 result (structure only: no rules run on it), its launches for program rules, and its kernel groups.
    Each launch carries its DRAM bytes and its tensor pipe's busy % (`tensor_pct`) where phase 1 collected them
    (None in a duration-only report)."""
    from ncuadvisor.load import ReportReader, read_results
    from ncuadvisor.model import group_kernels, num
    from ncuadvisor.pipeline.analyze import timing_analysis
    from ncuadvisor.pipeline.build import build
    from ncuadvisor.profile.ncu import TENSOR_PIPE_PCT
    from ncuadvisor.rulekit import engine

    metrics = list(dict.fromkeys(PHASE1_METRICS + [m for r in engine.program_rules(rules) for m in r.requires]))
    profile = read_results(ReportReader(path, metrics), metrics)
    kernels = group_kernels(profile.results)
    timed = timing_analysis(profile, kernels, [])
    result = build(timed, [])
    launches = timed.launches
    tensor = {
        int(rid): num(v)
        for rid, v in zip(profile.results["result_id"], profile.results.get(TENSOR_PIPE_PCT, [None] * len(launches)))
    }
    for x in launches:
        x["tensor_pct"] = tensor.get(int(x["result_id"]))
    return result, launches, kernels
