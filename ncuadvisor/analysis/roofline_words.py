"""The roofline's verdicts in words: the floor ("4.43 G FP32 lane operations ... take 133 µs"), the units and
precisions by name, and the limiter ("L2-bound (88% of the time at its peak); the work it needs takes longest on
the FMA pipe; memory-class at 0.9 executed FLOP/byte")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ncuadvisor.analysis import ceilings as _ceilings
from ncuadvisor.units import fmt_ns, fmt_pct

if TYPE_CHECKING:
    from ncuadvisor.analysis.roofline import Roofline


def floor_words(r: Roofline, lanes: dict[str, float]) -> str:
    """The floor in words: "4.43 G FP32 lane operations (FFMA, FADD, FMUL: 4.45 GFLOP executed) at 33.4 T/s take
    133 µs"."""

    if not r.floors or r.theoretical_ns is None:
        return ""
    unit = max(r.floors, key=lambda u: r.floors[u])
    t = fmt_ns(r.theoretical_ns)
    if unit == "launch":
        src = r.launch_floor_source or ""
        return f"an empty kernel takes {t}" + (f" ({src})" if src.startswith(("table", "the shortest")) else "")
    if unit == "dram" and r.compulsory_bytes is not None and r.peak_dram_bytes_per_s:
        return (
            f"moving {r.compulsory_bytes / 1e6:.1f} MB at {r.peak_dram_bytes_per_s / 1e12:.2f} TB/s"
            f"{source_words(r, 'dram_peak')} takes {t}"
        )
    prec = {"fma": "fp32", "fp64": "fp64", "fp16": "fp16"}.get(unit)
    if prec and prec in lanes and r.flops_by_precision.get(prec) and r.peak_flops_per_s.get(prec):
        rate = r.peak_flops_per_s[prec] / _ceilings.FLOP_PEAKS[prec][1]
        return (
            f"{_g(lanes[prec] / 1e9)} G {precision_words(prec)} lane operations ({_g(r.flops_by_precision[prec] / 1e9)} "
            f"GFLOP executed) at {_g(rate / 1e12)} T lanes/s{source_words(r, f'{prec}_peak')} take {t}{clock_words(r)}"
        )
    if unit == "tensor" and r.limiting_precision in r.peak_flops_per_s:
        peak = r.peak_flops_per_s[r.limiting_precision or ""]
        flops = r.flops_by_precision.get(r.limiting_precision or "", 0.0)
        return f"{_g(flops / 1e9)} GFLOP of {precision_words(r.limiting_precision or '')} work at {_g(peak / 1e12)} TFLOP/s take {t}"
    if unit == "issue":  # a library kernel that reads no global memory (`roofline.reads_no_global_memory`)
        return own_work_words(r)
    pipe = {"sfu": "SFU (XU, 16 lanes/clk/SM)", "fp16": "FP16 pipe", "fp64": "FP64 pipe"}.get(unit, unit)
    return f"the {pipe} busy time, at its peak, takes {t}"


def own_work_words(r: Roofline) -> str:
    """The floor of a library kernel that reads no global memory, in words: its instruction issue time."""
    return (
        f"the warp instructions it issues, at 4 per clock per SM, take {fmt_ns(r.floors.get('issue') or 0.0)}"
        f"{clock_words(r)}: a library kernel that reads no global memory computes what it writes from its index and "
        "arguments alone, so every instruction it issues is its own algorithm's work, none the user's to cut"
    )


def source_words(r: Roofline, key: str) -> str:
    """Where a peak comes from, in words, when not from the report's own peak metric: " (table: sm_86)", " (the
    device's memory clock × bus width)"; "" otherwise."""
    src = r.sources.get(key) or ""
    if src.startswith("table"):
        return f" ({src})"
    if "attributes" in src:
        return " (the device's memory clock × bus width)"
    return ""


def clock_words(r: Roofline) -> str:
    """The clock an FP peak is at: ncu locks the SM clock to its base clock unless the capture said
    `--clock-control none`, and the peak is at the clock measured during the kernel."""
    if not r.sm_clock_hz:
        return ""
    control = r.sources.get("clock_control", "")
    # said without parentheses: the words sit inside the floor's own parenthesis
    if control.startswith("report: base"):
        how = ", the base clock ncu locked it at"
    elif control == "report: none":
        how = ", not locked: captured with --clock-control none"
    else:
        how = ", ncu's base clock unless captured with --clock-control none"
    return f" at the capture's {r.sm_clock_hz / 1e9:.2f} GHz SM clock{how}"


def precision_words(key: str) -> str:
    """A precision key in words: 'fp32' -> 'FP32', 'tensor_bf16' -> 'BF16 tensor'."""
    if key.startswith("tensor_"):
        return f"{key[len('tensor_') :].upper()} tensor"
    return key.upper()


# a limiter's unit in words (the result's `limiter` keeps the key)
UNIT_WORDS = {
    "dram": "DRAM",
    "l2": "L2",
    "l1": "L1/shared",
    "shared": "shared-memory",
    "fma": "FMA",
    "fp64": "FP64",
    "fp16": "FP16",
    "tensor": "tensor-core",
    "sfu": "SFU",
    "alu": "ALU",
    "lsu": "LSU",
}


def unit_words(unit: str) -> str:
    return UNIT_WORDS.get(unit, unit)


def _place(unit: str) -> str:
    """Where work runs, in words: 'the FMA pipe', 'the SFU', 'the tensor cores', 'DRAM'."""
    if unit in ("fma", "fp64", "fp16", "alu", "lsu"):
        return f"the {unit_words(unit)} pipe"
    return {"sfu": "the SFU", "tensor": "the tensor cores", "issue": "instruction issue"}.get(unit, unit_words(unit))


def _g(v: float) -> str:
    """A ratio in plain digits: 2050.3 -> '2,050', 341.1 -> '341', 0.0563 -> '0.0563'."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def limiter_words(r: Roofline) -> str:
    """The limiter in words: "issue-bound: 4.6 instructions per byte; memory-class at 2.0 FLOP/byte", and the numbers
    of the machine model that come from the table (`model_note`)."""
    words = _limiter_core(r)
    return words + model_note(r) if words else ""


def _limiter_core(r: Roofline) -> str:
    if not r.limiter:
        return ""
    if r.limiter == "launch":
        return f"launch-bound: no launch takes less than {r.floors['launch'] / 1e3:.2f} µs ({r.launch_floor_source})"
    if r.limiter == "latency":
        unit, share = _ceilings.limiter_of(r.ceilings, _ceilings.level_floors(r), r.duration_ns)
        # a report of a few chosen metrics shows DRAM and the launch only: say so, not that no unit is busy
        only = "" if (r.busy_pct or r.sol) else " (the report measures no unit but DRAM)"
        if unit == "launch":
            if only:
                return f"latency-bound: DRAM is not busy{only}; an empty kernel would take {share or 0:.0%} of the time"
            return f"latency-bound: no unit is busy; an empty kernel would take {share or 0:.0%} of the time"
        return (
            f"latency-bound: the busiest unit ({unit_words(unit or '?')}) would be busy {fmt_pct(share or 0)} of "
            f"the time at its peak{only}"
        )
    return _limiter_words(r, r.limiter)


_SOURCE_NAMES = {"fp32_peak": "FP32 peak", "fp64_peak": "FP64 peak", "fp16_peak": "FP16 peak", "dram_peak": "DRAM peak"}


def model_note(r: Roofline) -> str:
    """The numbers of the machine model that come from the table, not the report (`archfacts`), as a clause for the
    card: "; from the table, not this report: FP16 peak (sm_86), the launch floor (sm_86: an estimate, ...)"."""
    parts = [
        f"{_SOURCE_NAMES.get(key, key)} ({src.removeprefix('table: ')})"
        for key, src in r.sources.items()
        if src.startswith("table")
    ]
    launch = r.launch_floor_source or ""
    floor_unit = max(r.floors, key=lambda u: r.floors[u]) if r.floors else None
    if "launch" in (floor_unit, r.limiter) and launch.startswith("table"):
        parts.append(f"the launch floor ({launch.removeprefix('table: ')})")
    return f"; from the table, not this report: {', '.join(parts)}" if parts else ""


def _limiter_words(r: Roofline, limiter: str) -> str:
    share = r.limiter_share
    head = f"{unit_words(limiter)}-bound" + (
        f" ({fmt_pct(share)} of the time at its peak)" if share is not None else ""
    )
    if r.limiter in ("fma", "fp64", "fp16", "tensor"):
        head += clock_words(r)
    if r.limiter == "issue" and r.instructions and r.compulsory_bytes:
        head += f": {r.instructions / r.compulsory_bytes:.2g} warp instructions per byte"
    floor_unit = max(r.floors, key=lambda u: r.floors[u]) if r.floors else None
    if floor_unit and floor_unit != r.limiter:
        head += f"; the work it needs takes longest on {_place(floor_unit)}"
    if r.intensity is None:
        return head
    if r.intensity == 0:
        return f"{head}; no FLOPs"
    ridge = None
    peak = r.peak_flops_per_s.get(r.limiting_precision or "fp32") or r.peak_flops_per_s.get("fp32")
    if peak and r.peak_dram_bytes_per_s:
        ridge = peak / r.peak_dram_bytes_per_s
    side = ""
    if ridge:
        side = "memory-class" if r.intensity < ridge else "compute-class"
        return f"{head}; {side} at {_g(r.intensity)} executed FLOP/byte (ridge {_g(ridge)})"
    return f"{head}; {_g(r.intensity)} executed FLOP/byte"


# The executed floor is told beside the needed one when it is at least this many times the needed floor: below it,
# the work executed beyond the need is within what the best kernels lose to tails and clocks (ROOF001 calls 1.6×
# "near").
EXECUTED_GAP = 1.5
NEAR_CEILING = 1.6  # within this many times its executed ceiling, a kernel runs that unit about as fast as it can

# what an executed ceiling counts, by unit: (its work, the clock it runs at, what to do less of)
_EXECUTED_WORK = {
    "issue": ("the warp instructions it issues, 4 per clock per SM", "SM", "issuing fewer instructions"),
    "alu": ("its integer and logic instructions on the ALU pipe", "SM", "executing fewer instructions"),
    "fma": ("its FMA-pipe instructions: FP32 and integer multiply-add", "SM", "executing fewer instructions"),
    "lsu": (
        "its load, store and shared-memory instructions on the LSU pipe",
        "SM",
        "executing fewer memory instructions",
    ),
    "fp64": ("its FP64 instructions", "SM", "executing fewer FP64 instructions"),
    "fp16": ("its FP16 instructions", "SM", "executing fewer FP16 instructions"),
    "tensor": ("its tensor-core instructions", "SM", "executing fewer tensor instructions"),
    "sfu": ("its XU instructions, 16 lanes per clock per SM", "SM", "executing fewer XU instructions"),
    "l1": ("the traffic it moves through L1/shared", "L1", "moving fewer bytes through L1/shared"),
    "shared": ("its shared-memory wavefronts", "L1", "moving fewer bytes through shared memory"),
    "l2": ("the traffic it moves through L2", "L2", "moving fewer bytes through L2"),
    "dram": ("the bytes DRAM moved for it", "DRAM", "moving fewer bytes through DRAM"),
}


def executed_words(
    r: Roofline,
    xu_needed_share: float | None = None,
    clocks: Mapping[str, float | None] | None = None,
    xu_opcodes: tuple[str, ...] = (),
) -> str:
    """Both floors in words when the executed floor is at least EXECUTED_GAP × the needed one, else "" (the outputs
    put it after "as executed:"): "1.25× its L1/shared ceiling of 129.0 µs (the traffic it moves through L1/shared, at the 1.97 GHz L1 clock); 38.9×
    the floor of the work it needs (4.2 µs, the FMA pipe): the room is in moving fewer bytes through L1/shared, not in
    moving them faster". `xu_needed_share`: the transcendental share of the XU instructions; `xu_opcodes`: the XU
    opcodes executed; `clocks`: the clocks measured during the kernel by domain ('SM', 'L1', 'L2', 'DRAM'), in Hz."""
    needed, executed, unit, d = r.theoretical_ns, r.executed_floor_ns, r.executed_floor_unit, r.duration_ns
    if not (needed and executed and unit and d) or executed < EXECUTED_GAP * needed:
        return ""
    work, clock, less = _EXECUTED_WORK.get(unit, (f"its {unit_words(unit)} work", "SM", "doing less work"))
    if unit == "sfu" and xu_needed_share is not None and xu_needed_share < 0.5:
        ops = ", ".join(xu_opcodes[:4]) if xu_opcodes else "conversions and bit operations"
        some = "none" if xu_needed_share == 0 else fmt_pct(xu_needed_share)
        work = f"its XU instructions ({ops}: {some} transcendental), 16 lanes per clock per SM"
    hz = (clocks or {}).get(clock) or (r.sm_clock_hz if clock == "SM" else None)
    work += f", at the {hz / 1e9:.2f} GHz {clock} clock" if hz else f", at the {clock} clock"
    floor_unit = max(r.floors, key=lambda u: r.floors[u])
    head = (
        f"{_x(d / executed)} its {unit_words(unit)} ceiling of {fmt_ns(executed)} ({work}); "
        f"{_x(d / needed)} the floor of the work it needs ({fmt_ns(needed)}, {_place(floor_unit)})"
    )
    if d / executed <= NEAR_CEILING:
        faster = "running them faster" if clock == "SM" else "moving them faster"
        return f"{head}: the room is in {less}, not in {faster}"
    return (
        f"{head}: of that, {_x(executed / needed)} is work executed beyond the need (the room in {less}) and "
        f"{_x(d / executed)} is time {_place(unit)} sits idle"
    )


def _x(v: float) -> str:
    """A ratio: 38.87 -> '38.9×', 1.248 -> '1.25×', 115.5 -> '115×', 2114.3 -> '2,114×' (never '2.11e+03×')."""
    return f"{_g(v)}×"
