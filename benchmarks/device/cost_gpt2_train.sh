#!/bin/bash
# On the GPU machine, from the repository root, in ONE device call: what profiling a training step nobody here wrote
# costs, all measured (nothing extrapolated). The program: workloads/torch/library_step.py --model gpt2 --layers 1
# --steps 3, one eager training step (forward, backward, AdamW) of transformers' GPT2LMHeadModel with random weights,
# the range the process-wide NVTX range "step_all_threads". Run one after the other by `profile_cost.py measure`:
# the plain program; `ncuadvisor profile`; `ncu --clock-control none --set full --import-source yes` on every launch
# of the range; `ncuadvisor report` on that capture. Writes to $OUT: cost_gpt2_train.json (the timings, launches,
# passes, GPU, driver, ncu, date), profile_gpt2_train.json.xz and full_gpt2_train.json.xz (both results),
# logs_gpt2_train.tar.xz, env.txt, steps.log. Read them with `python3 benchmarks/profile_cost.py table OUT/cost_*.json`.
# Expected (NCU-FACTS, H200): ~130 launches in the range (1 block: ~65 forward+backward, embeddings, loss, AdamW's
# foreach kernels); plain ~12 s; profile ~50 s (phase 1 at 1 pass, ~30 launches at 14-24 passes); the full set
# ~12 s + 130 x 2.1-2.4 s = 285-325 s; the report on it ~40 s: ~420 s of the 570. If the range is larger than that,
# the full set is skipped (said in the JSON, which `table` then refuses): lower --layers or --seq.
#     OUT=/tmp/out BUDGET=570 bash benchmarks/device/cost_gpt2_train.sh
# NAME= and PROGRAM= measure another model the same way (cost_NAME.json), FULL_S_PER_LAUNCH= the plan's seconds a
# launch of the full set (measure refuses to start a full set the budget cannot hold). GPT-2 small's width, 3 blocks
# (~230 launches; 1.83 s a launch measured on the 1-block step):
#     OUT=/tmp/out BUDGET=590 NAME=gpt2s_train FULL_S_PER_LAUNCH=1.9 PROGRAM="workloads/torch/library_step.py \
#       --model gpt2 --size small --layers 3 --batch 4 --seq 512 --steps 3" bash benchmarks/device/cost_gpt2_train.sh
BUDGET=${BUDGET:-570}
NAME=${NAME:-gpt2_train}
# the program and its arguments (a dry run on the fake ncu gives tests/fake_ncu/target.py instead)
PROGRAM=${PROGRAM:-workloads/torch/library_step.py --model gpt2 --layers 1 --steps 3}
source benchmarks/device/env.sh
part_start
python3 -c "import transformers; print('transformers', transformers.__version__)" >> "$OUT/env.txt" 2>&1
timeout $(( $(left) - 5 )) python3 benchmarks/profile_cost.py measure --name "$NAME" --out "$OUT" \
  --budget-s $(( $(left) - 8 )) --full-s-per-launch "${FULL_S_PER_LAUNCH:-2.4}" --nvtx-include step_all_threads \
  -- $PROGRAM 2>&1 | tee -a "$OUT/steps.log"
say "measure rc=${PIPESTATUS[0]}"
python3 benchmarks/profile_cost.py table "$OUT/cost_$NAME.json" 2>&1 | tail -30
