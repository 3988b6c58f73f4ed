"""The JSON-ready entries of the result that the pipeline builds from the model and the analysis: launches, variants,
processes, the roofline, the launch configuration and the device with its ceilings."""

from __future__ import annotations

from typing import Any

from ncuadvisor.analysis import roofline
from ncuadvisor.engine import KernelVerdict
from ncuadvisor.load.processes import process_label
from ncuadvisor.model import Kernel, Profile, Variant, num


def process_fields(process: str, procs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The process fields of a kernel entry: only in multi-process reports."""
    if not process:
        return {}
    p = procs.get(process, {"pid": int(process) if process.isdigit() else process})
    return {
        "process": {k: p[k] for k in ("pid", "executable", "rank", "local_rank", "world_size") if k in p},
        "process_label": process_label(p),
    }


def processes_entry(processes: list[dict[str, Any]], kernels: list[dict[str, Any]]) -> list[dict[str, Any]]:
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


def variant_entry(
    v: Variant, total_ns: float, rl: roofline.Roofline | None = None, verdict: KernelVerdict | None = None
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


def roofline_entry(rl: roofline.Roofline) -> dict[str, Any]:
    d = rl.to_dict()
    d["theoretical_ns"] = rl.theoretical_ns
    return d


def launch_entry(row: dict[str, Any]) -> dict[str, Any]:
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


def device_entry(device: dict[str, Any], kernels: list[dict[str, Any]]) -> dict[str, Any]:
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
    name = min(limits, key=lambda n: limits[n])
    blocks = limits[name]
    return f"occupancy {theoretical:.0f}%, limited by {name} ({blocks:.0f} block{'' if blocks == 1 else 's'}/SM)"


def no_rule_verdict(
    entry: dict[str, Any], row: dict[str, Any] | None = None, limiter: str | None = None
) -> dict[str, Any] | None:
    """What is known of a kernel group of at least NO_RULE_MIN_SHARE of the time that no rule spoke to: its bound,
    headroom, limiter (from the result's metrics `row`, else as given) and NCU's top rule. None when a rule fired or
    the group is small."""
    if entry.get("findings") or (entry.get("time_share") or 0.0) < NO_RULE_MIN_SHARE:
        return None
    bound, headroom, reason = entry.get("bound"), entry.get("headroom"), entry.get("bound_reason")
    limiter = occupancy_limiter(row) if row is not None else limiter
    ranked = [r for r in entry.get("ncu_rules") or [] if r.get("speedup_pct") is not None]
    top = max(ranked, key=lambda r: r["speedup_pct"], default=None)
    ncu_top = f"{top.get('title') or top.get('rule')} (est. {top['speedup_pct']:.0f}%)" if top else None
    parts = [f"{bound or 'unknown'}-bound" + (f", {headroom:.1f}× its floor" if headroom else "")]
    if reason:
        parts[0] += f": {reason}"
    if unit_words := (entry.get("roofline") or {}).get("limiter_reason"):
        parts.append(unit_words)  # the unit that limits it, in words (the bound is Speed Of Light's word)
    if limiter:
        parts.append(limiter)
    if ncu_top:
        parts.append(f"NCU's top rule: {ncu_top}")
    suppressed = len(entry.get("suppressed") or [])
    tail = f"; {suppressed} finding{'s' if suppressed != 1 else ''} below the bar" if suppressed else ""
    return {
        "message": f"No rule applies ({entry['time_share']:.0%} of GPU time): " + "; ".join(parts) + tail + ".",
        "bound": bound,
        "headroom": headroom,
        "limiter": limiter,
        "ncu_top_rule": ncu_top,
    }


def with_no_rule(entry: dict[str, Any], row: dict[str, Any] | None = None) -> dict[str, Any]:
    """The entry with its `no_rule` verdict (re)computed, right after its findings as in the schema; an entry whose
    time share changed (`profile` merges phase-1 times into deep results) keeps the limiter it had."""
    old = entry.get("no_rule") or {}
    items = [(key, v) for key, v in entry.items() if key != "no_rule"]
    verdict = no_rule_verdict(dict(items), row, old.get("limiter"))
    if verdict is None:
        return dict(items)
    at = [key for key, _ in items].index("findings") + 1
    return dict(items[:at] + [("no_rule", verdict)] + items[at:])
