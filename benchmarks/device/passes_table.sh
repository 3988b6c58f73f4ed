#!/bin/bash
# On the GPU machine, from the repository root: the replay passes ncu needs per launch, metric by metric and by kind
# of metric, on one launch of workloads/cuda/patterns.cu --once (benchmarks/collection_cost.py --group-passes-s and
# --per-metric-s; no report is written), then each section phase 2 may collect, alone, and the unit metrics that could
# stand in for Speed Of Light's two maxima. What to drop to bring phase 2's passes down is chosen from this table.
#     OUT=/tmp/pt BUDGET=420 bash benchmarks/device/passes_table.sh
BUDGET=${BUDGET:-420}
source benchmarks/device/env.sh
part_start
nvcc -arch=sm_90 -lineinfo -O3 -o /tmp/bin/patterns workloads/cuda/patterns.cu > "$OUT/nvcc.log" 2>&1
say "nvcc rc=$?"
# sections alone and the candidate unit metrics alone (each with the duration), one launch
timeout 100 python3 - "$OUT/sections_alone.json" > "$OUT/sections_alone.log" 2>&1 <<'PY'
import json, sys
sys.path.insert(0, "benchmarks")
from collection_cost import run_ncu
prog = ["/tmp/bin/patterns", "--once"]
base = ["--launch-skip", "2", "--launch-count", "1"]
dur = "gpu__time_duration.sum"
out = {}
for s in ["SpeedOfLight", "LaunchStats", "Occupancy", "SourceCounters", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis"]:
    out["section " + s] = run_ncu([*base, "--section", s], prog, None, 60)["passes_max"]
    print(s, out["section " + s], flush=True)
for m in [
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__instruction_throughput.avg.pct_of_peak_sustained_active",
    "sm__issue_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "lts__t_sectors.avg.pct_of_peak_sustained_elapsed",
    "l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed",
]:
    out[m] = run_ncu([*base, "--metrics", f"{dur},{m}"], prog, None, 60)["passes_max"]
    print(m, out[m], flush=True)
json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "/dev/null", "w"), indent=1)
PY
say "sections and unit metrics alone rc=$?"
cat "$OUT/sections_alone.log"
G=$(( ($(left) - 20) * 2 / 5 )); P=$(( $(left) - G - 20 ))
say "groups ${G} s, per metric ${P} s"
timeout $(( $(left) - 5 )) python3 benchmarks/collection_cost.py --binary /tmp/bin/patterns --binary-args=--once \
  --out /tmp/pt --collections none --no-analysis --group-passes-s "$G" --group-launch 2 --per-metric-s "$P" \
  --json "$OUT/passes.json" > "$OUT/passes.log" 2>&1
say "collection_cost rc=$?"
tail -40 "$OUT/passes.log"
say done
