#!/bin/bash
# On the GPU machine, from the repository root: the direct-convolution reuse set of workloads/cuda/conv9.cu (a 9×9
# and a 5×5 fp32 filter over an 8192×8192 image: the naive kernel reading every tap from global memory through L1,
# its shared-memory-tile twin, the tile plus register blocking, register blocking alone, and the clamped naive
# kernel), report and timings in one call:
# 1. build (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table so --import-source finds it);
# 2. ./conv9 --check: each twin's output against its planted kernel's, JSON lines in $OUT/check_conv9.jsonl;
# 3. ./conv9 --bench: 3 warm-ups, median of 15 cudaEvent timings per kernel, JSON lines in $OUT/bench_conv9.jsonl
#    (the same binary, no profiler; taken before the capture so ncu's replays do not heat the card first);
# 4. ncu --set full --import-source yes --clock-control none on ./conv9 --once (8 kernels, one launch each):
#    $OUT/conv9.ncu-rep.xz and ncu's log $OUT/conv9_ncu.txt;
# 5. with time left, this checkout's `ncuadvisor report` of it: $OUT/conv9_report.txt and $OUT/conv9.json.
# Keeps to $BUDGET seconds (default 200); the steps log to $OUT/steps.log. Kept under fixtures/conv9-<date>/ (the
# report, bench_conv9.jsonl, check_conv9.jsonl, the logs), `benchmarks/accuracy.py` scores it against
# workloads/cuda/manifest_conv9.json (it looks for fixtures/conv9-2026-12-06/).
#     OUT=/tmp/conv9 BUDGET=200 bash benchmarks/device/conv9.sh
BUDGET=${BUDGET:-200}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/conv9-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; echo "$t"; }  # cap RESERVE MAX: seconds for a step

s=$(date +%s)
timeout "$(cap 150 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/conv9" "$ROOT/workloads/cuda/conv9.cu" \
  > "$OUT/build_conv9.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"
[ -x "$WORK/conv9" ] || { cat "$OUT/build_conv9.txt"; say "no binary: stop"; exit 1; }

timeout "$(cap 130 30)" "$WORK/conv9" --check > "$OUT/check_conv9.jsonl" 2> "$OUT/check_conv9.err"
say "check rc=$?"
cat "$OUT/check_conv9.jsonl"

timeout "$(cap 110 40)" "$WORK/conv9" --bench > "$OUT/bench_conv9.jsonl" 2> "$OUT/bench_conv9.err"
say "bench rc=$?"
cat "$OUT/bench_conv9.jsonl"

T=$(cap 25 120)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/conv9" "$WORK/conv9" --once \
  > "$OUT/conv9_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/conv9_ncu.txt") launches profiled"
grep -E "==ERROR==|==WARNING==" "$OUT/conv9_ncu.txt" | head -5
if [ -f "$WORK/conv9.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/conv9.ncu-rep" > "$OUT/conv9.ncu-rep.xz" || rm -f "$OUT/conv9.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/conv9.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/conv9.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 3 ))
if [ -f "$WORK/conv9.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/conv9.ncu-rep" -o "$OUT/conv9.json" > /dev/null 2> "$OUT/conv9_report.err"
  say "ncuadvisor json rc=$?"
  T=$(( $(left) - 2 ))
  (( T >= 5 )) && timeout "$T" python3 -m ncuadvisor report "$WORK/conv9.ncu-rep" > "$OUT/conv9_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
fi
say "done"
