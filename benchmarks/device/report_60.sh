#!/bin/bash
# On the GPU machine, from the repository root: the report that `ncuadvisor report`'s speed is measured on (the kind
# users write with `ncu --set full -c 60`): a transformers GPT-2 training step (1 block, forward, backward, AdamW,
# random weights; workloads/torch/library_step.py), the first 60 launches inside its step range, the full set with
# the source. Brings back the report xz'd and the time ncu took.
#     OUT=/tmp/r60 BUDGET=200 bash benchmarks/device/report_60.sh
#     here: python3 benchmarks/report_speed.py on the unpacked report (installed from the wheel)
BUDGET=${BUDGET:-200}
source benchmarks/device/env.sh
part_start
W=/tmp/r60 && rm -rf "$W" && mkdir -p "$W"
s=$(date +%s)
timeout $(( $(left) - 30 )) ncu --set full --import-source yes --clock-control none -c 60 \
  --nvtx --nvtx-include step_all_threads -f -o "$W/gpt2_train_full60" \
  python3 workloads/torch/library_step.py --model gpt2 --layers 1 --steps 3 > "$W/ncu.log" 2>&1
say "ncu rc=$? in $(( $(date +%s) - s )) s; $(grep -c '==PROF== Profiling' "$W/ncu.log") launches profiled"
tail -3 "$W/ncu.log" >> "$OUT/steps.log"
[ -f "$W/gpt2_train_full60.ncu-rep" ] && xz -T0 -6 -c "$W/gpt2_train_full60.ncu-rep" > "$OUT/gpt2_train_full60.ncu-rep.xz"
ls -la "$OUT"
