"""Hand count against the machine model: FLOPs, compulsory bytes and the floor of each unit counted from the source and
the launch sizes of the planted kernels (workloads/cuda/ceilings.cu, patterns.cu, fp16.cu), next to the model's numbers and the
measured times.

The hand count uses the H200's nominal per-SM rates (FP32 128 lanes/clk, FP64 64, packed FP16 128 HFMA2 lanes, MUFU
16, instruction issue: 4 warp instructions/clk) × 132 SMs × the SM clock the report measured during the kernel, and DRAM at the
report's own peak bytes/cycle × its DRAM clock; it never reads the model's counters, only the two clocks and the peak.
"Measured" is the median of 25 cudaEvent timings without the profiler (fixtures/planted/bench_*.jsonl) and ncu's
duration in the report. The last column says whether the model's floor is within 10% of the hand count.

    python benchmarks/handcount.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.analysis import needed, roofline  # noqa: E402
from ncuadvisor.analysis.ceilings import LAUNCH_FLOOR_NS  # noqa: E402
from ncuadvisor.load import ReportReader  # noqa: E402
from ncuadvisor.load.deep import every_result  # noqa: E402

SMS = 132
LANES = {"fp32": 128, "fp64": 64, "fp16": 128, "sfu": 16}  # per SM per clock (fp16: HFMA2 instructions' lanes)
MIB = 1 << 20


@dataclass
class Hand:
    """What the source says: the unit the kernel is written to saturate, its lane operations, FLOPs, bytes."""

    unit: str  # fp32 | fp64 | fp16 | sfu | dram | launch | latency
    lane_ops: float  # thread-level operations on that unit (0 for dram/launch)
    flops: float
    bytes: float  # compulsory: every input read once, every output written once
    note: str
    stores: float = 0.0  # of those bytes, the outputs written


THREADS = SMS * 8 * 4 * 256  # the ceilings loops: sms × 8 × 4 blocks of 256 threads
CEILINGS = {
    # sfu_loop: 96 iterations × (MUFU.SIN, MUFU.COS, MUFU.EX2); __sinf/__cosf also range-reduce with an FMUL
    "sfu_loop": Hand("sfu", THREADS * 96 * 3, 0, THREADS * 8, "3 MUFU per iteration × 96", THREADS * 4),
    "fadd_loop": Hand(
        "fp32", THREADS * 512 * 8, THREADS * 512 * 8, THREADS * 8, "8 FADD × 512, 1 FLOP each", THREADS * 4
    ),
    "ffma_loop": Hand(
        "fp32", THREADS * 512 * 8, THREADS * 512 * 8 * 2, THREADS * 8, "8 FFMA × 512, 2 FLOP each", THREADS * 4
    ),
    "hfma2_loop": Hand(
        "fp16", THREADS * 512 * 8, THREADS * 512 * 8 * 4, THREADS * 8, "8 HFMA2 × 512, 4 FLOP each", THREADS * 4
    ),
    "dfma_loop": Hand(
        "fp64", THREADS * 96 * 8, THREADS * 96 * 8 * 2, THREADS * 8, "8 DFMA × 96, 2 FLOP each", THREADS * 4
    ),
    # index_math: one useful FADD per load; the table (16 KB) is read from L1, only the output is compulsory
    "index_math": Hand(
        "fp32", THREADS * 128, THREADS * 128, 4096 * 4 + THREADS * 4, "1 FADD per L1 load × 128", THREADS * 4
    ),
    "l2_resident_out": Hand("dram", 0, 4 * MIB * 2, 32 * MIB, "16 MB in + 16 MB out", 16 * MIB),
    "dram_out": Hand("dram", 0, 64 * MIB * 2, 512 * MIB, "256 MB in + 256 MB out", 256 * MIB),
    "empty_kernel": Hand("launch", 0, 0, 0, "<<<1, 32>>>, no body", 0),
    "tiny_chain_step": Hand("launch", 0, 512 * 2, 512 * 4 * 2, "512 floats in and out", 512 * 4),
}
PATTERNS = {
    # compulsory bytes: what the algorithm must read and write once (bench_patterns.jsonl "bytes_min")
    "aos_field_x": Hand("dram", 0, 16 * MIB * 2, 128 * MIB, "needs 4 B of each 32-B struct + 4 B out", 64 * MIB),
    "soa_field_x": Hand("dram", 0, 16 * MIB * 2, 128 * MIB, "64 MB in + 64 MB out", 64 * MIB),
    "aos16_scalar": Hand("dram", 0, 16 * MIB * 3, 320 * MIB, "256 MB in + 64 MB out", 64 * MIB),
    "aos16_vec4": Hand("dram", 0, 16 * MIB * 3, 320 * MIB, "256 MB in + 64 MB out", 64 * MIB),
    "pred_store_strided": Hand("dram", 0, 0, 96 * MIB, "64 MB in + the stored half of 64 MB", 32 * MIB),
    "pred_store_contig": Hand("dram", 0, 0, 96 * MIB, "64 MB in + the stored half of 64 MB", 32 * MIB),
    "gather_random": Hand("dram", 0, 0, 192 * MIB, "idx 64 MB + 64 MB of table + 64 MB out", 64 * MIB),
    "gather_sorted": Hand("dram", 0, 0, 192 * MIB, "idx 64 MB + 64 MB of table + 64 MB out", 64 * MIB),
    "chase_serial": Hand("latency", 0, 0, 8650752 + 16896 * 4, "4 × 32 dependent loads per thread", 16896 * 4),
    "chase_interleaved": Hand("latency", 0, 0, 8650752 + 16896 * 4, "4 walks interleaved", 16896 * 4),
    "reduce_mod": Hand("dram", 0, 32 * MIB, 134742016, "128 MB in, one float per block out", 131072 * 4),
    "reduce_shfl": Hand("dram", 0, 32 * MIB, 134742016, "128 MB in, one float per block out", 131072 * 4),
}

# workloads/cuda/fp16.cu: 8 half2 (or half) chains per thread, 8 values in and 8 out per thread
HALF_IO = THREADS * 8 * 4
FP16 = {
    "hfma2_loop": Hand(
        "fp16", THREADS * 512 * 8, THREADS * 512 * 8 * 4, 2 * HALF_IO, "8 HFMA2 × 512, 4 FLOP each", HALF_IO
    ),
    "hadd2_loop": Hand(
        "fp16", THREADS * 512 * 8, THREADS * 512 * 8 * 2, 2 * HALF_IO, "8 HADD2 × 512, 2 FLOP each", HALF_IO
    ),
    "hmul2_loop": Hand(
        "fp16", THREADS * 512 * 8, THREADS * 512 * 8 * 2, 2 * HALF_IO, "8 HMUL2 × 512, 2 FLOP each", HALF_IO
    ),
    # two scalar chains fit one HFMA2: 4 packed lanes per iteration
    "hfma_scalar": Hand(
        "fp16", THREADS * 512 * 4, THREADS * 512 * 8 * 2, HALF_IO, "8 scalar HFMA × 512, 2 FLOP each", HALF_IO // 2
    ),
    "mufu_loop": Hand("sfu", THREADS * 256 * 2, 0, THREADS * 8, "MUFU.EX2 + MUFU.SIN × 256", THREADS * 4),
}


def bench(path: Path) -> dict[str, float]:
    out = {}
    for line in path.read_text().splitlines():
        d = json.loads(line)
        if "kernel" in d and "median_us" in d:
            out[d["kernel"]] = d["median_us"] * 1e3
    return out


def rows(report: str, hands: dict[str, Hand], measured: dict[str, float]) -> list[list[str]]:
    reader = ReportReader(ROOT / "fixtures" / f"{report}.ncu-rep.xz")
    frame = reader.results(roofline.METRICS)
    # the per-instruction ideal sectors and their SASS: the model's loads and stores
    details = reader.details(list(frame["result_id"]), needed.PER_INSTRUCTION, sass_for=every_result)
    seen: set[str] = set()
    out = []
    for row in frame:
        name = row["name"]
        if name not in hands or name in seen:
            continue
        seen.add(name)
        facts = (
            needed.instruction_facts(details[row["result_id"]].per_instruction) if row["result_id"] in details else None
        )
        h, r = hands[name], roofline.compute(row, SMS, facts)
        sm_hz = row["sm__cycles_elapsed.avg.per_second"]
        dram_bps = row["dram__bytes.sum.peak_sustained"] * row["dram__cycles_elapsed.avg.per_second"]
        floors = {"dram": h.bytes / dram_bps * 1e9, "launch": LAUNCH_FLOOR_NS}
        if h.unit in LANES:
            floors[h.unit] = h.lane_ops / (LANES[h.unit] * SMS * sm_hz) * 1e9
        hand_floor = max(floors.values())
        model_floor = r.theoretical_ns or 0.0
        ok = abs(model_floor / hand_floor - 1) <= 0.10
        out.append(
            [
                name,
                h.note,
                f"{h.flops / 1e9:.3g}",
                f"{r.flops / 1e9:.3g}",
                f"{h.bytes / 1e6:.1f} ({(h.bytes - h.stores) / 1e6:.4g} + {h.stores / 1e6:.4g})",
                f"{(r.compulsory_bytes or 0) / 1e6:.1f}"
                + (f" ({r.load_bytes / 1e6:.4g} + {r.store_bytes / 1e6:.4g})" if r.load_bytes is not None else ""),
                f"{max(floors, key=lambda u: floors[u])} {hand_floor / 1e3:.2f}",
                f"{max(r.floors, key=lambda u: r.floors[u])} {model_floor / 1e3:.2f}",
                f"{r.limiter} at {(r.limiter_share or 0):.0%}",
                f"{(row['gpu__time_duration.sum'] or 0) / 1e3:.1f}",
                f"{measured[name] / 1e3:.1f}" if name in measured else "",
                f"{(r.headroom or 0):.2f}×",
                "yes" if ok else f"no ({model_floor / hand_floor:.2f}×)",
                f"{sm_hz / 1e9:.2f}",
            ]
        )
    return out


HEADER = [
    "kernel",
    "hand count",
    "GFLOP hand",
    "GFLOP model (executed)",
    "MB hand (loads + stores)",
    "MB model (loads + stores)",
    "floor hand (unit µs)",
    "floor model (unit µs)",
    "limiter (share)",
    "ncu µs",
    "measured µs",
    "headroom",
    "floor within 10%",
    "SM GHz",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    planted = ROOT / "fixtures" / "planted"
    table = rows("ceilings", CEILINGS, bench(planted / "bench_ceilings.jsonl"))
    table += rows("patterns", PATTERNS, bench(planted / "bench_patterns.jsonl"))
    table += rows("fp16", FP16, bench(ROOT / "fixtures" / "fp16-2026-12-01" / "bench.jsonl"))
    if args.markdown:
        print("| " + " | ".join(HEADER) + " |")
        print("|" + "---|" * len(HEADER))
        for r in table:
            print("| " + " | ".join(r) + " |")
    else:
        for r in [HEADER, *table]:
            print("  ".join(r))


if __name__ == "__main__":
    main()
