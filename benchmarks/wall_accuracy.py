"""Wall-time estimates with a measured host timeline, against the fixed code's measured wall time.

For each planted PyTorch case with torch.profiler traces (fixtures/host-trace-2026-12-02: 10 calls of the planted
code and of its fix, CUDA activities, on an H200 host; each loop also timed without the profiler, cuda_only.jsonl):

- "planted": the planted trace replayed as measured, per call in the steady state (`analysis.walltime`), against the
  planted loop timed without the profiler (`loop_us`) and under it (`traced_loop_us`);
- "with our speedups": the planted trace replayed with the first action's kernels at the durations its estimate
  gives (TEN002 for train_step and fp32_matmul, PRG002's fusion for norm_chain), against the fixed loop (`loop_us`
  of the fix: `tf32` for train_step, the twin otherwise) and its own trace replayed as measured;
- "with the fix's durations": the planted trace replayed with the fixed kernels at the durations the fix's trace
  measured (their total over the planted kernels the action names: `1 - fix ops / planted ops` of the touched
  kernels' time), so that the model's error shows apart from the speedup estimate's.

A fusion (norm_chain) removes launches: the replay keeps the planted launches and their host calls, the fused
kernel's time spread over them. Where the GPU sets the pace this is exact; where the host does, it misses the host
time of the launches removed.

    python benchmarks/wall_accuracy.py [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.analysis.hosttrace import read_trace  # noqa: E402
from ncuadvisor.analysis.walltime import HostModel  # noqa: E402
from ncuadvisor.pipeline.analyze import analyze  # noqa: E402
from ncuadvisor.pipeline.hostwall import action_parts  # noqa: E402

TRACES = ROOT / "fixtures" / "host-trace-2026-12-02"
# case: its report, the result ids of the planted code in it, the fix variant of the trace and loop it is checked on
CASES = [
    ("train_step", "torch_train", range(0, 52), "tf32"),
    ("fp32_matmul", "torch_gemm_conv", range(0, 1), "twin"),
    ("norm_chain", "torch_norm_chain", range(0, 3), "twin"),
]


def loops() -> dict[tuple[str, str], dict]:
    lines = (TRACES / "cuda_only.jsonl").read_text().splitlines()
    return {(j["case"], j["variant"]): j for j in map(json.loads, lines)}


def _err(est: float, meas: float) -> str:
    return f"{100 * (est / meas - 1):+.0f}%" if meas else "–"


def case_rows() -> list[dict]:
    """One dict per case: what was measured, what the replays predict (µs per call)."""
    measured = loops()
    rows = []
    results: dict[str, object] = {}
    for case, report, ids, fix in CASES:
        planted = read_trace(TRACES / f"trace_{case}_planted.json.xz")
        fixed = read_trace(TRACES / f"trace_{case}_{fix}.json.xz")
        res = analyze(ROOT / "fixtures" / f"{report}.ncu-rep.xz", host=planted)
        results[report] = res
        wanted = set(ids)
        kernel_ids = {k.id for k in res.kernels if wanted & set(k.result_ids)}
        action = next(
            a
            for a in res.top_actions
            if (set(a.kernel_ids or []) | {a.kernel_id}) & kernel_ids and a.estimated_wall_saving_ns is not None
        )
        model = HostModel.build(planted, list(res.kernels))
        parts = action_parts(res, action)
        touched = {k for k in model.kernel_of if k in parts}
        planted_ns = sum(o.dur_ns for o in planted.ops)
        touched_ns = sum(o.dur_ns for o, k in zip(planted.ops, model.kernel_of) if k in touched)
        # the fix's GPU time where the planted code had the touched kernels: the fix trace's, less what it kept
        fraction = 1 - (sum(o.dur_ns for o in fixed.ops) - (planted_ns - touched_ns)) / touched_ns
        with_fix = model.wall_saving_ns({k: [(None, fraction)] for k in touched}) or 0.0
        fixed_model = HostModel.build(fixed, list(res.kernels))
        base = model.wall_per_window_ns()
        p, f = measured[(case, "planted")], measured[(case, fix)]
        rows.append(
            {
                "case": case,
                "fix": f"{action.rule} ({fix})",
                "gpu_saving_us": action.estimated_saving_ns / 1e3,
                "planted_replay_us": base / 1e3,
                "planted_loop_us": p["loop_us"],
                "planted_traced_us": p["traced_loop_us"],
                "wall_saving_us": (action.estimated_wall_saving_ns or 0.0) / 1e3,
                "predicted_us": (base - (action.estimated_wall_saving_ns or 0.0)) / 1e3,
                "predicted_fix_durations_us": (base - with_fix) / 1e3,
                "fix_fraction": fraction,
                "fixed_loop_us": f["loop_us"],
                "fixed_traced_us": f["traced_loop_us"],
                "fixed_replay_us": fixed_model.wall_per_window_ns() / 1e3 if fixed_model.matched else None,
                "measured_saving_loop_us": p["loop_us"] - f["loop_us"],
                "gpu_busy_share": model.gpu_busy_share,
                "host_us_per_launch": model.host_ns_per_launch / 1e3,
            }
        )
    return rows


def wall_column(case: str, rows: list[dict] | None = None) -> str:
    """accuracy.py's column: the first action's wall saving with the host timeline, against the saving measured
    without the profiler in the same day's loop (error)."""
    for r in rows if rows is not None else case_rows():
        if r["case"] == case:
            return (
                f"{r['wall_saving_us']:.1f} µs vs {r['measured_saving_loop_us']:.1f} µs "
                f"({_err(r['wall_saving_us'], r['measured_saving_loop_us']) if r['measured_saving_loop_us'] > 0 else '–'})"
            )
    return "–"


def table(markdown: bool) -> None:
    rows = case_rows()
    header = (
        "case",
        "fix",
        "GPU saving (est.)",
        "planted: replay / loop / traced loop",
        "fixed, predicted with our speedups (error vs loop)",
        "fixed, predicted with the fix's durations (error vs loop)",
        "fixed: loop / traced loop / its replay",
        "wall saving est. / measured in the loop",
        "GPU busy, host per launch",
    )
    out = []
    for r in rows:
        fr = r["fixed_replay_us"]
        out.append(
            (
                r["case"],
                r["fix"],
                f"{r['gpu_saving_us']:.1f} µs",
                f"{r['planted_replay_us']:.1f} / {r['planted_loop_us']:.1f} / {r['planted_traced_us']:.1f} µs",
                f"{r['predicted_us']:.1f} µs ({_err(r['predicted_us'], r['fixed_loop_us'])})",
                f"{r['predicted_fix_durations_us']:.1f} µs ({_err(r['predicted_fix_durations_us'], r['fixed_loop_us'])})",
                f"{r['fixed_loop_us']:.1f} / {r['fixed_traced_us']:.1f} / " + (f"{fr:.1f} µs" if fr else "–"),
                f"{r['wall_saving_us']:.1f} / {r['measured_saving_loop_us']:.1f} µs",
                f"{r['gpu_busy_share']:.0%}, {r['host_us_per_launch']:.1f} µs",
            )
        )
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in out:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(str(x[i])) for x in out + [header]) for i in range(len(header))]
        for row in [header, *out]:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    table(ap.parse_args().markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
