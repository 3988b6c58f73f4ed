#!/usr/bin/env bash
# Capture, in ONE call on the GPU machine, the fixtures of 2026-11-29 evening (fixtures/capture-big-2026-11-29/):
#   big        a whole-model report with more than 1,000 results and the sections the rules need
#              (workloads/cuda/model_step.cu, ncu's application replay: one pass of the program per replay pass,
#              so the cost per result is far below kernel replay's ~1.5 s); the launch count is chosen from two
#              short calibration runs so that the capture fits the time budget
#   multiproc  a program whose GPU work runs in 2 worker processes (workloads/cuda/multiproc.cu), with
#              --target-processes all: phase-1 metric only and the full section list; and `-o name_%p`
#   cache      the planted `cache` flaw and its twin (workloads/cuda/cache.cu): report, bench, check
#   dynshapes  eager PyTorch forward steps over 5 sequence lengths, duration only (dynamic-shape advice)
#   passes     the replay pass count of candidate section lists on one kernel (phase-2 cost)
# Usage: bash workloads/capture_big.sh     (writes $OUT/capture_big.tar.xz[.partNN] and $OUT/summary.txt)
# Environment: OUT, CAPTURE_BUDGET_S (default 540), CAPTURE_ONLY (default: build big multiproc cache dynshapes passes)
# ncu always gets --clock-control none; nothing here changes clocks, power or any other GPU setting.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-/tmp/capture_out}
BUDGET=${CAPTURE_BUDGET_S:-540}
RESERVE=50
ONLY=${CAPTURE_ONLY:-"build big multiproc cache dynshapes passes"}
W=/tmp/capture_work/files
rm -rf /tmp/capture_work && mkdir -p "$W/ncu_outputs" "$OUT"
BIN=/tmp/capture_work/bin
mkdir -p "$BIN"
T0=$(date +%s)
TIMINGS="$W/timings_big.txt"
printf "%-26s %5s %8s  %s\n" step rc seconds command > "$TIMINGS"
want() { [[ " $ONLY " == *" $1 "* ]]; }
now() { date +%s.%N; }
elapsed_since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
remaining() { echo $(( BUDGET - ($(date +%s) - T0) )); }
step() {  # step NAME MAX_S OUTFILE CMD...   (stdout and stderr together)
  local name=$1 max=$2 so=$3; shift 3
  local lim=$max rem=$(( $(remaining) - RESERVE ))
  (( rem < lim )) && lim=$rem
  if (( lim < 5 )); then printf "%-26s %5s %8s  %s\n" "$name" skip - "$*" >> "$TIMINGS"; echo "STEP $name skipped"; return 0; fi
  local s; s=$(now)
  timeout -s INT -k 20 "$lim" "$@" > "$so" 2>&1
  local rc=$?
  local e; e=$(elapsed_since "$s")
  printf "%-26s %5s %8s  %s\n" "$name" "$rc" "$e" "$*" >> "$TIMINGS"
  echo "step $name rc=$rc ${e}s"
  LAST_S=$e
  return 0
}
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"
NCU="ncu --clock-control none"
NO="$W/ncu_outputs"
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
  echo "ncu: $(ncu --version 2>&1 | tail -1)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -1)"
  echo "cpus: $(nproc)"
} > "$W/versions_big.txt"
cat "$W/versions_big.txt"

if want build; then
  SRC="$REPO/workloads/cuda"
  s=$(now)
  for b in model_step cache multiproc; do
    ( nvcc -arch=sm_90 -lineinfo -O3 -o "$BIN/$b" "$SRC/$b.cu" > "/tmp/capture_work/b_$b.log" 2>&1; echo $? > "/tmp/capture_work/b_$b.rc" ) &
  done
  wait
  for b in model_step cache multiproc; do echo "build $b rc=$(cat /tmp/capture_work/b_$b.rc)"; cat "/tmp/capture_work/b_$b.log"; done
  printf "%-26s %5s %8s  %s\n" build - "$(elapsed_since "$s")" "nvcc -arch=sm_90 -lineinfo -O3 (3 binaries)" >> "$TIMINGS"
fi
cd "$BIN" || exit 1

# ---------------------------------------------------------------- big: calibrate application replay, then capture
if want big; then
  step model_step_plain 30 "$W/model_step_plain.txt" ./model_step
  APP="--replay-mode application --app-replay-match grid --app-replay-buffer memory"
  step big_calib_40 120 "$NO/big_calib_40.txt" $NCU $APP $SECS -c 40 -o "$W/big_calib_40" ./model_step
  T40=${LAST_S:-0}
  step big_calib_120 150 "$NO/big_calib_120.txt" $NCU $APP $SECS -c 120 -o "$W/big_calib_120" ./model_step
  T120=${LAST_S:-0}
  REM=$(( $(remaining) - RESERVE - 200 ))   # keep ~200 s for the other captures and packing
  C=$(awk -v a="$T40" -v b="$T120" -v r="$REM" 'BEGIN{s=(b-a)/80; if (s<=0) s=0.01; i=a-40*s; c=int((r-i)/s*0.9); if (c>1080) c=1080; if (c<0) c=0; print c}')
  echo "calibration: 40 launches ${T40}s, 120 launches ${T120}s -> launch count $C (remaining budget ${REM}s)" | tee "$W/big_plan.txt"
  if (( C >= 200 )); then
    step big 560 "$NO/big.txt" $NCU $APP $SECS -c "$C" -o "$W/big" ./model_step
  fi
  rm -f "$W/big_calib_120.ncu-rep"
fi
# ---------------------------------------------------------------- multiproc
if want multiproc; then
  step multiproc_plain 30 "$W/multiproc_plain.txt" ./multiproc
  step multiproc_phase1 60 "$NO/multiproc_phase1.txt" $NCU --target-processes all --metrics gpu__time_duration.sum -o "$W/multiproc_phase1" ./multiproc
  step multiproc 120 "$NO/multiproc.txt" $NCU --target-processes all --import-source yes $SECS -o "$W/multiproc" ./multiproc
  step multiproc_pct_p 60 "$NO/multiproc_pct_p.txt" $NCU --target-processes all --metrics gpu__time_duration.sum -o "$W/multiproc_pid_%p" ./multiproc
fi
# ---------------------------------------------------------------- cache
if want cache; then
  step cache_bench 60 "$W/bench_cache.jsonl" ./cache --bench
  step cache_check 60 "$W/check_cache.jsonl" ./cache --check
  step cache 90 "$NO/cache.txt" $NCU --import-source yes $SECS -o "$W/cache" ./cache --once
fi
# ---------------------------------------------------------------- dynamic shapes (PyTorch eager forward)
if want dynshapes; then
  export PYTHONUNBUFFERED=1
  TS="$REPO/workloads/torch/transformer_step.py"
  step torch_dynshapes 120 "$NO/torch_dynshapes.txt" $NCU --metrics gpu__time_duration.sum --nvtx --nvtx-include "step_all_threads" -o "$W/torch_dynshapes" python3 "$TS" --mode eager --steps 2 --layers 2 --d-model 512 --heads 8 --batch 4 --seq 256 --seqs 128,192,256,320,384
fi
# ---------------------------------------------------------------- passes of candidate section lists (one kernel)
if want passes; then
  step passes_secs 40 "$NO/passes_secs.txt" $NCU $SECS -k blur_smem -c 1 ./cache --once
  step passes_no_charts 40 "$NO/passes_no_charts.txt" $NCU --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats -k blur_smem -c 1 ./cache --once
  step passes_core 40 "$NO/passes_core.txt" $NCU --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis_Tables --section SourceCounters --section WarpStateStats -k blur_smem -c 1 ./cache --once
  step passes_full 40 "$NO/passes_full.txt" $NCU --set full -k blur_smem -c 1 ./cache --once
fi

# ---------------------------------------------------------------- pack
cd "$W"
printf "%-26s %5s %8s  %s\n" total - "$(( $(date +%s) - T0 ))" "(before packing)" >> "$TIMINGS"
ls -la "$W" "$NO" > "$W/file_list_big.txt" 2>&1
s=$(now)
tar -cf - -C "$W" . | xz -T0 -6 > "$OUT/capture_big.tar.xz"
SZ=$(stat -c %s "$OUT/capture_big.tar.xz")
if (( SZ > 15900000 )); then
  split -b 15000000 -d -a 2 "$OUT/capture_big.tar.xz" "$OUT/capture_big.tar.xz.part"
  rm -f "$OUT/capture_big.tar.xz"
fi
{
  echo "==================== SUMMARY ===================="
  cat "$W/versions_big.txt"
  cat "$W/big_plan.txt" 2>/dev/null
  cut -c1-160 "$TIMINGS"
  echo "packing: $(elapsed_since "$s")s"
  cat "$W/model_step_plain.txt" "$W/multiproc_plain.txt" "$W/bench_cache.jsonl" "$W/check_cache.jsonl" 2>/dev/null
  grep -h "passes\|ERROR\|error" "$NO"/passes_*.txt "$NO"/big*.txt "$NO"/multiproc*.txt 2>/dev/null | sort | uniq -c | sort -rn | head -30
  grep -h "==PROF==\|==ERROR==" "$NO"/multiproc.txt 2>/dev/null | head -20
  tail -5 "$NO"/big.txt 2>/dev/null
  ls -la "$W"/*.ncu-rep 2>/dev/null | awk '{print $5, $9}'
  ls -la "$OUT"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
