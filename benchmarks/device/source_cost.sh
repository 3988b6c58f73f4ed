#!/bin/bash
# On the GPU machine, from the repository root, in ONE device call: what the SourceCounters section costs per launch
# in the PyTorch programs' phase-2 collection, and whether its per-instruction data can be had without it. The
# program: GPT-2 small's width, 3 blocks, one training step (workloads/torch/library_step.py, as in
# cost_gpt2_train.sh); ncu on the first LAUNCHES launches of the range "step_all_threads", each collection once:
#   duration   gpu__time_duration.sum alone (the program's own time under ncu, to subtract);
#   phase1     phase 1's collection (`ncu.PHASE1_COLLECTED`: its replay passes), and phase1_issue with the issue
#              slots' busy share added;
#   with_sc    the PyTorch programs' phase-2 collection (LaunchStats, Occupancy, SourceCounters + the metrics);
#   without_sc the same without SourceCounters;
#   inst_name  without SourceCounters, with the per-instruction metrics the analysis reads asked by name;
# each report is read back (ncu_report): per-instruction instances (with correlation ids) of inst_executed and
# memory_l2_theoretical_sectors_global_ideal in its first results. Writes $OUT/source_cost.json and the logs.
#     OUT=/tmp/out BUDGET=300 LAUNCHES=40 bash benchmarks/device/source_cost.sh
BUDGET=${BUDGET:-300}
LAUNCHES=${LAUNCHES:-40}
source benchmarks/device/env.sh
part_start
PROGRAM=(python3 workloads/torch/library_step.py --model gpt2 --size small --layers 3 --batch 4 --seq 512 --steps 3)
timeout $(( $(left) - 5 )) python3 - "$OUT" "$LAUNCHES" "$(left)" "${PROGRAM[@]}" <<'PY' 2>&1 | tee -a "$OUT/steps.log"
import json, sys, time
from pathlib import Path
sys.path.insert(0, "benchmarks")
from collection_cost import run_ncu
from ncuadvisor.profile import ncu as ncu_mod
from ncuadvisor.profile.collection import declared_collection
from ncuadvisor.rulekit import engine
from ncuadvisor.analysis import needed

ISSUE = "smsp__issue_active.avg.pct_of_peak_sustained_active"

out, launches, budget, program = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
rules = engine.discover([])
kinds = [("elementwise_kernel", "at::native::elementwise_kernel"), ("nvjet_a", "nvjet_a")]
sections, metrics = declared_collection(rules, kinds, instructions=True)  # SourceCounters kept
per_inst = list(needed.PER_INSTRUCTION)  # inst_executed and the ideal sectors (both per instruction)
base = ["--nvtx", "--nvtx-include", "step_all_threads", "--launch-count", str(launches)]
colls = {
    "with_sc": ncu_mod.section_args(sections, metrics),
    "without_sc": ncu_mod.section_args([s for s in sections if s != "SourceCounters"], metrics),
    "duration": ["--metrics", ncu_mod.DURATION_METRIC],
}
res = {"program": program, "launches": launches, "sections": sections, "per_instruction": per_inst, "runs": {}}
t0 = time.monotonic()

def read_back(rep):
    import ncu_report
    ctx = ncu_report.load_report(str(rep))
    rng = ctx.range_by_idx(0)
    got = []
    for i in range(min(rng.num_actions(), 6)):
        a = rng.action_by_idx(i)
        row = {"kernel": a.name()[:60]}
        for m in ("inst_executed", "memory_l2_theoretical_sectors_global_ideal", "memory_type"):
            x = a.metric_by_name(m)
            row[m] = None if x is None else {"instances": x.num_instances(), "correlated": bool(x.has_correlation_ids())}
        got.append(row)
    return got

for name, coll in colls.items():
    if time.monotonic() - t0 > budget - 150:
        res["runs"][name] = "out of time"
        break
    rep = Path("/tmp") / f"sc_{name}"
    got = run_ncu([*base, *coll], program, rep, 150)
    try:
        got["read_back"] = read_back(Path(str(rep) + ".ncu-rep"))
    except Exception as exc:  # noqa: BLE001
        got["read_back"] = f"not read: {exc}"
    got.pop("cmd", None)
    res["runs"][name] = got
    print(name, {k: v for k, v in got.items() if k != "read_back"}, flush=True)
    print("   ", json.dumps(got["read_back"])[:600], flush=True)
    (out / "source_cost.json").write_text(json.dumps(res, indent=1))
PY
# the report without SourceCounters, and with it, analysed as `ncuadvisor report` does (no per-instruction data and
# perhaps no SASS in the first): both must run; their first findings compared offline
for n in without_sc with_sc; do
  [ -f /tmp/sc_$n.ncu-rep ] && [ "$(left)" -gt 20 ] && { timeout $(( $(left) - 10 )) python3 -m ncuadvisor report \
    /tmp/sc_$n.ncu-rep -o "$OUT/report_$n.json" > "$OUT/report_$n.log" 2>&1; say "report $n rc=$?"; }
done
[ -f /tmp/sc_without_sc.ncu-rep ] && [ "$(left)" -gt 8 ] && timeout $(( $(left) - 3 )) xz -T0 -6 -c /tmp/sc_without_sc.ncu-rep \
  > "$OUT/sc_without_sc.ncu-rep.xz"
# `ncuadvisor profile` on the eager transformer step (the program of fixtures/torch_eager): phase 2 without
# SourceCounters for its ATen and cuBLAS kernels, then the round with it for those a gate admits (issue-bound ATen
# kernels far from their floor); its reports kept (xz) for the tests
if [ "$(left)" -gt 60 ]; then
  rm -rf /tmp/eager && mkdir -p /tmp/eager
  timeout $(( $(left) - 15 )) python3 -c "from ncuadvisor.cli import main; main()" profile --nvtx-range step \
    -o /tmp/eager/profile.json --force -v -- workloads/torch/transformer_step.py --mode eager --steps 3 \
    > "$OUT/eager_profile.log" 2>&1
  say "eager profile rc=$?"
  for f in /tmp/eager/*.ncu-rep; do [ "$(left)" -gt 4 ] && timeout $(( $(left) - 2 )) xz -T0 -6 -c "$f" > "$OUT/eager_$(basename "$f").xz"; done
  xz -c /tmp/eager/profile.json > "$OUT/eager_profile.json.xz" 2>/dev/null
fi
say "source_cost done"
