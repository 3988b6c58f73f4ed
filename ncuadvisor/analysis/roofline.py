"""The roofline bound of a kernel, from the report's own metrics: work, bytes, floor time, headroom and bound.

Peaks are computed per report from the device's own peak-per-cycle metrics times the clocks measured during the
kernel (`--clock-control none` means the clocks vary), never from a table.

The floor ("theoretical minimum time") is max(FLOPs / FLOP peak, compulsory bytes / DRAM bandwidth), where the
compulsory bytes are the smaller of the bytes DRAM moved and the bytes the threads needed (ideal L2 sectors × 32):
a kernel that keeps DRAM busy moving sectors its threads do not use then shows large headroom, not "near its bound".
Kernels that load through TMA (the ideal sectors do not see those loads) use DRAM's bytes alone. A report without
byte counts (`--set basic`) gets its memory floor from DRAM utilization: duration × DRAM % of peak.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ncuadvisor.model import num

SECTOR_BYTES = 32

# Thresholds of the bound classification (named so the docs and the JSON can show them).
LAUNCH_BOUND_NS = 5_000.0  # shorter than this, launch overhead (~2-5 µs) is the same order as the work
LATENCY_SOL_PCT = 50.0  # neither memory nor compute above this % of peak: latency-bound
GRID_FILL_FRACTION = 0.5  # fewer blocks than this × SMs: the grid cannot fill the GPU
# The share of a peak that the best kernels reach in practice (H200: a float4 copy 86% of DRAM peak, an FMA chain
# 83% of the FP32 peak). No estimate promises a time below theoretical_ns / PRACTICAL_FRACTION.
PRACTICAL_FRACTION = 0.85

# name -> (thread-instruction metric, FLOPs per instruction)
_FLOP_TERMS: dict[str, list[tuple[str, float]]] = {
    "fp32": [
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed", 2.0),
        ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", 1.0),
        ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", 1.0),
    ],
    "fp64": [
        ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum.per_cycle_elapsed", 2.0),
        ("smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed", 1.0),
        ("smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed", 1.0),
    ],
    "fp16": [  # packed half2 instructions: 2 lanes
        ("smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed", 4.0),
        ("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum.per_cycle_elapsed", 2.0),
        ("smsp__sass_thread_inst_executed_op_hmul_pred_on.sum.per_cycle_elapsed", 2.0),
    ],
}
# name -> (peak instructions per cycle metric, FLOPs per instruction)
_FLOP_PEAKS = {
    "fp32": ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 2.0),
    "fp64": ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", 2.0),
    "fp16": ("sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained", 4.0),
}
# Tensor-core work by source type, in the tensor path's own ops (FLOPs). The peak_sustained of a path without the
# `_sparsity_off` suffix is the 2:4-sparse rate, twice the dense one: SPARSE_PEAK_PATHS are halved.
TENSOR_PATHS = {
    "tensor_fp16": "sm__ops_path_tensor_src_fp16",
    "tensor_bf16": "sm__ops_path_tensor_src_bf16_dst_fp32",
    "tensor_tf32": "sm__ops_path_tensor_src_tf32_dst_fp32",
    "tensor_fp64": "sm__ops_path_tensor_src_fp64",
    "tensor_fp8": "sm__ops_path_tensor_src_fp8_sparsity_off",
    "tensor_int8": "sm__ops_path_tensor_src_int8",
}

SPARSE_PEAK_PATHS = {"tensor_fp16", "tensor_bf16", "tensor_tf32", "tensor_int8"}

SOL_METRICS = {
    "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "compute_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_pct": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
}

METRICS: list[str] = [
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
    "dram__bytes.sum.peak_sustained",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum.per_second",
    "memory_l2_theoretical_sectors_global",
    "memory_l2_theoretical_sectors_global_ideal",
    "derived__memory_l2_theoretical_sectors_global_excessive",
    "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__waves_per_multiprocessor",
    "device__attribute_multiprocessor_count",
    *[m for terms in _FLOP_TERMS.values() for m, _ in terms],
    *[m for m, _ in _FLOP_PEAKS.values()],
    *[p + ".sum" for p in TENSOR_PATHS.values()],
    *[p + ".sum.peak_sustained" for p in TENSOR_PATHS.values()],
    *SOL_METRICS.values(),
]


@dataclass
class Roofline:
    duration_ns: float | None
    flops: float = 0.0
    flops_by_precision: dict[str, float] = field(default_factory=dict)
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    dram_bytes: float | None = None
    ideal_bytes: float | None = None
    compulsory_bytes: float | None = None
    tma_bytes: float | None = None  # bytes loaded through the tensor memory accelerator (L2 -> SM)
    intensity: float | None = None  # FLOP per compulsory byte
    peak_dram_bytes_per_s: float | None = None
    memory_floor_ns: float | None = None
    compute_floor_ns: float | None = None
    theoretical_ns: float | None = None
    headroom: float | None = None  # measured ÷ theoretical
    bound: str = "unknown"  # memory | compute | latency | launch | unknown
    bound_reason: str = ""
    achieved_flops_per_s: float | None = None
    achieved_dram_bytes_per_s: float | None = None
    sol: dict[str, float] = field(default_factory=dict)
    sm_clock_hz: float | None = None
    dram_clock_hz: float | None = None
    limiting_precision: str | None = None
    thresholds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compute(row: Mapping[str, Any], sm_count: float | None = None) -> Roofline:
    """The roofline of one result (a row of Profile.results)."""
    g = lambda name: num(row.get(name))  # noqa: E731
    duration_ns = g("gpu__time_duration.sum")
    r = Roofline(duration_ns=duration_ns)
    r.thresholds = {
        "launch_bound_ns": LAUNCH_BOUND_NS,
        "latency_sol_pct": LATENCY_SOL_PCT,
        "grid_fill_fraction": GRID_FILL_FRACTION,
    }
    sm_hz = g("sm__cycles_elapsed.avg.per_second")
    dram_hz = g("dram__cycles_elapsed.avg.per_second")
    r.sm_clock_hz, r.dram_clock_hz = sm_hz, dram_hz
    seconds = duration_ns * 1e-9 if duration_ns else None
    cycles = sm_hz * seconds if (sm_hz and seconds) else None

    # Work, by precision.
    if cycles:
        for prec, terms in _FLOP_TERMS.items():
            total, seen = 0.0, False
            for metric, flops_per_inst in terms:
                v = g(metric)
                if v is not None:
                    seen = True
                    total += v * cycles * flops_per_inst
            if seen:
                r.flops_by_precision[prec] = total
    for name, path in TENSOR_PATHS.items():
        v = g(path + ".sum")
        if v is not None:
            r.flops_by_precision[name] = v
    r.flops = sum(r.flops_by_precision.values())

    if sm_hz:
        for prec, (metric, per_inst) in _FLOP_PEAKS.items():
            v = g(metric)
            if v:
                r.peak_flops_per_s[prec] = v * per_inst * sm_hz
        for name, path in TENSOR_PATHS.items():
            v = g(path + ".sum.peak_sustained")
            if v:
                r.peak_flops_per_s[name] = v * sm_hz / (2.0 if name in SPARSE_PEAK_PATHS else 1.0)

    # Bytes.
    dram_read, dram_write = g("dram__bytes_read.sum"), g("dram__bytes_write.sum")
    if dram_read is not None or dram_write is not None:
        r.dram_bytes = (dram_read or 0.0) + (dram_write or 0.0)
    elif (dram_rate := g("dram__bytes.sum.per_second")) is not None and seconds:
        r.dram_bytes = dram_rate * seconds
    ideal = g("memory_l2_theoretical_sectors_global_ideal")
    if ideal is not None:
        r.ideal_bytes = ideal * SECTOR_BYTES
    r.tma_bytes = g("l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum")
    # The ideal sectors count per-thread (LSU) accesses only: a kernel that loads through TMA (cuBLAS, CUTLASS on
    # Hopper) moves its operands outside them, so only DRAM's count is complete. TMA copies whole tiles: no waste.
    uses_tma = bool(r.tma_bytes)
    candidates = [b for b in (r.dram_bytes, None if uses_tma else r.ideal_bytes) if b is not None]
    r.compulsory_bytes = min(candidates) if candidates else None
    peak_bpc = g("dram__bytes.sum.peak_sustained")
    if peak_bpc and dram_hz:
        r.peak_dram_bytes_per_s = peak_bpc * dram_hz

    for key, metric in SOL_METRICS.items():
        v = g(metric)
        if v is not None:
            r.sol[key] = v

    # Floors.
    if r.compulsory_bytes is not None and r.peak_dram_bytes_per_s:
        r.memory_floor_ns = r.compulsory_bytes / r.peak_dram_bytes_per_s * 1e9
    elif r.sol.get("dram_pct") and duration_ns:
        # No byte counts (e.g. --set basic): DRAM's own utilization says how long its bytes take at its peak.
        r.memory_floor_ns = duration_ns * r.sol["dram_pct"] / 100.0
    compute_floor = None
    for prec, flops in r.flops_by_precision.items():
        peak = r.peak_flops_per_s.get(prec)
        if flops and peak:
            t = flops / peak * 1e9
            if compute_floor is None or t > compute_floor:
                compute_floor, r.limiting_precision = t, prec
    r.compute_floor_ns = compute_floor
    floors = [f for f in (r.memory_floor_ns, r.compute_floor_ns) if f]
    if floors:
        r.theoretical_ns = max(floors)
        if duration_ns:
            r.headroom = duration_ns / r.theoretical_ns
    if r.compulsory_bytes:
        r.intensity = r.flops / r.compulsory_bytes
    if seconds:
        r.achieved_flops_per_s = r.flops / seconds if r.flops else 0.0
        if r.dram_bytes is not None:
            r.achieved_dram_bytes_per_s = r.dram_bytes / seconds

    r.bound, r.bound_reason = classify(r, row, sm_count)
    return r


def classify(r: Roofline, row: Mapping[str, Any], sm_count: float | None) -> tuple[str, str]:
    """memory | compute | latency | launch, with the reason in words."""
    grid = num(row.get("launch__grid_size"))
    sms = sm_count or num(row.get("device__attribute_multiprocessor_count"))
    if r.duration_ns is not None and r.duration_ns < LAUNCH_BOUND_NS:
        return "launch", f"{r.duration_ns / 1e3:.1f} µs per launch: launch overhead is the same order as the work"
    if grid is not None and sms and grid < GRID_FILL_FRACTION * sms:
        return "launch", f"{int(grid)} blocks for {int(sms)} SMs: the grid cannot fill the GPU"
    mem, comp = r.sol.get("memory_pct"), r.sol.get("compute_pct")
    if mem is None and comp is None:
        if r.memory_floor_ns and r.compute_floor_ns:
            side = "memory" if r.memory_floor_ns >= r.compute_floor_ns else "compute"
            return side, "from the roofline floors only (no Speed Of Light data)"
        return "unknown", "the report has neither Speed Of Light nor roofline metrics"
    mem, comp = mem or 0.0, comp or 0.0
    if max(mem, comp) < LATENCY_SOL_PCT:
        return "latency", (
            f"memory {mem:.0f}% and compute {comp:.0f}% of peak: both far below, the kernel waits on latency"
        )
    if mem >= comp:
        return "memory", f"memory throughput {mem:.0f}% of peak (compute {comp:.0f}%)"
    return "compute", f"compute throughput {comp:.0f}% of peak (memory {mem:.0f}%)"
