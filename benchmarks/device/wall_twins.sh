#!/bin/bash
# On the GPU machine, from the repository root: the wall-time estimates of a measured host timeline against the wall
# time the fixes save, on the two unplanted training steps, each host timeline recorded next to the timings it is
# compared with (the host's pace drifts between runs: the ResNet step took 6.0 ms a step in one call, 9.1 in the
# next). Per program: `ncuadvisor profile --host-time --python-lines` once ($OUT/NAME.json: the kernels and the
# actions the estimates are made for); then ROUNDS rounds (default 2) of: a host timeline of the plain script
# (traced_run.py: $OUT/NAME_trace_R.json.gz), then the script and each of its fixes timed as a loop
# (step_timing.py, --steps 5 --time 20: $OUT/twins.jsonl). The estimates are computed afterwards, off the GPU machine
# (benchmarks/wall_twins.py). Keeps to $BUDGET seconds (default 480).
#     OUT=/tmp/wt BUDGET=480 bash benchmarks/device/wall_twins.sh
source benchmarks/device/env.sh
BUDGET=${BUDGET:-480}
part_start
ROUNDS=${ROUNDS:-2}
STEPS=${STEPS:-8}
ROOT=$PWD
declare -A FIXES=([cnn]="--graph" [gpt]="--compiled-loss;--fused")
read -ra PROGS <<< "${PROGRAMS:-cnn gpt}"
for name in "${PROGS[@]}"; do
  (( $(left) < 150 )) && { say "$name: no time left to profile"; continue; }
  mkdir -p "/tmp/wt/$name" && cd "/tmp/wt/$name" || exit 1
  timeout $(( $(left) - 100 )) python3 -m ncuadvisor profile --python-lines --host-time \
    --nvtx-include step_all_threads -o "/tmp/wt/$name/$name.json" --force "$ROOT/workloads/torch/${name}_step.py" \
    --steps "$STEPS" > "$OUT/${name}_profile.log" 2>&1
  say "$name profile rc=$?"
  cd "$ROOT" || exit 1
  cp "/tmp/wt/$name/$name.json" "$OUT/" 2>/dev/null
  cp /tmp/wt/"$name"/*.host-trace.json.gz "$OUT/${name}_trace_0.json.gz" 2>/dev/null
done
timed() {  # NAME ROUND SCRIPT ARGS...: one timed loop, a JSON line into twins.jsonl
  local name=$1 r=$2 script=$3; shift 3
  (( $(left) < 25 )) && { say "$name round $r: no time left"; return; }
  local line
  line=$(timeout 60 python3 "$script" --steps 5 --time 20 "$@" 2>/dev/null | grep '^{' | tail -1)
  [ -n "$line" ] && echo "{\"name\": \"$name\", \"round\": $r, ${line:1}" >> "$OUT/twins.jsonl"
  say "$name round $r: $(echo "$line" | cut -c1-160)"
}
for r in $(seq 1 "$ROUNDS"); do
  for name in "${PROGS[@]}"; do
    (( $(left) < 40 )) && break 2
    script="workloads/torch/${name}_step.py"
    timeout 60 python3 benchmarks/device/traced_run.py "$OUT/${name}_trace_$r.json.gz" "$script" --steps "$STEPS" \
      > /dev/null 2>> "$OUT/traced_run.log"
    say "$name trace $r rc=$?"
    timed "$name" "$r" "$script"
    IFS=';' read -ra fixes <<< "${FIXES[$name]}"
    for fix in "${fixes[@]}"; do
      timed "${name}_${fix#--}" "$r" "$script" $fix
    done
  done
done
ls -la "$OUT"
