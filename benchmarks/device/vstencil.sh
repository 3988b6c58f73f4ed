#!/bin/bash
# On the GPU machine, from the repository root: cache.cu's planted vstencil_rows beside the twin its CAC001 card names
# first (dim3(32, 8) blocks, workloads/cuda/vstencil.cu) and cache.cu's 32x32 twin, report and timings in one call:
# 1. build (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table so --import-source finds it);
# 2. ./vstencil --check: each twin's output against vstencil_rows' (largest |difference|), $OUT/check_vstencil.jsonl;
# 3. ./vstencil --bench: 3 warm-ups, median of 15 cudaEvent timings per kernel, $OUT/bench_vstencil.jsonl (no
#    profiler; taken before the capture);
# 4. ncu --set full --import-source yes --clock-control none on ./vstencil --once (3 kernels, one launch each):
#    $OUT/vstencil.ncu-rep.xz and ncu's log $OUT/vstencil_ncu.txt;
# 5. with time left, this checkout's `ncuadvisor report` of it: $OUT/vstencil_report.txt and $OUT/vstencil.json.
# Keeps to $BUDGET seconds (default 150); the steps log to $OUT/steps.log.
#     OUT=/tmp/vstencil BUDGET=150 bash benchmarks/device/vstencil.sh
BUDGET=${BUDGET:-150}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/vstencil-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; echo "$t"; }  # cap RESERVE MAX: seconds for a step

s=$(date +%s)
timeout "$(cap 110 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/vstencil" "$ROOT/workloads/cuda/vstencil.cu" \
  > "$OUT/build_vstencil.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"
[ -x "$WORK/vstencil" ] || { cat "$OUT/build_vstencil.txt"; say "no binary: stop"; exit 1; }

timeout "$(cap 95 30)" "$WORK/vstencil" --check > "$OUT/check_vstencil.jsonl" 2> "$OUT/check_vstencil.err"
say "check rc=$?"
cat "$OUT/check_vstencil.jsonl"

timeout "$(cap 80 30)" "$WORK/vstencil" --bench > "$OUT/bench_vstencil.jsonl" 2> "$OUT/bench_vstencil.err"
say "bench rc=$?"
cat "$OUT/bench_vstencil.jsonl"

T=$(cap 20 90)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/vstencil" "$WORK/vstencil" --once \
  > "$OUT/vstencil_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/vstencil_ncu.txt") launches profiled"
grep -E "==ERROR==|==WARNING==" "$OUT/vstencil_ncu.txt" | head -5
if [ -f "$WORK/vstencil.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/vstencil.ncu-rep" > "$OUT/vstencil.ncu-rep.xz" || rm -f "$OUT/vstencil.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/vstencil.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/vstencil.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 3 ))
if [ -f "$WORK/vstencil.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/vstencil.ncu-rep" -o "$OUT/vstencil.json" > /dev/null 2> "$OUT/vstencil_report.err"
  say "ncuadvisor json rc=$?"
  T=$(( $(left) - 2 ))
  (( T >= 5 )) && timeout "$T" python3 -m ncuadvisor report "$WORK/vstencil.ncu-rep" > "$OUT/vstencil_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
fi
say "done"
