#!/bin/bash
# On the GPU machine, from the repository root: before/after captures for the program findings that have no pair in
# fixtures/ (docs/agents.md, "The checks on real captures"): the GPT training step (workloads/torch/gpt_step.py) profiled as
# it is, where PYT003 (the foreach AdamW step) and PYT005 (the eager cross-entropy) fire, then with each fix alone:
# --fused (AdamW(fused=True): PYT003's foreach kernels to 0 launches) and --compiled-loss (the loss through
# torch.compile: PYT005's eager loss kernels to 0). Each is `ncuadvisor profile` of the same NVTX range
# ($OUT/gpt_{plain,fused,compiled-loss}.json and the run's log), then `ncuadvisor diff` of the plain step against each
# fix ($OUT/diff_{fused,compiled-loss}.{json,md}: the program counter checks, "PYT003 resolved: launches of the
# kernels it names 48 → 0 (predicted ≤ 24)"). The reports are not kept (the results hold what diff reads). Keeps to
# $BUDGET seconds (default 540; a profile of the default step took 199 s with --host-time and --python-lines on the
# H200 on 2026-12-02, so the default ARGS are a smaller step). ARGS: the step's size.
#     OUT=/tmp/pt BUDGET=540 bash benchmarks/device/pyt_twins.sh
#     OUT=$OUT TOTAL=560 PARTS="pyt_twins:550" GPU_TESTS=none bash benchmarks/device/all.sh
source benchmarks/device/env.sh
BUDGET=${BUDGET:-540}
part_start
ARGS=${ARGS:-"--layers 4 --batch 4 --seq 512"}
STEPS=${STEPS:-3}
ROOT=$PWD
mkdir -p /tmp/pt && cd /tmp/pt || exit 1
for variant in plain fused compiled-loss; do
  (( $(left) < 60 )) && { say "$variant: no time left to profile"; continue; }
  flag=""; [ "$variant" != plain ] && flag="--$variant"
  # each of the three takes a third of what is left at the start, the last all that is left
  case $variant in plain) T=$(( $(left) / 3 ));; fused) T=$(( $(left) / 2 ));; *) T=$(( $(left) - 20 ));; esac
  # shellcheck disable=SC2086  # ARGS split on purpose
  timeout "$T" python3 -m ncuadvisor profile --nvtx-include step_all_threads -o "/tmp/pt/gpt_$variant.json" --force \
    "$ROOT/workloads/torch/gpt_step.py" --steps "$STEPS" $ARGS $flag > "$OUT/gpt_${variant}_profile.log" 2>&1
  say "$variant profile rc=$? (limit $T s)"
  cp "/tmp/pt/gpt_$variant.json" "$OUT/" 2>/dev/null
done
cd "$ROOT" || exit 1
for fix in fused compiled-loss; do
  [ -f "$OUT/gpt_plain.json" ] && [ -f "$OUT/gpt_$fix.json" ] || { say "diff $fix: a side is missing"; continue; }
  python3 -m ncuadvisor diff "$OUT/gpt_plain.json" "$OUT/gpt_$fix.json" -f json -o "$OUT/diff_$fix.json" -q --force
  python3 -m ncuadvisor diff "$OUT/gpt_plain.json" "$OUT/gpt_$fix.json" -f md -o "$OUT/diff_$fix.md" -q --force
  say "diff $fix rc=$?: $(python3 -c "import json, sys; d = json.load(open(sys.argv[1]))
print(' | '.join(c['text'] for c in d.get('program_counter_checks') or []))" "$OUT/diff_$fix.json" 2>&1)"
done
ls -la "$OUT"
