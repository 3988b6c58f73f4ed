"""Replay passes per launch of the collections `ncuadvisor profile` uses, on one launch of a program.

Each collection is built by the code `profile` runs (`ncu.PHASE1_COLLECTED`, `session.declared_collection` for the
kernel languages below), run by ncu on ONE launch, and its passes read from ncu's `==PROF== ... - N passes` line:

- phase1: the duration, DRAM bytes and tensor pipe share of every launch;
- phase2-pytorch: ATen and cuBLAS kernels (the PyTorch programs' collection), phase2-library: library kernels alone;
- phase2-cuda: a kernel that may be the user's CUDA or Triton code (every rule);
- phase2-cuda-no-sol: the same without the SpeedOfLight section, kept there only for NCU's derived__ metrics of the
  CUDA rules; its report is read back to say whether those derived__ metrics are present without it;
- the phase-2 collections without SpeedOfLight with that section added back (what dropping it saved);
- the PyTorch collection without the tensor paths, without L2's throughput, without SourceCounters (what the next
  candidates would save);
- the PyTorch and CUDA collections as phase 2 runs them when phase 1 saw the tensor pipe idle: without the six
  tensor FLOP counts, their peaks kept (`declared_collection(..., tensor_counts=False)`).

    python3 benchmarks/passes.py --program bin/patterns --program-args=--once --launch-skip 2 --json out.json
    python3 benchmarks/passes.py --program python3 --program-args="workloads/torch/transformer_step.py --mode eager \
        --steps 3 --train" --nvtx step_all_threads --kernel regex:nvjet --label train --json out.json
    python3 benchmarks/passes.py --dry-run ...   # print the ncu commands only
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ncuadvisor.analysis import roofline  # noqa: E402
from ncuadvisor.profile import ncu as ncu_mod  # noqa: E402
from ncuadvisor.profile.session import declared_collection  # noqa: E402
from ncuadvisor.rulekit import engine  # noqa: E402

# kernel names standing for each kind of program (what `language.possible_languages` reads)
KINDS = {
    "pytorch": [("elementwise_kernel", "at::native::elementwise_kernel"), ("nvjet_a", "nvjet_a")],
    "library": [("nvjet_a", "nvjet_a")],
    "cuda": [("kernel", "kernel(float *)")],
}
DERIVED = ["derived__memory_l2_theoretical_sectors_global_excessive", "derived__memory_l1_wavefronts_shared_excessive"]


def collections(which: list[str]) -> dict[str, list[str]]:
    """Collection name -> ncu arguments (sections and metrics)."""
    rules = engine.discover([])
    out = {"phase1": ["--metrics", ",".join(ncu_mod.PHASE1_COLLECTED)]}
    for kind in ("pytorch", "library", "cuda"):
        sections, metrics = declared_collection(rules, KINDS[kind])
        out[f"phase2-{kind}"] = ncu_mod.section_args(sections, metrics)
        if kind != "library":  # phase 2 when phase 1 saw the tensor pipe idle: no tensor FLOP counts, peaks kept
            out[f"phase2-{kind}-no-tensor-counts"] = ncu_mod.section_args(
                *declared_collection(rules, KINDS[kind], tensor_counts=False)
            )
        if kind == "pytorch":  # what the next candidates would save: the tensor paths (7 passes alone on the H200),
            # L2's throughput (5 alone, a breakdown maximum no single counter equals), SourceCounters (5 alone)
            paths = {p + suffix for p in roofline.TENSOR_PATHS.values() for suffix in (".sum", ".sum.peak_sustained")}
            l2 = roofline.SOL_METRICS["l2_pct"]
            out["phase2-pytorch-no-tensor-paths"] = ncu_mod.section_args(
                sections, [m for m in metrics if m not in paths]
            )
            out["phase2-pytorch-no-l2-throughput"] = ncu_mod.section_args(sections, [m for m in metrics if m != l2])
            out["phase2-pytorch-no-source-counters"] = ncu_mod.section_args(
                [s for s in sections if s != "SourceCounters"], metrics
            )
        if "SpeedOfLight" in sections:  # kept for NCU's derived__ metrics: what it costs
            out[f"phase2-{kind}-no-sol"] = ncu_mod.section_args([s for s in sections if s != "SpeedOfLight"], metrics)
        else:  # the collection as it was before the two percentages were derived
            out[f"phase2-{kind}+sol"] = ncu_mod.section_args(["SpeedOfLight", *sections], metrics)
    first = [
        "phase1",
        "phase2-pytorch",
        "phase2-pytorch-no-tensor-counts",
        "phase2-cuda",
        "phase2-cuda-no-tensor-counts",
    ]
    order = first + [k for k in out if k not in first]
    return {k: out[k] for k in order if k in out and (not which or k in which)}


def derived_present(report: Path) -> dict[str, bool]:
    """Whether each derived__ metric of the CUDA rules is in the report's first result (read back by ncu_report)."""
    from ncuadvisor.load import ReportReader

    frame = ReportReader(report).results(DERIVED)
    return {m: any(v is not None and v == v for v in frame.get(m, [])) for m in DERIVED}  # not a gap (None, NaN)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", required=True)
    ap.add_argument("--program-args", default="")
    ap.add_argument(
        "--nvtx", help="ncu's --nvtx-include expression as is ('step/' a push/pop range, 'step' a start/end range)"
    )
    ap.add_argument("--kernel", help="ncu -k filter (e.g. regex:nvjet)")
    ap.add_argument("--launch-skip", type=int, default=0)
    ap.add_argument("--collections", default="", help="comma-separated names (default: all)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/passes"))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--label", default="", help="the key of this program in --json (several calls add up)")
    ap.add_argument("--timeout-s", type=float, default=120.0, help="per ncu run")
    ap.add_argument("--budget-s", type=float, default=0.0, help="stop starting runs after this many seconds")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args()
    program = [args.program, *shlex.split(args.program_args)]
    base: list[str] = ["--launch-count", "1"]
    if args.nvtx:
        base = ["--nvtx", "--nvtx-include", args.nvtx, *base]
    if args.kernel:
        base += ["-k", args.kernel]
    if args.launch_skip:
        base += ["--launch-skip", str(args.launch_skip)]
    todo = collections([c for c in args.collections.split(",") if c])
    args.out.mkdir(parents=True, exist_ok=True)
    label = args.label or Path(args.program).name
    res: dict = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
    mine = res.setdefault(label, {"program": program, "filter": base, "collections": {}})
    t0 = time.monotonic()
    for name, coll in todo.items():
        metrics = coll[coll.index("--metrics") + 1].split(",") if "--metrics" in coll else []
        sections = [coll[i + 1] for i, a in enumerate(coll) if a == "--section"]
        out_base = args.out / f"{label}_{name}" if name == "phase2-cuda-no-sol" else None
        if args.dry_run:
            cmd = ["ncu", "--clock-control", "none", *base, *coll] + (["-o", str(out_base)] if out_base else [])
            print(f"{name}: {len(metrics)} metrics, sections {sections}")
            print("   ", shlex.join(cmd + program)[:300], "…")
            continue
        if args.budget_s and time.monotonic() - t0 > args.budget_s:
            mine["cut_short"] = True
            print(f"{name}: out of time", flush=True)
            break
        from collection_cost import run_ncu

        got = run_ncu([*base, *coll], program, out_base, args.timeout_s)
        got.update(metrics=len(metrics), sections=sections)
        if out_base is not None and got["rc"] == 0:
            rep = Path(str(out_base) + ".ncu-rep")
            if rep.exists():
                try:
                    got["derived_present"] = derived_present(rep)
                except Exception as exc:  # noqa: BLE001 - the pass count stands without the read-back
                    got["derived_present"] = f"not read: {exc}"
        mine["collections"][name] = got
        print(
            f"{name}: {got['passes_max']} passes ({len(metrics)} metrics, sections {sections}), rc {got['rc']}, "
            f"{got['wall_s']} s"
            + (f", derived__ present: {got['derived_present']}" if "derived_present" in got else ""),
            flush=True,
        )
        if args.json:
            args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
