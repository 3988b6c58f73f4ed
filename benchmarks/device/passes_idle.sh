#!/bin/bash
# On the GPU machine, from the repository root: the replay passes of one launch of workloads/cuda/patterns.cu --once
# under phase 2's collections with and without the six tensor FLOP counts (phase 2 leaves them out when phase 1 saw
# the tensor pipe idle on every chosen launch), for PyTorch programs and for CUDA code. JSON and log to $OUT.
#     OUT=/tmp/pi BUDGET=70 bash benchmarks/device/passes_idle.sh
source benchmarks/device/env.sh
part_start
nvcc -arch=sm_90 -lineinfo -O3 -o /tmp/bin/patterns workloads/cuda/patterns.cu > "$OUT/nvcc.log" 2>&1
say "nvcc rc=$?"
timeout $(( $(left) - 3 )) python3 benchmarks/passes.py --program /tmp/bin/patterns --program-args=--once \
  --launch-skip 2 --label patterns --collections phase1,phase2-pytorch,phase2-pytorch-no-tensor-counts,phase2-cuda,phase2-cuda-no-tensor-counts \
  --budget-s $(( $(left) - 8 )) --timeout-s 30 --out /tmp/passes_idle --json "$OUT/passes.json" > "$OUT/passes.log" 2>&1
say "passes rc=$?"; cat "$OUT/passes.log"
