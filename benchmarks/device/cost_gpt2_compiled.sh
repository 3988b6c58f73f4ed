#!/bin/bash
# On the GPU machine, from the repository root, in ONE device call: what profiling a Triton program nobody here wrote
# costs, all measured (nothing extrapolated). The program: workloads/torch/library_step.py --model gpt2 --compile
# --layers 2 --steps 3: transformers' GPT2LMHeadModel (random weights) through torch.compile, so the step's kernels
# are the Triton code PyTorch's Inductor generates for it (public code, generated on the machine, none of it
# committed here) beside cuBLAS and the attention kernel; forward, backward, AdamW; the range "step_all_threads".
# Same four runs and the same files as cost_gpt2_train.sh, named gpt2_compiled. Inductor compiles in this process
# (TORCHINDUCTOR_COMPILE_THREADS=1: no compile workers for ncu to follow); the plain run fills the compile cache the
# three later runs read.
# Expected (NCU-FACTS, H200): ~80 launches in the range (Inductor fuses the elementwise work); plain ~60 s (cold
# compile); profile ~2 x 27 s of start-up + ~20 launches x ~1 s; the full set ~27 s + 80 x 2.1-2.4 s = 195-220 s; the
# report ~25 s: ~380 s of the 570.
#     OUT=/tmp/out BUDGET=570 bash benchmarks/device/cost_gpt2_compiled.sh
BUDGET=${BUDGET:-570}
# the program and its arguments (a dry run on the fake ncu gives tests/fake_ncu/target.py instead)
PROGRAM=${PROGRAM:-workloads/torch/library_step.py --model gpt2 --compile --layers 2 --steps 3}
source benchmarks/device/env.sh
part_start
export TORCHINDUCTOR_COMPILE_THREADS=1
python3 -c "import transformers; print('transformers', transformers.__version__)" >> "$OUT/env.txt" 2>&1
timeout $(( $(left) - 5 )) python3 benchmarks/profile_cost.py measure --name gpt2_compiled --out "$OUT" \
  --budget-s $(( $(left) - 15 )) --nvtx-include step_all_threads \
  -- $PROGRAM 2>&1 | tee -a "$OUT/steps.log"
say "measure rc=${PIPESTATUS[0]}"
python3 benchmarks/profile_cost.py table "$OUT/cost_gpt2_compiled.json" 2>&1 | tail -30
