#!/usr/bin/env bash
# The profile-cost capture of 2026-11-30 (one H200, ~15 of a 30-minute device lease), in the background like
# capture_whole_model.sh (the device tool gives the machine back 30 s after a call ends, so `wait` calls follow at
# once):
#   wave   workloads/cuda/wave.cu: the planted partial-wave flaw (LCH001) and its twins: --check, --bench, and a
#          report with the analysis sections (4 launches, ~10 s)
#   cost   benchmarks/profile_cost.py --train with no launch cap: `ncuadvisor profile` (with the fixes of
#          2026-11-30 ~03:00 UTC: phase-1 time for the deep analysis, launch sizes as variants) against the naive
#          `ncu --set full` over every launch (~12 minutes); the reports are kept (xz) so the comparison can be
#          re-read here
# Usage (repository root, PYTHONPATH with ncu_report set up, as in capture_whole_model.sh):
#   bash workloads/capture_profile_cost.sh start        build, start both stages in the background, return after 60 s
#   bash workloads/capture_profile_cost.sh wait SECONDS print progress every 60 s for up to SECONDS (returns when done)
#   bash workloads/capture_profile_cost.sh finish       pack everything into $OUT
# ncu always gets --clock-control none; nothing here changes clocks, power or any other GPU setting.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=/tmp/s5
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"

progress() {
  echo "$(date -u +%H:%M:%S) stage: $(cat $W/stage 2>/dev/null), done=$([ -f $W/rc ] && cat $W/rc || echo no)"
  tail -c 400 "$W/files/profile_cost_train.txt" 2>/dev/null | tail -3
}

case "${1:-}" in
start)
  rm -rf "$W" && mkdir -p "$W/bin" "$W/files"
  {
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    echo "ncu: $(ncu --version 2>&1 | tail -1)"; echo "nvcc: $(nvcc --version 2>&1 | tail -1)"; echo "cpus: $(nproc)"
  } > "$W/files/versions.txt" 2>&1
  cat "$W/files/versions.txt"
  (cd "$REPO/workloads/cuda" && nvcc -arch=sm_90 -lineinfo -O3 -o "$W/bin/wave" wave.cu) || { echo "build failed"; exit 1; }
  mkdir -p "$W/repo" && (cd "$REPO" && tar -cf - --exclude=.git --exclude=fixtures --exclude=.whl . ) | tar -xf - -C "$W/repo"
  cp "$0" "$W/capture_profile_cost.sh"
  setsid nohup bash "$W/capture_profile_cost.sh" _run > "$W/run.log" 2>&1 < /dev/null &
  sleep 60
  progress
  ;;
_run)
  echo wave > "$W/stage"
  cd "$W/bin"
  { ./wave --check > "$W/files/check_wave.jsonl"; ./wave --bench > "$W/files/bench_wave.jsonl"
    /usr/bin/time -f "wave ncu %e s" ncu --clock-control none --import-source yes $SECS -o "$W/wave" ./wave --once
  } > "$W/files/wave_ncu.txt" 2>&1
  echo cost > "$W/stage"
  cd "$W/repo" && python3 benchmarks/profile_cost.py --train --out "$W/pct" --json "$W/files/profile_cost_train.json" \
    --budget-s 1500 > "$W/files/profile_cost_train.txt" 2>&1
  echo $? > "$W/rc"; echo done > "$W/stage"
  ;;
wait)
  END=$(( $(date +%s) + ${2:-540} ))
  while (( $(date +%s) < END )); do
    [ -f "$W/rc" ] && break
    sleep 60; progress
  done
  progress
  ;;
finish)
  progress
  cp "$W"/pct/*.log "$W/files/" 2>/dev/null
  ls -la "$W" "$W/pct" > "$W/files/file_list.txt" 2>&1
  mkdir -p "$OUT"
  for f in "$W/wave.ncu-rep" "$W/pct/profile.ncu-rep" "$W/pct/profile.phase1.ncu-rep" "$W/pct/naive.ncu-rep"; do
    [ -f "$f" ] || continue
    b=$(basename "$f"); [ "$b" = "naive.ncu-rep" ] || [ "$b" = "wave.ncu-rep" ] || b="train_$b"
    xz -T0 -6 -c "$f" > "$OUT/$b.xz"
    if (( $(stat -c %s "$OUT/$b.xz") > 15000000 )); then
      split -b 15000000 -d -a 2 "$OUT/$b.xz" "$OUT/$b.xz.part" && rm -f "$OUT/$b.xz"
    fi
  done
  tar -cJf "$OUT/profile_cost_files.tar.xz" -C "$W/files" .
  ls -la "$OUT"
  cat "$W/files/check_wave.jsonl" "$W/files/bench_wave.jsonl" 2>/dev/null
  tail -45 "$W/files/profile_cost_train.txt" 2>/dev/null
  ;;
*)
  sed -n 2,17p "$0"; exit 2 ;;
esac
