#!/bin/bash
# On the GPU machine, from the repository root: the llm.c programs of the exam corpus (workloads/exam/llm.c/) run
# plainly, without ncu, to time every kernel version against its measured twin (benchmarks/exam_twins.toml, written
# from the code before any timing). Built as benchmarks/device/exam.sh builds them (upstream's dev/cuda flags plus
# -lineinfo and sm_90). Each program, run with a version number, checks that version at every block size of its
# list, then times it at each block size with its own loop (cudaEvents around one call, L2 flushed before each of
# 10 repeats, the mean printed as `block_size N | time T ms`; matmul_forward prints `sqrt_block_size N`).
# Each version runs REPS times (default 3); benchmarks/exam_twins.py keeps the median of the runs' times at the
# profiled block size (256 threads; sqrt block 16 for matmul_forward) and writes one JSONL line per version.
#
# Order: the versions that a pair of exam_twins.toml compares come first, program by program, cheap programs before
# softmax_forward (412M random floats drawn and a CPU reference on the host, 1.65 GB copied back for each of 6 checks:
# ~20 s a run, six paired versions), each program in rounds (its versions once, then a second time, ...); then the
# other versions, the same way. Keeps to $BUDGET seconds (default 240): each run's timeout is its cap
# or what is left, and the runs that no longer fit are listed in steps.log as skipped (run them in a second call
# with ONLY, into another $OUT; the JSONL of two calls can be concatenated: the scorer pools the runs of a version).
#
# In $OUT: env.txt (date, nvidia-smi, nvcc, clocks), steps.log (a timestamped line per run: rc, seconds, the time at
# the profiled block size), exam_times.jsonl (one line per version: program, version, block_size, time_ms = the
# median of the runs, runs = each run's time, rc, seconds, lines = the timing lines each run printed), exam_time_logs.tar.xz
# (every build's and run's output).
#     OUT=/tmp/times bash benchmarks/device/exam_times.sh
#     ONLY="softmax_forward" OUT=/tmp/times2 bash benchmarks/device/exam_times.sh   (program names, or
#                                                         <program>_v<N> for single versions)
#     REPS=5 BUDGET=400 ...   (more runs per version, a longer budget)
# EXAM_NVCC_FLAGS adds nvcc flags (e.g. -I/-L for a cuBLAS outside the toolkit).
# EXAM_BLOCK_SIZE=256 (softmax_forward only, a patch of this repository) checks and times that block size alone: a run
# then skips five of its six checks (1.65 GB copied back and compared on the host each) and five timing loops. The
# softmax pair of the fix alone (versions 1, 2 and 9, 3 runs each) in one call of about 150 s (9 runs of ~15 s
# expected, against ~27 s a run with the six sizes; the budget cuts whole rounds, so each version keeps as many runs):
#     ONLY="softmax_forward_v1 softmax_forward_v2 softmax_forward_v9" EXAM_BLOCK_SIZE=256 REPS=3 BUDGET=200 \
#       OUT=$OUT bash benchmarks/device/exam_times.sh
BUDGET=${BUDGET:-240}
[ -n "${EXAM_BLOCK_SIZE:-}" ] && export EXAM_BLOCK_SIZE  # read by the programs (softmax_forward)
REPS=${REPS:-3}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
W=${EXAM_WORK:-/tmp/exam_times}
rm -rf "$W" && mkdir -p "$W/bin" "$W/runs" "$W/logs"
{ echo "--- nvcc"; nvcc --version | tail -2
  echo "--- clocks"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv 2>&1
  echo "--- nproc $(nproc)"; echo "--- EXAM_BLOCK_SIZE=${EXAM_BLOCK_SIZE:-} ONLY=${ONLY:-} REPS=$REPS BUDGET=$BUDGET"
} >> "$OUT/env.txt" 2>&1
RESERVE=15  # seconds kept for the JSONL and packing
SKIPPED=()

# The versions each program runs. 5 of matmul_backward_bias is compiled out for bf16 (the program's own #ifndef) and
# 9 stops with an illegal memory access on the H100 (fixtures/exam-h100-2026-12-06/RECIPE.md): neither is listed.
declare -A VERSIONS=(
  [layernorm_forward]="1 2 3 4 5 6" [gelu_forward]="1 2" [encoder_backward]="1 2"
  [matmul_backward_bias]="1 2 3 4 7 8" [matmul_forward]="1 2 3 4" [softmax_forward]="1 2 3 4 5 6 7 8 9 10"
)
PROGRAMS="gelu_forward layernorm_forward encoder_backward matmul_backward_bias matmul_forward softmax_forward"
CAP_S=${CAP_S:-60}  # one run's cap (softmax_forward's thread-per-row versions: ~4 s of GPU time over its 6 sizes)

wanted() {  # PROGRAM VERSION: in $ONLY (all when ONLY is empty)
  [ -z "${ONLY:-}" ] && return 0
  local w; for w in $ONLY; do [ "$w" = "$1" ] || [ "$w" = "${1}_v$2" ] && return 0; done; return 1
}
# the versions that a pair with a twin compares, as "program_vN" words (the before version and its twin)
PAIRED=" $(python3 benchmarks/exam_twins.py versions) "

# ---- build the programs (in parallel), as benchmarks/device/exam.sh does
SRC=workloads/exam/llm.c
s=$(date +%s)
TO_BUILD=()
for n in $PROGRAMS; do
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* && " $ONLY " != *" ${n}_v"* ]] && continue
  TO_BUILD+=("$n")
done
llmc_build "$W" "$ROOT" "${TO_BUILD[@]}"
say "built in $(( $(date +%s) - s )) s: $(tail -qn1 "$W"/logs/build_*.log 2>/dev/null | tr '\n' ' ')"

LINEBUF=(stdbuf -oL -eL); command -v stdbuf > /dev/null || LINEBUF=()  # without it a run cut short loses its lines
jsonl() { python3 benchmarks/exam_twins.py times "$W/runs" > "$OUT/exam_times.jsonl" 2>> "$OUT/steps.log"; }

# run PROGRAM VERSION ROUND: one plain run, its output (line-buffered, so a run cut short keeps what it printed) in
# $W/runs/<program>_v<version>_r<round>.log, ending with a line "# rc=N seconds=S"
run() {
  local prog=$1 v=$2 r=$3
  local log="$W/runs/${prog}_v${v}_r$r.log"
  if [ ! -x "$W/bin/$prog" ]; then say "${prog}_v$v: not built"; return 0; fi
  local t=$(( $(left) - RESERVE ))
  if (( t < 5 )); then SKIPPED+=("${prog}_v${v}_r$r"); return 0; fi
  (( t > CAP_S )) && t=$CAP_S
  local s; s=$(date +%s)
  ( cd "$W" && timeout -k 5 "$t" "${LINEBUF[@]}" "$W/bin/$prog" "$v" ) > "$log" 2>&1
  local rc=$? secs=$(( $(date +%s) - s ))
  echo "# rc=$rc seconds=$secs" >> "$log"
  local at; at=$(grep -E "^(sqrt_)?block_size +$( [ "$prog" = matmul_forward ] && echo 16 || echo 256 )[ |]" "$log" \
    | grep -oE 'time [0-9.]+ ms' | head -1)
  say "${prog}_v$v run $r rc=$rc in $secs s (cap $t s): ${at:-no time at the profiled block size}"
}

# SET ("paired" or "other"), program by program (cheap ones first): REPS rounds over the program's versions of that
# set, so that a program cut short by the budget still has as many runs of a before version as of its twin
rounds() {
  local set=$1 r p v key
  for p in $PROGRAMS; do
    for (( r = 1; r <= REPS; r++ )); do
      for v in ${VERSIONS[$p]}; do
        key="${p}_v$v"
        wanted "$p" "$v" || continue
        if [ "$set" = paired ]; then [[ "$PAIRED" == *" $key "* ]] || continue
        else [[ "$PAIRED" == *" $key "* ]] && continue; fi
        run "$p" "$v" "$r"
      done
    done
    jsonl
  done
}
rounds paired
rounds other

# ---- the JSONL, the logs
(( ${#SKIPPED[@]} )) && say "skipped for the budget (${#SKIPPED[@]} runs): ${SKIPPED[*]}"
jsonl
say "exam_times.jsonl: $(wc -l < "$OUT/exam_times.jsonl") versions; $(grep -c '"time_ms": [0-9]' "$OUT/exam_times.jsonl") with a time"
tar -C "$W" -cf - runs logs | xz -T0 -6 > "$OUT/exam_time_logs.tar.xz"
say "packed: $(cd "$OUT" && ls -s --block-size=K | tr '\n' ' ')"
