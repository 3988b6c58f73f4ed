#!/bin/bash
# On the GPU machine, from the repository root: the planted PyTorch cases' host and GPU timelines under torch.profiler
# (`workloads/torch/host_trace.py`: Chrome traces of 5 back-to-back calls per variant, and the same loop timed
# without the profiler), in $OUT; keeps to $BUDGET seconds (default 150). CASES: host_trace.py's --case; ARGS: its other options.
#     OUT=/tmp/ht BUDGET=150 bash benchmarks/device/host_trace.sh
source benchmarks/device/env.sh
part_start
timeout $(( $(left) - 5 )) python3 workloads/torch/host_trace.py --out "$OUT" ${CASES:+--case "$CASES"} ${ARGS:-} \
  > "$OUT/host_trace.jsonl" 2> "$OUT/host_trace.log"
say "host_trace rc=$?"; cat "$OUT/host_trace.jsonl"; tail -3 "$OUT/host_trace.log"
ls -la "$OUT"
