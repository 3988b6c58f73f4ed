#!/bin/bash
# On the GPU machine, from the repository root: the convolution of workloads/cuda/convmap.cu whose thread mapping
# strides every access (an 11×11 fp32 filter in global memory, read by every thread at one address, over an
# 8192×8192 image: convmap_strided, row from threadIdx.x), its coalesced twin (col from threadIdx.x, MEM001's) and the
# coalesced kernel with its input tile and halo in shared memory (TIL001's twin of the coalesced one), and (since
# 2026-12-06 ~14:15 UTC) convmap_window, the fix TIL001's card describes (tile, weights in shared memory, 8 outputs a
# thread from a register window), report and timings in one call:
# 1. build (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table so --import-source finds it);
# 2. ./convmap --check: each kernel against a host reference at 4096 sampled outputs, and each twin's whole output
#    against convmap_strided's, JSON lines in $OUT/check_convmap.jsonl;
# 3. ./convmap --bench: 3 warm-ups, median of 15 cudaEvent timings per kernel, JSON lines in $OUT/bench_convmap.jsonl
#    (the same binary, no profiler; taken before the capture so ncu's replays do not heat the card first);
# 4. ncu --set full --import-source yes --clock-control none on ./convmap --once (4 kernels, one launch each):
#    $OUT/convmap.ncu-rep.xz and ncu's log $OUT/convmap_ncu.txt;
# 5. with time left, this checkout's `ncuadvisor report` of it: $OUT/convmap_report.txt and $OUT/convmap.json.
# What it is for: the rule cases of a convolution with grid-uniform weights and strided loads (MEM001, TIL001, TEN001's
# weak path, the grid-uniform loads' test), from a report of our own; the expected findings and estimates are in
# convmap.cu's header, written before the first run.
# Keeps to $BUDGET seconds (default 150); the steps log to $OUT/steps.log.
#     OUT=/tmp/convmap BUDGET=150 bash benchmarks/device/convmap.sh      (or PARTS="convmap:150" in all.sh)
BUDGET=${BUDGET:-150}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/convmap-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; echo "$t"; }  # cap RESERVE MAX: seconds for a step

s=$(date +%s)
timeout "$(cap 110 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/convmap" "$ROOT/workloads/cuda/convmap.cu" \
  > "$OUT/build_convmap.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"
[ -x "$WORK/convmap" ] || { cat "$OUT/build_convmap.txt"; say "no binary: stop"; exit 1; }

timeout "$(cap 95 40)" "$WORK/convmap" --check > "$OUT/check_convmap.jsonl" 2> "$OUT/check_convmap.err"
say "check rc=$?"
cat "$OUT/check_convmap.jsonl"

timeout "$(cap 80 40)" "$WORK/convmap" --bench > "$OUT/bench_convmap.jsonl" 2> "$OUT/bench_convmap.err"
say "bench rc=$?"
cat "$OUT/bench_convmap.jsonl"

T=$(cap 20 90)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/convmap" "$WORK/convmap" --once \
  > "$OUT/convmap_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/convmap_ncu.txt") launches profiled"
grep -E "==ERROR==|==WARNING==" "$OUT/convmap_ncu.txt" | head -5
if [ -f "$WORK/convmap.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/convmap.ncu-rep" > "$OUT/convmap.ncu-rep.xz" || rm -f "$OUT/convmap.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/convmap.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/convmap.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 3 ))
if [ -f "$WORK/convmap.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/convmap.ncu-rep" -o "$OUT/convmap.json" > /dev/null 2> "$OUT/convmap_report.err"
  say "ncuadvisor json rc=$?"
  T=$(( $(left) - 2 ))
  (( T >= 5 )) && timeout "$T" python3 -m ncuadvisor report "$WORK/convmap.ncu-rep" > "$OUT/convmap_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
fi
say "done"
