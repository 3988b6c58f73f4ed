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
