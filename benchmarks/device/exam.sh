#!/bin/bash
# On the GPU machine, from the repository root: the exam corpus (workloads/exam/: karpathy/llm.c dev/cuda programs and
# the Triton tutorials, public code nobody in this project wrote), each kernel version profiled once or twice with
# `ncu --set full --import-source yes --clock-control none`, one report per program run (llm.c: one run per kernel
# version, <program>_v<N>; Triton: one per tutorial, triton_<part>). The labels (benchmarks/exam_labels.toml) were
# committed before any of these reports existed; score them with `python benchmarks/exam.py DIR`.
#
# llm.c programs check each version at every block size of their list before timing it; the profiled launches are
# those of the checking loop at block size 256 (or sqrt block 16 for matmul_forward): `-k regex:` keeps the version's
# own kernels and `--launch-skip` counts only the launches that filter keeps. Triton drivers run once outside the
# NVTX range (compile, autotune), then twice inside the process-wide start/end range "exam_all_threads"
# (`--nvtx --nvtx-include exam_all_threads`): unlike the per-thread push/pop range "exam/", it also holds the
# layer-norm backward kernels that autograd launches from its own thread (the capture of 2026-12-06 missed them).
#
# In $OUT: env.txt (date, nvidia-smi -L, ncu --version, versions), steps.log (a timestamped line per step: rc,
# seconds, report size), exam_logs.tar.xz (each build's and run's output), exam_reports.tar.xz (every report; split
# into exam_reports.tar.xz.part-aa, -ab, ... of 15 MB when larger: `cat exam_reports.tar.xz.part-* > x.tar.xz`).
# Keeps to $BUDGET seconds (default 400): each step's timeout is its own cap or what is left, and the steps that no
# longer fit are listed in steps.log as skipped (run them in a second call with ONLY).
#     OUT=/tmp/exam-out bash benchmarks/device/exam.sh
#     ONLY="softmax_forward triton" OUT=/tmp/exam-out2 bash benchmarks/device/exam.sh   (a subset: program names,
#                                                         "triton" for all Triton parts, or triton_<part>)
# EXAM_NVCC_FLAGS adds nvcc flags (e.g. -I/-L for a cuBLAS outside the toolkit); NCU names the ncu binary.
BUDGET=${BUDGET:-400}
source benchmarks/device/env.sh
part_start
ROOT=$PWD
W=${EXAM_WORK:-/tmp/exam}
rm -rf "$W" && mkdir -p "$W/bin" "$W/reports" "$W/logs" "$W/triton-cache"
export TRITON_CACHE_DIR="$W/triton-cache"
NCU_BIN=${NCU:-ncu}
NCU_ARGS=(--set full --import-source yes --clock-control none -f)
# end the program once its launches are profiled (its timing loop is not needed), where this ncu has the switch
"$NCU_BIN" --help 2>&1 | grep -q -- '--kill' && NCU_ARGS+=(--kill yes)
RESERVE=40  # seconds kept for packing
SKIPPED=()

wanted() {  # NAME PROGRAM: is this step in $ONLY (all when ONLY is empty)
  [ -z "${ONLY:-}" ] && return 0
  local w; for w in $ONLY; do [ "$w" = "$1" ] || [ "$w" = "$2" ] && return 0; done; return 1
}
# prof NAME PROGRAM CAP_S ARGS...: one ncu run writing $W/reports/NAME.ncu-rep, its output in $W/logs/NAME.log
prof() {
  local name=$1 prog=$2 cap=$3; shift 3
  wanted "$name" "$prog" || return 0
  local t=$(( $(left) - RESERVE )); (( t > cap )) && t=$cap
  if (( t < 10 )); then SKIPPED+=("$name"); say "$name skipped: budget spent"; return 0; fi
  local s; s=$(date +%s)
  timeout -k 5 "$t" "$NCU_BIN" "${NCU_ARGS[@]}" -o "$W/reports/$name" "$@" > "$W/logs/$name.log" 2>&1
  local rc=$?
  local size="no report"
  [ -f "$W/reports/$name.ncu-rep" ] && size="$(( $(stat -c %s "$W/reports/$name.ncu-rep") / 1024 )) KiB"
  say "$name rc=$rc in $(( $(date +%s) - s )) s (cap $t s): $size; $(grep -c '==PROF== Profiling' "$W/logs/$name.log") launches profiled"
}

# ---- build every llm.c program (in parallel), as upstream's dev/cuda/Makefile plus -lineinfo and sm_90
SRC=workloads/exam/llm.c
s=$(date +%s)
TO_BUILD=()
for f in "$SRC"/*.cu; do
  n=$(basename "$f" .cu)
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $n "* && " $ONLY " != *" ${n}_v"* ]] && continue
  TO_BUILD+=("$n")
done
llmc_build "$W" "$ROOT" "${TO_BUILD[@]}"
say "built in $(( $(date +%s) - s )) s: $(tail -qn1 "$W"/logs/build_*.log | tr '\n' ' ')"

# ---- llm.c: llm VERSION KERNELS_PER_CALL SKIP_CALLS REGEX PROGRAM [CAP]: the version's kernels at one block size
llm() {
  local prog=$1 v=$2 k=$3 skip=$4 re=$5 cap=${6:-45}
  [ -x "$W/bin/$prog" ] || { wanted "${prog}_v$v" "$prog" && say "${prog}_v$v: not built"; return 0; }
  prof "${prog}_v$v" "$prog" "$cap" -k "regex:$re" --launch-skip $(( skip * k )) --launch-count "$k" "$W/bin/$prog" "$v"
}
# block sizes {32, 64, 128, 256, 512, 1024}: skip 3 calls to reach 256
for v in 1 3 4 5 6; do llm layernorm_forward $v 1 3 "^layernorm_forward_kernel$v\$"; done
llm layernorm_forward 2 3 3 '^(mean_kernel|rstd_kernel|normalization_kernel)$'
llm gelu_forward 1 1 3 '^gelu_forward_kernel1$'
llm gelu_forward 2 1 3 '^gelu_forward_kernel2$'
llm encoder_backward 1 1 3 '^encoder_backward_kernel1$'
llm encoder_backward 2 1 3 '^encoder_backward_kernel2$'
# block sizes {32, 64, 128, 256, 512, 768, 1024}
for v in 1 2 3 4; do llm matmul_backward_bias $v 1 3 "^matmul_backward_bias_kernel$v\$"; done
llm matmul_backward_bias 9 1 3 '^matmul_backward_bias_kernel9'
# sqrt block sizes {4, 8, 16, 32}: skip 2 calls to reach 16 (256 threads); versions 2 and 3 are cuBLAS: no filter,
# a GEMM (and version 2's add_bias) per call
llm matmul_forward 1 1 2 '^matmul_forward_kernel1$' 90
llm matmul_forward 2 2 2 '.' 60
llm matmul_forward 3 1 2 '.' 60
llm matmul_forward 4 1 2 '^matmul_forward_kernel4$'

# ---- Triton tutorials: REPS launches of each kernel inside the NVTX range "exam_all_threads"
tri() {  # PART KERNELS REGEX [CAP]
  local part=$1 k=$2 re=$3 cap=${4:-90}
  prof "triton_$part" triton "$cap" --nvtx --nvtx-include "exam_all_threads" -k "regex:$re" --launch-count $(( 2 * k )) \
    python3 "$ROOT/workloads/exam/triton/drive.py" "$part" --reps 2
}
tri add 1 '^add_kernel$'
tri softmax 1 '^softmax_kernel$'
tri matmul 1 '^matmul_kernel$' 150
tri dropout 2 'dropout$'
tri layernorm 3 '^_layer_norm_'

# ---- llm.c softmax last: 1.65 GB of input, the longest programs
# 9 and 10: versions added here (workloads/exam/README.md), MEM001's fix of version 1 alone in its two forms
for v in 1 2 3 4 5 6 7 8 9 10; do
  case $v in
    1) re='^softmax_forward_kernel1$' ;;       5) re='^softmax_forward_online_kernel1$' ;;
    6) re='^softmax_forward_online_kernel2$' ;; 8) re='^softmax_forward_online_kernel8$' ;;
    *) re="^softmax_forward_kernel$v\$" ;;
  esac
  llm softmax_forward $v 1 3 "$re" 60
done

# ---- pack
(( ${#SKIPPED[@]} )) && say "skipped for the budget: ${SKIPPED[*]} (run again with ONLY=\"...\")"
ls -la "$W/reports" > "$W/logs/reports.txt"
tar -C "$W" -cf - logs | xz -T0 -6 > "$OUT/exam_logs.tar.xz"
tar -C "$W" -cf - reports | xz -T0 -6 > "$OUT/exam_reports.tar.xz"
if [ "$(stat -c %s "$OUT/exam_reports.tar.xz")" -gt 15728640 ]; then
  split -b 15M "$OUT/exam_reports.tar.xz" "$OUT/exam_reports.tar.xz.part-" && rm "$OUT/exam_reports.tar.xz"
fi
say "packed: $(cd "$OUT" && ls -s --block-size=K | tr '\n' ' ')"
