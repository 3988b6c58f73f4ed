#!/bin/bash
# On the GPU machine, from the repository root: the matrix products of workloads/cuda/regtile.cu (flaws.cu's naive
# SGEMM, its one-level twin, and the two-level kernel TIL001's card now advises, as the card writes it), report and
# timings in one call:
# 1. build (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table so --import-source finds it);
# 2. ./regtile --check: each twin's C against matmul_naive's (largest |difference|), JSON lines in
#    $OUT/check_regtile.jsonl;
# 3. ./regtile --bench: 3 warm-ups, median of 25 cudaEvent timings per kernel, JSON lines in $OUT/bench_regtile.jsonl
#    (no profiler; taken before the capture);
# 4. ncu --set full --import-source yes --clock-control none on ./regtile --once (3 kernels, one launch each):
#    $OUT/regtile.ncu-rep.xz and ncu's log $OUT/regtile_ncu.txt;
# 5. with time left, this checkout's `ncuadvisor report` of it: $OUT/regtile_report.txt and $OUT/regtile.json.
# What it measures: TIL001's two-level estimate for matmul_naive (its FMAs at the FP32 peak plus the shared
# wavefronts of an 8x8 register tile, added) against the kernel its card advises (matmul_regtile), beside the
# one-level twin flaws.cu pairs with it (benchmarks/RESULTS.md, 2026-12-06).
# Keeps to $BUDGET seconds (default 150); the steps log to $OUT/steps.log.
#     OUT=/tmp/regtile BUDGET=150 bash benchmarks/device/regtile.sh      (or PARTS="regtile:150" in all.sh)
BUDGET=${BUDGET:-150}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/regtile-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; echo "$t"; }  # cap RESERVE MAX: seconds for a step

s=$(date +%s)
timeout "$(cap 110 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/regtile" "$ROOT/workloads/cuda/regtile.cu" \
  > "$OUT/build_regtile.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"
[ -x "$WORK/regtile" ] || { cat "$OUT/build_regtile.txt"; say "no binary: stop"; exit 1; }

timeout "$(cap 95 30)" "$WORK/regtile" --check > "$OUT/check_regtile.jsonl" 2> "$OUT/check_regtile.err"
say "check rc=$?"
cat "$OUT/check_regtile.jsonl"

timeout "$(cap 80 30)" "$WORK/regtile" --bench > "$OUT/bench_regtile.jsonl" 2> "$OUT/bench_regtile.err"
say "bench rc=$?"
cat "$OUT/bench_regtile.jsonl"

T=$(cap 20 90)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/regtile" "$WORK/regtile" --once \
  > "$OUT/regtile_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/regtile_ncu.txt") launches profiled"
grep -E "==ERROR==|==WARNING==" "$OUT/regtile_ncu.txt" | head -5
if [ -f "$WORK/regtile.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/regtile.ncu-rep" > "$OUT/regtile.ncu-rep.xz" || rm -f "$OUT/regtile.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/regtile.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/regtile.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 3 ))
if [ -f "$WORK/regtile.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/regtile.ncu-rep" -o "$OUT/regtile.json" > /dev/null 2> "$OUT/regtile_report.err"
  say "ncuadvisor json rc=$?"
  T=$(( $(left) - 2 ))
  (( T >= 5 )) && timeout "$T" python3 -m ncuadvisor report "$WORK/regtile.ncu-rep" > "$OUT/regtile_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
fi
say "done"
