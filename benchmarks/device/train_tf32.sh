#!/bin/bash
# On the GPU machine, from the repository root: the planted training step (workloads/torch/planted.py train_step)
# with TF32 off and on, each kernel's duration under ncu (one pass, the measured step only: process-wide range
# step_all_threads), as CSV in $OUT; with the CUDA-event times of the same variants, it tells the GPU time TF32 saves
# from what the step's host time leaves of it. Keeps to $BUDGET seconds (default 100).
#     OUT=/tmp/tt BUDGET=100 bash benchmarks/device/train_tf32.sh
source benchmarks/device/env.sh
part_start
for v in planted tf32; do
  timeout $(( $(left) / 2 )) ncu --clock-control none --metrics gpu__time_duration.sum --nvtx --nvtx-include step_all_threads \
    --csv --page raw --print-units base python3 workloads/torch/planted.py --case "train_step:$v" --steps 3 > "$OUT/train_$v.csv" 2> "$OUT/train_$v.log"
  say "$v rc=$? kernels=$(grep -c '^"[0-9]' "$OUT/train_$v.csv")"
done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import csv, sys, pathlib
for v in ("planted", "tf32"):
    rows = [r for r in csv.reader(open(pathlib.Path(sys.argv[1]) / f"train_{v}.csv")) if r and r[0].isdigit()]
    head = next(r for r in csv.reader(open(pathlib.Path(sys.argv[1]) / f"train_{v}.csv")) if r and r[0] == "ID")
    i_name, i_dur = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    tot = sum(float(r[i_dur].replace(",", "")) for r in rows)
    gemm = sum(float(r[i_dur].replace(",", "")) for r in rows if any(s in r[i_name] for s in ("gemm", "Kernel2", "sm80_", "sm90_", "nvjet", "splitK")))
    print(f"{v}: {len(rows)} kernels, {tot/1e3:.1f} us in all, {gemm/1e3:.1f} us in GEMM kernels")
PY
