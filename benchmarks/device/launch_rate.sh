#!/bin/bash
# On the GPU machine, from the repository root: the host's launch interval measured where the planted access patterns
# run, their timings and a new capture, in one call, so that PRG004's estimate for small_update (four tiny launches
# against one fused, workloads/cuda/patterns.cu) can be scored with the interval of the machine that timed it:
# 1. build patterns.cu (nvcc -arch=sm_90 -lineinfo -O3, the absolute source path in the line table);
# 2. the tool's own measurement, `python3 -m ncuadvisor.profile.launchrate` (200 launches of an empty kernel through
#    the CUDA driver, less the loop's call cost, median of 5), three times: $OUT/launch_interval.jsonl;
# 3. ./patterns --bench: 3 warm-ups, median of 25 cudaEvent timings per kernel (small_update_x4: the four launches
#    in one timing), JSON lines in $OUT/bench_patterns.jsonl (no profiler; before the capture);
# 4. the measurement once more after the bench (a fourth line of $OUT/launch_interval.jsonl: did it drift?);
# 5. ncu --set full --import-source yes --clock-control none on ./patterns --once (17 launches; since 2026-12-06 the
#    twin small_fused is launched first, so the four small_update launches make a run alone):
#    $OUT/patterns.ncu-rep.xz and ncu's log $OUT/patterns_ncu.txt;
# 6. with time left, this checkout's `ncuadvisor report` of it with the median measured interval
#    (--launch-interval-us): $OUT/patterns.json and $OUT/patterns_report.txt; then the GPU test of the measurement
#    (tests/test_launchrate.py -m gpu): $OUT/gpu_test.txt.
# Scored here afterwards (launch_interval.jsonl beside the bench file is read by the scorer):
#     python benchmarks/accuracy.py --planted --patterns-report OUT/patterns.ncu-rep.xz --patterns-bench OUT/bench_patterns.jsonl
# Keeps to $BUDGET seconds (default 150); the steps log to $OUT/steps.log.
#     OUT=/tmp/launch_rate BUDGET=150 bash benchmarks/device/launch_rate.sh      (or PARTS="launch_rate:150" in all.sh)
BUDGET=${BUDGET:-150}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
WORK=${WORK:-/tmp/launch-rate-work}  # the binary and the raw report, before the report is packed into $OUT
rm -rf "$WORK" && mkdir -p "$WORK"
cap() { local t=$(( $(left) - $1 )); (( t > $2 )) && t=$2; (( t < 5 )) && t=5; echo "$t"; }  # cap RESERVE MAX: a step's s
interval() {  # interval WHEN: one measurement, appended to $OUT/launch_interval.jsonl
  timeout "$(cap 60 20)" python3 -m ncuadvisor.profile.launchrate >> "$OUT/launch_interval.jsonl" 2>> "$OUT/launch_interval.err"
  say "launch interval ($1) rc=$?: $(tail -1 "$OUT/launch_interval.jsonl" | cut -c1-160)"
}

s=$(date +%s)
timeout "$(cap 100 60)" nvcc -arch=sm_90 -lineinfo -O3 -o "$WORK/patterns" "$ROOT/workloads/cuda/patterns.cu" \
  > "$OUT/build_patterns.txt" 2>&1
say "build rc=$? in $(( $(date +%s) - s )) s"

for i in 1 2 3; do interval "before the bench, $i"; done
[ -x "$WORK/patterns" ] || { cat "$OUT/build_patterns.txt"; say "no binary: stop"; exit 1; }

s=$(date +%s)
timeout "$(cap 80 40)" "$WORK/patterns" --bench > "$OUT/bench_patterns.jsonl" 2> "$OUT/bench_patterns.err"
say "bench rc=$? in $(( $(date +%s) - s )) s"
grep small "$OUT/bench_patterns.jsonl"

interval "after the bench"
MEDIAN=$(python3 -c "
import json, statistics, sys
v = [json.loads(x).get('interval_ns') for x in open(sys.argv[1]) if x.startswith('{')]
v = [x for x in v if isinstance(x, (int, float))]
print(f'{statistics.median(v) / 1000:.3f}' if v else '')" "$OUT/launch_interval.jsonl" 2>/dev/null)
say "median launch interval: ${MEDIAN:-none} µs"

T=$(cap 25 100)
s=$(date +%s)
timeout "$T" ncu --set full --import-source yes --clock-control none -f -o "$WORK/patterns" "$WORK/patterns" --once \
  > "$OUT/patterns_ncu.txt" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s (cap $T s): $(grep -c '==PROF== Profiling' "$OUT/patterns_ncu.txt") launches profiled"
grep -E "==PROF== Profiling" "$OUT/patterns_ncu.txt" | grep -n small | head -6
grep -E "==ERROR==|==WARNING==" "$OUT/patterns_ncu.txt" | head -5
if [ -f "$WORK/patterns.ncu-rep" ]; then
  xz -T0 -6 -c "$WORK/patterns.ncu-rep" > "$OUT/patterns.ncu-rep.xz" || rm -f "$OUT/patterns.ncu-rep.xz"
  say "packed: $(( $(stat -c %s "$WORK/patterns.ncu-rep") / 1024 )) KiB -> $(( $(stat -c %s "$OUT/patterns.ncu-rep.xz") / 1024 )) KiB"
fi

T=$(( $(left) - 12 ))
if [ -f "$WORK/patterns.ncu-rep" ] && (( T >= 10 )); then
  timeout "$T" python3 -m ncuadvisor report "$WORK/patterns.ncu-rep" ${MEDIAN:+--launch-interval-us "$MEDIAN"} \
    -o "$OUT/patterns.json" > "$OUT/patterns_report.txt" 2>&1
  say "ncuadvisor report rc=$?"
  python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
for f in r['program_findings']:
    if f['rule'] == 'PRG004':
        print('PRG004:', f['title'], round(f['estimated_saving_ns'] / 1e3, 2), 'us;', f['saving_model'])
print('launch_interval:', r['report'].get('launch_interval'))" "$OUT/patterns.json" 2>&1 | tee -a "$OUT/steps.log"
fi
T=$(( $(left) - 2 ))
if (( T >= 8 )); then
  timeout "$T" python3 -m pytest -q -n 0 -p no:cacheprovider -m gpu tests/test_launchrate.py > "$OUT/gpu_test.txt" 2>&1
  say "gpu test rc=$? $(tail -1 "$OUT/gpu_test.txt")"
fi
say "done"
