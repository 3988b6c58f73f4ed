"""The pipeline: report -> load -> model -> roofline -> rules -> result (a JSON-ready dict)."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ncuadvisor import __version__, engine, roofline
from ncuadvisor.load import read_profile
from ncuadvisor.model import Kernel, Profile, Variant, group_kernels, num
from ncuadvisor.processes import process_label
from ncuadvisor.result import SCHEMA_VERSION, ncu_guidance, savings_by_rule
from ncuadvisor.rules_api import KernelContext, ProgramContext, ProgramRule, Rule
from ncuadvisor.units import fmt_ns

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


def analyze(
    path: str | os.PathLike[str],
    rule_folders: Iterable[Path] = (),
    rules: list[Rule | ProgramRule] | None = None,
    pick: str = "median",
    group_time: GroupTime | None = None,
) -> dict[str, Any]:
    """Analyze one report and return the result dict (schema_version 1). `pick`: which launch of a kernel group the
    deep analysis looks at (`model.group_kernels`: "median", "first" or "each"). `group_time`: the launches and time
    a kernel stands for when the report holds only some of its launches (`ncuadvisor profile`'s phase 2 profiles
    one launch of each kernel; phase 1 timed them all), so that rules judging a kernel by its share of the program's
    time see the true share."""
    rules = rules if rules is not None else engine.discover(rule_folders)
    metrics = list(dict.fromkeys(roofline.METRICS + CARD_METRICS + engine.required_metrics(rules)))
    grouped: list[Kernel] = []

    def representatives(frame: Any) -> list[int]:  # the kernels are grouped once, here, and reused below
        grouped.extend(group_kernels(frame, pick=pick))
        return [k.representative for k in grouped] + [v.representative for k in grouped for v in k.variants]

    profile = read_profile(path, metrics, engine.per_instruction_metrics(rules), detail_ids=representatives)
    kernels = grouped
    result = build_result(profile, kernels, rules, group_time)
    # deep data read in worker processes: the source lines the rules asked for are fetched and the rules run again,
    # until they ask for nothing new (they then saw what reading in-process shows them)
    while profile.fetch_pending is not None and profile.fetch_pending():
        result = build_result(profile, kernels, rules, group_time)
    return result


class GroupTime(Protocol):
    """(launches, nanoseconds) a kernel's representative launch (`launch_ns` long) stands for, and the program's
    total nanoseconds; None when unknown."""

    total_ns: float

    def __call__(self, kernel: Kernel, launch_ns: float | None) -> tuple[int, float] | None: ...


def build_result(
    profile: Profile, kernels: list[Kernel], rules: list[Rule | ProgramRule], group_time: GroupTime | None = None
) -> dict[str, Any]:
    frame = profile.results.set_index("result_id", drop=False)
    total_ns = sum(k.duration_ns for k in kernels)
    rule_total_ns = group_time.total_ns if group_time is not None and group_time.total_ns else total_ns
    sm_count = num(profile.device.get("sm_count"))
    sections_seen: set[str] = set()
    kernel_entries = []
    warnings = list(profile.warnings)
    procs = {str(p["pid"]): p for p in profile.processes}
    # several GPUs in one report (a multi-GPU program): each kernel says which one ran it
    devices = sorted({int(d) for d in profile.results.get("device_id", []) if num(d) is not None})

    def run(k: Kernel, share: float) -> tuple[dict[str, Any], roofline.Roofline, Any, str, engine.KernelVerdict]:
        """The rules on the representative launch of k (a group, or the launches of one of its variants)."""
        row = frame.loc[k.representative].to_dict()
        rl = roofline.compute(row, sm_count)
        detail = profile.details.get(k.representative)
        sections_seen.update(detail.sections if detail else [])
        # the kernel's source file: one resolved instruction tells it (resolving costs ~0.3 ms an instruction)
        first = next((lines[0] for lines in (detail.per_instruction.values() if detail else []) if lines), None)
        files = [first.file] if first is not None and first.file else []
        language = engine.kernel_language(k.name, k.demangled, files)
        ctx = KernelContext(
            kernel=k,
            metrics=row,
            roofline=rl,
            device=profile.device,
            per_instruction=detail.per_instruction if detail else {},
            source_code=profile.source_code,
            language=language,
            time_share=share,
            sections=detail.sections if detail else (),
        )
        verdict = engine.run_rules(rules, ctx)
        for e in verdict.errors:
            warnings.append(f"rule {e['rule']} failed on {k.name}: {e['error']}")
        return row, rl, detail, language, verdict

    def source_anchor(detail: Any) -> dict[str, Any] | None:
        """The kernel's entry in its source (the line of its first instruction), where a finding with no line of its
        own (a launch configuration, an occupancy limit) can be shown: code scanning needs a line. One resolved
        instruction (~0.3 ms)."""
        lines = max((v for v in (detail.per_instruction.values() if detail else []) if v), key=len, default=None)
        if not lines:
            return None
        entry = min(lines, key=lambda e: e.pc)
        if not entry.file or not entry.line:
            return None
        return {"file": entry.file, "line": int(entry.line), "code": profile.source_code(entry.file, entry.line)}

    for idx, k in enumerate(kernels):
        share = k.duration_ns / total_ns if total_ns else 0.0
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
        told = group_time(k, num(frame.loc[k.representative].get("gpu__time_duration.sum"))) if group_time else None
        if told is not None:
            main = replace(main, launches=told[0], duration_ns=told[1])
        row, rl, detail, language, verdict = run(main, main.duration_ns / rule_total_ns if rule_total_ns else 0.0)
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
            _, vrl, _, _, vverdict = run(vk, v.duration_ns / rule_total_ns if rule_total_ns else 0.0)
            variants.append(variant_json(v, total_ns, vrl, vverdict))
        kernel_entries.append(
            {
                "id": f"k{idx}",
                "name": k.name,
                "demangled": k.demangled,
                "mangled": k.mangled,
                "language": language,
                "launches": k.launches,
                "grid": k.grid,
                "block": k.block,
                "nvtx": k.nvtx,
                **_process_json(k.process, procs),
                **(
                    {"device_id": int(row["device_id"])}
                    if len(devices) > 1 and num(row.get("device_id")) is not None
                    else {}
                ),
                "duration_ns": k.duration_ns,
                "per_launch_ns": k.per_launch_ns,
                "launch_range_ns": [k.launch_min_ns, k.launch_max_ns],
                "launch_note": k.launch_note,
                "analysed_launches": main.launches,
                "analysed_duration_ns": main.duration_ns,
                "variants": variants,
                "time_share": share,
                "bound": rl.bound,
                "bound_reason": rl.bound_reason,
                "headroom": rl.headroom,
                "roofline": _roofline_json(rl),
                "launch": _launch_json(row),
                "findings": [f.to_dict() for f in verdict.findings],
                "suppressed": verdict.suppressed,
                "skipped_rules": verdict.skipped,
                "source_anchor": source_anchor(detail),
                "ncu_rules": ncu_guidance(detail.ncu_rules if detail else []),
                "sections": sorted(detail.sections) if detail else [],
                "result_ids": k.result_ids,
            }
        )
    missing_sections = [s for s in ANALYSIS_SECTIONS if s not in sections_seen]
    if missing_sections and kernels:
        warnings.append(
            "the report lacks sections the full analysis uses ("
            + ", ".join(missing_sections)
            + "): findings that need them are skipped; re-profile with `ncuadvisor profile` for all of them"
        )
    result: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "ncuadvisor", "version": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "report": {
            "path": profile.path,
            "name": Path(profile.path).name,
            "ncu_version": profile.ncu_version,
            "reader_version": profile.reader_version,
            "command_line": profile.command_line,
            "device": _device_json(profile.device, kernel_entries),
            "results": int(len(profile.results)),
            "kernels": len(kernels),
            "total_duration_ns": total_ns,
            "sections": sorted(sections_seen),
            "missing_sections": missing_sections,
            "warnings": warnings,
            "processes": _processes_json(profile.processes, kernel_entries),
            "devices": devices,
        },
        "kernels": kernel_entries,
    }
    add_program_level(result, launch_list(profile, kernels), rules)
    return result


def add_program_level(result: dict[str, Any], launches: list[dict[str, Any]], rules: list[Rule | ProgramRule]) -> None:
    """Run the program rules over the result's kernels and launches, and rank "where to start" across both levels:
    sets `program_findings` and `top_actions`; a failing program rule becomes a warning."""
    rep, kernels = result["report"], result["kernels"]
    total_ns = rep["total_duration_ns"]
    ctx = ProgramContext(kernels=kernels, launches=launches, device=rep["device"], total_ns=total_ns)
    program_findings, errors = engine.run_program_rules(rules, ctx)
    for e in errors:
        rep["warnings"].append(f"program rule {e['rule']} failed: {e['error']}")
    result["program_findings"] = program_findings
    result["top_actions"] = top_actions(kernels, total_ns, program_findings)


def _process_json(process: str, procs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The process fields of a kernel entry: only in multi-process reports."""
    if not process:
        return {}
    p = procs.get(process, {"pid": int(process) if process.isdigit() else process})
    return {
        "process": {k: p[k] for k in ("pid", "executable", "rank", "local_rank", "world_size") if k in p},
        "process_label": process_label(p),
    }


def _processes_json(processes: list[dict[str, Any]], kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each process of a multi-process report with its kernels and GPU time; [] for one process."""
    out = []
    for p in processes:
        mine = [k for k in kernels if (k.get("process") or {}).get("pid") == p["pid"]]
        out.append(
            {
                **p,
                "label": process_label(p),
                "kernels": len(mine),
                "launches": sum(k["launches"] for k in mine),
                "duration_ns": sum(k["duration_ns"] for k in mine),
            }
        )
    return out


def launch_list(profile: Profile, kernels: list[Kernel]) -> list[dict[str, Any]]:
    """Every result in launch order, with the id of its kernel entry and what program rules need."""
    kernel_of = {rid: f"k{i}" for i, k in enumerate(kernels) for rid in k.result_ids}
    out = []
    for row in profile.results.sort_values("result_id").to_dict("records"):
        out.append(
            {
                "result_id": int(row["result_id"]),
                "kernel_id": kernel_of.get(int(row["result_id"])),
                "name": row["name"],
                "stream": num(row.get("launch__stream_id")),
                "duration_ns": num(row.get("gpu__time_duration.sum")),
                "dram_read_bytes": num(row.get("dram__bytes_read.sum")),
                "dram_write_bytes": num(row.get("dram__bytes_write.sum")),
                "grid": row["grid"],
                "block": row["block"],
            }
        )
    return out


def top_actions(
    kernels: list[dict[str, Any]], total_ns: float, program: list[dict[str, Any]] = (), limit: int = 10
) -> list[dict[str, Any]]:
    """Where to start: every finding across the program (kernel and program level) ranked by the time it saves."""
    actions = [
        {
            "kernel": ", ".join(p["kernels"][:3]) + (" …" if len(p["kernels"]) > 3 else ""),
            "kernel_id": (p.get("kernel_ids") or [None])[0],
            "rule": p["rule"],
            "category": p["category"],
            "title": p["title"],
            "estimated_saving_ns": p["estimated_saving_ns"],
            "program_fraction": p["estimated_saving_ns"] / total_ns if total_ns else 0.0,
            "scope": "program",
        }
        for p in program
        if p["estimated_saving_ns"] > 0
    ]
    for k in kernels:
        for f, saving, variant in savings_by_rule(k).values():  # one action per rule and kernel
            label = (
                k["name"]
                if variant is None
                else f"{k['name']} ({fmt_ns(k['variants'][variant].get('per_launch_ns'))} launches)"
            )
            actions.append(
                {
                    "kernel": label,
                    "kernel_id": k["id"],
                    "rule": f["rule"],
                    "category": f["category"],
                    "title": f["title"],
                    "estimated_saving_ns": saving,
                    "program_fraction": saving / total_ns if total_ns else 0.0,
                    "scope": "kernel",
                    **({"variant": variant} if variant is not None else {}),
                }
            )
    actions.sort(key=lambda a: -a["estimated_saving_ns"])
    return actions[:limit]


def variant_json(
    v: Variant, total_ns: float, rl: roofline.Roofline | None = None, verdict: engine.KernelVerdict | None = None
) -> dict[str, Any]:
    """A variant of a kernel group (model.Variant): its launches and time, and, when its representative launch was
    analysed (`rl`, `verdict`), its bound and findings; otherwise it was timed only (`ncuadvisor profile`)."""
    return {
        "launches": v.launches,
        "duration_ns": v.duration_ns,
        "per_launch_ns": v.duration_ns / v.launches if v.launches else 0.0,
        "time_share": v.duration_ns / total_ns if total_ns else 0.0,
        "launch_range_ns": [v.launch_min_ns, v.launch_max_ns],
        "launch_ns": rl.duration_ns if rl else None,
        "profiled": rl is not None,
        "bound": rl.bound if rl else "unknown",
        "bound_reason": rl.bound_reason if rl else None,
        "headroom": rl.headroom if rl else None,
        "theoretical_ns": rl.theoretical_ns if rl else None,
        "findings": [f.to_dict() for f in verdict.findings] if verdict else [],
        "suppressed": verdict.suppressed if verdict else [],
        "result_ids": v.result_ids,
    }


def _roofline_json(rl: roofline.Roofline) -> dict[str, Any]:
    d = rl.to_dict()
    d["theoretical_ns"] = rl.theoretical_ns
    return d


def _launch_json(row: dict[str, Any]) -> dict[str, Any]:
    g = lambda m: num(row.get(m))  # noqa: E731
    return {
        "grid_size": g("launch__grid_size"),
        "block_size": g("launch__block_size"),
        "registers_per_thread": g("launch__registers_per_thread"),
        "shared_mem_static": g("launch__shared_mem_per_block_static"),
        "shared_mem_dynamic": g("launch__shared_mem_per_block_dynamic"),
        "waves_per_sm": g("launch__waves_per_multiprocessor"),
        "theoretical_occupancy_pct": g("sm__maximum_warps_per_active_cycle_pct"),
        "achieved_occupancy_pct": g("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "stream": g("launch__stream_id"),
    }


def _device_json(device: dict[str, Any], kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """The device with its ceilings as measured in this report (median over kernels: clocks vary)."""

    def median(values: list[float]) -> float | None:
        values = sorted(v for v in values if v)
        return values[len(values) // 2] if values else None

    dev = {k: v for k, v in device.items()}
    dev["peak_dram_bytes_per_s"] = median([k["roofline"]["peak_dram_bytes_per_s"] for k in kernels])
    peaks: dict[str, list[float]] = {}
    for k in kernels:
        for prec, v in (k["roofline"]["peak_flops_per_s"] or {}).items():
            peaks.setdefault(prec, []).append(v)
    dev["peak_flops_per_s"] = {p: median(v) for p, v in peaks.items()}
    dev["sm_clock_hz"] = median([k["roofline"]["sm_clock_hz"] for k in kernels])
    return dev
