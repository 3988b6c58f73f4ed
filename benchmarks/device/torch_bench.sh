#!/bin/bash
# On the GPU machine, from the repository root: the planted PyTorch cases and their twins timed
# (`workloads/torch/planted.py --bench --case all`: CUDA events around each call, and per call in a back-to-back
# loop), as JSON lines in $OUT/bench_torch.jsonl; keeps to $BUDGET seconds (default 120; about 40 s). CASES: planted.py's
# --case (default all), e.g. "train_step:planted+twin+tf32" for a fix alone.
#     OUT=/tmp/tb BUDGET=120 bash benchmarks/device/torch_bench.sh
source benchmarks/device/env.sh
part_start
timeout $(( $(left) - 3 )) python3 workloads/torch/planted.py --bench --case "${CASES:-all}" \
  > "$OUT/bench_torch.jsonl" 2> "$OUT/bench_torch.log"
say "bench rc=$?"; grep -E '"saving|"fix"' "$OUT/bench_torch.jsonl"
