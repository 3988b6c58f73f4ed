"""The entries of the result (`ncuadvisor.result.types`) that the pipeline builds from the model and the analysis:
variants, processes, the roofline, the launch configuration, the device with its ceilings and the verdict on a large
kernel no rule spoke to; and the launches program rules read (plain dicts, the program rules' contract)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, cast

from ncuadvisor.analysis import roofline
from ncuadvisor.load.processes import process_label
from ncuadvisor.model import Kernel, Profile, Variant, num
from ncuadvisor.result.types import (
    GAP_MIN_HEADROOM,
    Bound,
    Device,
    FindingEntry,
    HierarchyLevel,
    KernelEntry,
    Launch,
    NoRuleVerdict,
    ProcessEntry,
    ProcessRef,
    SuppressedFinding,
    VariantEntry,
)
from ncuadvisor.result.types import Roofline as RooflineEntry
from ncuadvisor.rulekit.engine import KernelVerdict


def process_fields(process: str, procs: dict[str, dict[str, Any]]) -> tuple[ProcessRef | None, str | None]:
    """The process of a kernel entry and its label: only in multi-process reports (None, None otherwise)."""
    if not process:
        return None, None
    p = procs.get(process, {"pid": int(process) if process.isdigit() else process})
    ref = ProcessRef(**{k: p[k] for k in ("pid", "executable", "rank", "local_rank", "world_size") if k in p})
    return ref, process_label(p)


def processes_entry(processes: list[dict[str, Any]], kernels: list[KernelEntry]) -> list[ProcessEntry]:
    """Each process of a multi-process report with its kernels and GPU time; [] for one process."""
    out = []
    for p in processes:
        mine = [k for k in kernels if k.process is not None and k.process.pid == p["pid"]]
        out.append(
            ProcessEntry(
                **p,
                label=process_label(p),
                kernels=len(mine),
                launches=sum(k.launches for k in mine),
                duration_ns=sum(k.duration_ns for k in mine),
            )
        )
    return out


def launch_list(profile: Profile, kernels: list[Kernel]) -> list[dict[str, Any]]:
    """Every result in launch order, with the id of its kernel entry and what program rules need."""
    kernel_of = {rid: f"k{i}" for i, k in enumerate(kernels) for rid in k.result_ids}
    out = []
    for row in profile.results:
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


def variant_entry(
    v: Variant, total_ns: float, rl: roofline.Roofline | None = None, verdict: KernelVerdict | None = None
) -> VariantEntry:
    """A variant of a kernel group (model.Variant): its launches and time, and, when its representative launch was
    analysed (`rl`, `verdict`), its bound and findings; otherwise it was timed only (`ncuadvisor profile`)."""
    return VariantEntry(
        launches=v.launches,
        duration_ns=v.duration_ns,
        per_launch_ns=v.duration_ns / v.launches if v.launches else 0.0,
        time_share=v.duration_ns / total_ns if total_ns else 0.0,
        launch_range_ns=[v.launch_min_ns, v.launch_max_ns],
        launch_ns=rl.duration_ns if rl else None,
        profiled=rl is not None,
        bound=cast(Bound, roofline.shown_bound(rl)[0]) if rl else "unknown",
        bound_reason=roofline.shown_bound(rl)[1] if rl else None,
        headroom=rl.headroom if rl else None,
        theoretical_ns=rl.theoretical_ns if rl else None,
        findings=[f.entry() for f in verdict.findings] if verdict else [],
        suppressed=list(verdict.suppressed) if verdict else [],
        result_ids=v.result_ids,
    )


def roofline_entry(rl: roofline.Roofline) -> RooflineEntry:
    """The result's roofline of the analysis' one: the same fields, each memory level a `HierarchyLevel`."""
    values = {f.name: copy.deepcopy(getattr(rl, f.name)) for f in fields(RooflineEntry)}
    values["hierarchy"] = [HierarchyLevel(**dict(h)) for h in rl.hierarchy]
    values["bound"] = cast(Bound, rl.bound)
    return RooflineEntry(**values)


def launch_entry(row: dict[str, Any]) -> Launch:
    g = lambda m: num(row.get(m))  # noqa: E731
    return Launch(
        grid_size=g("launch__grid_size"),
        block_size=g("launch__block_size"),
        registers_per_thread=g("launch__registers_per_thread"),
        shared_mem_static=g("launch__shared_mem_per_block_static"),
        shared_mem_dynamic=g("launch__shared_mem_per_block_dynamic"),
        waves_per_sm=g("launch__waves_per_multiprocessor"),
        theoretical_occupancy_pct=g("sm__maximum_warps_per_active_cycle_pct"),
        achieved_occupancy_pct=g("sm__warps_active.avg.pct_of_peak_sustained_active"),
        stream=g("launch__stream_id"),
    )


def device_entry(device: dict[str, Any], kernels: list[KernelEntry]) -> Device:
    """The device with its ceilings as measured in this report (median over kernels: clocks vary)."""

    def median(values: list[float | None]) -> float | None:
        present = sorted(v for v in values if v)
        return present[len(present) // 2] if present else None

    peaks: dict[str, list[float | None]] = {}
    for k in kernels:
        for prec, v in (k.roofline.peak_flops_per_s or {}).items():
            peaks.setdefault(prec, []).append(v)
    return Device(
        **device,
        peak_dram_bytes_per_s=median([k.roofline.peak_dram_bytes_per_s for k in kernels]),
        peak_flops_per_s={p: median(v) for p, v in peaks.items()},
        sm_clock_hz=median([k.roofline.sm_clock_hz for k in kernels]),
    )


# a kernel group holding at least this share of the GPU time gets a verdict even when no rule fires
NO_RULE_MIN_SHARE = 0.05
_LIMITS = {
    "launch__occupancy_limit_registers": "registers",
    "launch__occupancy_limit_shared_mem": "shared memory",
    "launch__occupancy_limit_warps": "warps",
    "launch__occupancy_limit_blocks": "blocks",
}


def occupancy_limiter(row: dict[str, Any]) -> str | None:
    """'registers (1 block/SM)': the resource that allows the fewest blocks per SM, when occupancy is below 100%."""
    theoretical = num(row.get("sm__maximum_warps_per_active_cycle_pct"))
    limits = {name: v for m, name in _LIMITS.items() if (v := num(row.get(m))) is not None}
    if not limits or theoretical is None or theoretical >= 100:
        return None
    blocks = min(limits.values())
    tied = [n for n, v in limits.items() if v == blocks]
    # small blocks at the blocks-per-SM cap: that cap is the limit the launch shape sets, even where another resource
    # allows no more blocks either (one-warp Triton programs: 32 blocks, and shared memory for exactly 32)
    name = "blocks" if "blocks" in tied else tied[0]
    also = "".join(f"; {n} allows no more" for n in tied if n != name)
    return f"occupancy {theoretical:.0f}%, limited by {name} ({blocks:.0f} block{'' if blocks == 1 else 's'}/SM{also})"


# the units whose busy share measures the work of the SM's pipes (the tensor pipe alone, `profile`'s phase 1, does not)
_WORK_PIPES = frozenset({"issue", "alu", "fma", "fp64", "fp16", "sfu", "lsu"})
# what a capture without the work of the pipes lacks: the work counted (the floor), the pipes and the warps' stalls
SETTLING_SECTIONS = (*roofline.COUNTING_SECTIONS, "SpeedOfLight", "ComputeWorkloadAnalysis", "WarpStateStats")


def headroom_unknown_words(entry: KernelEntry) -> str | None:
    """Why a kernel's headroom is not known and what would settle it: a report that counts nothing of the kernel but
    its duration (no floor), or only the bytes DRAM moved (phase 1 of `profile`, a DRAM-only capture: the floor is the
    DRAM floor alone, so the headroom against it is an upper bound, and nothing names a mechanism). None when the
    floor counts the kernel's work, or when the model is wrong for it (its roofline says so)."""
    rl = entry.roofline
    if rl is None or rl.model_wrong or rl.headroom_unknown:
        return rl.headroom_unknown if rl is not None else None
    settle = (
        f"the sections {', '.join(SETTLING_SECTIONS)} would settle it (`ncuadvisor profile` collects them in its "
        "second phase; `ncu --set full`)"
    )
    if rl.headroom is None:
        return f"headroom unknown: this report counts neither the work nor the bytes of the kernel; {settle}"
    work = any(rl.flops_by_precision.values()) or any(u in rl.busy_pct for u in _WORK_PIPES)  # measured, even idle
    if work or not set(rl.floors) <= {"dram", "launch"} or "dram" not in rl.floors or rl.headroom < GAP_MIN_HEADROOM:
        return None  # below the bar against DRAM alone, it is below against any floor
    dram = (rl.floors["dram"] / rl.duration_ns) if rl.duration_ns else None
    busy = f" (DRAM busy {dram:.0%} of the time at its peak)" if dram is not None else ""
    return (
        f"headroom unknown: this report counts the bytes DRAM moved{busy}, not the work of the pipes nor the warps' "
        f"stalls: {rl.headroom:.1f}× the DRAM floor is an upper bound, and the mechanism is not in it; {settle}"
    )


def no_rule_verdict(
    entry: KernelEntry, row: dict[str, Any] | None = None, limiter: str | None = None
) -> NoRuleVerdict | None:
    """What is known of a kernel group of at least NO_RULE_MIN_SHARE of the time that no rule spoke to: its bound,
    headroom, limiter (from the result's metrics `row`, else as given) and NCU's top rule. None when a rule fired or
    the group is small."""
    if entry.findings or (entry.time_share or 0.0) < NO_RULE_MIN_SHARE:
        return None
    bound, headroom, reason = entry.bound, entry.headroom, entry.bound_reason
    limiter = occupancy_limiter(row) if row is not None else limiter
    ranked = [r for r in entry.ncu_rules if r.speedup_pct is not None]
    top = max(ranked, key=lambda r: r.speedup_pct or 0.0, default=None)
    ncu_top = f"{top.title or top.rule} (est. {top.speedup_pct:.0f}%)" if top else None
    unknown = headroom_unknown_words(entry)
    room = (
        ""
        if not headroom
        else f", at most {headroom:.1f}× its DRAM floor"
        if unknown
        else f", {headroom:.1f}× its floor"
    )
    parts = [f"{bound or 'unknown'}-bound" + room]
    if reason:
        parts[0] += f": {reason}"
    if unit_words := (entry.roofline.limiter_reason if entry.roofline else None):
        parts.append(unit_words)  # the unit that limits it, in words (the bound is Speed Of Light's word)
    if executed := (entry.roofline.executed_reason if entry.roofline else None):
        parts.append(f"as executed: {executed}")  # the executed floor beside the needed one
    if limiter:
        parts.append(limiter)
    if ncu_top:
        parts.append(f"NCU's top rule: {ncu_top}")
    if unknown and unknown not in (entry.roofline.limiter_reason if entry.roofline else ""):
        parts.append(unknown)
    if unknown:
        headroom = None  # an upper bound against the DRAM floor alone is not the kernel's headroom
    suppressed = len(entry.suppressed)
    tail = f"; {suppressed} finding{'s' if suppressed != 1 else ''} below the bar" if suppressed else ""
    # with room left, no finding is a gap in the rule set, not a verdict on the kernel
    head = (
        "Headroom unknown"
        if unknown
        else "No rule applies"
        if not headroom or headroom < GAP_MIN_HEADROOM
        else "Gap in the rule set: no rule names a cause"
    )
    return NoRuleVerdict(
        message=f"{head} ({entry.time_share:.0%} of GPU time): " + "; ".join(parts) + tail + ".",
        bound=bound,
        headroom=headroom,
        limiter=limiter,
        ncu_top_rule=ncu_top,
    )


def with_no_rule(entry: KernelEntry, row: dict[str, Any] | None = None) -> KernelEntry:
    """The entry with its `no_rule` verdict (re)computed; an entry whose time share changed (`profile` merges phase-1
    times into deep results) keeps the limiter it had."""
    limiter = entry.no_rule.limiter if entry.no_rule is not None else None
    return replace(entry, no_rule=no_rule_verdict(entry, row, limiter))


def covered_by_program(
    entry: KernelEntry, covering: Mapping[str, Any], fallbacks: frozenset[str] = frozenset()
) -> KernelEntry:
    """The entry whose no-rule verdict names the program finding that speaks to its kernel (`covering`: kernel id ->
    the first such finding; a sort-based accumulation, a fusion chain): no kernel rule applies, but the kernel is not
    without advice. A kernel whose only findings come from fallback rules (`fallbacks`: their codes, GEN001) is such a
    kernel too: the program finding names its mechanism, and the fallback's are suppressed with it named."""
    cover = covering.get(str(entry.id))
    if cover is not None and entry.findings and all(x.rule in fallbacks for x in entry.findings):
        reason = f"the program finding {cover.rule} covers this kernel: “{cover.title}”"
        moved = [SuppressedFinding(rule=x.rule, title=x.title, reason=reason) for x in entry.findings]
        entry = with_no_rule(replace(entry, findings=[], suppressed=entry.suppressed + moved))
    f = covering.get(str(entry.id)) if entry.no_rule is not None else None
    if f is None or entry.no_rule is None:
        return entry
    facts = entry.no_rule.message.split(" (", 1)[-1]  # "20% of GPU time): ..." after the verdict's head
    message = f"No kernel rule applies; the program finding {f.rule} (“{f.title}”) covers it (" + facts
    return replace(entry, no_rule=replace(entry.no_rule, program_rule=f.rule, message=message))


def owned_by_program(entry: KernelEntry, owner: Any) -> KernelEntry:
    """The entry whose kernel a program finding owns (`ProgramRule.owns`: the loss chain a fused kernel replaces):
    its kernel findings, its variants' included, are suppressed with the owner named, so that "where to start" does
    not count the kernel's time again; its no-rule verdict is made again (an entry timed only keeps none)."""
    reason = f"{owner.rule} owns this kernel: {owner.title}"

    def moved(findings: list[FindingEntry]) -> list[SuppressedFinding]:
        return [SuppressedFinding(rule=f.rule, title=f.title, reason=reason) for f in findings]

    if not entry.findings and not any(v.findings for v in entry.variants):
        return entry
    variants = [replace(v, findings=[], suppressed=v.suppressed + moved(v.findings)) for v in entry.variants]
    out = replace(entry, findings=[], suppressed=entry.suppressed + moved(entry.findings), variants=variants)
    return out if entry.profiled is False else with_no_rule(out)
