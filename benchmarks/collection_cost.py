"""What each phase-2 collection costs per launch, and whether it finds the same things: one CUDA program profiled on
every launch with ncu's full set, the 13 analysis sections, and the declared collection (the metrics the analysis
reads, by name, with the sections of per-instruction data), each report analysed by `ncuadvisor report`.

For each collection: replay passes per launch (ncu's `==PROF== ... - N passes` lines), wall time, and per kernel the
first finding and the set of rule codes against the full set's. `--per-metric-s S` then profiles one launch with
each declared metric alone (until S seconds are spent) and lists the metrics that need the most passes: the ones to
look at to bring the declared collection's passes down.

    python3 benchmarks/collection_cost.py --binary bin/patterns --binary-args "--once" --out /tmp/cc \
        [--per-metric-s 120] [--json /tmp/cc/collection_cost.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor import engine  # noqa: E402
from ncuadvisor.analysis import roofline  # noqa: E402
from ncuadvisor.analysis.pipeline import ANALYSIS_SECTIONS, CARD_METRICS, analyze  # noqa: E402
from ncuadvisor.profile import ncu as ncu_mod  # noqa: E402
from ncuadvisor.profile.output import parse_line  # noqa: E402


def run_ncu(args: list[str], program: list[str], out_base: Path | None, timeout: float) -> dict:
    cmd = ["ncu", "--clock-control", "none", *args] + (["-o", str(out_base)] if out_base else []) + program
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        text, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, rc = str(exc.stdout or "") + str(exc.stderr or ""), 124
    passes = [ev.passes for ev in map(parse_line, text.splitlines()) if ev.kind == "progress" and ev.passes]
    errors = [ln for ln in text.splitlines() if ln.startswith("==ERROR==")]
    return {
        "cmd": cmd,
        "rc": rc,
        "wall_s": round(time.monotonic() - t0, 2),
        "launches": len(passes),
        "passes_median": statistics.median(passes) if passes else None,
        "passes_max": max(passes) if passes else None,
        "errors": errors[:5],
    }


def findings(report: Path) -> dict[str, dict]:
    """Per kernel (name and launch shape): the first finding's code and every finding's code."""
    res = analyze(report).to_dict()
    out = {}
    for k in res["kernels"]:
        key = f"{k['name']} {k.get('grid', '')} {k.get('block', '')}"
        codes = [f["code"] for f in k.get("findings", [])]
        out[key] = {"first": codes[0] if codes else None, "codes": sorted(set(codes)), "bound": k.get("bound")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--binary-args", default="")
    ap.add_argument("--out", type=Path, default=Path("/tmp/collection_cost"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--per-metric-s", type=float, default=0.0)
    ap.add_argument("--timeout-s", type=float, default=240.0, help="per ncu run")
    ap.add_argument("--collections", default="full,sections,declared,metrics-only", help="which, comma-separated")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    program = [str(Path(args.binary).resolve()), *args.binary_args.split()]
    rules = engine.discover([])
    scalars = roofline.METRICS + CARD_METRICS + engine.required_metrics(rules)
    declared = ncu_mod.declared_metrics([ncu_mod.DURATION_METRIC, *scalars])
    collections = {
        "full": ["--set", "full"],
        "sections": ncu_mod.section_args(ANALYSIS_SECTIONS),
        "declared": ncu_mod.section_args(ncu_mod.DECLARED_SECTIONS, declared),
        "metrics-only": ncu_mod.section_args([], declared),
    }
    res: dict = {"program": program, "declared_metrics": declared, "collections": {}}
    json_path = args.json or args.out / "collection_cost.json"
    for name, extra in collections.items():
        if name not in args.collections.split(","):
            continue
        base = args.out / name
        run = run_ncu([*extra, "--import-source", "yes", "-f"], program, base, args.timeout_s)
        report = base.with_name(base.name + ".ncu-rep")
        if report.exists():
            try:
                run["findings"] = findings(report)
            except Exception as exc:  # a collection the analysis cannot read: recorded, not fatal
                run["findings_error"] = f"{type(exc).__name__}: {exc}"
        res["collections"][name] = run
        print(
            f"{name}: rc={run['rc']} {run['wall_s']} s, {run['launches']} launches, passes/launch "
            f"{run['passes_median']} (max {run['passes_max']}) {run['errors']}",
            flush=True,
        )
        json_path.write_text(json.dumps(res, indent=1, default=str))
    full = res["collections"].get("full", {}).get("findings") or {}
    print("\n| kernel | full: first | sections | declared | metrics-only | declared codes = full codes |")
    print("|---|---|---|---|---|---|")
    agree = {n: 0 for n in collections}
    for key, f in full.items():
        cells = []
        for n in ("sections", "declared", "metrics-only"):
            g = (res["collections"].get(n, {}).get("findings") or {}).get(key)
            cells.append(g["first"] if g else "–")
            agree[n] += bool(g and g["first"] == f["first"])
        d = (res["collections"].get("declared", {}).get("findings") or {}).get(key)
        same = "yes" if d and d["codes"] == f["codes"] else f"no ({d and d['codes']} vs {f['codes']})"
        print(f"| `{key[:60]}` | {f['first']} | {' | '.join(str(c) for c in cells)} | {same} |")
    res["first_finding_agreement"] = {n: f"{agree[n]}/{len(full)}" for n in collections if n != "full"}
    print("first finding as the full set's:", res["first_finding_agreement"], flush=True)
    json_path.write_text(json.dumps(res, indent=1, default=str))
    if args.per_metric_s > 0:
        t0, per = time.monotonic(), {}
        for m in declared:
            if time.monotonic() - t0 > args.per_metric_s:
                break
            run = run_ncu(["--metrics", m, "--launch-count", "1"], program, None, 60)
            per[m] = run["passes_max"]
        res["per_metric_passes"] = dict(sorted(per.items(), key=lambda kv: -(kv[1] or 0)))
        print(f"per-metric passes ({len(per)} of {len(declared)} metrics):", flush=True)
        for m, p in list(res["per_metric_passes"].items())[:25]:
            print(f"  {p}  {m}")
        json_path.write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
