#!/usr/bin/env bash
# The whole-model capture (first run 2026-11-30 on the 2-GPU H200 machine), spread over several device calls (one
# call may last 10 minutes, the big capture needs about 27), with the two GPUs working at once:
#   GPU 0  big       the whole-model report: workloads/cuda/model_step.cu (10 steps x 8 layers, 1,080 launches), every
#                    launch with the sections the rules need (kernel replay, ~1.5 s a result); ncu runs in the
#                    background (setsid) and is stopped with SIGINT at a deadline if it has not finished: ncu then
#                    saves the results it has
#   GPU 1  cache     workloads/cuda/cache.cu (the planted cache flaw vstencil_rows and its twin, the blur pair):
#                    --check, --bench, and a report with the same sections
#          cost      benchmarks/profile_cost.py --train with no launch cap: the naive `ncu --set full` over every
#                    launch of the training step, measured instead of extrapolated
# Each ncu instance gets its own TMPDIR: ncu serialises profiling across processes with a lock file in TMPDIR,
# and the two instances profile different GPUs.
# Usage (repository root, PYTHONPATH with ncu_report set up):
#   bash workloads/capture_whole_model.sh start DEADLINE_S   build, start both GPUs' work in the background;
#                                                            DEADLINE_S is when (seconds from now) GPU 0's ncu gets
#                                                            SIGINT at the latest
#   bash workloads/capture_whole_model.sh wait SECONDS       print progress every 60 s for up to SECONDS (returns
#                                                            early when both GPUs are done)
#   bash workloads/capture_whole_model.sh finish             stop what still runs (SIGINT), pack everything into $OUT
# Learnt in the first run (2026-11-30 00:03 UTC, 2-GPU machine):
#   - the device machine is given back 30 s after a call ends: the background capture survives only if the next
#     `wait` call follows at once (the first attempt was lost that way after 132 results);
#   - the second GPU did not help the big capture: while GPU 1 ran ncu (profile_cost), GPU 0's capture slowed from
#     1.55 to 2.7 s per result, separate TMPDIRs notwithstanding. Run it alone: CAPTURE_BIG_ONLY=1 skips GPU 1's work.
#   At 1.55 s per result, 1,080 results need ~28 min: a whole 30-minute device lease, started first, nothing else
#   (CAPTURE_BIG_COUNT=1000 caps the launches profiled; the deadline's SIGINT saves what ncu has).
# 2026-11-30 01:38 UTC (one H200): `start 1560` with CAPTURE_BIG_COUNT=1040 gave 989 results in 1,561 s (1.58 s each);
#   the machine starts in ~30 s and `finish` takes ~5 s, so `start 1680` fits one 30-minute lease and reaches ~1,060.
# 2026-11-30 04:41 UTC (one H200): `CAPTURE_BIG_COUNT=1010 ... start 1620` gave 1,010 results in 1,582 s (1.57 s each),
#   ncu stopping by itself at the launch cap (exit 0): three back-to-back calls, 1,634 s of device time with
#   `finish` (xz -6 ~20 s).
# ncu always gets --clock-control none; nothing here changes clocks, power or any other GPU setting.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=/tmp/s3
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"

progress() {
  local n0 n1
  n0=$(grep -c "==PROF== Profiling" "$W/big.log" 2>/dev/null); n0=${n0:-0}
  echo "$(date -u +%H:%M:%S) gpu0 big: $n0 results profiled ($(( $(date +%s) - $(cat $W/big.t0 2>/dev/null || date +%s) )) s)," \
       "done=$([ -f $W/big.rc ] && cat $W/big.rc || echo no); gpu1: $(cat $W/gpu1.stage 2>/dev/null)," \
       "done=$([ -f $W/gpu1.rc ] && cat $W/gpu1.rc || echo no)"
  tail -c 300 "$W/gpu1.log" 2>/dev/null | tail -2
}

case "${1:-}" in
start)
  DEADLINE=${2:?deadline seconds}
  rm -rf "$W" && mkdir -p "$W/bin" "$W/tmp0" "$W/tmp1" "$W/files"
  {
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    echo "ncu: $(ncu --version 2>&1 | tail -1)"; echo "nvcc: $(nvcc --version 2>&1 | tail -1)"; echo "cpus: $(nproc)"
  } > "$W/files/versions.txt" 2>&1
  cat "$W/files/versions.txt"
  (cd "$REPO/workloads/cuda" && nvcc -arch=sm_90 -lineinfo -O3 -o "$W/bin/model_step" model_step.cu \
     && nvcc -arch=sm_90 -lineinfo -O3 -o "$W/bin/cache" cache.cu) || { echo "build failed"; exit 1; }
  echo "built"
  # the background work runs from copies (the device tool re-syncs the working tree between calls)
  mkdir -p "$W/repo" && (cd "$REPO" && tar -cf - --exclude=.git --exclude=fixtures --exclude=.whl . ) | tar -xf - -C "$W/repo"
  cp "$0" "$W/capture_whole_model.sh"
  NG=$(nvidia-smi -L | wc -l)
  if [ "${CAPTURE_BIG_ONLY:-0}" = 1 ]; then
    NG=1; echo 0 > "$W/gpu1.rc"; echo "none (CAPTURE_BIG_ONLY)" > "$W/gpu1.stage"
  elif (( NG < 2 )); then  # one GPU: the cache pair first (its timings alone on the GPU), no cost run
    bash "$W/capture_whole_model.sh" _cache 0; echo "cache pair done on GPU 0"
    echo 0 > "$W/gpu1.rc"; echo "none (one GPU)" > "$W/gpu1.stage"
  fi
  date +%s > "$W/big.t0"
  setsid nohup bash "$W/capture_whole_model.sh" _big "$DEADLINE" > /dev/null 2>&1 < /dev/null &
  (( NG >= 2 )) && setsid nohup bash "$W/capture_whole_model.sh" _gpu1 > "$W/gpu1.log" 2>&1 < /dev/null &
  sleep ${CAPTURE_SLEEP:-75}
  progress
  ;;
_cache)  # the cache pair on GPU $2: check, bench, report
  cd "$W/bin" && export CUDA_VISIBLE_DEVICES=$2 TMPDIR=$W/tmp$2
  { ./cache --check > "$W/files/check_cache.jsonl"; ./cache --bench > "$W/files/bench_cache.jsonl"
    /usr/bin/time -f "cache ncu %e s" ncu --clock-control none --import-source yes $SECS -o "$W/cache" ./cache --once
  } > "$W/files/cache_ncu.txt" 2>&1
  ;;
_big)  # GPU 0: the whole-model capture, SIGINT at the deadline
  cd "$W/bin" && CUDA_VISIBLE_DEVICES=0 TMPDIR=$W/tmp0 timeout -s INT -k 120 "$2" \
    ncu --clock-control none --import-source yes $SECS -c "${CAPTURE_BIG_COUNT:-1080}" -o "$W/model_step_1080" ./model_step > "$W/big.log" 2>&1
  echo $? > "$W/big.rc"; date +%s > "$W/big.t1"
  ;;
_gpu1)  # GPU 1: the cache pair, then the profile-cost benchmark with the naive run over every launch
  echo cache > "$W/gpu1.stage"
  bash "$W/capture_whole_model.sh" _cache 1
  echo cost > "$W/gpu1.stage"
  cd "$W/repo" && CUDA_VISIBLE_DEVICES=1 TMPDIR=$W/tmp1 python3 benchmarks/profile_cost.py --train --out "$W/pct" \
    --json "$W/files/profile_cost_train_full.json" --budget-s 1500 > "$W/files/profile_cost_train_full.txt" 2>&1
  echo $? > "$W/gpu1.rc"; echo done > "$W/gpu1.stage"
  ;;
wait)
  END=$(( $(date +%s) + ${2:-540} ))
  while (( $(date +%s) < END )); do
    if [ -f "$W/big.rc" ] && [ -f "$W/gpu1.rc" ]; then break; fi
    sleep 60; progress
  done
  progress
  ;;
finish)
  pkill -INT -f "ncu --clock-control none --import-source yes" 2>/dev/null
  for i in $(seq 1 120); do [ -f "$W/big.rc" ] && break; sleep 1; done
  progress
  t0=$(cat "$W/big.t0"); t1=$(cat "$W/big.t1" 2>/dev/null || date +%s)
  echo "big: rc=$(cat $W/big.rc 2>/dev/null) wall=$(( t1 - t0 )) s results=$(grep -c '==PROF== Profiling' $W/big.log)" \
    | tee "$W/files/big_summary.txt"
  head -c 20000 "$W/big.log" > "$W/files/big_head.txt"; tail -c 20000 "$W/big.log" > "$W/files/big_tail.txt"
  cp "$W/gpu1.log" "$W/files/" 2>/dev/null
  cp "$W"/pct/*.log "$W/files/" 2>/dev/null
  ls -la "$W" "$W/pct" > "$W/files/file_list.txt" 2>&1
  mkdir -p "$OUT"
  # the reports: xz each, split above 15 MB
  for f in "$W/model_step_1080.ncu-rep" "$W/cache.ncu-rep"; do
    [ -f "$f" ] || continue
    b=$(basename "$f"); ls -la "$f" >> "$W/files/file_list.txt"
    xz -T0 -6 -c "$f" > "$OUT/$b.xz"
    if (( $(stat -c %s "$OUT/$b.xz") > 15000000 )); then
      split -b 15000000 -d -a 2 "$OUT/$b.xz" "$OUT/$b.xz.part" && rm -f "$OUT/$b.xz"
    fi
  done
  tar -cJf "$OUT/whole_model_files.tar.xz" -C "$W/files" .
  ls -la "$OUT"
  cat "$W/files/big_summary.txt" "$W/files/check_cache.jsonl" "$W/files/bench_cache.jsonl" 2>/dev/null
  tail -30 "$W/files/profile_cost_train_full.txt" 2>/dev/null
  ;;
*)
  sed -n 2,23p "$0"; exit 2 ;;
esac
