#!/bin/bash
# On the GPU machine, from the repository root: the share of L1's peak that coalesced 32-bit global loads reach when
# most of them hit L1, by the loads per thread and the share that miss (workloads/cuda/l1rate.cu: the vertical stencil
# with 9, 33 and 65 taps in dim3(32, 4 | 8 | 32) blocks, and a 32 KB window every block re-reads), in one call:
# 1. build (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table so --import-source finds it);
# 2. ./l1rate --bench: 3 warm-ups, median of 15 cudaEvent timings per kernel, $OUT/bench_l1rate.jsonl (no profiler);
# 3. ncu --set full --import-source yes --clock-control none on ./l1rate --once (12 kernels, one launch each):
#    $OUT/l1rate.ncu-rep.xz and ncu's log $OUT/l1rate_ncu.txt;
# 4. with time left, this checkout's `ncuadvisor report` of it: $OUT/l1rate_report.txt and $OUT/l1rate.json;
# 5. the build, bench-error, ncu and report-error logs packed into $OUT/logs_l1rate.tar.xz (8 files at most come back).
# Keeps to $BUDGET seconds (default 150); the steps log to $OUT/steps.log. Read the report's
# l1tex__data_pipe_lsu_wavefronts / l1tex__throughput % and l1tex__t_sector_hit_rate.pct per kernel.
#     OUT=/tmp/l1rate BUDGET=150 bash benchmarks/device/l1rate.sh
BUDGET=${BUDGET:-150}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/l1rate-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; echo "$t"; }  # cap RESERVE MAX: seconds for a step

s=$(date +%s)
timeout "$(cap 110 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/l1rate" "$ROOT/workloads/cuda/l1rate.cu" \
  > "$OUT/build_l1rate.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"
[ -x "$WORK/l1rate" ] || { cat "$OUT/build_l1rate.txt"; say "no binary: stop"; exit 1; }

timeout "$(cap 80 30)" "$WORK/l1rate" --bench > "$OUT/bench_l1rate.jsonl" 2> "$OUT/bench_l1rate.err"
say "bench rc=$?"
cat "$OUT/bench_l1rate.jsonl"

T=$(cap 20 90)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/l1rate" "$WORK/l1rate" --once \
  > "$OUT/l1rate_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/l1rate_ncu.txt") launches profiled"
grep -E "==ERROR==|==WARNING==" "$OUT/l1rate_ncu.txt" | head -5
if [ -f "$WORK/l1rate.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/l1rate.ncu-rep" > "$OUT/l1rate.ncu-rep.xz" || rm -f "$OUT/l1rate.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/l1rate.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/l1rate.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 3 ))
if [ -f "$WORK/l1rate.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/l1rate.ncu-rep" -o "$OUT/l1rate.json" > /dev/null 2> "$OUT/l1rate_report.err"
  say "ncuadvisor json rc=$?"
  T=$(( $(left) - 2 ))
  (( T >= 5 )) && timeout "$T" python3 -m ncuadvisor report "$WORK/l1rate.ncu-rep" > "$OUT/l1rate_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
fi
# the logs in one archive: at most 8 files come back from $OUT
( cd "$OUT" && tar -cJf logs_l1rate.tar.xz --ignore-failed-read build_l1rate.txt bench_l1rate.err l1rate_ncu.txt \
    l1rate_report.err 2> /dev/null && rm -f build_l1rate.txt bench_l1rate.err l1rate_ncu.txt l1rate_report.err )
say "done"
