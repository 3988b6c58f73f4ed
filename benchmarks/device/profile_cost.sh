#!/bin/bash
# On the GPU machine, from the repository root: what `ncuadvisor profile` costs with its default collection (the
# declared metrics of the rules that apply to the chosen kernels' languages) against `ncu --set full`.
# 1. benchmarks/profile_cost.py --train: the PyTorch training step (229 launches); the full set runs on the launches
#    phase 2 profiled (compared in the same merged view: first findings and program findings), its cost on every
#    launch extrapolated from its seconds per launch (and, as a check, from the replay passes);
# 2. benchmarks/collection_cost.py on workloads/cuda/patterns.cu --once (17 launches): the full set, the declared
#    collection (the default for CUDA code) and the 13 sections on every launch, passes per launch, the agreement
#    table; then the replay passes of one launch per kind of metric (alone, and all but that kind) and of the
#    collection PyTorch programs get.
# JSON, logs and the small reports go to $OUT; keeps to $BUDGET seconds (about 300).
#     OUT=/tmp/pc BUDGET=300 bash benchmarks/device/profile_cost.sh
BUDGET=${BUDGET:-300}  # before env.sh, whose default (120 s) is too short for this script
source benchmarks/device/env.sh
part_start
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$OUT/steps.log" 2>&1
nvcc -arch=sm_90 -lineinfo -O3 -o /tmp/bin/patterns workloads/cuda/patterns.cu > "$OUT/nvcc.log" 2>&1 &
NVCC=$!

# 1. the training step (about 180 s: plain 13 s, profile ~60 s, the full set on ~31 launches ~85 s, analysis)
TRAIN=$(( $(left) - 100 ))
[ "$TRAIN" -lt 150 ] && TRAIN=$(( $(left) * 2 / 3 ))
say "profile_cost --train, ${TRAIN} s"
timeout $(( TRAIN + 20 )) python3 benchmarks/profile_cost.py --train --naive same-launches --out /tmp/pct \
  --json "$OUT/profile_cost_train.json" --budget-s "$TRAIN" > "$OUT/profile_cost_train.log" 2>&1
say "profile_cost --train rc=$?"
tail -45 "$OUT/profile_cost_train.log"
for f in profile.log naive.log plain.log; do cp /tmp/pct/$f "$OUT/train_$f" 2>/dev/null; done
cp /tmp/pct/profile.json "$OUT/train_profile.json" 2>/dev/null
grep -h "passes" /tmp/pct/profile.log | sed 's/.*- \([0-9]*\) passes.*/\1/' | sort | uniq -c > "$OUT/train_phase_passes.txt"
grep -h "passes" /tmp/pct/naive.log | sed 's/.*- \([0-9]*\) passes.*/\1/' | sort | uniq -c > "$OUT/train_full_passes.txt"
ls -la /tmp/pct >> "$OUT/steps.log" 2>&1

# 2. the CUDA program: first the replay passes of one launch per kind of metric (ncu alone), then the collections on
#    every launch (ncu alone: declared, the default for CUDA code; the full set; the 13 sections as time allows), then
#    their analysis in a process of its own (a crash of the report reader loses only the agreement table)
wait $NVCC; say "nvcc rc=$?"
CC=$(( $(left) - 10 ))
if [ "$CC" -gt 30 ]; then
  GROUPS_S=$(( CC > 130 ? CC - 100 : CC / 3 ))
  say "collection_cost on patterns: passes per kind of metric (${GROUPS_S} s) + declared, ${CC} s"
  timeout "$CC" python3 benchmarks/collection_cost.py --binary /tmp/bin/patterns --binary-args=--once --out /tmp/cc \
    --collections declared --group-passes-s "$GROUPS_S" --group-launch 2 --no-analysis \
    --json "$OUT/collection_cost.json" --timeout-s 60 > "$OUT/collection_cost.log" 2>&1
  say "collection_cost (passes, declared) rc=$?"
  tail -40 "$OUT/collection_cost.log"
fi
for COL in full sections; do
  CC=$(( $(left) - 30 ))
  [ "$CC" -gt 45 ] || { say "no time left for $COL ($CC s)"; break; }
  say "collection_cost on patterns: $COL, ${CC} s"
  timeout "$CC" python3 benchmarks/collection_cost.py --binary /tmp/bin/patterns --binary-args=--once --out /tmp/cc \
    --collections "$COL" --no-analysis --json "$OUT/collection_cost.json" --timeout-s $(( CC - 5 )) \
    >> "$OUT/collection_cost.log" 2>&1
  say "collection_cost ($COL) rc=$?"
  tail -3 "$OUT/collection_cost.log"
done
CC=$(( $(left) - 8 ))
if [ "$CC" -gt 10 ]; then
  say "collection_cost: the agreement table, ${CC} s"
  timeout "$CC" python3 benchmarks/collection_cost.py --analyze --out /tmp/cc --collections full,declared,sections \
    --json "$OUT/collection_cost.json" >> "$OUT/collection_cost.log" 2>&1
  say "collection_cost (analysis) rc=$?"
  tail -16 "$OUT/collection_cost.log"
fi
ls -la /tmp/cc >> "$OUT/steps.log" 2>&1

# the small reports, for analysing again without a GPU (the large ones only when time is left)
for f in /tmp/pct/profile.phase1.ncu-rep /tmp/pct/profile.ncu-rep /tmp/cc/declared.ncu-rep /tmp/cc/full.ncu-rep \
         /tmp/pct/naive.ncu-rep; do
  [ -f "$f" ] || continue
  [ "$(left)" -gt 4 ] || break
  n=$(basename "$(dirname "$f")")_$(basename "$f")
  timeout $(( $(left) - 2 )) xz -T0 -1 -c "$f" > "$OUT/$n.xz" || rm -f "$OUT/$n.xz"
done
say "done"
