"""Per-unit ceilings of one kernel: the time each unit that can bound it needs at its peak, from the report's own
per-cycle peaks and utilizations, at the clocks measured during the kernel.

Two kinds of ceiling, both in nanoseconds:

- work ceilings: the work the kernel needs ÷ the unit's peak rate (its `peak_sustained` per cycle × the clock measured
  during the kernel): FP32 lane operations by instruction mix (an FFMA, FADD or FMUL each take one lane for one
  clock, so an FADD-only loop runs at half the FFMA FLOP rate), FP64, packed FP16, tensor FLOPs by input type, and
  the compulsory bytes at the DRAM peak;
- pipe ceilings: the unit's busy share over the elapsed cycles × the duration, which is the executed work ÷ the
  unit's peak at the measured clock: SFU/XU (MUFU: 16 lanes per clock per SM), the integer ALU, the FMA, FP64, FP16
  and tensor pipes, the load/store pipe, and instruction issue (4 warp instructions per clock per SM).

Busy memory levels (L1/shared, L2) are shown as utilization, not as floors: their traffic includes sectors the threads
did not need (uncoalesced access), which is headroom, not a bound (the DRAM floor uses the compulsory bytes for the
same reason). The launch floor is measured, not read: no kernel takes less time than an empty one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ncuadvisor.analysis import archfacts
from ncuadvisor.model import num

if TYPE_CHECKING:
    from ncuadvisor.analysis.roofline import Roofline

# The launch floor: no kernel takes less device time than an empty one. Measured on an H200 as ncu measures a kernel
# (gpu__time_duration.sum of `empty_kernel<<<1, 32>>>`, fixtures/ceilings.ncu-rep.xz, 2026-12-01): 1.54 µs. Timed
# alone with CUDA events it takes 5.06 µs, and a dependent launch in one stream costs 3.59 µs per link
# (fixtures/planted/bench_ceilings.jsonl): those are host-side costs of the program, not of the kernel, so headroom
# (against ncu's duration) is measured against the device's. Per device (`launch_floor`): an empty kernel in the
# report itself when it has one, else the measured value of that device (LAUNCH_FLOORS), else the H200's. It is not
# scaled by clocks: a launch crosses the front end, the block scheduler and a memory flush, several clock domains.
LAUNCH_FLOOR_NS = 1_536.0
# said in every output: where the number comes from, without the repository's path to the capture (named above)
LAUNCH_FLOOR_SOURCE = "an empty kernel's ncu duration, as ncuadvisor measured it on an NVIDIA H200"
LAUNCH_FLOORS = {"NVIDIA H200": (LAUNCH_FLOOR_NS, LAUNCH_FLOOR_SOURCE)}  # device name -> (ns, where it comes from)
# The DRAM peak of a device whose report lacks the peak metrics (dram__bytes.sum.peak_sustained and the DRAM clock: a
# capture of a few chosen metrics): dram__bytes.sum.peak_sustained × dram__cycles_elapsed.avg.per_second as the full
# H200 captures measure it (fixtures/torch_eager.ncu-rep.xz: 4.80 TB/s). Without it such a report's floor would be the
# launch floor alone, and every headroom a multiple of an empty kernel.
DRAM_PEAKS = {"NVIDIA H200": 4.80e12}  # device name -> bytes/s
LAUNCH_INTERVAL_NS = 3_590.0  # per dependent launch in one stream (a program-level cost)
EMPTY_INSTRUCTIONS_PER_WARP = 2.0  # an empty kernel executes its EXIT (and a branch to it): 2 per warp on sm_90


def launch_floor(
    device_name: str | None, launches: Iterable[Mapping[str, Any]] = (), device: Mapping[str, Any] | None = None
) -> tuple[float, str]:
    """(ns, source) of the launch floor on this device: the shortest empty launch of the report (at most
    EMPTY_INSTRUCTIONS_PER_WARP warp instructions per warp launched), else the device's measured value, else its
    architecture's (`archfacts.launch_floor`, from `device`'s compute capability), else the H200's."""
    launches = list(launches)
    empty: list[tuple[float, str]] = []
    for row in launches:
        ns, inst = num(row.get("gpu__time_duration.sum")), num(row.get("smsp__inst_executed.sum"))
        grid, block = num(row.get("launch__grid_size")), num(row.get("launch__block_size"))
        if ns and inst is not None and grid and block:
            if inst <= EMPTY_INSTRUCTIONS_PER_WARP * grid * -(-block // 32):
                empty.append((ns, str(row.get("name") or "an empty kernel")))
    if empty:
        ns, name = min(empty)
        return ns, f"the ncu duration of {name}, an empty kernel in this report"
    if device_name in LAUNCH_FLOORS:
        return LAUNCH_FLOORS[device_name]
    if device is not None and (by_arch := archfacts.launch_floor(device, archfacts.arch_of(device), launches)):
        return by_arch
    return LAUNCH_FLOOR_NS, f"not measured on {device_name or 'this device'}: {LAUNCH_FLOOR_SOURCE}"


# unit -> the metric of its busy share over the elapsed cycles (pipe ceilings)
PIPE_PCT = {
    "issue": "sm__inst_issued.avg.pct_of_peak_sustained_elapsed",
    "alu": "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed",
    "fma": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "fp64": "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "fp16": "sm__inst_executed_pipe_fma_type_fp16.avg.pct_of_peak_sustained_elapsed",
    "tensor": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sfu": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_elapsed",
    "lsu": "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_elapsed",
}
# The same busy share under another name, read where a report lacks the first: ncu before 2025 records the issue
# slots and the ALU as cycles active, not as instructions issued (equal to 0.1% on the 14 exam kernels of ncu 2025.3
# checked, which record both). Without them an issue-bound kernel of an older report has no issue ceiling and reads
# as latency-bound (sglang's ATen normal-distribution generator, issue slots 70% busy, read as "FMA 38%").
PIPE_PCT_FALLBACK = {
    "issue": "sm__issue_active.avg.pct_of_peak_sustained_elapsed",
    "alu": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
}
# memory level -> the metric of its busy share (shown, and named as the limiter when it is the busiest unit)
LEVEL_PCT = {
    "dram": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1": "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "shared": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
}
# Packed-half (HFMA2) work that runs on the tensor pipe as HFMA2.MMA is busy time of that pipe, not tensor FLOPs:
# the tensor pipe's ceiling counts only when the tensor paths executed operations.
HMMA_PCT = "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed"

L1_CLOCK, L2_CLOCK = "l1tex__cycles_elapsed.avg.per_second", "lts__cycles_elapsed.avg.per_second"
# Hierarchical roofline: bytes at each level and the level's peak bytes per cycle, with its clock.
HIERARCHY = {
    "l1": (
        [
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
            "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
            "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
        ],
        "derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.peak_sustained",
        L1_CLOCK,
    ),
    "l2": (
        ["lts__t_sectors_srcunit_tex.sum"],
        "derived__lts__lts2xbar_bytes.sum.peak_sustained",
        L2_CLOCK,
    ),
}
SHARED_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"  # 128 bytes each
HIERARCHY_METRICS = [
    *[m for sectors, peak, clock in HIERARCHY.values() for m in (*sectors, peak, clock)],
    SHARED_WAVEFRONTS,
]
SECTOR_BYTES = 32

METRICS: list[str] = [*PIPE_PCT.values(), *PIPE_PCT_FALLBACK.values(), *LEVEL_PCT.values(), HMMA_PCT]

# The pipes whose busy time is needed work (transcendental operations; FP64 and FP16 when the report has no
# thread-level count of them). The others (issue, ALU, LSU, the FMA pipe's warp instructions) count instructions as
# executed, which index arithmetic, divergence, spills and untiled loads inflate: they name the limiter and set the
# executed floor, not the floor an estimate is held to.
NEEDED_PIPES = ("sfu", "fp64", "fp16")


def pipe_ceilings(
    g: Callable[[str], float | None], duration_ns: float | None
) -> tuple[dict[str, float], dict[str, float]]:
    """({unit: floor ns}, {unit: busy % of peak}) of the pipes and memory levels the report measured."""
    floors: dict[str, float] = {}
    busy: dict[str, float] = {}
    for unit, metric in {**PIPE_PCT, **LEVEL_PCT}.items():
        pct = g(metric)
        if pct is None and unit in PIPE_PCT_FALLBACK:
            pct = g(PIPE_PCT_FALLBACK[unit])
        if pct is None:
            continue
        busy[unit] = pct
        if unit in PIPE_PCT and duration_ns and pct > 0:
            floors[unit] = duration_ns * pct / 100.0
    return floors, busy


def limiter_of(
    ceilings: dict[str, float], levels: dict[str, float], duration_ns: float | None
) -> tuple[str | None, float | None]:
    """(the busiest unit, the share of the duration it needs at its peak): each ceiling ÷ the duration, and each memory
    level's bytes as moved (waste included: an uncoalesced kernel is L1- or L2-bound) at its peak ÷ the duration.
    Without a duration, the unit with the largest ceiling."""
    if not duration_ns:
        return (max(ceilings, key=lambda u: ceilings[u]), None) if ceilings else (None, None)
    share = {u: t / duration_ns for u, t in ceilings.items()}
    for level, t in levels.items():
        share[level] = max(share.get(level, 0.0), t / duration_ns)
    if not share:
        return None, None
    unit = max(share, key=lambda u: share[u])
    return unit, share[unit]


def hierarchy(
    g: Callable[[str], float | None], flops: float, dram_bytes: float | None, peak_dram_bytes_per_s: float | None
) -> list[dict[str, Any]]:
    """Each memory level's point and roof (hierarchical roofline): bytes moved there, FLOP per byte, peak bytes/s."""
    out: list[dict[str, Any]] = []
    for level, (sector_metrics, peak_metric, clock_metric) in HIERARCHY.items():
        sectors = [g(m) for m in sector_metrics]
        if all(v is None for v in sectors):
            continue
        moved = sum(v or 0.0 for v in sectors) * SECTOR_BYTES
        if level == "l1" and (wf := g(SHARED_WAVEFRONTS)):
            moved += wf * 128.0
        peak_bpc, hz = g(peak_metric), g(clock_metric)
        out.append(_level(level, moved, flops, peak_bpc * hz if (peak_bpc and hz) else None, clock_metric))
    if dram_bytes is not None:
        out.append(_level("dram", dram_bytes, flops, peak_dram_bytes_per_s, "dram__cycles_elapsed.avg.per_second"))
    return out


def _level(level: str, moved: float, flops: float, peak: float | None, clock: str) -> dict[str, Any]:
    return {
        "level": level,
        "bytes": moved,
        "intensity": flops / moved if moved else None,
        "peak_bytes_per_s": peak,
        "floor_ns": moved / peak * 1e9 if (peak and moved) else None,
        "clock": clock,
    }


# FLOP peaks per precision: the device's peak thread instructions per cycle and the FLOPs each one does
FLOP_PEAKS = {
    "fp32": ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", 2.0),
    "fp64": ("sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained", 2.0),
    "fp16": ("sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained", 4.0),
}

L2_OVER_DRAM = 0.10  # L2 is named the limiter only this far (share of the duration) above DRAM


def level_floors(r: Roofline) -> dict[str, float]:
    """{memory level: ns it is busy at its peak}: its bytes as moved at its bandwidth, or its measured utilization
    (tag lookups and wavefronts, which bytes do not show: uncoalesced and conflicting accesses) when larger. L2
    utilization counts only well above DRAM's: every DRAM byte also passes through L2."""
    out = {h["level"]: h["floor_ns"] for h in r.hierarchy if h.get("floor_ns")}
    if not r.duration_ns:
        return out
    dram_share = max(r.busy_pct.get("dram", 0.0) / 100.0, out.get("dram", 0.0) / r.duration_ns)
    for level in ("l1", "shared", "l2"):
        pct = r.busy_pct.get(level)
        if pct is None or (level == "l2" and pct / 100.0 < dram_share + L2_OVER_DRAM):
            continue
        out[level] = max(out.get(level, 0.0), r.duration_ns * pct / 100.0)
    return out
