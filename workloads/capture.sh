#!/usr/bin/env bash
# Capture the fixtures (real Nsight Compute reports and outputs) on the GPU machine, in ONE call:
#     bash workloads/capture.sh            (writes $OUT/capture.tar.xz[.partNN] and $OUT/summary.txt)
# Every step runs under `timeout` and a global time budget, so one failing or slow step does not lose
# the rest; the archive is always packed at the end. ncu always gets --clock-control none; nothing here
# changes clocks, power or any other GPU setting.
# Environment: OUT (where the archive goes), CAPTURE_BUDGET_S (default 550: steps stop starting after
# budget minus the packing reserve), CAPTURE_ONLY (space-separated step groups to run, default all:
# build bench flaws basic pipeline edges tiny torch_eager torch_train torch_compile;
# torch_train_all runs only the process-wide-range training capture).
set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-/tmp/capture_out}
BUDGET=${CAPTURE_BUDGET_S:-550}
RESERVE=45
ONLY=${CAPTURE_ONLY:-"build bench flaws basic pipeline edges tiny torch_eager torch_train torch_compile"}
W=/tmp/capture_work/files
rm -rf /tmp/capture_work && mkdir -p "$W/ncu_outputs" "$OUT"
BIN="$REPO/workloads/cuda/bin"
T0=$(date +%s)
TIMINGS="$W/timings.txt"
printf "%-26s %5s %8s  %s\n" step rc seconds command > "$TIMINGS"

want() { [[ " $ONLY " == *" $1 "* ]]; }
now() { date +%s.%N; }
elapsed_since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
remaining() { echo $(( BUDGET - ($(date +%s) - T0) )); }

# step NAME MAX_S STDOUT_FILE STDERR_FILE|- CMD...   ("-": stderr goes with stdout into STDOUT_FILE)
step() {
  local name=$1 max=$2 so=$3 se=$4; shift 4
  local lim=$max rem=$(( $(remaining) - RESERVE ))
  (( rem < lim )) && lim=$rem
  if (( lim < 5 )); then
    printf "%-26s %5s %8s  %s\n" "$name" skip - "$*" >> "$TIMINGS"
    echo "STEP $name skipped (time budget)"
    return 0
  fi
  local s; s=$(now)
  if [[ "$se" == "-" ]]; then timeout -k 5 "$lim" "$@" > "$so" 2>&1; else timeout -k 5 "$lim" "$@" > "$so" 2> "$se"; fi
  local rc=$?
  local e; e=$(elapsed_since "$s")
  printf "%-26s %5s %8s  %s\n" "$name" "$rc" "$e" "$*" >> "$TIMINGS"
  echo "$name $rc" >> "$W/ncu_outputs/exit_codes.txt"
  if (( rc != 0 )); then echo "STEP $name rc=$rc after ${e}s"; else echo "step $name ok (${e}s)"; fi
  return 0
}

SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"
NCU="ncu --clock-control none"
NO="$W/ncu_outputs"

# ---------------------------------------------------------------- versions
{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
  echo "gpu_detail: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv,noheader 2>&1)"
  echo "ncu: $(ncu --version 2>&1 | tr '\n' ' ')"
  echo "nvcc: $(nvcc --version 2>&1 | tail -2 | tr '\n' ' ')"
  echo "kernel: $(uname -r)"
  python3 - <<'EOF' 2>&1
import sys
print("python:", sys.version.split()[0], sys.executable)
try:
    import torch
    print("torch:", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
except Exception as e:
    print("torch: import failed:", e)
try:
    import triton
    print("triton:", triton.__version__)
except Exception as e:
    print("triton: import failed:", e)
EOF
} > "$W/versions.txt" 2>&1
cat "$W/versions.txt"
nvidia-smi > "$W/nvidia_smi.txt" 2>&1

# ---------------------------------------------------------------- build (in parallel; carried binaries are the fallback)
if want build; then
  mkdir -p "$BIN" /tmp/capture_work/bin
  s=$(now)
  SRC="$REPO/workloads/cuda"
  NVCC="nvcc -arch=sm_90 -lineinfo -O3 -Xptxas -v"
  ( $NVCC -o /tmp/capture_work/bin/flaws "$SRC/flaws.cu" > /tmp/capture_work/b_flaws.log 2>&1; echo $? > /tmp/capture_work/b_flaws.rc ) &
  for v in 0 1 2; do
    ( $NVCC -DVARIANT=$v -o /tmp/capture_work/bin/pipeline_v$v "$SRC/pipeline.cu" > /tmp/capture_work/b_pipeline_v$v.log 2>&1; echo $? > /tmp/capture_work/b_pipeline_v$v.rc ) &
  done
  ( $NVCC -o /tmp/capture_work/bin/tiny_launches "$SRC/tiny_launches.cu" > /tmp/capture_work/b_tiny_launches.log 2>&1; echo $? > /tmp/capture_work/b_tiny_launches.rc ) &
  wait
  : > "$W/build_ptxas.log"
  for b in flaws pipeline_v0 pipeline_v1 pipeline_v2 tiny_launches; do
    rc=$(cat /tmp/capture_work/b_$b.rc 2>/dev/null || echo 99)
    echo "===== $b (rc=$rc): $NVCC ${b/pipeline_v/-DVARIANT=} ..." >> "$W/build_ptxas.log"
    cat /tmp/capture_work/b_$b.log >> "$W/build_ptxas.log"
    if [[ "$rc" == 0 ]]; then cp /tmp/capture_work/bin/$b "$BIN/$b"; else echo "STEP build $b failed (rc=$rc); using carried binary if any"; fi
  done
  printf "%-26s %5s %8s  %s\n" build - "$(elapsed_since "$s")" "$NVCC (5 binaries, parallel)" >> "$TIMINGS"
  command -v cuobjdump > /dev/null && cuobjdump --dump-sass "$BIN/flaws" > "$W/flaws_sass.txt" 2>&1
  command -v cuobjdump > /dev/null && cuobjdump --dump-resource-usage "$BIN/flaws" > "$W/flaws_resource_usage.txt" 2>&1
fi
ls -la "$BIN"
cd "$BIN" || exit 1

# ---------------------------------------------------------------- a) plain timings
if want bench; then
  step bench_flaws 90 "$W/bench_flaws.jsonl" "$W/bench_flaws.stderr.txt" ./flaws --bench
  step check_flaws 60 "$W/check_flaws.jsonl" "$W/check_flaws.stderr.txt" ./flaws --check
fi
# ---------------------------------------------------------------- b) full section list over every kernel
if want flaws; then
  step flaws 200 "$NO/flaws.txt" - $NCU --import-source yes $SECS -o "$W/flaws" ./flaws --once
fi
# ---------------------------------------------------------------- c) basic set on three kernels
if want basic; then
  step flaws_basic 60 "$NO/flaws_basic.txt" - $NCU --set basic -o "$W/flaws_basic" ./flaws --once --only copy_strided,copy_vec4,transpose_smem_conflict
fi
# ---------------------------------------------------------------- d) pipeline before/after
if want pipeline; then
  step pipeline_v0 60 "$NO/pipeline_v0.txt" - $NCU $SECS --import-source yes -o "$W/pipeline_v0" ./pipeline_v0
  step pipeline_v0_rerun 60 "$NO/pipeline_v0_rerun.txt" - $NCU $SECS --import-source yes -o "$W/pipeline_v0_rerun" ./pipeline_v0
  step pipeline_v1 60 "$NO/pipeline_v1.txt" - $NCU $SECS --import-source yes -o "$W/pipeline_v1" ./pipeline_v1
  step pipeline_v2 60 "$NO/pipeline_v2.txt" - $NCU $SECS --import-source yes -o "$W/pipeline_v2" ./pipeline_v2
fi
# ---------------------------------------------------------------- g) edge and error outputs of the real ncu
if want edges; then
  step list_sets 20 "$NO/list_sets.txt" - ncu --list-sets
  step list_sections 20 "$NO/list_sections.txt" - ncu --list-sections
  step no_kernels 40 "$NO/no_kernels.txt" - $NCU -k regex:nomatch ./flaws --once --only copy_vec4
  step no_executable 20 "$NO/no_executable.txt" - ncu ./does_not_exist
  step full_c1_stdout 60 "$NO/full_c1_stdout.txt" "$NO/full_c1_stderr.txt" $NCU --set full -c 1 ./flaws --once --only copy_vec4
  step target_exit3 40 "$NO/target_exit3.txt" - $NCU -o "$W/target_exit3" ./flaws --once --only copy_vec4 --exit-code 3
  step flaws_phase1_csv_live 40 "$NO/flaws_phase1_live.csv" "$NO/flaws_phase1_live.stderr.txt" $NCU --metrics gpu__time_duration.sum --csv --print-units base --page raw ./flaws --once --only copy_vec4,copy_strided,transpose_naive
fi
# ---------------------------------------------------------------- e) many tiny launches
if want tiny; then
  step tiny_plain 30 "$W/tiny_plain.txt" - ./tiny_launches
  step tiny_phase1 150 "$NO/tiny_phase1.txt" - $NCU --metrics gpu__time_duration.sum -o "$W/tiny_phase1" ./tiny_launches
  [[ -f "$W/tiny_phase1.ncu-rep" ]] && step tiny_phase1_csv 60 "$W/tiny_phase1.csv" "$NO/tiny_phase1_csv.stderr.txt" ncu --import "$W/tiny_phase1.ncu-rep" --csv --print-units base --page raw
  step tiny_sections 120 "$NO/tiny_sections.txt" - $NCU $SECS -c 20 -o "$W/tiny_sections" ./tiny_launches
fi
# ---------------------------------------------------------------- f) PyTorch
TS="$REPO/workloads/torch/transformer_step.py"
export PYTHONUNBUFFERED=1
if want torch_eager; then
  step torch_eager 150 "$NO/torch_eager.txt" - $NCU --import-source yes $SECS --nvtx --nvtx-include "step/" --launch-count 25 -o "$W/torch_eager" python3 "$TS" --mode eager --steps 3
fi
if want torch_train; then
  step torch_train_plain 60 "$W/torch_train_plain.txt" - python3 "$TS" --mode eager --train --steps 3
  step torch_train_phase1 120 "$NO/torch_train_phase1.txt" - $NCU --metrics gpu__time_duration.sum --nvtx --nvtx-include "step/" -o "$W/torch_train_phase1" python3 "$TS" --mode eager --train --steps 3
  [[ -f "$W/torch_train_phase1.ncu-rep" ]] && step torch_train_phase1_csv 60 "$W/torch_train_phase1.csv" "$NO/torch_train_phase1_csv.stderr.txt" ncu --import "$W/torch_train_phase1.ncu-rep" --csv --print-units base --page raw
fi
# The push/pop range "step/" is thread-local: backward kernels (launched by autograd's own thread) fall outside it.
# The process-wide start/end range "step_all_threads" (no slash) holds the whole training step.
if want torch_train || want torch_train_all; then
  step torch_train_phase1_all 120 "$NO/torch_train_phase1_all.txt" - $NCU --metrics gpu__time_duration.sum --nvtx --nvtx-include "step_all_threads" -o "$W/torch_train_phase1_all" python3 "$TS" --mode eager --train --steps 3
  [[ -f "$W/torch_train_phase1_all.ncu-rep" ]] && step torch_train_phase1_all_csv 60 "$W/torch_train_phase1_all.csv" "$NO/torch_train_phase1_all_csv.stderr.txt" ncu --import "$W/torch_train_phase1_all.ncu-rep" --csv --print-units base --page raw
fi
if want torch_compile; then
  export TORCHINDUCTOR_COMPILE_THREADS=1
  step torch_compile 240 "$NO/torch_compile.txt" - $NCU --import-source yes $SECS --nvtx --nvtx-include "step/" --launch-count 25 -o "$W/torch_compile" python3 "$TS" --mode compile --steps 3
fi

# ---------------------------------------------------------------- pack
cd "$W"
printf "%-26s %5s %8s  %s\n" total - "$(( $(date +%s) - T0 ))" "(before packing)" >> "$TIMINGS"
cp "$REPO/workloads/cuda/manifest.json" "$W/" 2>/dev/null
ls -la "$W" "$W/ncu_outputs" > "$W/file_list.txt" 2>&1
s=$(now)
if command -v xz > /dev/null; then
  tar -cf - -C "$W" . | xz -T0 -6 > "$OUT/capture.tar.xz"
else
  tar -czf "$OUT/capture.tar.xz" -C "$W" .   # gzip fallback (name kept)
  echo "NOTE: no xz on this machine, archive is gzip"
fi
SZ=$(stat -c %s "$OUT/capture.tar.xz")
if (( SZ > 15900000 )); then
  split -b 15000000 -d -a 2 "$OUT/capture.tar.xz" "$OUT/capture.tar.xz.part"
  rm -f "$OUT/capture.tar.xz"
fi
PACK_S=$(elapsed_since "$s")

# ---------------------------------------------------------------- summary (printed last)
{
  echo "==================== SUMMARY ===================="
  cat "$W/versions.txt"
  echo "---- build: registers / stack / spills (flaws)"
  python3 - "$W/build_ptxas.log" <<'PYEOF' 2>&1
import re, sys
cur = None; sect = None; st = ""
for l in open(sys.argv[1]):
    if l.startswith("====="):
        sect = l.split()[1]; continue
    if sect != "flaws":
        continue
    m = re.search(r"Compiling entry function '(\w+)'", l)
    if m:
        cur = m.group(1); st = ""; continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", l)
    if m:
        st = f"stack={m.group(1)} spill_st={m.group(2)} spill_ld={m.group(3)}"; continue
    m = re.search(r"Used (\d+) registers", l)
    if m and cur and "check_maxdiff" not in cur:
        print(f"  {cur[:44]:44s} regs={m.group(1):>3s} {st}")
PYEOF
  echo "---- bench (median us) and twin speedups"
  python3 - "$W/bench_flaws.jsonl" "$W/manifest.json" "$W/check_flaws.jsonl" <<'EOF' 2>&1
import json, sys
try:
    b = {}
    for l in open(sys.argv[1]):
        l = l.strip()
        if l.startswith("{"):
            d = json.loads(l); b[d["kernel"]] = d["median_us"]
    man = json.load(open(sys.argv[2]))["flaws"]
    for k, us in b.items():
        m = man.get(k, {})
        tw = m.get("twin")
        sp = f"twin {tw}: x{us / b[tw]:.2f}" if tw and tw in b and b[tw] > 0 else ("twin of " + m["twin_of"] if m.get("twin_of") else "")
        print(f"{k:26s} {us:10.1f}  {m.get('planted') or '-':16s} {sp}")
except Exception as e:
    print("bench table failed:", e)
try:
    for l in open(sys.argv[3]):
        if l.startswith("{"): print("check", l.strip())
except Exception as e:
    print("check table failed:", e)
EOF
  echo "---- steps (rc, seconds)"
  cut -c1-120 "$TIMINGS"
  echo "packing: ${PACK_S}s"
  echo "---- program outputs"
  grep -h "transformer_step\|tiny_add x\|No kernels" "$W/torch_train_plain.txt" "$W/tiny_plain.txt" "$NO"/torch_*.txt 2>/dev/null | cut -c1-200
  grep -h "ERROR\|Error\|error" "$NO"/flaws.txt "$NO"/torch_*.txt "$NO"/tiny_*.txt "$NO"/pipeline_*.txt 2>/dev/null | sort | uniq -c | head -10
  echo "---- report sizes"
  ls -la "$W"/*.ncu-rep 2>/dev/null | awk '{print $5, $9}'
  echo "---- archive"
  ls -la "$OUT"
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
