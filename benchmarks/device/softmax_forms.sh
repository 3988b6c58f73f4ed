#!/bin/bash
# On the GPU machine, from the repository root: the two forms of MEM001's fix that its card names for llm.c's
# softmax_forward_kernel1 (a thread per row), each applied alone to version 1's kernel (workloads/exam/README.md):
# version 9, a block per row (timed 2026-12-06: 4.92 ms against version 1's 43.5 ms), and version 10, a warp per row
# as the card's code shows it (its expectation in benchmarks/exam_twins.toml, written before any run). Two steps:
#   1. exam_times.sh times versions 1, 9 and 10 plainly (no ncu; 3 runs each in rounds, block size 256 alone);
#   2. exam.sh profiles versions 9 and 10 with the full set (their loads in flight, DRAM bytes and share, stalls).
# In $OUT: times.tar (exam_times.sh's exam_times.jsonl, env.txt, steps.log, exam_time_logs.tar.xz) and reports.tar
# (exam.sh's exam_reports.tar.xz with softmax_forward_v9.ncu-rep and softmax_forward_v10.ncu-rep, exam_logs.tar.xz,
# env.txt, steps.log), and steps.log (this script's two steps).
#     OUT=$OUT BUDGET=420 bash benchmarks/device/softmax_forms.sh   (~150 s of timings, ~100 s of profiles expected)
# Score: python benchmarks/exam_twins.py score DIR fixtures/exam-h100-2026-12-06/exam_times_*.jsonl \
#   times/exam_times.jsonl   (DIR: the exam reports, the two new ones beside them for their own model)
BUDGET=${BUDGET:-420}
OUT=${OUT:-/tmp/device-out}
T0=$(date +%s)
mkdir -p "$OUT/times" "$OUT/reports"
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/steps.log"; }
say "start; budget $BUDGET s"
# the timings first (the pair's measurement), with a little over half the budget; the profiles get what is left
t=$(( BUDGET * 55 / 100 ))
ONLY="softmax_forward_v1 softmax_forward_v9 softmax_forward_v10" EXAM_BLOCK_SIZE=256 REPS=3 BUDGET=$t \
  OUT="$OUT/times" timeout -k 5 $(( t + 20 )) bash benchmarks/device/exam_times.sh > "$OUT/times/run.log" 2>&1
say "times rc=$?: $(tail -n 3 "$OUT/times/steps.log" 2>/dev/null | tr '\n' ' ')"
t=$(( $(left) - 15 ))
if (( t >= 60 )); then
  # no EXAM_BLOCK_SIZE here: exam.sh skips the checks of block sizes 32, 64 and 128 to profile the one at 256
  env -u EXAM_BLOCK_SIZE ONLY="softmax_forward_v9 softmax_forward_v10" BUDGET=$t OUT="$OUT/reports" \
    timeout -k 5 $(( t + 10 )) bash benchmarks/device/exam.sh > "$OUT/reports/run.log" 2>&1
  say "profiles rc=$?: $(grep -E 'softmax_forward_v(9|10) ' "$OUT/reports/steps.log" 2>/dev/null | tr '\n' ' ')"
else
  say "profiles skipped: $t s left"
fi
# few files come back from the device: one archive per step
for d in times reports; do tar -C "$OUT" -cf "$OUT/$d.tar" "$d" && rm -rf "${OUT:?}/$d"; done
say "packed: $(cd "$OUT" && ls -s --block-size=K | tr '\n' ' ')"
