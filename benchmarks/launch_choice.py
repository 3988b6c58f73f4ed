"""Does the analysis of a kernel depend on which of its launches it looks at?

`ncuadvisor report` analyses the launch of median duration of each kernel group (same name, grid and block);
`ncuadvisor profile` profiles the first launch of each group in depth. On a report that holds every launch with the
analysis sections, this script analyses it three ways (`analyze(pick=...)`): the median launch, the first launch,
and every launch on its own, and says for each group:

- the first finding on the median launch and on the first launch (do the two strategies agree?);
- how the first finding is spread over all the group's launches, weighted by their time (is the median launch's
  finding the finding of most of the time?).

    python benchmarks/launch_choice.py fixtures/model_step_1010.ncu-rep.xz [more reports] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncuadvisor.pipeline.analyze import analyze  # noqa: E402
from ncuadvisor.profile.merge import Phase1Time  # noqa: E402


def first_rule(k: dict) -> str:
    f = k.get("findings") or []
    return f[0]["rule"] if f else "(none)"


def group_key(k: dict) -> tuple[str, str, str, str]:
    return (str(k.get("process") or ""), k["demangled"], k["grid"], k["block"])


def analyses(path: Path) -> tuple[dict, dict, dict]:
    """The report analysed on the median launch of each group, on the first, and on every launch on its own. Every
    launch on its own is judged by the time of its group's launches of its size (as `ncuadvisor profile` judges the
    one launch it profiles), not by its own share: a rule with a time-share threshold (PYT001) would otherwise
    split a group by launch count alone."""
    typed_median = analyze(path, pick="median")
    median, first = typed_median.to_dict(), analyze(path, pick="first").to_dict()
    once = analyze(path, pick="each").to_dict()
    group_of = {rid: k["id"] for k in median["kernels"] for rid in k["result_ids"]}
    launches = [
        {
            "kernel_id": group_of.get(k["result_ids"][0]),
            "result_id": k["result_ids"][0],
            "duration_ns": k["duration_ns"],
        }
        for k in once["kernels"]
    ]
    each = analyze(path, pick="each", group_time=Phase1Time(typed_median, launches)).to_dict()
    return median, first, each


def compare(path: Path) -> dict:
    t0 = time.perf_counter()
    median, first, each = analyses(path)
    res = summarize(median, first, each)
    res["report"], res["analysis_s"] = path.name, round(time.perf_counter() - t0, 1)
    return res


def summarize(median: dict, first: dict, each: dict) -> dict:
    """Per group: the first finding on its median launch, on its first launch, and over all its launches."""
    by_first = {group_key(k): k for k in first["kernels"]}
    spread: dict[tuple, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for k in each["kernels"]:
        spread[group_key(k)][first_rule(k)] += float(k["duration_ns"])
    rows = []
    for k in median["kernels"]:
        key = group_key(k)
        dist = spread.get(key, {})
        total = sum(dist.values()) or 1.0
        med, fst = first_rule(k), first_rule(by_first.get(key, {}))
        rows.append(
            {
                "kernel": k["name"],
                "demangled": k["demangled"],
                "grid": k["grid"],
                "block": k["block"],
                "launches": k["launches"],
                "time_share": round(k["time_share"], 4),
                "launch_range_ns": k.get("launch_range_ns"),
                "median_launch": med,
                "first_launch": fst,
                "agree": med == fst,
                "share_of_time_median_finding": round(dist.get(med, 0.0) / total, 3),
                "findings_by_time": {r: round(v / total, 3) for r, v in sorted(dist.items(), key=lambda kv: -kv[1])},
            }
        )
    multi = [r for r in rows if r["launches"] > 1]
    return {
        "results": sum(k["launches"] for k in median["kernels"]),
        "groups": len(rows),
        "groups_with_several_launches": len(multi),
        "median_vs_first_agree": sum(r["agree"] for r in multi),
        "unanimous_groups": sum(len(r["findings_by_time"]) == 1 for r in multi),
        "time_share_agree": round(sum(r["time_share"] for r in multi if r["agree"]), 4),
        "time_share_multi": round(sum(r["time_share"] for r in multi), 4),
        "rows": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for src in args.reports:
            path = src
            if src.suffix == ".xz":
                path = Path(tmp) / src.with_suffix("").name
                with lzma.open(src) as fin, path.open("wb") as fout:
                    shutil.copyfileobj(fin, fout)
            res = compare(path)
            out.append(res)
            print(
                f"\n{res['report']}: {res['results']} results, {res['groups']} groups "
                f"({res['groups_with_several_launches']} with several launches), analysed 3 ways in "
                f"{res['analysis_s']} s"
            )
            print(
                f"{'kernel':28} {'grid':14} {'launches':>8} {'share':>6}  {'median launch':14} {'first launch':14} "
                "first finding over all launches (share of the group's time)"
            )
            for r in res["rows"]:
                if r["launches"] < 2:
                    continue
                dist = ", ".join(f"{k} {v:.0%}" for k, v in r["findings_by_time"].items())
                mark = "" if r["agree"] else "  <- differ"
                print(
                    f"{r['kernel'][:28]:28} {r['grid'][:14]:14} {r['launches']:>8} {r['time_share']:>6.1%}  "
                    f"{r['median_launch']:14} {r['first_launch']:14} {dist}{mark}"
                )
            print(
                f"median vs first launch: same first finding on {res['median_vs_first_agree']} of "
                f"{res['groups_with_several_launches']} groups ({res['time_share_agree']:.0%} of "
                f"{res['time_share_multi']:.0%} of the time); one first finding on every launch: "
                f"{res['unanimous_groups']} groups"
            )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
