"""Accuracy of the first finding, and of the speedup estimates, on the project's planted-flaw workloads.

For every kernel of fixtures/flaws.ncu-rep.xz (workloads/cuda/flaws.cu), fixtures/cache.ncu-rep.xz
(workloads/cuda/cache.cu) and fixtures/wave.ncu-rep.xz (workloads/cuda/wave.cu), all captured on an H200, it prints:
the planted flaw (workloads/cuda/manifest.json, manifest_cache.json, manifest_wave.json), our first finding, NCU's own
top-ranked rule from the same report, and for each flawed/fixed pair our estimated speedup next to the one measured
without the profiler (fixtures/bench_flaws.jsonl, fixtures/cache-and-naive-cost-2026-11-30/bench_cache.jsonl,
fixtures/profile-cost-2026-11-30/bench_wave3.jsonl). It ends with one line: our first-finding accuracy, NCU's, and the mean error
of our speedup estimates.

    python benchmarks/accuracy.py [--markdown] [--report R --manifest M --bench B]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.analysis.pipeline import analyze  # noqa: E402

# NCU rule identifiers -> our categories (for scoring NCU's top rule on the same question).
NCU_CATEGORY = {
    "UncoalescedGlobalAccess": "coalescing",
    "UncoalescedSharedAccess": "bank-conflicts",
    "SharedMemoryConflicts": "bank-conflicts",
    "MemoryCacheAccessPattern": "coalescing",
    "AchievedOccupancy": "occupancy",
    "TheoreticalOccupancy": "occupancy",
    "LaunchConfiguration": "launch-config",
    "SOLBottleneck": "other",
    "ThreadDivergence": "divergence",
    "BranchDivergence": "divergence",
    "LocalMemory": "local-memory",
    "SlowPipeUtilization": "precision",
    "FPInstructions": "precision",
    "TensorCoreUtilization": "tensor-cores",
    "CPIStall": "latency",
    "IssueSlotUtilization": "latency",
    "HighPipeUtilization": "other",  # "compute pipelines under-utilized": not the actionable problem
    "MemoryL2Compression": "cache",
}
# (report, manifest, measured times): the 31 kernels of flaws.cu, and the cache and index-math pairs of cache.cu
SETS = [
    (
        str(ROOT / "fixtures" / "flaws.ncu-rep.xz"),
        str(ROOT / "workloads" / "cuda" / "manifest.json"),
        str(ROOT / "fixtures" / "bench_flaws.jsonl"),
    ),
    (
        str(ROOT / "fixtures" / "cache.ncu-rep.xz"),
        str(ROOT / "workloads" / "cuda" / "manifest_cache.json"),
        str(ROOT / "fixtures" / "cache-and-naive-cost-2026-11-30" / "bench_cache.jsonl"),
    ),
    (
        str(ROOT / "fixtures" / "wave.ncu-rep.xz"),
        str(ROOT / "workloads" / "cuda" / "manifest_wave.json"),
        str(ROOT / "fixtures" / "profile-cost-2026-11-30" / "bench_wave3.jsonl"),
    ),
]
NCU_NEAR_BOUND_PCT = 20.0  # NCU "leaves a kernel alone" when none of its rules estimates 20% or more
NEAR_BOUND_PCT = 70.0  # a fixed twin measured at >= 70% of DRAM or SM peak is expected to be called at-roofline


def expectation(name: str, spec: dict, manifest: dict) -> tuple[str, str | None]:
    """(expected category, forbidden category): a planted flaw must be named; a reference kernel and a fixed twin
    that runs near its bound must be left alone; a twin still far from its bound must at least not repeat the flaw
    its sibling was planted with (it may have another one, e.g. 4-byte accesses)."""
    if spec.get("planted"):
        return spec["planted"], None
    sibling = spec.get("twin_of")
    if not sibling:
        return "at-roofline", None
    m = spec.get("measured") or {}
    if max(m.get("dram_throughput_pct", 0), m.get("sm_throughput_pct", 0)) >= NEAR_BOUND_PCT:
        return "at-roofline", None
    return "not " + manifest[sibling]["planted"], manifest[sibling]["planted"]


def ncu_top(k: dict) -> tuple[str, str]:
    rules = [r for r in k["ncu_rules"] if r.get("speedup_pct") is not None]
    if not rules:
        return "-", "at-roofline"
    top = max(rules, key=lambda r: r["speedup_pct"])
    if top["speedup_pct"] < NCU_NEAR_BOUND_PCT:
        return f"{top['rule']} ({top['speedup_pct']:.0f}%)", "at-roofline"
    return f"{top['rule']} ({top['speedup_pct']:.0f}%)", NCU_CATEGORY.get(top["rule"], "other")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", default=None, help="one report only (with --manifest and --bench)")
    ap.add_argument("--manifest", default=None)
    ap.add_argument("--bench", default=None)
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown (for RESULTS.md)")
    args = ap.parse_args()
    sets = [(args.report, args.manifest, args.bench)] if args.report else SETS

    rows, ours_ok, ncu_ok, errors = [], 0, 0, []
    for report, manifest_path, bench_path in sets:
        manifest = json.loads(Path(manifest_path).read_text())["flaws"]
        bench = {}
        if bench_path and Path(bench_path).exists():
            for line in Path(bench_path).read_text().splitlines():
                if line.strip().startswith("{"):
                    row = json.loads(line)
                    bench[row["kernel"]] = row["median_us"]
        result = analyze(report)
        kernels = {k["name"]: k for k in result["kernels"]}
        for name, spec in manifest.items():
            k = kernels.get(name)
            if k is None:
                rows.append((name, expectation(name, spec, manifest)[0], "(not in report)", "", "", "", ""))
                continue
            expected, forbidden = expectation(name, spec, manifest)
            first = k["findings"][0] if k["findings"] else None
            ours = first["category"] if first else "(none)"
            ncu_label, ncu_cat = ncu_top(k)
            ok = (ours != forbidden) if forbidden else (ours == expected)
            ours_ok += ok
            ncu_ok += (ncu_cat != forbidden) if forbidden else (ncu_cat == expected)
            est_txt = meas_txt = ""
            twin = spec.get("twin")
            if spec.get("planted") and twin and name in bench and twin in bench and first:
                measured = bench[name] / bench[twin]  # speedup of the fix, as a ratio
                est_fraction = first["estimated_speedup"] if ours == expected else 0.0
                estimated = 1.0 / max(1e-9, 1.0 - est_fraction)
                errors.append(abs(estimated - measured) / measured)
                est_txt, meas_txt = f"{estimated:.2f}×", f"{measured:.2f}×"
            rows.append(
                (
                    name,
                    expected,
                    f"{first['rule']} {ours}" if first else ours,
                    ncu_label,
                    est_txt,
                    meas_txt,
                    "ok" if ok else "MISS",
                )
            )

    header = ("kernel", "expected", "our first finding", "NCU top rule", "est.", "measured", "")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    n = len([r for r in rows if r[2] != "(not in report)"])
    mean_err = sum(errors) / len(errors) if errors else float("nan")
    within = sum(e <= 0.30 for e in errors)
    print(
        f"\nfirst-finding accuracy: ours {ours_ok}/{n} ({ours_ok / max(n, 1):.0%}), NCU {ncu_ok}/{n} "
        f"({ncu_ok / max(n, 1):.0%}); speedup estimates: mean error {mean_err:.0%}, {within}/{len(errors)} within ±30%"
    )
    if not args.markdown:
        print()
    library_tables(args.markdown)
    return 0


def library_tables(markdown: bool) -> None:
    """Real-library kernels (PyTorch eager: ATen + cuBLAS; torch.compile: Triton + cuBLAS): verdict per kernel."""
    header = ("report", "kernel", "language", "launches", "time", "bound", "headroom", "first finding")
    rows = []
    for name in ("torch_eager", "torch_compile"):
        path = ROOT / "fixtures" / f"{name}.ncu-rep.xz"
        if not path.exists():
            continue
        for k in analyze(path)["kernels"]:
            first = k["findings"][0] if k["findings"] else None
            rows.append(
                (
                    name,
                    k["name"][:48],
                    k["language"],
                    str(k["launches"]),
                    f"{k['duration_ns'] / 1e3:.1f} µs",
                    k["bound"],
                    f"{k['headroom']:.2f}" if k["headroom"] else "-",
                    f"{first['rule']} {first['category']}" if first else "-",
                )
            )
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    raise SystemExit(main())
