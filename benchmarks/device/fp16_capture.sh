#!/usr/bin/env bash
# Captures workloads/cuda/fp16.cu on the GPU machine: packed-half kernels with known FLOP counts (HFMA2, HADD2, HMUL2,
# scalar __hfma) and the conversion, bit and MUFU kernels that tell which SASS opcodes the XU pipe runs.
#   1. builds fp16.cu (nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v) and dumps its SASS
#   2. ./fp16 --counts (the program's own operation and FLOP counts)
#   3. one ncu report: the analysis sections, the half-precision hierarchical roofline chart, and the pipe and
#      SASS-op counters below (those this ncu knows on this GPU: asked of `ncu --query-metrics` first)
#   4. ./fp16 --check and ./fp16 --bench when the budget leaves time
# Everything lands in $OUT: fp16.ncu-rep.xz (xz -9), recipe.txt (every command exactly as run, its exit code and
# seconds), counts.jsonl, check.jsonl, bench.jsonl, build.log, fp16_sass.txt.xz, ncu.log, metrics.txt.
# ncu runs with --clock-control none: nothing here changes clocks or any other GPU setting.
#     OUT=/tmp/x BUDGET=60 bash benchmarks/device/fp16_capture.sh        (from the repository root)
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=benchmarks/device/env.sh
source benchmarks/device/env.sh
W=$(mktemp -d /tmp/fp16_capture.XXXXXX)
R="$OUT/recipe.txt"
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis"
SECS="$SECS --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables"
SECS="$SECS --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats"
SECS="$SECS --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart"
SECS="$SECS --section SpeedOfLight_HierarchicalTensorRooflineChart --section SpeedOfLight_HierarchicalHalfRooflineChart"
# counters: each as .sum (instructions) and, for pipes, the busy share over the elapsed cycles
COUNTERS="smsp__sass_thread_inst_executed_op_hfma_pred_on smsp__sass_thread_inst_executed_op_hadd_pred_on
smsp__sass_thread_inst_executed_op_hmul_pred_on smsp__sass_thread_inst_executed_op_fp16_pred_on
smsp__sass_thread_inst_executed_op_ffma_pred_on smsp__sass_thread_inst_executed_op_fadd_pred_on
smsp__sass_thread_inst_executed_op_fmul_pred_on smsp__sass_thread_inst_executed_op_conversion_pred_on
smsp__sass_thread_inst_executed_op_integer_pred_on smsp__sass_thread_inst_executed_op_bit_pred_on
lts__t_sectors_srcunit_tex_op_write"
PIPES="sm__inst_executed_pipe_xu sm__inst_executed_pipe_alu sm__inst_executed_pipe_fma sm__inst_executed_pipe_fmaheavy
sm__inst_executed_pipe_fmalite sm__inst_executed_pipe_fp16 sm__inst_executed_pipe_fma_type_fp16
sm__inst_executed_pipe_fp64 sm__inst_executed_pipe_tensor_op_hmma sm__inst_executed_pipe_lsu
sm__inst_executed_pipe_uniform sm__inst_executed_pipe_cbu sm__inst_executed_pipe_adu sm__inst_issued
sm__pipe_fma_cycles_active sm__pipe_fmaheavy_cycles_active sm__pipe_fp16_cycles_active sm__pipe_alu_cycles_active
sm__pipe_xu_cycles_active sm__pipe_fp64_cycles_active sm__pipe_tensor_op_hmma_cycles_active sm__pipe_shared_cycles_active"

# run NAME LOG CMD...: CMD with stdout+stderr to LOG, stopped (SIGINT: ncu keeps what it has) when the budget ends;
# the exact command, its exit code and seconds go to the recipe
run() {
  local name=$1 log=$2; shift 2
  local t=$(date +%s) l; l=$(left)
  if (( l < 3 )); then echo "# $name skipped: budget spent" >> "$R"; return 1; fi
  timeout -k 5 -s INT "$l" "$@" > "$log" 2>&1
  local rc=$?
  printf '%s\n# %s: rc=%s, %s s\n' "$*" "$name" "$rc" "$(( $(date +%s) - t ))" >> "$R"
  return $rc
}

{ echo "# fp16_capture.sh, $(date -u +%Y-%m-%dT%H:%M:%SZ), from $PWD, BUDGET=$BUDGET s, work dir $W"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
  echo "# $(ncu --version | tail -1); $(nvcc --version | tail -1)"; } > "$R" 2>&1

# 1. build and SASS
run build "$OUT/build.log" nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o "$W/fp16" workloads/cuda/fp16.cu || {
  echo "build failed:"; tail -20 "$OUT/build.log"; exit 1; }
cuobjdump --dump-sass "$W/fp16" 2>&1 | xz -9 > "$OUT/fp16_sass.txt.xz"

# 2. the program's own counts
run counts "$OUT/counts.jsonl" "$W/fp16" --counts

# 3. the report; metrics this ncu does not know are left out (an unknown name would stop ncu)
ncu --query-metrics > "$W/known.txt" 2>&1
M=""
for c in $COUNTERS $PIPES; do
  if grep -qE "(^|[[:space:]])$c([[:space:]]|$)" "$W/known.txt"; then
    M="$M,$c.sum"
    [[ $c == sm__* ]] && M="$M,$c.avg.pct_of_peak_sustained_elapsed"
  else
    echo "not known here: $c" >> "$OUT/metrics.txt"
  fi
done
M=${M#,}
echo "asked: $M" >> "$OUT/metrics.txt"
run ncu "$OUT/ncu.log" ncu --clock-control none --import-source yes $SECS ${M:+--metrics "$M"} \
  -o "$W/fp16" "$W/fp16" --once
for rep in "$W/fp16.ncu-rep" "$W/fp16.ncu-repz"; do  # ncu from 2026.3 on writes .ncu-repz by default
  [ -f "$rep" ] || continue
  xz -9 -T0 -c "$rep" > "$OUT/$(basename "$rep").xz"
  echo "# report: $(stat -c %s "$rep") bytes raw, $(stat -c %s "$OUT/$(basename "$rep").xz") bytes xz -9" >> "$R"
done

# 4. checks and timings without the profiler, if time is left
run check "$OUT/check.jsonl" "$W/fp16" --check
run bench "$OUT/bench.jsonl" "$W/fp16" --bench
echo "# total $(( $(date +%s) - T0 )) s" >> "$R"
rm -rf "$W"
cat "$R"; ls -la "$OUT"; grep -h "==ERROR==\|==WARNING==" "$OUT/ncu.log" | head -5
