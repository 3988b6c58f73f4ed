#!/bin/bash
# On the GPU machine, from the repository root: the fp32 NCHW convolution of workloads/torch/planted.py with each fix
# of its twin alone, so that each estimate is compared with its own measured fix (TEN002 estimates TF32 alone; the
# twin measured so far turned TF32 and channels_last on together).
# 1. planted.py --bench on conv_nchw with its four variants: planted (TF32 off, NCHW), twin (TF32 on + channels_last),
#    tf32 (TF32 on, NCHW kept), channels_last (NHWC, TF32 off); and fp32_matmul (its twin is TF32 alone) as the
#    control against fixtures/planted/bench_torch.jsonl. CUDA events around each call, median of 25 after 5 warm-ups
#    (as the planted timings were taken): JSON lines in $OUT/bench_conv_fixes.jsonl, the lines
#    {case, fix: tf32|channels_last, saving_us, saving_pct} are each fix alone against the planted code;
# 2. with time left: an ncu capture of the two single-fix variants (the 13 analysis sections, as torch_gemm_conv was
#    taken), so that the report of each can be read without a GPU: $OUT/torch_conv_fixes.ncu-rep.xz and its log.
# Keeps to $BUDGET seconds (default 120).
#     OUT=/tmp/tf32 BUDGET=120 bash benchmarks/device/tf32_twin.sh
source benchmarks/device/env.sh
part_start
PLANTED=workloads/torch/planted.py
WORK=${WORK:-/tmp/tf32_twin}  # the raw report, before it is packed into $OUT
mkdir -p "$WORK"
CASES=conv_nchw:planted+twin+tf32+channels_last,fp32_matmul

# 1. the timings (about 20 s: torch import, cuDNN autotuning, 4 + 2 variants × 30 calls)
T=$(( $(left) - 10 )); [ "$T" -gt 90 ] && T=90
say "planted.py --bench --case $CASES, ${T} s"
timeout "$T" python3 "$PLANTED" --bench --case "$CASES" --iters 25 --warmup 5 \
  > "$OUT/bench_conv_fixes.jsonl" 2> "$OUT/bench_conv_fixes.log"
say "bench rc=$?"
cat "$OUT/bench_conv_fixes.jsonl"
tail -5 "$OUT/bench_conv_fixes.log"

# 2. the single-fix variants under ncu (about 25 s), only with the time it needs
T=$(( $(left) - 8 ))
if [ "$T" -ge 40 ]; then
  SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
--section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
--section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats \
--section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"
  say "ncu on conv_nchw:tf32+channels_last, ${T} s"
  # shellcheck disable=SC2086  # SECS is a list of arguments
  timeout "$T" ncu --clock-control none --import-source yes $SECS --nvtx --nvtx-include step/ --launch-count 8 \
    -o "$WORK/torch_conv_fixes" -f python3 "$PLANTED" --case conv_nchw:tf32+channels_last --steps 2 \
    > "$OUT/ncu_torch_conv_fixes.txt" 2>&1
  say "ncu rc=$?"
  grep -E "measured step|==PROF== Profiling|==ERROR==" "$OUT/ncu_torch_conv_fixes.txt" | tail -12
  if [ -f "$WORK/torch_conv_fixes.ncu-rep" ] && [ "$(left)" -gt 3 ]; then
    timeout $(( $(left) - 2 )) xz -T0 -6 -c "$WORK/torch_conv_fixes.ncu-rep" > "$OUT/torch_conv_fixes.ncu-rep.xz" \
      || rm -f "$OUT/torch_conv_fixes.ncu-rep.xz"
  fi
else
  say "no time left for the ncu capture ($T s)"
fi
say "done"
