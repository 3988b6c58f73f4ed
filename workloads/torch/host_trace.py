"""The host's and the GPU's timelines of the planted PyTorch cases (planted.py), as torch.profiler records them.

    python3 host_trace.py --out DIR [--case train_step:planted+tf32+twin,...] [--iters 5] [--warmup 5] [--cuda-only]

Per case and variant: `--warmup` calls, then `--iters` calls issued back to back (as a loop issues them) under
torch.profiler (CPU and CUDA activities: every runtime call on the host with its start and duration, every kernel
on the GPU with its start and duration, joined by correlation ids), exported as a Chrome trace to
DIR/trace_CASE_VARIANT.json; then, without the profiler, the same loop timed between two CUDA events (`loop_us`,
per call) and each call timed alone (`median_us`), so that the profiler's own host cost shows, and the loop again after the trace (`loop_after_us`).
`--cuda-only`: the CUDA activities alone. One JSON line per
variant on stdout: {case, variant, iters, loop_us, median_us, traced_loop_us, trace}.

These traces are what a replay of the launch timeline is checked on: the planted trace, its kernels' durations
replaced by those of a fix, should give the fixed variant's measured time per call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import planted  # noqa: E402


def traced(fn, iters: int, path: Path, cpu: bool) -> float:
    """planted.time_loop's `iters` back-to-back calls under torch.profiler, exported to `path`; µs per call between
    two CUDA events. `cpu` False: the CUDA activities alone (runtime calls and kernels, no ATen ops: less of the
    profiler's own host time)."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] if cpu else [ProfilerActivity.CUDA])
    us = planted.time_loop(fn, iters, within=prof)
    prof.export_chrome_trace(str(path))
    return us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument(
        "--case",
        default="train_step:planted+tf32+twin,norm_chain:planted+twin,fp32_matmul:planted+twin,"
        "cast_vs_copy:planted+twin,index_add:planted+twin",
    )
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--loop-iters", type=int, default=15, help="calls timed alone, and in the untraced loop")
    ap.add_argument("--cuda-only", action="store_true", help="trace the CUDA activities alone (no ATen ops)")
    args = ap.parse_args()
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    for name, variants in planted.parse_cases(args.case, list(planted.VARIANTS)):
        c = planted.CASES[name]()
        ctx = torch.enable_grad() if c.get("grad") else torch.no_grad()
        with ctx:
            for variant in variants:
                fn = c[variant]
                t0 = time.perf_counter()
                calls = planted.time_calls(fn, args.loop_iters, args.warmup)
                loop_us = planted.time_loop(fn, args.loop_iters)
                trace = args.out / f"trace_{name}_{variant}.json"
                traced_us = traced(fn, args.iters, trace, not args.cuda_only)
                loop_after_us = planted.time_loop(fn, args.loop_iters)
                print(
                    json.dumps(
                        {
                            "case": name,
                            "variant": variant,
                            "iters": args.iters,
                            "loop_us": round(loop_us, 3),
                            "median_us": round(statistics.median(calls), 3),
                            "traced_loop_us": round(traced_us, 3),
                            "loop_after_us": round(loop_after_us, 3),
                            "cuda_only": args.cuda_only,
                            "trace": trace.name,
                            "wall_s": round(time.perf_counter() - t0, 2),
                        }
                    ),
                    flush=True,
                )
        del c
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
