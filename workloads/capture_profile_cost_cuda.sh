#!/usr/bin/env bash
# The profile-cost capture's last device minutes (2026-11-30 04:00 UTC): benchmarks/profile_cost.py on the CUDA
# program (the profile-cost benchmark's second workload):
# workloads/cuda/model_step.cu, 2 steps x 8 layers (~218 launches, every one in the naive `--set full` run), in the
# background like capture_profile_cost.sh (the device tool gives the machine back 30 s after a call ends).
# Usage (repository root, PYTHONPATH with ncu_report set up):
#   bash workloads/capture_profile_cost_cuda.sh start        build, start in the background, return after 30 s
#   bash workloads/capture_profile_cost_cuda.sh wait SECONDS print progress every 30 s for up to SECONDS (returns
#                                                            when done)
#   bash workloads/capture_profile_cost_cuda.sh finish       pack the JSON, logs and reports into $OUT
# ncu always gets --clock-control none; nothing here changes clocks, power or any other GPU setting.
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=/tmp/s5c
progress() {
  echo "$(date -u +%H:%M:%S) done=$([ -f $W/rc ] && cat $W/rc || echo no)"
  tail -c 300 "$W/files/profile_cost_cuda.txt" 2>/dev/null | tail -2
}
case "${1:-}" in
start)
  rm -rf "$W" && mkdir -p "$W/bin" "$W/files"
  { echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    echo "ncu: $(ncu --version 2>&1 | tail -1)"; echo "nvcc: $(nvcc --version 2>&1 | tail -1)"; echo "cpus: $(nproc)"
  } > "$W/files/versions_cuda.txt" 2>&1
  (cd "$REPO/workloads/cuda" && nvcc -arch=sm_90 -lineinfo -O3 -o "$W/bin/model_step" model_step.cu) || { echo "build failed"; exit 1; }
  mkdir -p "$W/repo" && (cd "$REPO" && tar -cf - --exclude=.git --exclude=fixtures --exclude=.whl . ) | tar -xf - -C "$W/repo"
  cp "$0" "$W/capture.sh"
  setsid nohup bash "$W/capture.sh" _run > "$W/run.log" 2>&1 < /dev/null &
  sleep 30; progress
  ;;
_run)
  cd "$W/repo" && python3 benchmarks/profile_cost.py --binary "$W/bin/model_step" --binary-args "--steps 2" \
    --out "$W/pcc" --json "$W/files/profile_cost_cuda.json" --budget-s 640 > "$W/files/profile_cost_cuda.txt" 2>&1
  echo $? > "$W/rc"
  ;;
wait)
  END=$(( $(date +%s) + ${2:-540} ))
  while (( $(date +%s) < END )); do [ -f "$W/rc" ] && break; sleep 30; progress; done
  progress
  ;;
finish)
  mkdir -p "$OUT"
  for f in plain profile naive; do cp "$W/pcc/$f.log" "$W/files/cuda_$f.log" 2>/dev/null; done
  for f in profile.ncu-rep profile.phase1.ncu-rep naive.ncu-rep; do
    [ -f "$W/pcc/$f" ] && xz -T0 -6 -c "$W/pcc/$f" > "$OUT/cuda_$f.xz"
  done
  tar -cJf "$OUT/profile_cost_cuda_files.tar.xz" -C "$W/files" .
  ls -la "$OUT"; tail -40 "$W/files/profile_cost_cuda.txt"
  ;;
*) sed -n 2,11p "$0"; exit 2 ;;
esac
