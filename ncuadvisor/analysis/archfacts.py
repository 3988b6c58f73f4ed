"""What each GPU architecture can do per SM per clock, as one table with a source for every row, and the machine model
of a report's device: each number from the report where the report has it, from the table otherwise, saying which.

The report has most of them: ncu stores the device's attributes with every result (`device__attribute_*`: the SM
count, the memory clock and bus width, the compute capability) and, in the sections that need them, the peaks per
cycle (`*.peak_sustained`). A default-set report (`--set basic`) has the attributes but none of the FLOP peaks; a
report of an older ncu may lack more. Where it lacks one, the table gives it for the report's compute capability and
the JSON and the card say so (`source`: "report" or "table: sm_86").

The per-SM lanes are the CUDA C++ Programming Guide's table "Throughput of Native Arithmetic Instructions
(operations per clock cycle per multiprocessor)", checked against the peaks ncu stores in other people's reports
(2026-12-05: FP32 and FP64 lanes: sm_75 GTX 1660 SUPER and T4 64 and 2; sm_80 A100 64 and 32; sm_86 A10G, A40,
RTX 3070, 3080, A6000 128 and 2; sm_89 RTX 4090 128 and 2; sm_90 H100 PCIe, GH200, H200 128 and 64, but the H800 2:
a board can differ from its architecture, and the report's peak wins. Packed-half lanes: A100 and H100 128, A10G 64). Tensor rates are dense FLOPs per SM per clock for
each input type and accumulator, from NVIDIA's datasheet peaks ÷ (SMs × boost clock); 2:4 sparsity doubles them from
sm_80 on (`SPARSE_FACTOR`). GeForce boards of sm_75 to sm_120 run FP16/BF16/FP8 with an FP32 accumulator at half the
rate of the professional and datacenter boards of the same chip (`GEFORCE_FP32_ACCUMULATE`).

The launch floor (an empty kernel's duration as ncu measures it) is measured on sm_90 only (an H200: 1.54 µs); for
the others it is an estimate, said as one: 1.0 µs, below the shortest launch seen in other people's reports of that
architecture (sm_75: 1.47 µs on a GTX 1660 Ti). A report holding a launch shorter than the estimate lowers it
(`launch_floor`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ncuadvisor.model import num

GUIDE = "CUDA C++ Programming Guide, Throughput of Native Arithmetic Instructions"
DATASHEET = "NVIDIA datasheet peak ÷ (SMs × boost clock)"
LAUNCH_ESTIMATE_NS = 1_000.0  # not measured: see the module docstring
H200_LAUNCH_NS = 1_536.0  # an empty kernel's ncu duration on an H200 (fixtures/ceilings.ncu-rep.xz, 2026-12-01)
SPARSE_FACTOR = 2.0  # 2:4 structured sparsity, sm_80 and later: twice the dense tensor rate
# Input/accumulator pairs whose rate GeForce boards halve (sm_75 to sm_120)
GEFORCE_FP32_ACCUMULATE = ("fp16.fp32", "bf16.fp32", "tf32.fp32", "fp8.fp32")
# A memory bus this wide or wider is HBM (1024 bits a stack); GDDR boards have 64 to 512 bits
HBM_BUS_BITS = 1024


@dataclass(frozen=True)
class ArchFacts:
    """One architecture: lanes per SM per clock for each pipe (thread operations: an FFMA takes one FP32 lane, an
    HFMA2 one FP16x2 lane), dense tensor FLOPs per SM per clock by "input.accumulator", the memory kind of its boards,
    the launch floor (ns) and where each comes from."""

    sm: int
    name: str
    fp32_lanes: float
    fp64_lanes: float
    fp16x2_lanes: float  # packed-half instructions per SM per clock (each 2 lanes: 4 FLOPs as an FMA)
    int32_lanes: float
    sfu_lanes: float  # MUFU (transcendentals, reciprocals) per SM per clock
    tensor: Mapping[str, float] = field(default_factory=dict)  # dense FLOPs per SM per clock
    memory: str = "GDDR"  # HBM, GDDR or LPDDR (the boards of this architecture; the bus width tells per board)
    launch_floor_ns: float = LAUNCH_ESTIMATE_NS
    launch_floor_measured: bool = False
    source: str = GUIDE

    @property
    def fp64_ratio(self) -> float:
        return self.fp64_lanes / self.fp32_lanes


def _t(**rates: float) -> dict[str, float]:
    return {k.replace("_", "."): v for k, v in rates.items()}


ARCHS: dict[int, ArchFacts] = {
    a.sm: a
    for a in (
        ArchFacts(70, "Volta (V100)", 64, 32, 64, 64, 16, _t(fp16_fp32=1024, fp16_fp16=1024), "HBM",
                  source=f"{GUIDE} (7.x); tensor: V100 125 TFLOP/s, {DATASHEET}"),
        ArchFacts(72, "Volta (Jetson Xavier)", 64, 32, 64, 64, 16, _t(fp16_fp32=1024, fp16_fp16=1024, int8_int32=2048),
                  "LPDDR", source=f"{GUIDE} (7.x); tensor as sm_70 per SM"),
        ArchFacts(75, "Turing (T4, RTX 20, GTX 16)", 64, 2, 64, 64, 16,
                  _t(fp16_fp32=1024, fp16_fp16=1024, int8_int32=2048), "GDDR",
                  source=f"{GUIDE} (7.5: 2 FP64 lanes); tensor: T4 65 TFLOP/s, {DATASHEET}"),
        ArchFacts(80, "Ampere (A100, A30)", 64, 32, 128, 64, 16,
                  _t(fp16_fp32=2048, fp16_fp16=2048, bf16_fp32=2048, tf32_fp32=1024, int8_int32=4096, fp64_fp64=128),
                  "HBM", source=f"{GUIDE} (8.0); tensor: A100 312 TFLOP/s FP16, {DATASHEET}"),
        ArchFacts(86, "Ampere (A10, A40, RTX 30)", 128, 2, 64, 64, 16,
                  _t(fp16_fp32=1024, fp16_fp16=1024, bf16_fp32=1024, tf32_fp32=512, int8_int32=2048), "GDDR",
                  source=f"{GUIDE} (8.6); tensor: A40 150 TFLOP/s FP16, {DATASHEET}"),
        ArchFacts(87, "Ampere (Jetson Orin)", 128, 2, 64, 64, 16,
                  _t(fp16_fp32=1024, fp16_fp16=1024, bf16_fp32=1024, tf32_fp32=512, int8_int32=2048), "LPDDR",
                  source=f"{GUIDE} (8.x, as 8.6); tensor as sm_86 per SM (an estimate)"),
        ArchFacts(89, "Ada (L4, L40, RTX 40)", 128, 2, 64, 64, 16,
                  _t(fp16_fp32=1024, fp16_fp16=1024, bf16_fp32=1024, tf32_fp32=512, fp8_fp32=2048, int8_int32=2048),
                  "GDDR", source=f"{GUIDE} (8.9); tensor: L40S 362 TFLOP/s FP16, {DATASHEET}"),
        ArchFacts(90, "Hopper (H100, H200, GH200)", 128, 64, 128, 64, 16,
                  _t(fp16_fp32=4096, fp16_fp16=4096, bf16_fp32=4096, tf32_fp32=2048, fp8_fp32=8192, int8_int32=8192,
                     fp64_fp64=256), "HBM", launch_floor_ns=H200_LAUNCH_NS, launch_floor_measured=True,
                  source=f"{GUIDE} (9.0); tensor: H100 SXM 989 TFLOP/s FP16, {DATASHEET}; launch floor measured on "
                  "an H200 (an empty kernel's ncu duration, 2026-12-01)"),
        ArchFacts(100, "Blackwell (B200, GB200)", 128, 64, 128, 64, 16,
                  _t(fp16_fp32=8192, fp16_fp16=8192, bf16_fp32=8192, tf32_fp32=4096, fp8_fp32=16384,
                     int8_int32=16384), "HBM",
                  source=f"{GUIDE} (10.0); tensor: B200 2.25 PFLOP/s FP16, {DATASHEET} (an estimate)"),
        ArchFacts(103, "Blackwell Ultra (B300, GB300)", 128, 2, 128, 64, 16,
                  _t(fp16_fp32=8192, fp16_fp16=8192, bf16_fp32=8192, tf32_fp32=4096, fp8_fp32=16384), "HBM",
                  source=f"{GUIDE} (10.x); FP64: B300 1.25 TFLOP/s against 75 of FP32 (1/64), {DATASHEET} "
                  "(an estimate)"),
        ArchFacts(110, "Blackwell (Jetson Thor)", 128, 2, 128, 64, 16,
                  _t(fp16_fp32=8192, fp16_fp16=8192, bf16_fp32=8192, tf32_fp32=4096, fp8_fp32=16384,
                     int8_int32=16384), "LPDDR",
                  source=f"{GUIDE} (11.0 read as 10.x for FP32, FP16x2, INT32 and SFU lanes, FP64 2 lanes as the "
                  "other non-datacenter chips: assumed, not held against a Thor report); tensor: Jetson AGX Thor 2070 TFLOP/s FP4 sparse = 259 dense FP16 on "
                  f"20 SMs at 1.57 GHz, {DATASHEET} (the other inputs at sm_100's ratios to FP16: an assumption)"),
        ArchFacts(120, "Blackwell (RTX 50, RTX PRO)", 128, 2, 64, 64, 16,
                  _t(fp16_fp32=1024, fp16_fp16=1024, bf16_fp32=1024, tf32_fp32=512, fp8_fp32=2048, int8_int32=2048),
                  "GDDR", source=f"{GUIDE} (12.0); tensor: RTX 5090 419 TFLOP/s FP16, {DATASHEET}"),
    )
}  # fmt: skip


def sm_of(device: Mapping[str, Any]) -> int | None:
    """The device's compute capability as an sm number (8.6 -> 86), None when the report lacks it."""
    major, minor = num(device.get("cc_major")), num(device.get("cc_minor"))
    if major is None or minor is None:
        cc = str(device.get("compute_capability") or "")
        if "." not in cc:
            return None
        try:
            major, minor = (float(x) for x in cc.split(".", 1))
        except ValueError:
            return None
    return int(major) * 10 + int(minor)


def arch_of(device: Mapping[str, Any]) -> ArchFacts | None:
    """The table's row of the device's architecture: its own, else the closest older one of the same major (an sm_88
    reads as sm_87), else None."""
    sm = sm_of(device)
    if sm is None:
        return None
    if sm in ARCHS:
        return ARCHS[sm]
    same_major = [s for s in ARCHS if s // 10 == sm // 10 and s <= sm]
    return ARCHS[max(same_major)] if same_major else None


def is_geforce(device: Mapping[str, Any]) -> bool:
    """A consumer board (GeForce, TITAN): its tensor cores accumulate in FP32 at half rate."""
    name = str(device.get("name") or "")
    return "GeForce" in name or "TITAN" in name.upper()


def table_source(arch: ArchFacts) -> str:
    return f"table: sm_{arch.sm}"


@dataclass
class Machine:
    """The machine model of one report's device: each peak with its source ("report: ..." or "table: sm_XX")."""

    sm: int | None = None
    arch: ArchFacts | None = None
    sm_count: float | None = None
    lanes: dict[str, float] = field(default_factory=dict)  # fp32, fp64, fp16x2, sfu lanes per SM per clock
    dram_peak_bytes_per_s: float | None = None
    memory: str | None = None  # HBM, GDDR or LPDDR
    clocks_locked: bool | None = None  # ncu locked the clocks at base (its default); False: --clock-control none
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def fp64_ratio(self) -> float | None:
        fp32, fp64 = self.lanes.get("fp32"), self.lanes.get("fp64")
        return fp64 / fp32 if (fp32 and fp64) else None


# the thread-instruction peaks ncu stores (per cycle, over the device), by the lanes they give
LANE_PEAKS = {
    "fp32": "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
    "fp64": "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained",
    "fp16x2": "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained",
}


def dram_peak_from_attributes(device: Mapping[str, Any]) -> float | None:
    """Bytes/s of the device's memory from its attributes: the memory clock (ncu's
    `device__attribute_max_mem_frequency_khz`, the data clock of GDDR and HBM alike) × the bus width (bits ÷ 8) × 2
    (double data rate). Checked on other people's reports (2026-12-05): A40 696 GB/s, T4 320, GTX 1660 SUPER 336,
    RTX 3080 760, A100 40 GB 1,555, H100 PCIe 2,039, GH200 4,023: each board's datasheet bandwidth."""
    khz, bits = num(device.get("max_mem_frequency_khz")), num(device.get("memory_bus_width"))
    if not (khz and bits):
        return None
    return khz * 1e3 * 2.0 * bits / 8.0


def memory_kind(device: Mapping[str, Any], arch: ArchFacts | None) -> tuple[str | None, str]:
    """(HBM, GDDR or LPDDR, source): from the bus width when the report has it, else the architecture's boards."""
    bits = num(device.get("memory_bus_width"))
    if bits:
        kind = "HBM" if bits >= HBM_BUS_BITS else (arch.memory if arch and arch.memory == "LPDDR" else "GDDR")
        return kind, "report: device__attribute_global_memory_bus_width"
    return (arch.memory, table_source(arch)) if arch else (None, "")


def launch_floor(
    device: Mapping[str, Any], arch: ArchFacts | None, launches: Iterable[Mapping[str, Any]] = ()
) -> tuple[float, str] | None:
    """(ns, source) of the device's launch floor when the report has no empty kernel (see `ceilings.launch_floor`):
    the table's, lowered to the shortest launch of the report when one ran faster than the table says (the estimate
    was then wrong for this board)."""
    if arch is None:
        return None
    ns = arch.launch_floor_ns
    if arch.launch_floor_measured:
        name = str(device.get("name") or "this device")
        on = "" if name == "NVIDIA H200" else f", not on {name}"
        source = f"{table_source(arch)}: an empty kernel measured on an H200{on}"
    else:
        source = f"{table_source(arch)}: an estimate, not measured on this architecture"
    durations = [d for d in (num(row.get("gpu__time_duration.sum")) for row in launches) if d and d == d]
    if durations and min(durations) < ns:
        return min(durations), f"the shortest launch of this report, below the {source} ({ns / 1e3:.2f} µs)"
    return ns, source


def machine(
    device: Mapping[str, Any], rows: Iterable[Mapping[str, Any]] = (), clocks_locked: bool | None = None
) -> Machine:
    """The device's machine model: lanes per SM from the report's peaks (`LANE_PEAKS` ÷ the SM count, from the first
    of `rows` that has each) where it has them, else the table's; the DRAM peak from the device attributes
    (`dram_peak_from_attributes`), which the roofline takes on GDDR and LPDDR boards."""
    arch = arch_of(device)
    m = Machine(sm=sm_of(device), arch=arch, sm_count=num(device.get("sm_count")), clocks_locked=clocks_locked)
    if clocks_locked is not None:
        m.sources["clock_control"] = "report: " + ("base (ncu locked the clocks)" if clocks_locked else "none")
    peaks: dict[str, float] = {}
    for row in rows:
        for lane, metric in LANE_PEAKS.items():
            if lane not in peaks and (v := num(row.get(metric))):
                peaks[lane] = v
        if len(peaks) == len(LANE_PEAKS):
            break
    for lane in LANE_PEAKS:
        v = peaks.get(lane)
        if v and m.sm_count:
            m.lanes[lane], m.sources[f"{lane}_lanes"] = v / m.sm_count, "report"
        elif arch is not None:
            m.lanes[lane] = {"fp32": arch.fp32_lanes, "fp64": arch.fp64_lanes, "fp16x2": arch.fp16x2_lanes}[lane]
            m.sources[f"{lane}_lanes"] = table_source(arch)
    if arch is not None:
        m.lanes["sfu"], m.sources["sfu_lanes"] = arch.sfu_lanes, table_source(arch)
    m.memory, src = memory_kind(device, arch)
    if m.memory:
        m.sources["memory"] = src
    peak = dram_peak_from_attributes(device)
    if peak:
        m.dram_peak_bytes_per_s = peak
        m.sources["dram_peak"] = "report: device attributes (memory clock × bus width × 2)"
    return m


def tensor_rates(device: Mapping[str, Any], arch: ArchFacts | None) -> dict[str, float]:
    """Dense tensor FLOPs per SM per clock by "input.accumulator" on this board (GeForce boards halve the FP32
    accumulators: `GEFORCE_FP32_ACCUMULATE`)."""
    if arch is None:
        return {}
    half = is_geforce(device) and arch.sm >= 75
    return {k: v / 2.0 if (half and k in GEFORCE_FP32_ACCUMULATE) else v for k, v in arch.tensor.items()}
