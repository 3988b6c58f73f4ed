#!/usr/bin/env bash
# Captures the planted ceilings, access patterns and PyTorch cases in one device call (one H200):
#   1. versions (nvidia-smi, ncu, nvcc, torch, triton), builds of workloads/cuda/{ceilings,patterns}.cu
#      (nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v) and their SASS (cuobjdump)
#   2. --check and --bench of both CUDA programs; planted.py --bench over every PyTorch case (planted and twin)
#   3. ncu reports with the 13 analysis sections ($SECS, fixtures/README.md): ceilings, patterns, one per PyTorch
#      group (NVTX "step/" filtering and a --launch-count), and one duration-only report of the tiny-launch chain
#   4. everything packed into $OUT: reports xz -6 into tars of at most 15 MB, logs and JSON lines in one tar.xz
# Every ncu run uses --clock-control none (nothing here changes clocks, power or any other GPU setting), is timed with
# /usr/bin/time, keeps its log, and starts only when its estimated cost fits the wall budget (CAPTURE_BUDGET_S,
# seconds since the script started; default 530) so the call ends inside its limit. CAPTURE_ONLY="a b" runs only
# the named steps (see the step names below).
# Usage (repository root): bash workloads/capture_planted.sh
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=${CAPTURE_DIR:-/tmp/capture_planted}
BUDGET=${CAPTURE_BUDGET_S:-530}
ONLY=${CAPTURE_ONLY:-}
T0=$(date +%s)
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"
NCU="ncu --clock-control none"
PY=python3
PLANTED="$REPO/workloads/torch/planted.py"
rm -rf "$W" && mkdir -p "$W/bin" "$W/files" "$W/reports" "$W/xz"
F="$W/files"
echo "step rc seconds command" > "$F/timings.txt"

elapsed() { echo $(( $(date +%s) - T0 )); }
want() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }
# step NAME ESTIMATE_S LOG CMD...: run CMD (stdout+stderr to LOG) if it fits the budget, under `timeout -s INT` at the
# budget's end (ncu saves the results it has on SIGINT); records "NAME rc seconds CMD" in timings.txt.
step() {
  local name=$1 est=$2 log=$3; shift 3
  want "$name" || return 0
  local cmd="$*"; cmd=${cmd//"$SECS"/'$SECS'}
  local left=$(( BUDGET - $(elapsed) ))
  if (( left < est )); then
    echo "$name SKIPPED_BUDGET 0 (left ${left}s < estimate ${est}s) $cmd" >> "$F/timings.txt"
    echo "$(date -u +%H:%M:%S) skip $name: ${left}s left, estimate ${est}s"
    return 0
  fi
  local t=$(date +%s)
  echo "$(date -u +%H:%M:%S) [$(elapsed)s] $name (estimate ${est}s, ${left}s left)"
  /usr/bin/time -f "$name wall %e s, max RSS %M KB" -a -o "$F/ncu_time.txt" timeout -k 15 -s INT "$left" "$@" > "$log" 2>&1
  local rc=$?
  echo "$name $rc $(( $(date +%s) - t )) $cmd" >> "$F/timings.txt"
  echo "    rc=$rc, $(( $(date +%s) - t )) s"
}

# ---- 1. versions and builds
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
  echo "ncu: $(ncu --version 2>&1 | tail -1)"
  echo "nvcc: $(nvcc --version 2>&1 | tail -2 | tr '\n' ' ')"
  echo "kernel: $(uname -r), cpus: $(nproc)"
  $PY -c 'import sys, torch, triton; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); print("triton", triton.__version__)'
  echo "repo: $REPO"
} > "$F/versions.txt" 2>&1
nvidia-smi > "$F/nvidia_smi.txt" 2>&1
cat "$F/versions.txt"
if want build; then
  t=$(date +%s)
  for prog in ceilings patterns; do
    ( nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o "$W/bin/$prog" "$REPO/workloads/cuda/$prog.cu" > "$W/build_$prog.log" 2>&1
      echo $? > "$W/build_$prog.rc" ) &
  done
  wait
  cat "$W"/build_*.log > "$F/build_ptxas.log"
  for prog in ceilings patterns; do
    echo "build_$prog $(cat "$W/build_$prog.rc") $(( $(date +%s) - t )) nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v -o bin/$prog $REPO/workloads/cuda/$prog.cu" >> "$F/timings.txt"
    cuobjdump --dump-sass "$W/bin/$prog" > "$F/${prog}_sass.txt" 2>&1
    cuobjdump --dump-resource-usage "$W/bin/$prog" > "$F/${prog}_resource_usage.txt" 2>&1
  done
  echo "builds: ceilings rc=$(cat "$W/build_ceilings.rc") patterns rc=$(cat "$W/build_patterns.rc") ($(( $(date +%s) - t )) s)"
fi

# ---- 2. checks and benchmarks (no profiler)
cd "$W/bin" || exit 1
for prog in ceilings patterns; do
  [ -x "./$prog" ] || continue
  step "check_$prog" 30 "$F/check_$prog.jsonl" "./$prog" --check
  step "bench_$prog" 30 "$F/bench_$prog.jsonl" "./$prog" --bench
done
# planted.py --bench prints JSON lines on stdout and its log on stderr
step bench_torch 120 "$F/bench_torch.log" bash -c "$PY $PLANTED --bench --case all > $F/bench_torch.jsonl"

# ---- 3. ncu reports
step ncu_ceilings 40 "$F/ncu_ceilings.txt" $NCU --import-source yes $SECS -o "$W/reports/ceilings" ./ceilings --once
step ncu_patterns 50 "$F/ncu_patterns.txt" $NCU --import-source yes $SECS -o "$W/reports/patterns" ./patterns --once
step ncu_chain 20 "$F/ncu_ceilings_chain.txt" $NCU --metrics gpu__time_duration.sum -o "$W/reports/ceilings_chain" ./ceilings --chain
export TORCHINDUCTOR_COMPILE_THREADS=1
NV='--nvtx --nvtx-include step/'
step ncu_torch_cast_copy 30 "$F/ncu_torch_cast_copy.txt" $NCU --import-source yes $SECS $NV --launch-count 8 \
  -o "$W/reports/torch_cast_copy" $PY "$PLANTED" --case cast_vs_copy --both --steps 2
step ncu_torch_gemm_conv 45 "$F/ncu_torch_gemm_conv.txt" $NCU --import-source yes $SECS $NV --launch-count 16 \
  -o "$W/reports/torch_gemm_conv" $PY "$PLANTED" --case fp32_matmul,conv_nchw --both --steps 2
step ncu_torch_scatter 60 "$F/ncu_torch_scatter.txt" $NCU --import-source yes $SECS $NV --launch-count 30 \
  -o "$W/reports/torch_scatter" $PY "$PLANTED" --case index_add:planted+twin,scatter_add:planted --steps 2
step ncu_torch_norm_chain 60 "$F/ncu_torch_norm_chain.txt" $NCU --import-source yes $SECS $NV --launch-count 8 \
  -o "$W/reports/torch_norm_chain" $PY "$PLANTED" --case norm_chain --both --steps 2
# the training step: the start/end range (backward kernels come from autograd's thread); as many launches as fit
left=$(( BUDGET - $(elapsed) - 25 ))
TRAIN_COUNT=$(( left > 40 ? (left - 15) * 2 / 3 : 0 )); (( TRAIN_COUNT > 80 )) && TRAIN_COUNT=80
if (( TRAIN_COUNT >= 10 )); then
  step ncu_torch_train 30 "$F/ncu_torch_train.txt" $NCU --import-source yes $SECS --nvtx --nvtx-include step_all_threads \
    --launch-count $TRAIN_COUNT -o "$W/reports/torch_train" $PY "$PLANTED" --case train_step --steps 3
else
  echo "ncu_torch_train SKIPPED_BUDGET 0 (launch count would be $TRAIN_COUNT)" >> "$F/timings.txt"
fi

# ---- 4. pack into $OUT
echo "$(date -u +%H:%M:%S) [$(elapsed)s] packing"
cd "$W/reports" || exit 1
ls -la "$W/reports" > "$F/reports_list.txt"
for r in *.ncu-rep; do
  [ -f "$r" ] || continue
  xz -T0 -6 -c "$r" > "$W/xz/$r.xz"
done
ls -la "$W/xz" >> "$F/reports_list.txt"
mkdir -p "$OUT"
n=0; cur=""; cur_size=0
for f in $(ls -S "$W/xz"); do  # largest first, greedy into tars of at most 15 MB
  s=$(stat -c %s "$W/xz/$f")
  if [ -z "$cur" ] || (( cur_size + s > 15000000 )); then
    n=$((n + 1)); cur="$OUT/reports_$n.tar"; cur_size=0
  fi
  tar -rf "$cur" -C "$W/xz" "$f"; cur_size=$(( cur_size + s ))
done
echo "total $(elapsed) s" >> "$F/timings.txt"
tar -cJf "$OUT/capture_files.tar.xz" -C "$F" .
ls -la "$OUT"
for t in "$OUT"/reports_*.tar; do echo "$t: $(tar -tf "$t" | tr '\n' ' ')"; done
echo "== timings"; cat "$F/timings.txt"; cat "$F/ncu_time.txt" 2>/dev/null
echo "== checks"; cat "$F"/check_*.jsonl 2>/dev/null; grep -h '"check"\|"error"' "$F/bench_torch.jsonl" 2>/dev/null
echo "== bench"; cat "$F"/bench_ceilings.jsonl "$F"/bench_patterns.jsonl 2>/dev/null | cut -c1-150
grep -v '"check"' "$F/bench_torch.jsonl" 2>/dev/null | cut -c1-160
echo "== ncu errors"; grep -h "==ERROR==\|FAILED\|Traceback" "$F"/ncu_*.txt "$F/bench_torch.log" 2>/dev/null | head -20
