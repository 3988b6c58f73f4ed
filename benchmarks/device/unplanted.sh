#!/bin/bash
# On the GPU machine, from the repository root: `ncuadvisor profile` as a new user runs it, on PyTorch training steps
# nobody tuned or planted (workloads/torch/gpt_step.py: GPT-style, bf16 autocast, SDPA; workloads/torch/cnn_step.py:
# ResNet-style, fp32 NCHW, PyTorch's defaults), each timed plain first. Per program in $OUT: the plain run's line,
# the profile's log, its JSON and markdown, its host trace where PROFILE_ARGS has --host-time, and the list of its
# phase reports (too large to bring back). Keeps to $BUDGET seconds (default 300). PROGRAMS: which, in order (default "gpt cnn");
# STEPS: the steps each script runs (default 3: two warm-ups, the profiled one).
#     OUT=/tmp/up BUDGET=300 bash benchmarks/device/unplanted.sh
#     PROGRAMS=cnn STEPS=8 PROFILE_ARGS="--python-lines --host-time" OUT=/tmp/up BUDGET=200 bash benchmarks/device/unplanted.sh
source benchmarks/device/env.sh
part_start
lim() { local t=$(( $(left) - $1 )); [ "$t" -lt 15 ] && t=15; echo "$t"; }
ROOT=$PWD
run_one() {  # NAME SHARE_OF_WHAT_IS_LEFT SCRIPT ARGS...
  local name=$1 keep=$2 script=$3; shift 3
  timeout $(lim "$keep") python3 "$script" "$@" > "$OUT/${name}_plain.txt" 2>&1
  say "$name plain rc=$? $(tail -1 "$OUT/${name}_plain.txt")"
  mkdir -p "/tmp/up/$name" && cd "/tmp/up/$name" || return
  local s; s=$(date +%s)
  timeout $(lim "$keep") python3 -m ncuadvisor profile ${PROFILE_ARGS:---python-lines} --nvtx-include step_all_threads \
    -o "/tmp/up/$name/$name.json" --force -v "$ROOT/$script" "$@" > "$OUT/${name}_profile.log" 2>&1
  say "$name profile rc=$? in $(( $(date +%s) - s )) s"
  cd "$ROOT" || return
  cp "/tmp/up/$name/$name.json" /tmp/up/"$name"/*.host-trace.json* "$OUT/" 2>/dev/null
  python3 -m ncuadvisor render "/tmp/up/$name/$name.json" -o "$OUT/$name.md" > /dev/null 2>&1
  ls -la /tmp/up/"$name" > "$OUT/${name}_reports.txt"   # the reports stay there: together they exceed what comes back
  grep -v "==PROF== Profiling" "$OUT/${name}_profile.log" | tail -25
}
read -ra PROGS <<< "${PROGRAMS:-gpt cnn}"
for i in "${!PROGS[@]}"; do  # each program but the last leaves half of what is left to those after it
  keep=5; (( i < ${#PROGS[@]} - 1 )) && keep=$(( $(left) / 2 ))
  run_one "${PROGS[$i]}" "$keep" "workloads/torch/${PROGS[$i]}_step.py" --steps "${STEPS:-3}"
done
ls -la "$OUT"
