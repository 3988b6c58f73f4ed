#!/bin/bash
# On the GPU machine, from the repository root: the row set of workloads/cuda/rows.cu (a row operation written a
# thread per row, its warp-per-row twin that changes nothing else, the same with 4 loads in flight, a block per row,
# and a flat stream of the same bytes), report and timings in one call:
# 1. build (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table so --import-source finds it);
# 2. ./rows --check: each twin's output against the planted kernel's, bit for bit, JSON lines in $OUT/check_rows.jsonl;
# 3. ./rows --bench: 3 warm-ups, median of 25 cudaEvent timings per kernel, JSON lines in $OUT/bench_rows.jsonl
#    (no profiler; taken before the capture);
# 4. ncu --set full --import-source yes --clock-control none on ./rows --once (5 kernels, one launch each):
#    $OUT/rows.ncu-rep.xz and ncu's log $OUT/rows_ncu.txt;
# 5. with time left, this checkout's `ncuadvisor report` of it: $OUT/rows_report.txt and $OUT/rows.json.
# What it measures: MEM001's estimate for rows_thread against the fix alone (rows_warp), and the share of DRAM's peak
# kernels walking many rows at once reach (rows_warp, rows_warp_x4, rows_block) against a flat stream of the same
# bytes (stream_2r1w): the share benchmarks/RESULTS.md (2026-12-06) could not take from the exam's kernels alone.
# Keeps to $BUDGET seconds (default 150); the steps log to $OUT/steps.log.
#     OUT=/tmp/rows BUDGET=150 bash benchmarks/device/rows.sh
BUDGET=${BUDGET:-150}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/rows-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; echo "$t"; }  # cap RESERVE MAX: seconds for a step

s=$(date +%s)
timeout "$(cap 110 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/rows" "$ROOT/workloads/cuda/rows.cu" \
  > "$OUT/build_rows.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"
[ -x "$WORK/rows" ] || { cat "$OUT/build_rows.txt"; say "no binary: stop"; exit 1; }

timeout "$(cap 95 30)" "$WORK/rows" --check > "$OUT/check_rows.jsonl" 2> "$OUT/check_rows.err"
say "check rc=$?"
cat "$OUT/check_rows.jsonl"

timeout "$(cap 80 30)" "$WORK/rows" --bench > "$OUT/bench_rows.jsonl" 2> "$OUT/bench_rows.err"
say "bench rc=$?"
cat "$OUT/bench_rows.jsonl"

T=$(cap 20 90)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/rows" "$WORK/rows" --once \
  > "$OUT/rows_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/rows_ncu.txt") launches profiled"
grep -E "==ERROR==|==WARNING==" "$OUT/rows_ncu.txt" | head -5
if [ -f "$WORK/rows.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/rows.ncu-rep" > "$OUT/rows.ncu-rep.xz" || rm -f "$OUT/rows.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/rows.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/rows.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 3 ))
if [ -f "$WORK/rows.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/rows.ncu-rep" -o "$OUT/rows.json" > /dev/null 2> "$OUT/rows_report.err"
  say "ncuadvisor json rc=$?"
  T=$(( $(left) - 2 ))
  (( T >= 5 )) && timeout "$T" python3 -m ncuadvisor report "$WORK/rows.ncu-rep" > "$OUT/rows_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
fi
say "done"
