#!/bin/bash
# On the GPU machine, from the repository root, in ONE device call: what profiling a public multi-kernel CUDA program
# costs, all measured (nothing extrapolated). The program: llm.c's GPT-2 training program (karpathy/llm.c
# train_gpt2.cu, vendored in workloads/exam/llm.c/train/, see workloads/exam/README.md), built here as upstream's
# Makefile builds train_gpt2cu without cuDNN, MPI or NCCL (BF16), plus -lineinfo and sm_90; its inputs written here
# with nothing downloaded (workloads/exam/llm.c/train_inputs.py: random token shards, a random-init bf16 model of
# 3 layers, C=384, 6 heads: d6's width at half its depth). Two training steps of B=4 x T=256 tokens, no validation
# batch (-m 0), no sampling (-s 0), no checkpoint, no HellaSwag, no output folder (-o unset: nothing written); the
# range is the push/pop range "Train step 1" (the second step: forward, backward, grad norm, AdamW; the first step's
# one-off optimizer-state set-up (16 copy_and_cast launches) stays out, so does the start-up). Run one after the
# other by `profile_cost.py measure`: the plain program; `ncuadvisor profile`; `ncu --clock-control none --set full
# --import-source yes` on every launch of the range; `ncuadvisor report` on that capture. Writes to $OUT:
# cost_llmc_train.json (timings, launches, passes, GPU, driver, ncu, date), profile_llmc_train.json.xz and
# full_llmc_train.json.xz (both results), logs_llmc_train.tar.xz, build_llmc_train.log, env.txt, steps.log.
# Read them with `python3 benchmarks/profile_cost.py table OUT/cost_llmc_train.json`.
#
# Launches in the range, counted from the code for L layers (cuBLASLt calls counted as one kernel each; a split-K
# reduction kernel would add one; memsets are not kernels):
#   forward   3 + 12 L: encoder, layernorm, classifier matmul; per layer the qkv, attention-projection, fc and
#             fc-projection matmuls (4), attention (permute, 2 batched matmuls, softmax, unpermute: 5), gelu (not
#             fused at the default -ge 0), 2 fused residual+layernorm
#   backward  7 + 27 L: fused classifier, its 2 matmuls, final layernorm backward, encoder backward (wte, wpe), the
#             loss sum; per layer the gelu recompute, 4 matmul backwards (dinp + dweight matmuls, and the bias
#             kernel + its reduction, 16 in all), gelu backward, attention backward (unpermute, 4 batched matmuls,
#             softmax backward, permute: 7), 2 layernorm backwards
#   grad norm 2 (global_norm_squared, the deterministic sum); AdamW 16 (one per parameter tensor)
#   L = 3: 39 + 88 + 2 + 16 = 145 (57 of them cuBLASLt matmuls; up to ~158 if the 13 dweight matmuls split K);
#   -e d6, the descriptor's smallest model, would be 262 launches: ~500 s for the full set alone, over the call.
# Expected (RESULTS 2026-12-06, H100: `--set full` 1.83 s a launch, 13 s for the program under ncu; NCU-FACTS, H200:
# 2.1-2.35 s a launch): build ~10-20 s (11 s on this project's 2-core CPU machine), inputs ~3 s, plain ~2-5 s,
# profile ~30-60 s (two program runs under ncu, phase 1 at 1 pass on the 145 launches, phase 2 at ~0.7 s for each
# launch shape of the kernels holding 90% of the time), the full set 145-158 x 1.83 s + 3-13 s = 270-300 s on an H100
# (320-385 s on an H200), the report on it a few seconds to ~45 s: ~340-420 s of the 570 on an H100. `measure` plans
# the full set at 2.0 s a launch (--full-s-per-launch) and skips it, said in the JSON (which `table` then refuses),
# when that cannot fit; its own timeout stops a full set that runs past what is left. LAYERS=2 shrinks the range by
# 39 launches; 4 layers (184 launches, ~350 s on an H100) would pass the timeout on an H200.
#     OUT=/tmp/out BUDGET=570 bash benchmarks/device/cost_llmc_train.sh
BUDGET=${BUDGET:-570}
LAYERS=${LAYERS:-3}
W=${WORK:-/tmp/llmc_train}  # build, inputs and measure's scratch reports
SRC=$PWD/workloads/exam/llm.c/train
source benchmarks/device/env.sh
part_start
mkdir -p "$W/bin"
# the program: built here unless given (a dry run on the fake ncu gives a stub as LLMC_BIN)
if [ -z "${LLMC_BIN:-}" ]; then
  LLMC_BIN=$W/bin/train_gpt2cu
  # upstream's Makefile (USE_CUDNN=0, no MPI, no NCCL, PRECISION=BF16): nvcc --threads=0 -t=0 --use_fast_math
  # -std=c++17 -O3 -DENABLE_BF16 train_gpt2.cu -lcublas -lcublasLt -lnvidia-ml; llmc/mfu.h uses NVML when nvml.h is
  # found, which then needs -lnvidia-ml (the toolkit's stubs folder, when the driver's library has no .so link)
  NVML=
  printf '#include <nvml.h>\n' > "$W/nvml_check.cu"
  if nvcc -E "$W/nvml_check.cu" -o /dev/null > /dev/null 2>&1; then
    CUDA_DIR=$(dirname "$(readlink -f "$(which nvcc)")")/..
    NVML="-lnvidia-ml"
    for d in "$CUDA_DIR/lib64/stubs" "$CUDA_DIR/targets/x86_64-linux/lib/stubs"; do [ -d "$d" ] && NVML="-L$d $NVML"; done
  fi
  say "build: $(nvcc --version | tail -1); nvml: ${NVML:-none}"
  t=$(date +%s)
  # the absolute source path goes into -lineinfo's line table, so that --import-source finds the files
  build() {
    timeout 300 nvcc --threads=0 -t=0 --use_fast_math -std=c++17 -O3 -DENABLE_BF16 -lineinfo -arch=sm_90 \
      "$SRC/train_gpt2.cu" -lcublas -lcublasLt "$@" -o "$LLMC_BIN" >> "$OUT/build_llmc_train.log" 2>&1
  }
  # shellcheck disable=SC2086
  build $NVML
  rc=$?
  # no NVML library to link against by that name: the driver's own, by its file name
  if [ $rc -ne 0 ] && [ -n "$NVML" ]; then say "build rc=$rc; again with -l:libnvidia-ml.so.1"; build -l:libnvidia-ml.so.1; rc=$?; fi
  say "build rc=$rc in $(( $(date +%s) - t )) s"
  if [ $rc -ne 0 ]; then tail -20 "$OUT/build_llmc_train.log"; exit 1; fi
fi
# the inputs: random token shards and a random-init model of $LAYERS layers (kept if already there)
DATA=$W/data_d$LAYERS
MODEL=$DATA/model_d${LAYERS}_bf16.bin
if [ ! -f "$MODEL" ]; then
  python3 workloads/exam/llm.c/train_inputs.py "$DATA" --layers "$LAYERS" >> "$OUT/steps.log" 2>&1 \
    || { say "train_inputs.py failed"; tail -3 "$OUT/steps.log"; exit 1; }
fi
say "inputs ready in $DATA"
ARGS=(-i "$DATA/train_000000.bin" -j "$DATA/val_000000.bin" -e "$MODEL" -b 4 -t 256 -x 2 -v 100 -m 0 -s 0 -h 0 -n 0)
# KERNEL_ONLY=REGEX: instead of the side-by-side measurement, the full set on every launch of the range whose kernel
# name matches (a kernel's verdict on all its launches, read again after a rule changed), its report and this
# checkout's analysis of it to $OUT (llmc_only.ncu-rep.xz, llmc_only.json)
if [ -n "${KERNEL_ONLY:-}" ]; then
  timeout $(( $(left) - 30 )) ncu --clock-control none --set full --import-source yes --nvtx \
    --nvtx-include "Train step 1/" -k "regex:$KERNEL_ONLY" -o "$W/llmc_only" -f "$LLMC_BIN" "${ARGS[@]}" \
    > "$OUT/llmc_only_ncu.log" 2>&1
  say "ncu rc=$? ($(grep -c '==PROF== Profiling' "$OUT/llmc_only_ncu.log") launches)"
  python3 -m ncuadvisor report "$W/llmc_only.ncu-rep" -f json -o "$OUT/llmc_only.json" --force -q
  say "report rc=$?"
  xz -9 -c "$W/llmc_only.ncu-rep" > "$OUT/llmc_only.ncu-rep.xz"
  exit 0
fi
timeout $(( $(left) - 5 )) python3 benchmarks/profile_cost.py measure --name llmc_train --out "$OUT" \
  --work "$W/cost" --budget-s $(( $(left) - 15 )) --full-s-per-launch "${FULL_S_PER_LAUNCH:-2.0}" --nvtx-include "Train step 1/" \
  -- "$LLMC_BIN" "${ARGS[@]}" 2>&1 | tee -a "$OUT/steps.log"
say "measure rc=${PIPESTATUS[0]}"
python3 benchmarks/profile_cost.py table "$OUT/cost_llmc_train.json" 2>&1 | tail -40
