#!/bin/bash
# On the GPU machine, from the repository root: what `ncuadvisor profile` costs on a CUDA program against
# `ncu --set full`: workloads/cuda/model_step.cu --steps 2 (216 launches of 13 kernels), the full set on the launches
# phase 2 profiled (compared in the same merged view), its cost on every launch extrapolated per launch; each phase's
# replay passes. JSON, logs and ncuadvisor's result to $OUT.
#     OUT=/tmp/cc BUDGET=240 bash benchmarks/device/cuda_cost.sh
BUDGET=${BUDGET:-240}
source benchmarks/device/env.sh
part_start
nvcc -arch=sm_90 -lineinfo -O3 -o /tmp/bin/model_step workloads/cuda/model_step.cu > "$OUT/nvcc.log" 2>&1
say "nvcc rc=$?"
T=$(( $(left) - 10 ))
timeout $(( T + 5 )) python3 benchmarks/profile_cost.py --binary /tmp/bin/model_step --binary-args "--steps 2" \
  --naive same-launches --out /tmp/pcc --json "$OUT/profile_cost_cuda.json" --budget-s "$T" \
  > "$OUT/profile_cost_cuda.log" 2>&1
say "profile_cost --binary rc=$?"; tail -40 "$OUT/profile_cost_cuda.log"
for f in profile.log naive.log plain.log; do cp /tmp/pcc/$f "$OUT/cuda_$f" 2>/dev/null; done
cp /tmp/pcc/profile.json "$OUT/cuda_profile.json" 2>/dev/null
grep -h "passes" /tmp/pcc/profile.log | sed 's/.*- \([0-9]*\) passes.*/\1/' | sort | uniq -c > "$OUT/cuda_phase_passes.txt"
grep -h "passes" /tmp/pcc/naive.log | sed 's/.*- \([0-9]*\) passes.*/\1/' | sort | uniq -c > "$OUT/cuda_full_passes.txt"
say "done"
