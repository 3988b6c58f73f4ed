"""What each phase-2 collection costs per launch, and whether it finds the same things: one CUDA program profiled on
every launch with ncu's full set, the 13 analysis sections, and the declared collection (the metrics the analysis
reads, by name, with the sections of per-instruction data), each report analysed by `ncuadvisor report`.

For each collection: replay passes per launch (ncu's `==PROF== ... - N passes` lines), wall time, and per kernel the
first finding and the set of rule codes against the full set's. `--per-metric-s S` then profiles one launch with
each declared metric alone (until S seconds are spent) and lists the metrics that need the most passes: the ones to
look at to bring the declared collection's passes down.

    python3 benchmarks/collection_cost.py --binary bin/patterns --binary-args=--once --out /tmp/cc \
        [--group-passes-s 60] [--per-metric-s 120] [--json /tmp/cc/collection_cost.json]
    python3 benchmarks/collection_cost.py --analyze --out /tmp/cc   # the comparison again, on the saved reports

The comparison: for the kernels holding 90% of the time (by the full set's report), the first finding of each
collection against the full set's (on the first launch of each kernel, the launch `profile` analyses), whether the
set of rules found is the same, and whether the program findings are the same.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.analysis import roofline  # noqa: E402
from ncuadvisor.pipeline.analyze import ANALYSIS_SECTIONS, CARD_METRICS, analyze  # noqa: E402
from ncuadvisor.profile import ncu as ncu_mod  # noqa: E402
from ncuadvisor.profile.output import parse_line  # noqa: E402
from ncuadvisor.rulekit import engine  # noqa: E402


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


def findings(report: Path) -> dict:
    """Per kernel (demangled name, grid, block): the first finding's rule and every finding's rule, on the first
    launch of each group (the launch `profile` analyses); and the program findings' rules."""
    res = analyze(report, pick="first").to_dict()
    kernels = {}
    for k in res["kernels"]:
        rules = [f["rule"] for f in k.get("findings") or []]
        kernels[f"{k['demangled']} {k['grid']} {k['block']}"] = {
            "name": k["name"],
            "first": rules[0] if rules else "(none)",
            "rules": sorted(set(rules)),
            "bound": k.get("bound"),
            "time_share": round(k.get("time_share") or 0.0, 4),
        }
    program = sorted({f["rule"] for f in res.get("program_findings") or []})
    return {"kernels": kernels, "program": program}


def agreement(full: dict, other: dict, share: float = 0.9) -> dict:
    """`other`'s first findings against `full`'s on the kernels holding `share` of the time (by the full report's
    shares), the sets of rules on those kernels, and the program findings."""
    rows, acc = [], 0.0
    for key, f in sorted(full["kernels"].items(), key=lambda kv: -kv[1]["time_share"]):
        if acc >= share - 1e-12:
            break
        acc += f["time_share"]
        g = other["kernels"].get(key)
        rows.append(
            {
                "kernel": f["name"],
                "key": key,
                "time_share": f["time_share"],
                "full": f["first"],
                "other": g["first"] if g else "(absent)",
                "same_first": bool(g and g["first"] == f["first"]),
                "same_rules": bool(g and g["rules"] == f["rules"]),
                "full_rules": f["rules"],
                "other_rules": g["rules"] if g else None,
            }
        )
    return {
        "kernels": rows,
        "first": f"{sum(r['same_first'] for r in rows)}/{len(rows)}",
        "rules": f"{sum(r['same_rules'] for r in rows)}/{len(rows)}",
        "program_same": full["program"] == other["program"],
        "program": {"full": full["program"], "other": other["program"]},
    }


def metric_groups(metrics: list[str]) -> dict[str, list[str]]:
    """The declared metrics by kind of counter (what ncu may schedule into passes of its own)."""
    kinds = [
        ("stall-reasons", lambda m: "issue_stalled" in m),
        ("sass-op-counts", lambda m: "__sass_" in m),
        ("tensor-paths", lambda m: m.startswith("sm__ops_path_tensor")),
        ("pipe-utilization", lambda m: m.startswith(("sm__inst_executed_pipe", "sm__pipe_", "sm__inst_issued"))),
        ("throughput-breakdowns", lambda m: "throughput" in m),
        ("source-sectors", lambda m: m.startswith(("memory_l2", "memory_l1"))),
        ("issue-and-warps", lambda m: m.startswith(("smsp__issue", "smsp__inst", "smsp__thread", "sm__warps"))),
        ("dram", lambda m: m.startswith("dram__")),
        ("l2", lambda m: m.startswith("lts__")),
        ("l1", lambda m: m.startswith("l1tex__")),
        ("launch-and-cycles", lambda m: True),
    ]
    out: dict[str, list[str]] = {name: [] for name, _ in kinds}
    for m in metrics:
        out[next(name for name, test in kinds if test(m))].append(m)
    return {k: v for k, v in out.items() if v}


def group_passes(program: list[str], metrics: list[str], budget_s: float, launch: int) -> dict:
    """Replay passes of one launch (the `launch`-th) for each kind of metric alone and for every metric but that
    kind (how many passes dropping it saves in the whole collection), and for SourceCounters alone."""
    t0, out = time.monotonic(), {}
    groups = metric_groups(metrics)
    base = ["--launch-skip", str(launch), "--launch-count", "1"]
    out["all"] = run_ncu([*base, "--metrics", ",".join(metrics)], program, None, 120)["passes_max"]
    print(f"  all {len(metrics)} declared metrics: {out['all']} passes", flush=True)
    out["SourceCounters section"] = run_ncu([*base, "--section", "SourceCounters"], program, None, 120)["passes_max"]
    # the default collection for PyTorch programs (ATen and library kernels: no CUDA or Triton rule applies)
    from ncuadvisor.profile.session import declared_collection

    secs, torch_metrics = declared_collection(engine.discover([]), [("k", "at::native::k"), ("nvjet_k", "nvjet_k")])
    got = run_ncu([*base, *ncu_mod.section_args(secs, torch_metrics)], program, None, 120)["passes_max"]
    out["pytorch-and-library collection"] = {"sections": secs, "metrics": len(torch_metrics), "passes": got}
    print(f"  pytorch-and-library collection ({secs}, {len(torch_metrics)} metrics): {got} passes", flush=True)
    print(
        f"  all {len(metrics)} declared metrics: {out['all']} passes; SourceCounters alone: "
        f"{out['SourceCounters section']}",
        flush=True,
    )
    # what phase 1 could add to its duration and stay at one pass: the counters that place a kernel at its floor
    dur = ncu_mod.DURATION_METRIC
    for label, extra in (
        ("phase 1 + tensor pipe", ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"]),
        (
            "phase 1 + speed of light",
            [
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            ],
        ),
        ("phase 1 + dram bytes", ["dram__bytes_read.sum", "dram__bytes_write.sum"]),
    ):
        got = run_ncu([*base, "--metrics", ",".join([dur, *extra])], program, None, 60)["passes_max"]
        out[label] = {"metrics": [dur, *extra], "passes": got}
        print(f"  {label}: {got} passes", flush=True)
    # what dropping each kind saves: in the PyTorch programs' collection first (the one to bring to 12 passes), then
    # in every rule's; then each kind alone
    torch_groups = metric_groups(torch_metrics)
    plan = [("torch_all_but", name, torch_metrics, ms) for name, ms in torch_groups.items()]
    plan += [("all_but", name, metrics, ms) for name, ms in groups.items()]
    plan += [("alone", name, ms, []) for name, ms in groups.items()]
    for what, name, within, ms in plan:
        if time.monotonic() - t0 > budget_s:
            out["cut_short"] = True
            break
        rest = [m for m in within if m not in ms]
        args = [*base, *ncu_mod.section_args(secs if what == "torch_all_but" else [], rest)]
        got = run_ncu(args, program, None, 120)["passes_max"] if rest else 0
        out.setdefault(name, {"metrics": len(ms), "torch_metrics": len(torch_groups.get(name, []))})[what] = got
        print(f"  {what} {name} ({len(within) - len(rest) if ms else len(rest)} metrics): {got} passes", flush=True)
    out["groups"] = groups
    return out


@contextlib.contextmanager
def reading_without(hide: Callable[[str], bool]):
    """While active, every report reads as if ncu had not collected the scalar metrics for which `hide` is true."""
    from ncuadvisor.load.reader import ReportReader

    orig = ReportReader.results

    def results(self, metrics):  # type: ignore[no-untyped-def]
        frame = orig(self, metrics)
        for m in metrics:
            if m in frame.columns and hide(m):
                frame.set_column(m, [None] * len(frame))
        return frame

    ReportReader.results = results  # type: ignore[method-assign]
    try:
        yield
    finally:
        ReportReader.results = orig  # type: ignore[method-assign]


def only_metrics(kept: set[str]):  # type: ignore[no-untyped-def]
    """While active, every report reads as if ncu had collected only the `kept` scalar metrics (and what every
    report holds: the launch identity, device attributes, the derived__ metrics of the sections' own rules): a
    report of a larger collection stands in for a smaller one."""
    return reading_without(lambda m: m not in kept and not m.startswith(("derived__", "device__attribute")))


def simulate(full_report: Path, phase1_report: Path | None) -> dict:
    """The first findings and program findings of `full_report` as read whole and as read with only what the default
    declared collection of its chosen kernels would hold (`session.declared_collection`), both analysed as phase 2
    is (merged with `phase1_report` when given)."""
    from profile_cost import as_profile

    from ncuadvisor.profile.merge import analyze_phase1
    from ncuadvisor.profile.selection import select_kernels
    from ncuadvisor.profile.session import declared_collection

    rules = engine.discover([])

    def run() -> dict:
        if phase1_report is None:
            return analyze(full_report, rules=rules, pick="first").to_dict()
        return as_profile(phase1_report, full_report)  # merged as `profile` merges its phase 2

    def summary(res: dict) -> dict:
        kernels = {}
        for k in res["kernels"]:
            if k.get("profiled") is False:
                continue
            rules_found = [f["rule"] for f in k.get("findings") or []]
            kernels[f"{k['demangled']} {k['grid']} {k['block']}"] = {
                "name": k["name"],
                "first": rules_found[0] if rules_found else "(none)",
                "rules": sorted(set(rules_found)),
                "time_share": round(k.get("time_share") or 0.0, 4),
            }
        return {"kernels": kernels, "program": sorted({f["rule"] for f in res.get("program_findings") or []})}

    whole = run()
    if phase1_report is not None:
        _, _, groups = analyze_phase1(phase1_report, rules)
        chosen = [(k.name, k.demangled) for k in select_kernels(groups, top=None, coverage=None)]
    else:
        chosen = [(k["name"], k["demangled"]) for k in whole["kernels"]]
    sections, metrics = declared_collection(rules, chosen)
    with only_metrics(set(metrics)):
        part = run()
    out = {"sections": sections, "metrics": metrics, "whole": summary(whole), "declared": summary(part)}
    out["agreement"] = agreement(out["whole"], out["declared"])
    return out


def print_agreement(res: dict) -> None:
    full = res["collections"].get("full", {}).get("findings")
    if not full:
        print("no findings of the full set to compare with", flush=True)
        return
    others = [n for n in res["collections"] if n != "full" and res["collections"][n].get("findings")]
    res["agreement"] = {n: agreement(full, res["collections"][n]["findings"]) for n in others}
    print(f"\n| kernel | share | full: first | {' | '.join(others)} |")
    print("|---|---|---|" + "---|" * len(others))
    for i, row in enumerate(res["agreement"][others[0]]["kernels"] if others else []):
        cells = [res["agreement"][n]["kernels"][i]["other"] for n in others]
        print(f"| `{row['kernel'][:50]}` | {row['time_share']:.1%} | {row['full']} | {' | '.join(cells)} |")
    for n in others:
        a = res["agreement"][n]
        print(
            f"{n}: same first finding {a['first']}, same rules {a['rules']}, program findings "
            f"{'same' if a['program_same'] else 'differ'} ({a['program']})",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", help="the CUDA program (omit with --analyze)")
    ap.add_argument("--binary-args", default="")
    ap.add_argument("--out", type=Path, default=Path("/tmp/collection_cost"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--per-metric-s", type=float, default=0.0)
    ap.add_argument("--group-passes-s", type=float, default=0.0, help="time for the passes of each kind of metric")
    ap.add_argument("--group-launch", type=int, default=0, help="which launch the pass counts profile")
    ap.add_argument("--timeout-s", type=float, default=240.0, help="per ncu run")
    ap.add_argument("--collections", default="full,sections,declared,metrics-only", help="which, comma-separated")
    ap.add_argument(
        "--analyze", action="store_true", help="only analyse the reports already in --out (NAME.ncu-rep per collection)"
    )
    ap.add_argument("--no-analysis", action="store_true", help="run ncu and count passes only (analyse later)")
    ap.add_argument(
        "--simulate",
        type=Path,
        help="a report of a larger collection (the full set): compare its findings with those of the same report read "
        "with only the default declared collection's metrics (no GPU)",
    )
    ap.add_argument("--phase1", type=Path, help="with --simulate: the phase-1 report to merge with, as phase 2 is")
    args = ap.parse_args()
    if args.simulate:
        sim = simulate(args.simulate, args.phase1)
        a = sim["agreement"]
        print(f"declared collection: sections {sim['sections']}, {len(sim['metrics'])} metrics")
        print("| kernel | share | whole report | declared metrics only | same rules |\n|---|---|---|---|---|")
        for r in a["kernels"]:
            print(f"| `{r['kernel'][:50]}` | {r['time_share']:.1%} | {r['full']} | {r['other']} | {r['same_rules']} |")
        print(f"same first finding {a['first']}, same rules {a['rules']}, program findings {a['program']}")
        if args.json:
            args.json.write_text(json.dumps(sim, indent=1, default=str))
        return 0
    if not args.analyze and not args.binary:
        ap.error("--binary is required unless --analyze")
    args.out.mkdir(parents=True, exist_ok=True)
    program = [str(Path(args.binary).resolve()), *args.binary_args.split()] if args.binary else []
    rules = engine.discover([])
    scalars = roofline.METRICS + CARD_METRICS + engine.required_metrics(rules)
    declared = ncu_mod.declared_metrics([ncu_mod.DURATION_METRIC, *scalars])
    from ncuadvisor.profile.session import declared_collection

    # the default collection for CUDA code (the rules of CUDA and Triton kernels, the program rules)
    cuda_sections, cuda_metrics = declared_collection(rules, [("kernel", "kernel(float *)")])
    collections = {
        "full": ["--set", "full"],
        "sections": ncu_mod.section_args(ANALYSIS_SECTIONS),
        "declared": ncu_mod.section_args(cuda_sections, cuda_metrics),
        "declared-all": ncu_mod.section_args(ncu_mod.DECLARED_SECTIONS, declared),
        "metrics-only": ncu_mod.section_args([], cuda_metrics),
    }
    json_path = args.json or args.out / "collection_cost.json"
    # the collections of an earlier call with the same --json are kept (a call per collection adds up to one table)
    res: dict = json.loads(json_path.read_text()) if json_path.exists() else {}
    res.update(program=program or res.get("program"), declared_metrics=declared)
    res.setdefault("collections", {})
    if args.group_passes_s > 0 and program and not args.analyze:  # first: ncu alone, nothing read afterwards
        print("replay passes of one launch by kind of metric:", flush=True)
        res["group_passes"] = group_passes(program, declared, args.group_passes_s, args.group_launch)
        json_path.write_text(json.dumps(res, indent=1, default=str))
    for name, extra in collections.items():
        if name not in args.collections.split(","):
            continue
        base = args.out / name
        run = res["collections"].get(name, {})
        if not args.analyze:
            run = run_ncu([*extra, "--import-source", "yes", "-f"], program, base, args.timeout_s)
            print(
                f"{name}: rc={run['rc']} {run['wall_s']} s, {run['launches']} launches, passes/launch "
                f"{run['passes_median']} (max {run['passes_max']}) {run['errors']}",
                flush=True,
            )
        report = next((p for p in (Path(f"{base}.ncu-rep"), Path(f"{base}.ncu-rep.xz")) if p.exists()), None)
        if report is not None and not args.no_analysis:
            try:
                run["findings"] = findings(report)
                run.pop("findings_error", None)
            except Exception as exc:  # a collection the analysis cannot read: recorded, not fatal
                run["findings_error"] = f"{type(exc).__name__}: {exc}"
                print(f"{name}: analysis failed: {run['findings_error']}", flush=True)
        res["collections"][name] = run
        json_path.write_text(json.dumps(res, indent=1, default=str))
    if not args.no_analysis:
        print_agreement(res)
        json_path.write_text(json.dumps(res, indent=1, default=str))
    if args.per_metric_s > 0 and program:
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
