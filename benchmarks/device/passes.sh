#!/bin/bash
# On the GPU machine, from the repository root: the replay passes per launch of the collections `ncuadvisor profile`
# uses now (phase 1 with DRAM bytes and the tensor pipe; phase 2 without the two Speed Of Light percentages, and
# SpeedOfLight only for the CUDA rules' derived__ metrics), and what `profile` costs with them against the full set.
# 1. benchmarks/passes.py on one launch of workloads/cuda/patterns.cu --once: phase 1, phase 2 for PyTorch, library
#    and CUDA kernels, each with and without SpeedOfLight, and whether the CUDA rules' derived__ metrics are in a
#    report collected without SpeedOfLight; the PyTorch and CUDA collections without the tensor FLOP counts (phase 2
#    when phase 1 saw the tensor pipe idle; their peaks kept) first; then the PyTorch collection without the tensor
#    paths, without L2's throughput, without SourceCounters (the next candidates);
# 2. the same on one launch of the training step (the first launch of the range, then the first cuBLAS nvjet one);
# 3. benchmarks/profile_cost.py --train --naive same-launches: the ratio to `ncu --set full` on every launch, the
#    agreement table (the kernels placed at their tensor ceiling by phase 1 included) and each phase's passes.
# JSON, logs and the phase-1 report of the training step (with the new metrics) go to $OUT; keeps to $BUDGET s.
#     OUT=/tmp/passes BUDGET=360 bash benchmarks/device/passes.sh
BUDGET=${BUDGET:-360}  # before env.sh, whose default (120 s) is too short for this script
source benchmarks/device/env.sh
part_start
nvcc -arch=sm_90 -lineinfo -O3 -o /tmp/bin/patterns workloads/cuda/patterns.cu > "$OUT/nvcc.log" 2>&1
say "nvcc rc=$?"
TRAIN=(python3 workloads/torch/transformer_step.py)
TRAIN_ARGS="--mode eager --steps 3 --train"

# 1. patterns.cu, its third launch (about 40 s: the program runs in about a second under ncu)
S=$(( $(left) > 300 ? 60 : $(left) / 6 ))
say "passes on patterns.cu, ${S} s"
timeout $(( S + 10 )) python3 benchmarks/passes.py --program /tmp/bin/patterns --program-args=--once --launch-skip 2 \
  --label patterns --budget-s "$S" --timeout-s 40 --out /tmp/passes --json "$OUT/passes.json" \
  > "$OUT/passes_patterns.log" 2>&1
say "passes on patterns rc=$?"; cat "$OUT/passes_patterns.log"

# 2. the training step: each run starts PyTorch (about 15 s), so the PyTorch collections only
S=$(( $(left) > 250 ? 60 : $(left) / 5 ))
say "passes on the training step, ${S} s"
timeout $(( S + 10 )) python3 benchmarks/passes.py --program "${TRAIN[0]}" --program-args="${TRAIN[1]} $TRAIN_ARGS" \
  --nvtx step_all_threads --label train --collections phase1,phase2-pytorch --budget-s $(( S * 2 / 3 )) \
  --timeout-s 40 --out /tmp/passes --json "$OUT/passes.json" > "$OUT/passes_train.log" 2>&1
say "passes on the training step rc=$?"
timeout $(( $(left) > 60 ? 35 : 1 )) python3 benchmarks/passes.py --program "${TRAIN[0]}" \
  --program-args="${TRAIN[1]} $TRAIN_ARGS" --nvtx step_all_threads --kernel regex:nvjet --label train_nvjet \
  --collections phase2-library --timeout-s 30 --out /tmp/passes --json "$OUT/passes.json" >> "$OUT/passes_train.log" 2>&1
say "passes on the training step's GEMM rc=$?"; cat "$OUT/passes_train.log"

# 3. profile against the full set on the same launches (plain ~10 s, profile ~50 s, the full set ~70 s, analysis)
PC=$(( $(left) - 15 ))
if [ "$PC" -gt 120 ]; then
  say "profile_cost --train, ${PC} s"
  timeout $(( PC + 10 )) python3 benchmarks/profile_cost.py --train --naive same-launches --out /tmp/pct \
    --json "$OUT/profile_cost_train.json" --budget-s "$PC" > "$OUT/profile_cost_train.log" 2>&1
  say "profile_cost --train rc=$?"
  tail -50 "$OUT/profile_cost_train.log"
  for f in profile.log naive.log plain.log; do cp /tmp/pct/$f "$OUT/train_$f" 2>/dev/null; done
  cp /tmp/pct/profile.json "$OUT/train_profile.json" 2>/dev/null
  grep -h "passes" /tmp/pct/profile.log | sed 's/.*- \([0-9]*\) passes.*/\1/' | sort | uniq -c > "$OUT/train_phase_passes.txt"
else
  say "no time left for profile_cost ($PC s)"
fi
# the new phase-1 report of the training step (DRAM bytes and tensor pipe of every launch): a fixture for tests
[ -f /tmp/pct/profile.phase1.ncu-rep ] && [ "$(left)" -gt 4 ] && \
  timeout $(( $(left) - 2 )) xz -T0 -6 -c /tmp/pct/profile.phase1.ncu-rep > "$OUT/train_profile.phase1.ncu-rep.xz"
say "done"
