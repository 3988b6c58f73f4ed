"""The two Speed Of Light percentages derived from unit metrics, against NCU's own, on every report that holds both.

`sm__throughput`, `gpu__compute_memory_throughput` and `l1tex__throughput` (% of peak) are each the maximum over a
breakdown of many sub-unit counters and cost ncu replay passes of their own. Without them the roofline derives them
from single counters (`roofline.derive_sol`, `roofline.L1_UNITS`). For each report below, every kernel group is
analysed twice, as it is and with the three hidden (as if ncu had not collected them), and compared: the
percentages (measured vs derived), the bound, the limiter, the first finding and the set of rules found.

    python3 benchmarks/derived_sol.py [--json OUT.json] [--markdown] [NAME ...]   # NAME: a fixture, e.g. torch_eager

Without names: every fixture holding the two percentages (the whole-model captures with --big).
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.analysis import roofline  # noqa: E402
from ncuadvisor.pipeline.analyze import analyze  # noqa: E402
from ncuadvisor.rulekit import engine  # noqa: E402

SOL = list(roofline.NOT_COLLECTED)  # the two Speed Of Light percentages and L1's throughput
FIXTURES = [
    "flaws",
    "patterns",
    "cache",
    "ceilings",
    "ceilings_chain",
    "fp16",
    "wave",
    "probe",
    "tiny_sections",
    "pipeline_v0",
    "pipeline_v1",
    "pipeline_v2",
    "multigpu",
    "multiproc",
    "torch_cast_copy",
    "torch_compile",
    "torch_dynshapes",
    "torch_eager",
    "torch_gemm_conv",
    "torch_norm_chain",
    "torch_scatter",
    "torch_train",
    "profile-cost-2026-11-30/train_naive_full",
    # profile-cost-2026-11-30/cuda_naive_full was removed for room on 2026-12-06 (at commit 21e67ef)
]
BIG = ["model_step_315", "model_step_1010"]


def hidden(metrics: list[str]):  # type: ignore[no-untyped-def]
    """While active, every report reads as if ncu had not collected `metrics`."""
    from collection_cost import reading_without  # benchmarks/, this script's folder

    return reading_without(lambda m: m in metrics)


def unpack(name: str, folder: Path) -> Path:
    src = ROOT / "fixtures" / f"{name}.ncu-rep.xz"
    dst = folder / (name.replace("/", "_") + ".ncu-rep")
    with lzma.open(src, "rb") as fin, dst.open("wb") as fout:
        shutil.copyfileobj(fin, fout)
    return dst


def summary(res) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    out = {}
    for k in res.kernels:
        r = k.roofline
        out[f"{k.id} {k.name}"] = {
            "time_share": k.time_share,
            "memory_pct": r.sol.get("memory_pct"),
            "compute_pct": r.sol.get("compute_pct"),
            "l1_pct": r.sol.get("l1_pct"),
            "bound": k.bound,
            "limiter": r.limiter,
            "first": k.findings[0].rule if k.findings else "(none)",
            "rules": sorted({f.rule for f in k.findings}),
        }
    return out


def compare(name: str, path: Path, rules: list) -> dict:  # type: ignore[type-arg]
    whole = summary(analyze(path, rules=rules))
    with hidden(SOL):
        derived = summary(analyze(path, rules=rules))
    rows = []
    for key, w in whole.items():
        d = derived.get(key)
        if d is None or w["memory_pct"] is None or w["compute_pct"] is None:
            continue
        rows.append(
            {
                "kernel": key,
                "time_share": w["time_share"],
                "measured": [w["memory_pct"], w["compute_pct"], w["l1_pct"]],
                "derived": [d["memory_pct"], d["compute_pct"], d["l1_pct"]],
                "bound": [w["bound"], d["bound"]],
                "limiter": [w["limiter"], d["limiter"]],
                "first": [w["first"], d["first"]],
                "rules_same": w["rules"] == d["rules"],
            }
        )
    return {"report": name, "kernels": rows}


def totals(rep: dict) -> dict:
    rows = rep["kernels"]
    dm = [abs((r["derived"][0] or 0) - r["measured"][0]) for r in rows]
    dc = [abs((r["derived"][1] or 0) - r["measured"][1]) for r in rows]
    dl = [abs((r["derived"][2] or 0) - (r["measured"][2] or 0)) for r in rows]
    return {
        "report": rep["report"],
        "kernels": len(rows),
        "max_dmem": max(dm, default=0.0),
        "max_dcomp": max(dc, default=0.0),
        "mean_dmem": sum(dm) / len(dm) if dm else 0.0,
        "mean_dcomp": sum(dc) / len(dc) if dc else 0.0,
        "max_dl1": max(dl, default=0.0),
        "same_bound": sum(r["bound"][0] == r["bound"][1] for r in rows),
        "same_limiter": sum(r["limiter"][0] == r["limiter"][1] for r in rows),
        "same_first": sum(r["first"][0] == r["first"][1] for r in rows),
        "same_rules": sum(r["rules_same"] for r in rows),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="fixtures (default: every one holding the two percentages)")
    ap.add_argument("--big", action="store_true", help="also the whole-model captures (315 and 1,010 results)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = ap.parse_args()
    names = args.names or FIXTURES + (BIG if args.big else [])
    rules = engine.discover([])
    reports, table = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = unpack(name, Path(tmp))
            rep = compare(name, path, rules)
            path.unlink()
            if not rep["kernels"]:
                print(f"{name}: no kernel with both percentages", file=sys.stderr, flush=True)
                continue
            reports.append(rep)
            table.append(totals(rep))
            t = table[-1]
            print(
                f"{name}: {t['kernels']} kernels, |Δ| memory max {t['max_dmem']:.1f} mean {t['mean_dmem']:.2f}, "
                f"compute max {t['max_dcomp']:.1f} mean {t['mean_dcomp']:.2f}, L1 max {t['max_dl1']:.2f}; same bound {t['same_bound']}, "
                f"limiter {t['same_limiter']}, first finding {t['same_first']}, rules {t['same_rules']}",
                file=sys.stderr,
                flush=True,
            )
            for r in rep["kernels"]:
                if r["bound"][0] != r["bound"][1] or r["first"][0] != r["first"][1] or not r["rules_same"]:
                    print(f"    differs: {json.dumps(r)}", file=sys.stderr, flush=True)
    if args.markdown:
        print(
            "| report | kernels | memory % \\|Δ\\| max / mean | compute % \\|Δ\\| max / mean | L1 % \\|Δ\\| max | "
            "same bound | same limiter | same first finding | same rules |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for t in table:
            n = t["kernels"]
            print(
                f"| `{t['report']}` | {n} | {t['max_dmem']:.1f} / {t['mean_dmem']:.2f} | {t['max_dcomp']:.1f} / "
                f"{t['mean_dcomp']:.2f} | {t['max_dl1']:.2f} | {t['same_bound']}/{n} | {t['same_limiter']}/{n} | {t['same_first']}/{n} | "
                f"{t['same_rules']}/{n} |"
            )
        n = sum(t["kernels"] for t in table)
        print(
            f"| **all** | {n} | {max(t['max_dmem'] for t in table):.1f} | {max(t['max_dcomp'] for t in table):.1f} | "
            f"{max(t['max_dl1'] for t in table):.2f} | "
            f"{sum(t['same_bound'] for t in table)}/{n} | {sum(t['same_limiter'] for t in table)}/{n} | "
            f"{sum(t['same_first'] for t in table)}/{n} | {sum(t['same_rules'] for t in table)}/{n} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"totals": table, "reports": reports}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
