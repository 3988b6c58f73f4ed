"""The analysis of kernels whose tensor pipe was idle, with and without the tensor paths' FLOP counts.

`ncuadvisor profile` leaves the six `sm__ops_path_tensor_*.sum` counts out of phase 2 when phase 1 measured the tensor
pipe idle (0%) on every launch of every kernel it profiles (`ceiling.tensor_idle`; their peaks stay: TEN002 reads
the TF32 one). For each report below, every kernel group is analysed twice, as the report is and with the six counts
hidden (as if ncu had not collected them), and each kernel whose analysed launch ran its tensor pipe 0% is compared:
bound, limiter, headroom, floors, first finding, rules, and its whole JSON entry. `--all-twelve` hides the peaks too
(what the collection would lose without them).

    python3 benchmarks/tensor_paths.py [--json OUT.json] [--markdown] [--all-twelve] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from derived_sol import unpack  # noqa: E402

from ncuadvisor.analysis import ceilings, roofline  # noqa: E402
from ncuadvisor.pipeline.analyze import analyze  # noqa: E402
from ncuadvisor.rulekit import engine  # noqa: E402

COUNTS = [p + ".sum" for p in roofline.TENSOR_PATHS.values()]
PEAKS = [p + ".sum.peak_sustained" for p in roofline.TENSOR_PATHS.values()]
FIXTURES = [
    "torch_train",
    "torch_eager",
    "torch_gemm_conv",
    "torch_norm_chain",
    "torch_scatter",
    "torch_compile",
    "torch_cast_copy",
    "flaws",
    "patterns",
    "ceilings",
    "cache",
    "fp16",
    "wave",
    "probe",
    "pipeline_v0",
    "pipeline_v1",
    "pipeline_v2",
    "profile-cost-2026-11-30/train_naive_full",
    # profile-cost-2026-11-30/cuda_naive_full was removed for room on 2026-12-06 (at commit 21e67ef)
]
FIELDS = ("bound", "limiter", "headroom", "floors", "first", "rules")


def summary(res) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    out = {}
    for k in res.kernels:
        r = k.roofline
        out[f"{k.id} {k.name}"] = {
            "tensor_pct": r.busy_pct.get("tensor"),
            "tensor_flops": sum(v for p, v in r.flops_by_precision.items() if p.startswith("tensor")),
            "bound": k.bound,
            "limiter": r.limiter,
            "headroom": k.headroom,
            "floors": r.floors,
            "first": k.findings[0].rule if k.findings else "(none)",
            "rules": sorted({f.rule for f in k.findings}),
            "entry": k.to_dict(),
        }
    return out


def entry_diff(a: object, b: object, path: str = "") -> list[str]:
    """The JSON paths where two entries differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for key in sorted(set(a) | set(b)) for d in entry_diff(a.get(key), b.get(key), f"{path}.{key}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in entry_diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "."]


def compare(name: str, path: Path, rules: list, hide: list[str]) -> dict:  # type: ignore[type-arg]
    from collection_cost import reading_without

    whole = summary(analyze(path, rules=rules))
    with reading_without(lambda m: m in hide):
        without = summary(analyze(path, rules=rules))
    rows: dict[str, list[dict]] = {"idle": [], "moves": []}  # type: ignore[type-arg]
    for key, w in whole.items():
        # idle: the tensor pipe 0% (what phase 2 leaves the counts out for); moves: busy without tensor FLOPs
        # (immediate-only HFMA2.MMA), which phase 1 cannot tell from matrix work: for the record only
        kind = "idle" if w["tensor_pct"] == 0.0 else "moves" if w["tensor_pct"] and not w["tensor_flops"] else None
        if kind is None:
            continue
        d = without[key]
        rows[kind].append(
            {
                "kernel": key,
                "tensor_pct": w["tensor_pct"],
                "same": {f: w[f] == d[f] for f in FIELDS},
                "first": [w["first"], d["first"]],
                "rules": [w["rules"], d["rules"]],
                "entry_diff": entry_diff(w["entry"], d["entry"]),
            }
        )
    return {"report": name, "kernels": len(whole), **rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--all-twelve", action="store_true", help="hide the six peaks too")
    args = ap.parse_args()
    hide = COUNTS + (PEAKS if args.all_twelve else [])
    assert ceilings.PIPE_PCT["tensor"] not in hide
    rules = engine.discover([])
    reps = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names or FIXTURES:
            rep = compare(name, unpack(name, Path(tmp)), rules, hide)
            reps.append(rep)
            rows = rep["idle"]
            same = {f: sum(r["same"][f] for r in rows) for f in FIELDS}
            diffs = sorted({d for r in rows for d in r["entry_diff"]})
            moves = rep["moves"]
            moves_same = sum(all(r["same"].values()) for r in moves)
            if args.markdown:
                cells = " | ".join(f"{same[f]}/{len(rows)}" for f in FIELDS)
                print(
                    f"| `{name}` | {rep['kernels']} | {len(rows)} | {cells} | {len(diffs) or 'none'} | "
                    f"{moves_same}/{len(moves)} |"
                )
            else:
                print(f"{name}: {len(rows)} of {rep['kernels']} kernels idle; same " + str(same), flush=True)
                for r in rows:
                    if not all(r["same"].values()):
                        print(f"   {r['kernel'][:70]}: first {r['first']}, rules {r['rules']}")
                if diffs:
                    print("   JSON differs at: " + ", ".join(diffs[:12]))
                print(f"   busy without tensor FLOPs: {moves_same}/{len(moves)} the same in every field")
    if args.json:
        args.json.write_text(json.dumps(reps, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
