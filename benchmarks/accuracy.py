"""Accuracy of the first finding, and of the speedup estimates, on the project's planted-flaw workloads.

For every kernel of fixtures/flaws.ncu-rep.xz (workloads/cuda/flaws.cu), fixtures/cache.ncu-rep.xz
(workloads/cuda/cache.cu) and fixtures/wave.ncu-rep.xz (workloads/cuda/wave.cu), all captured on an H200, it prints:
the planted flaw (workloads/cuda/manifest.json, manifest_cache.json, manifest_wave.json), our first finding, NCU's own
top-ranked rule from the same report, and for each flawed/fixed pair our estimated speedup next to the one measured
without the profiler (fixtures/bench_flaws.jsonl, fixtures/cache-and-naive-cost-2026-11-30/bench_cache.jsonl,
fixtures/profile-cost-2026-11-30/bench_wave3.jsonl). It ends with one line: our first-finding accuracy, NCU's, and the mean error
of our speedup estimates. Where a planted kernel's twin applies another fix than the one its card names
(`FIX_ALONE_TWINS`), the estimate is scored against the twin of that fix alone, from the report and bench of the GPU
it was measured on, and the own-set pair is printed below the score line as not scored.

Then two tables on the planted reports captured on an H200 on 2026-12-01 (workloads/cuda/patterns.cu,
workloads/torch/planted.py; measured planted and twin times in fixtures/planted/bench_*.jsonl): the access patterns
(fixtures/patterns.ncu-rep.xz) and the PyTorch cases (fixtures/torch_*.ncu-rep.xz). Each row: the planted problem,
our first action on the planted kernels ("where to start"; in parentheses the verdict on the longest of them when no
action saves time), NCU's top rule on the longest of them, our estimated saving next to the measured one (planted −
twin), and whether the first action names the planted problem (or, where the measured fix is slower, whether the
verdict is to keep the kernel). Where a case's twin applies several fixes and the fix the first action estimates was
also measured alone (`planted.py --bench` lines {case, fix, saving_us} in any fixtures/**/bench_*.jsonl, e.g. TF32
alone on the NCHW convolution), the estimate is compared with that fix alone. Per-call and loop times come from one
run of 2026-12-01 (the earlier fixtures/planted/bench_torch.jsonl gave the same savings but for `norm_chain`'s
compiled call, whose host time varies: 18.2 µs then, 35.5 µs now). A last column compares it with the
saving measured in a back-to-back loop (fixtures/torch-loop-2026-12-01/bench_torch.jsonl, `saving_loop_us`: the calls
issued as a training loop issues them, the host's time per call hidden where the GPU is the busier). The column
after it is the first action's wall saving with a measured host timeline (`benchmarks/wall_accuracy.py`: the
case's torch.profiler trace, fixtures/host-trace-2026-12-02, replayed with the action's speedups), against the
saving measured without the profiler in that day's loop.

    python benchmarks/accuracy.py [--markdown] [--planted] [--report R --manifest M --bench B]
    python benchmarks/accuracy.py --planted --patterns-report R --patterns-bench B [--launch-interval US_OR_FILE]

The access patterns are analysed with the host's launch interval of the machine that timed them when one was
measured there (`--launch-interval`, else launch_interval.jsonl beside the bench file: benchmarks/device/
launch_rate.sh writes both); PRG004's saving then counts max(kernel time, interval) per launch removed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.pipeline.analyze import analyze  # noqa: E402
from ncuadvisor.pipeline.ranking import top_actions  # noqa: E402
from ncuadvisor.result.types import LaunchInterval  # noqa: E402

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
# Two sets captured by their device scripts, each one report, its manifest (labels written before any capture) and its
# bench: the direct-convolution reuse set (workloads/cuda/conv9.cu, `benchmarks/device/conv9.sh`) and the planted
# convolution whose mapping strides every access with its twins (workloads/cuda/convmap.cu, labels transcribed from
# its header; one H100 report and bench: the filters' TIL001 estimates are scored against convmap_window, the twin
# that applies the card's fix, the tile with its halo, the weights in shared memory, a register window)
for _folder, _stem in (("conv9-2026-12-06", "conv9"), ("convmap-2026-12-06", "convmap")):
    _report = ROOT / "fixtures" / _folder / f"{_stem}.ncu-rep.xz"
    if _report.exists():
        _manifest = ROOT / "workloads" / "cuda" / f"manifest_{_stem}.json"
        SETS.append((str(_report), str(_manifest), str(ROOT / "fixtures" / _folder / f"bench_{_stem}.jsonl")))
# A planted kernel whose twin in its own set applies another fix than the one its card names: the estimate is scored
# against the twin that applies the card's fix alone, measured on the GPU of the report the estimate is read from (that
# report's own first finding on the planted kernel, its own bench); the own-set pair stays printed, as information.
# Key: (report file name of the set, planted kernel).
_REGTILE = {
    "report": ROOT / "fixtures" / "regtile-2026-12-06" / "regtile.ncu-rep.xz",
    "bench": ROOT / "fixtures" / "regtile-2026-12-06" / "bench_regtile.jsonl",
    "twin": "matmul_regtile",
    "where": "regtile, H100",
    "why": "matmul_tiled applies one level (shared tiles) of the two TIL001's card advises (shared tiles and an 8×8 "
    "register tile): a twin of another fix",
}
# cache.cu's vstencil_rows on the H100: its CAC001 card names dim3(32, 8) first, dim3(32, 32) (cache.cu's twin) second;
# workloads/cuda/vstencil.cu times both beside the planted kernel (benchmarks/device/vstencil.sh)
_VSTENCIL = {
    "report": ROOT / "fixtures" / "vstencil-2026-12-06" / "vstencil.ncu-rep.xz",
    "bench": ROOT / "fixtures" / "vstencil-2026-12-06" / "bench_vstencil.jsonl",
    "twin": "vstencil_tiles8",
    "where": "vstencil, H100",
    "why": "vstencil_tiles is the second of the two block shapes CAC001's card names; vstencil_tiles8 is its first",
}
# the H200 flaws report and the H100 one (fixtures/h100-planted-2026-12-06) alike: the fix-alone twin was measured on
# an H100, with matmul_naive in the same capture
FIX_ALONE_TWINS = {
    ("flaws.ncu-rep.xz", "matmul_naive"): _REGTILE,
    ("flaws_h100.ncu-rep.xz", "matmul_naive"): _REGTILE,
    ("cache_h100.ncu-rep.xz", "vstencil_rows"): _VSTENCIL,
}
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


def _estimated_ratio(first: dict, right_category: bool) -> float:
    """The first finding's estimate as a speedup ratio (none when the first finding names another problem)."""
    return 1.0 / max(1e-9, 1.0 - (first["estimated_speedup"] if right_category else 0.0))


def fix_alone_pair(alone: dict, name: str, expected: str) -> tuple[float, float]:
    """(estimated, measured) speedup of `name` against the twin that applies its card's fix alone: the estimate from
    the first finding on `name` in that twin's own report, the measurement from that report's GPU's bench."""
    bench = {r["kernel"]: r["median_us"] for r in _jsonl(alone["bench"])}
    kernels = {k["name"]: k for k in analyze(str(alone["report"])).to_dict()["kernels"]}
    first = kernels[name]["findings"][0] if kernels[name]["findings"] else None
    estimated = _estimated_ratio(first, first["category"] == expected) if first else 1.0
    return estimated, bench[name] / bench[alone["twin"]]


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
    ap.add_argument("--planted", action="store_true", help="only the access-pattern and PyTorch tables")
    ap.add_argument("--patterns-report", type=Path, default=None, help="the access patterns captured on another GPU")
    ap.add_argument("--patterns-bench", type=Path, default=None, help="their `patterns --bench` timings")
    ap.add_argument(
        "--launch-interval",
        default=None,
        help="the host's launch interval on the patterns' machine: µs, or a file of `python -m "
        "ncuadvisor.profile.launchrate` lines (default: launch_interval.jsonl beside the bench file, if any)",
    )
    args = ap.parse_args()
    if args.planted:
        planted_tables(args.markdown, args.patterns_report, args.patterns_bench, args.launch_interval)
        return 0
    sets = [(args.report, args.manifest, args.bench)] if args.report else SETS

    rows, ours_ok, ncu_ok, errors, notes = [], 0, 0, [], []
    for report, manifest_path, bench_path in sets:
        manifest = json.loads(Path(manifest_path).read_text())["flaws"]
        bench = {}
        if bench_path and Path(bench_path).exists():
            for line in Path(bench_path).read_text().splitlines():
                if line.strip().startswith("{"):
                    row = json.loads(line)
                    bench[row["kernel"]] = row["median_us"]
        result = analyze(report).to_dict()
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
                estimated = _estimated_ratio(first, ours == expected)
                est_txt, meas_txt = f"{estimated:.2f}×", f"{measured:.2f}×"
                alone = FIX_ALONE_TWINS.get((Path(report).name, name))
                if alone is None:
                    errors.append(abs(estimated - measured) / measured)
                else:
                    notes.append(
                        f"not scored: {name} vs {twin} ({Path(report).name.split('.')[0]}): estimated {est_txt}, "
                        f"measured {meas_txt} ({_error(estimated, measured)}): {alone['why']}; scored instead "
                        f"against {alone['twin']} ({alone['where']}), the card's fix alone"
                    )
                    estimated, measured = fix_alone_pair(alone, name, expected)
                    errors.append(abs(estimated - measured) / measured)
                    est_txt, meas_txt = f"{estimated:.2f}× ({alone['where']})", f"{measured:.2f}× ({alone['twin']})"
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
    for note in notes:
        print(f"\n{note}" if args.markdown else note)
    if not args.markdown:
        print()
    library_tables(args.markdown)
    planted_tables(args.markdown)
    return 0


def library_tables(markdown: bool) -> None:
    """Real-library kernels (PyTorch eager: ATen + cuBLAS; torch.compile: Triton + cuBLAS): verdict per kernel."""
    header = ("report", "kernel", "language", "launches", "time", "bound", "headroom", "first finding")
    rows = []
    for name in ("torch_eager", "torch_compile"):
        path = ROOT / "fixtures" / f"{name}.ncu-rep.xz"
        if not path.exists():
            continue
        for k in analyze(path).to_dict()["kernels"]:
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


PLANTED = ROOT / "fixtures" / "planted"
LOOP_BENCH = ROOT / "fixtures" / "torch-loop-2026-12-01" / "bench_torch.jsonl"
# pair: planted kernel, twin kernel (bench names), what is planted, what a right first action is (rule, words its
# title or fix must hold; "at-roofline": no action on the kernel)
PATTERNS = [
    ("aos_field_x", "soa_field_x", "x of a struct array (AoS) vs the x array", ("MEM001", "structure of arrays")),
    ("aos16_scalar", "aos16_vec4", "16-byte struct: four 4-byte loads vs one 16-byte load", ("at-roofline", "")),
    ("pred_store_strided", "pred_store_contig", "predicated strided stores", ("MEM001", "stores")),
    ("gather_random", "gather_sorted", "gather with random indices", ("MEM001", "sort")),
    ("chase_serial", "chase_interleaved", "serial pointer chases", ("LAT001", "loads in flight")),
    ("reduce_mod", "reduce_shfl", "tree reduction with tid % (2*s)", ("WRP002", "shfl")),
    ("small_update", "small_fused", "4 tiny launches vs 1 fused", ("PRG004", "fuse")),
]
# case: report, result indices of the planted variant and of its twin where the report holds it (from the ncu logs,
# fixtures/planted/ncu_outputs/), the planted problem, the categories a right first action has
TORCH_CASES = [
    ("index_add", "torch_scatter", range(0, 2), range(2, 21), "contended index_add_ atomics", ("atomics",)),
    ("scatter_add", "torch_scatter", range(21, 23), None, "contended scatter_add_ atomics", ("atomics",)),
    ("norm_chain", "torch_norm_chain", range(0, 3), range(3, 4), "eager layer_norm → add → gelu", ("fusion",)),
    ("fp32_matmul", "torch_gemm_conv", range(0, 1), range(1, 2), "fp32 GEMM, TF32 off", ("tensor-cores", "precision")),
    (
        "conv_nchw",
        "torch_gemm_conv",
        range(2, 3),
        range(3, 4),
        "fp32 NCHW conv, TF32 off",
        ("tensor-cores", "precision"),
    ),
    (
        "cast_vs_copy",
        "torch_cast_copy",
        range(0, 4),
        range(4, 6),
        "fp32→bf16 cast + transpose copy",
        ("fusion", "precision"),
    ),
    ("train_step", "torch_train", range(0, 52), None, "fp32 step, foreach AdamW", ("tensor-cores", "precision")),
]


# the fix variant of planted.py whose saving a rule's estimate is about, where a twin applies several fixes at once
RULE_FIX = {"TEN002": "tf32"}
# rules whose fix is one switch for the whole program (TF32 for every FP32 cuBLAS/cuDNN call): measured as one fix,
# so the estimate compared with it is the sum of that rule's entries over the case's kernels, not the first one's
SWITCH_RULES = {"TEN002"}
# the kernel time of a fix alone, from ncu's per-kernel durations of the measured step with and without it
# (`benchmarks/device/train_tf32.sh`: `ncu --metrics gpu__time_duration.sum --csv --page raw --print-units base`)
KERNEL_TIME_CSVS = {
    ("train_step", "tf32"): ("torch-loop-2026-12-01/train_planted.csv.xz", "torch-loop-2026-12-01/train_tf32.csv.xz")
}


def _csv_kernel_us(path: Path) -> float:
    """Microseconds of every kernel in an ncu --csv --page raw listing (durations in ns, maybe with thousands commas)."""
    import csv
    import lzma

    with lzma.open(path, "rt") as f:
        rows = [r for r in csv.reader(f) if r]
    head = next(r for r in rows if r[0] == "ID")
    col = head.index("gpu__time_duration.sum")
    return sum(float(r[col].replace(",", "")) for r in rows if r[0].isdigit()) / 1e3


def _fix_savings(folder: Path = ROOT / "fixtures", key: str = "saving_us") -> dict[tuple[str, str], float]:
    """(case, fix) -> measured saving (µs) of one fix alone against the planted code, from every planted.py bench
    under `folder` (the later path wins); `key` "saving_loop_us" for the saving measured in a loop."""
    out = {}
    for path in sorted(folder.glob("**/bench_*.jsonl")):
        for b in _jsonl(path):
            if "fix" in b and "case" in b and b.get(key) is not None:
                out[(b["case"], b["fix"])] = float(b[key])
    return out


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip().startswith("{")]


def _first_action(result: dict, kernel_ids: set[str]) -> dict | None:
    """The first "where to start" entry about these kernels (a kernel entry on one of them, or a program finding
    that names one)."""
    for a in result["top_actions"]:
        if a["scope"] == "kernel" and a["kernel_id"] in kernel_ids:
            return a
        if (
            a["scope"] == "program"
            and kernel_ids & set(a.get("kernel_ids") or [])
            and a["rule"] not in {p["rule"] for p in result["program_findings"]}
        ):
            return a  # the kernels one setting fixes (a switch rule's entries, merged)
        if a["scope"] == "program":
            p = next((p for p in result["program_findings"] if p["rule"] == a["rule"] and p["title"] == a["title"]), {})
            if kernel_ids & set(p.get("kernel_ids") or []):
                return {**a, "fix": p.get("fix", "")}
    return None


def _words(a: dict | None, result: dict) -> str:
    if a is None:
        return ""
    if a["scope"] == "kernel":
        k = next(k for k in result["kernels"] if k["id"] == a["kernel_id"])
        f = next((f for f in k["findings"] if f["rule"] == a["rule"]), {})
        return f"{a['title']} {f.get('fix', '')} {f.get('fix_code', '')}"
    return f"{a['title']} {a.get('fix', '')}"


def _table(header: tuple, rows: list[tuple], markdown: bool) -> None:
    if markdown:
        print("\n| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
    else:
        print()
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def _results_ns(result: dict, ids: set[int]) -> float:
    """GPU time of these results (a kernel's time split evenly over its results)."""
    return sum(
        k["duration_ns"] * len(ids & set(k["result_ids"])) / len(k["result_ids"])
        for k in result["kernels"]
        if k["result_ids"]
    )


def _error(est_us: float | None, meas_us: float) -> str:
    if est_us is None or meas_us <= 0:
        return "–"
    return f"{100 * (est_us / meas_us - 1):+.0f}%"


def launch_interval(given: str | None, bench_path: Path) -> LaunchInterval | None:
    """The host's launch interval of the machine the patterns were captured and timed on: `given` (µs, or a file of
    `python -m ncuadvisor.profile.launchrate` lines), else launch_interval.jsonl beside the bench file, else lines of
    the bench file that hold `interval_ns`; the median of the measured lines. None when none holds one (the captures
    of 2026-12-01 and 2026-12-06: PRG004 keeps its assumed launch cost)."""
    if given is not None and not Path(given).exists():
        try:
            return LaunchInterval(interval_ns=float(given) * 1e3, source="given to the scorer")
        except ValueError:
            raise SystemExit(f"--launch-interval {given!r}: neither a number of µs nor a file") from None
    path = Path(given) if given is not None else bench_path.parent / "launch_interval.jsonl"
    lines = _jsonl(path) if path.exists() else [b for b in _jsonl(bench_path) if "interval_ns" in b]
    values = sorted(float(b["interval_ns"]) for b in lines if isinstance(b.get("interval_ns"), (int, float)))
    if not values:
        return None
    where = path.name if path.exists() else bench_path.name
    return LaunchInterval(interval_ns=statistics.median(values), source=f"measured on the capture's machine ({where})")


def planted_tables(
    markdown: bool,
    patterns_report: Path | None = None,
    patterns_bench: Path | None = None,
    interval_given: str | None = None,
) -> None:
    """The access-pattern pairs and the PyTorch cases: first action, NCU's top rule, estimated vs measured saving.
    `patterns_report` and `patterns_bench`: the access patterns captured elsewhere (another GPU), with their timings;
    the patterns are analysed with the host's launch interval measured there when there is one (`launch_interval`)."""
    bench_path = patterns_bench or PLANTED / "bench_patterns.jsonl"
    if not bench_path.exists():
        return
    bench: dict[str, float] = {}
    for b in _jsonl(bench_path):  # a file of several --bench runs: the last run's timing of each kernel
        if "kernel" in b:
            bench[b["kernel"]] = b["median_us"]
    bench["small_update"] = bench.get("small_update_x4", 0.0)
    interval = launch_interval(interval_given, bench_path)
    if interval is not None:
        print(f"launch interval: {interval.interval_ns / 1e3:.2f} µs ({interval.source})")
    result = analyze(patterns_report or ROOT / "fixtures" / "patterns.ncu-rep.xz", launch_interval=interval).to_dict()
    by_name = {k["name"]: k for k in result["kernels"]}
    rows, ok_n, within, n_est = [], 0, 0, 0
    for planted, twin, what, (rule, words) in PATTERNS:
        k = by_name[planted]
        a = _first_action(result, {k["id"]})
        measured = bench[planted] - bench[twin]
        if rule == "at-roofline":
            ok = a is None
            est_us = None
        else:
            ok = a is not None and a["rule"] == rule and words.lower() in _words(a, result).lower()
            est_us = None
            if a is not None and a["scope"] == "kernel":  # the fraction of the kernel, applied to its measured time
                est_us = a["estimated_saving_ns"] / k["duration_ns"] * bench[planted]
            elif a is not None:
                est_us = a["estimated_saving_ns"] / 1e3
        ok_n += ok
        if est_us is not None and measured > 0:
            n_est += 1
            within += abs(est_us / measured - 1) <= 0.30
        rows.append(
            (
                planted,
                what,
                f"{a['rule']} {a['title'][:60]}" if a else "(none)",
                ncu_top(k)[0],
                f"{est_us:.1f} µs" if est_us is not None else "–",
                f"{measured:.1f} µs ({100 * measured / bench[planted]:.0f}%)",
                _error(est_us, measured),
                "ok" if ok else "MISS",
            )
        )
    header = (
        "planted kernel",
        "planted problem",
        "our first action",
        "NCU top rule",
        "est. saving",
        "measured",
        "error",
        "",
    )
    _table(header, rows, markdown)
    print(f"\naccess patterns: first action right {ok_n}/{len(rows)}; estimates within ±30%: {within}/{n_est}")
    if patterns_report is not None:  # another GPU's capture: the PyTorch cases are this machine's fixtures
        return

    tbench = {(b["case"], b["variant"]): b["median_us"] for b in _jsonl(LOOP_BENCH) if "variant" in b}
    fixes = _fix_savings()
    loop_saving = {b["case"]: b["saving_loop_us"] for b in _jsonl(LOOP_BENCH) if "saving_loop_us" in b}
    fix_loop = _fix_savings(key="saving_loop_us")
    results: dict[str, dict] = {}
    per_kernel: dict[
        str, list[dict]
    ] = {}  # each report's "where to start" with one entry per kernel (no switch merged)
    rows, ok_n, within, n_est = [], 0, 0, 0
    loop_within, loop_n = 0, 0
    from wall_accuracy import case_rows, wall_column  # benchmarks/: the host-timeline column

    walls = case_rows()
    for case, report, ids, twin_ids, what, cats in TORCH_CASES:
        if report not in results:
            typed = analyze(ROOT / "fixtures" / f"{report}.ncu-rep.xz")
            results[report] = typed.to_dict()
            per_kernel[report] = [
                e.to_dict()
                for e in top_actions(
                    typed.kernels, typed.report.total_duration_ns, typed.program_findings, limit=len(typed.kernels)
                )
            ]
        res = results[report]
        ids_set = set(ids)
        kernels = [k for k in res["kernels"] if ids_set & set(k["result_ids"])]
        a = _first_action(res, {k["id"] for k in kernels})
        longest = max(kernels, key=lambda k: k["duration_ns"])
        planted_us, twin_us = tbench.get((case, "planted")), tbench.get((case, "twin"))
        measured = planted_us - twin_us if planted_us is not None and twin_us is not None else None
        alone = (case, RULE_FIX.get(a["rule"], "")) if a else None
        if alone in fixes:  # the twin applies several fixes; this one was measured alone too
            measured = fixes[alone]
        est_us = a["estimated_saving_ns"] / 1e3 if a else None
        switch = bool(a and a["rule"] in SWITCH_RULES)
        if switch and a:  # one switch: every entry of the rule on the case's kernels
            ids_k = {k["id"] for k in kernels}
            est_us = (
                sum(
                    e["estimated_saving_ns"]
                    for e in per_kernel[report]
                    if e["scope"] == "kernel" and e["rule"] == a["rule"] and e["kernel_id"] in ids_k
                )
                / 1e3
            )
        ok = a is not None and a["category"] in cats
        verdict = (longest["findings"] or [None])[0]
        if a is None and measured is not None and measured < 0 and verdict and verdict["category"] == "at-roofline":
            ok = True  # the measured fix is slower here: "keep it" on the planted kernel is the right answer
        kernel_saving = None  # in the report's own kernel time: the planted results' minus the twin's
        if twin_ids is not None:
            kernel_saving = (_results_ns(res, ids_set) - _results_ns(res, set(twin_ids))) / 1e3
        if alone in KERNEL_TIME_CSVS:  # the fix alone, in kernel time from its own capture
            before, after = (ROOT / "fixtures" / f for f in KERNEL_TIME_CSVS[alone])
            kernel_saving = _csv_kernel_us(before) - _csv_kernel_us(after)
        ok_n += ok
        if est_us is not None and measured is not None and measured > 0:
            n_est += 1
            within += abs(est_us / measured - 1) <= 0.30
        in_loop = fix_loop.get(alone) if alone in fixes else loop_saving.get(case)  # the fix alone where measured
        if est_us is not None and in_loop is not None and in_loop > 0:
            loop_n += 1
            loop_within += abs(est_us / in_loop - 1) <= 0.30
        rows.append(
            (
                case,
                what,
                f"{a['rule']} {a['title'][:60]}"
                if a
                else (f"({verdict['rule']}: {verdict['title'][:60]})" if verdict else "(none)"),
                f"{ncu_top(longest)[0]} on {longest['name'][:32]}",
                (f"{est_us:.1f} µs" + (f" (all {a['rule']})" if switch and a else "")) if est_us is not None else "–",
                (f"{measured:.1f} µs" + (f" ({alone[1]} alone)" if alone in fixes else ""))
                if measured is not None
                else "–",
                _error(est_us, measured) if measured is not None else "–",
                f"{kernel_saving:.1f} µs ({_error(est_us, kernel_saving)})"
                if kernel_saving is not None and (alone not in fixes or alone in KERNEL_TIME_CSVS)
                else "–",
                (f"{in_loop:.1f} µs" + (f" ({_error(est_us, in_loop)})" if est_us is not None else ""))
                if in_loop is not None
                else "–",
                wall_column(case, walls),
                "ok" if ok else "MISS",
            )
        )
    header = (
        "case",
        "planted problem",
        "our first action",
        "NCU top rule",
        "est. saving",
        "measured (per call)",
        "error",
        "measured in kernel time (error)",
        "measured in a loop (error)",
        "wall est. with the host timeline vs loop, 2026-12-02 (error)",
        "",
    )
    _table(header, rows, markdown)
    print(
        f"\nPyTorch cases: first action right {ok_n}/{len(rows)}; estimates within ±30%: {within}/{n_est} per call, "
        f"{loop_within}/{loop_n} in a loop"
    )


if __name__ == "__main__":
    raise SystemExit(main())
