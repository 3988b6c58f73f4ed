#!/bin/bash
# On the GPU machine, from the repository root: the unplanted training steps against their one-line fixes, each run
# timed as a loop (workloads/torch/step_timing.py: wall µs per step between two CUDA events, and the kernels' µs per
# step and their count from torch.profiler, CUDA activities only). gpt_step.py as profiled (foreach AdamW) against
# --fused (PYT003's fix); cnn_step.py as profiled (fp32 NCHW, foreach SGD) against --channels-last (PYT004's fix) and
# --fused (PYT003's, SGD). Sizes: the scripts' defaults, as unplanted.sh profiled them. One process per run, the
# variants alternating, ROUNDS rounds (default 3); each run: 4 warm-up steps, the measured step, then STEPS_TIMED
# steps (default 20) timed and as many under the profiler. $OUT/twins.jsonl: one JSON line per run (its name and
# round added); $OUT/summary.json: per variant the medians over the rounds and, against its script's default, the
# time saved per step and the ratio, and the median run's 15 costliest kernel functions; $OUT/logs/: each run's
# output. Keeps to $BUDGET seconds (default 240). VARIANTS (below) chooses other fixes, e.g. the compiled loss and the
# whole step in a CUDA graph:
#     OUT=/tmp/ut BUDGET=240 bash benchmarks/device/unplanted_twins.sh
#     VARIANTS="gpt=gpt_step.py;gpt_compiled_loss=gpt_step.py --compiled-loss;cnn=cnn_step.py;cnn_graph=cnn_step.py --graph" \
#       OUT=/tmp/ut BUDGET=300 bash benchmarks/device/unplanted_twins.sh
source benchmarks/device/env.sh
part_start
N=${STEPS_TIMED:-20}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT/logs"
run() {  # NAME SCRIPT ARGS...: one timed run
  local name=$1 script=$2; shift 2
  local t=$(( $(left) - 10 ))
  if [ "$t" -lt 20 ]; then say "$name round $r: no time left"; return; fi
  [ "$t" -gt 90 ] && t=90
  timeout "$t" python3 "$script" --steps 5 --time "$N" "$@" > "$OUT/logs/${name}_$r.txt" 2>&1
  say "$name round $r rc=$? $(grep '^{' "$OUT/logs/${name}_$r.txt" | tail -1)"
}
# VARIANTS: "NAME=SCRIPT ARGS...;..." (the first word of NAME before "_" names the baseline the others compare with)
VARIANTS=${VARIANTS:-"gpt=gpt_step.py;gpt_fused=gpt_step.py --fused;cnn=cnn_step.py;\
cnn_channels_last=cnn_step.py --channels-last;cnn_fused=cnn_step.py --fused"}
IFS=';' read -ra SPECS <<< "$VARIANTS"
for r in $(seq 1 "$ROUNDS"); do
  for spec in "${SPECS[@]}"; do
    # shellcheck disable=SC2086  # the variant's arguments are split on purpose
    run "${spec%%=*}" workloads/torch/${spec#*=}
  done
done
python3 - "$OUT" <<'EOF'
import json, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])
rows = []
for log in sorted((out / "logs").glob("*.txt")):
    name, _, rnd = log.stem.rpartition("_")
    lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
    if lines:
        rows.append({"name": name, "round": int(rnd), **json.loads(lines[-1])})
(out / "twins.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
keys = ("wall_us", "kernel_us", "kernels", "memory_us")
med = {}
for name in dict.fromkeys(r["name"] for r in rows):
    mine = [r for r in rows if r["name"] == name]
    med[name] = {"runs": len(mine), **{k: statistics.median(r[k] for r in mine) for k in keys}}
    med[name]["top"] = sorted(mine, key=lambda r: r["wall_us"])[len(mine) // 2].get("top")  # the median run's
for name, m in med.items():
    base = med.get(name.split("_")[0])
    if base is not None and name != name.split("_")[0]:
        for k in ("wall_us", "kernel_us"):
            m[f"{k}_saved"] = round(base[k] - m[k], 1)
            m[f"{k}_ratio"] = round(m[k] / base[k], 3) if base[k] else None
(out / "summary.json").write_text(json.dumps(med, indent=1) + "\n")
print(json.dumps(med, indent=1))
EOF
say "done"
