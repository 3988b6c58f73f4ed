"""The wall-time estimates of measured host timelines against the wall time the fixes saved, measured next to each
timeline (benchmarks/device/wall_twins.sh): per program and round, the step's wall time the timeline gives against
the one the loop measured, and each fix's estimated wall saving against the measured one. Each estimate is made twice:
with the profiler's own cost per CUDA call taken out of the host's time (as `profile --host-time` now records it) and
with it left in (as before it was measured).

    python3 benchmarks/wall_twins.py DIR [--markdown]

DIR holds what wall_twins.sh wrote: NAME.json (the `profile` result), NAME_trace_R.json.gz, twins.jsonl (or the
same xz-compressed, NAME.json.xz and NAME_trace_R.json.xz, as fixtures/wall-twins-2026-12-02 keeps them).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import lzma
import statistics
import sys
from pathlib import Path
from typing import Any

from ncuadvisor.analysis.hosttrace import read_trace
from ncuadvisor.analysis.walltime import HostModel
from ncuadvisor.pipeline.hostwall import add_wall_estimates
from ncuadvisor.result.types import Result

# the fix each timed variant applies -> the rule that prescribes it ("graphs": PRG006's CUDA-graphs saving)
FIX_RULE = {"graph": "graphs", "compiled-loss": "PYT005", "fused": "PYT003"}


def estimates(result: Result, trace: Path, keep_cost: bool) -> dict[str, Any]:
    t = read_trace(trace)
    cost = t.call_cost_ns
    if keep_cost:
        t.call_cost_ns = None
    model = HostModel.build(t, list(result.kernels))
    r = dataclasses.replace(result, top_actions=[dataclasses.replace(a) for a in result.top_actions])
    add_wall_estimates(r, model)
    saving = {"graphs": model.graphs_saving_ns()}
    for a in r.top_actions:
        saving.setdefault(a.rule, a.estimated_wall_saving_ns)
    return {"wall_ns": model.wall_per_window_ns(), "cost_ns": cost, "saving": saving, "busy": model.gpu_busy_share}


def rows(folder: Path) -> list[dict[str, Any]]:
    twins = [json.loads(line) for line in (folder / "twins.jsonl").read_text().splitlines() if line.strip()]
    out = []
    for res_path in sorted([*folder.glob("*.json"), *folder.glob("*.json.xz")]):
        name = res_path.name.split(".")[0]
        if "_trace_" in name:
            continue
        opener = lzma.open if res_path.suffix == ".xz" else open
        with opener(res_path, "rt") as f:
            result = Result.from_dict(json.load(f))
        for trace in sorted(folder.glob(f"{name}_trace_*.json.*")):
            rnd = int(trace.name.split(".")[0].rsplit("_", 1)[1])
            base = next((t for t in twins if t["name"] == name and t["round"] == rnd), None)
            if base is None:
                continue
            est = {keep: estimates(result, trace, keep) for keep in (False, True)}
            for t in twins:
                if t["round"] != rnd or not t["name"].startswith(name + "_"):
                    continue
                fix = t["name"][len(name) + 1 :]
                rule = FIX_RULE.get(fix)
                measured = (base["wall_us"] - t["wall_us"]) * 1e3
                out.append(
                    {
                        "program": name,
                        "round": rnd,
                        "fix": fix,
                        "rule": rule,
                        "measured_wall_ns": base["wall_us"] * 1e3,
                        "timeline_wall_ns": est[False]["wall_ns"],
                        "timeline_wall_kept_ns": est[True]["wall_ns"],
                        "gpu_busy": est[False]["busy"],
                        "cost_ns": est[False]["cost_ns"],
                        "measured_saving_ns": measured,
                        "measured_kernel_saving_ns": (base["kernel_us"] - t["kernel_us"]) * 1e3,
                        "estimated_ns": est[False]["saving"].get(rule),
                        "estimated_kept_ns": est[True]["saving"].get(rule),
                    }
                )
    return out


def _ms(ns: Any) -> str:
    return "–" if ns is None else f"{ns / 1e6:.2f} ms"


def _err(est: Any, measured: float) -> str:
    return "–" if est is None or not measured else f"{est / measured - 1:+.0%}"


def markdown(out: list[dict[str, Any]]) -> str:
    lines = [
        "| program | round | fix (rule) | step wall: measured / timeline (cost out) / timeline (cost in) | profiler cost "
        "per call | saving measured (wall) | estimated, cost out (error) | estimated, cost in (error) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in out:
        m = r["measured_saving_ns"]
        cost = "–" if r["cost_ns"] is None else f"{r['cost_ns'] / 1e3:.1f} µs"
        lines.append(
            f"| {r['program']} | {r['round']} | {r['fix']} ({r['rule']}) | {_ms(r['measured_wall_ns'])} / "
            f"{_ms(r['timeline_wall_ns'])} / {_ms(r['timeline_wall_kept_ns'])} | {cost} | {_ms(m)} | "
            f"{_ms(r['estimated_ns'])} ({_err(r['estimated_ns'], m)}) | "
            f"{_ms(r['estimated_kept_ns'])} ({_err(r['estimated_kept_ns'], m)}) |"
        )
    for keep, label in ((False, "cost out"), (True, "cost in")):
        key = "estimated_kept_ns" if keep else "estimated_ns"
        errs = [
            abs(r[key] / r["measured_saving_ns"] - 1) for r in out if r[key] is not None and r["measured_saving_ns"]
        ]
        if errs:
            within = sum(e <= 0.3 for e in errs)
            lines.append(f"\n{label}: median |error| {statistics.median(errs):.0%}, {within}/{len(errs)} within ±30%")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not (args.folder / "twins.jsonl").is_file():
        print(f"{args.folder}: no twins.jsonl (run benchmarks/device/wall_twins.sh first)", file=sys.stderr)
        return 2
    out = rows(args.folder)
    print(markdown(out) if args.markdown else json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
