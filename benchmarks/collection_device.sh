#!/bin/bash
# On the GPU machine, from the repository root: what phase 2's collections cost and find (benchmarks/collection_cost.py
# on workloads/cuda/patterns.cu), `ncuadvisor profile` against `ncu --set full` on the training step
# (benchmarks/profile_cost.py --train), then the GPU tests of the profile flow. Everything goes to $OUT (default
# /tmp/collection_device); about 560 s in all.
#     OUT=/tmp/cd bash benchmarks/collection_device.sh
OUT=${OUT:-/tmp/collection_device}
mkdir -p "$OUT" /tmp/bin
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# ncu_report: the installed package, else the copy inside the Nsight Compute install (extras/python)
if ! python3 -c "import ncu_report" 2>/dev/null; then
  FOUND=$(find /opt/nvidia /usr/local/cuda* "$(dirname "$(readlink -f "$(which ncu)")")/.." -name ncu_report.py \
    -path '*extras/python*' 2>/dev/null | head -1)
  [ -z "$FOUND" ] && FOUND=$(find / -xdev -name ncu_report.py -path '*extras/python*' 2>/dev/null | head -1)
  EXTRAS=$(dirname "$FOUND")
  export PYTHONPATH=$EXTRAS
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
T0=$(date +%s)
{ date -u; nvidia-smi -L; ncu --version; echo "PYTHONPATH=$PYTHONPATH"
  python3 -c "import ncu_report, torch; print(ncu_report.__file__, torch.__version__)"; } > "$OUT/env.txt" 2>&1
nvcc -arch=sm_90 -lineinfo -O3 -o /tmp/bin/patterns workloads/cuda/patterns.cu >> "$OUT/env.txt" 2>&1
timeout 140 python3 benchmarks/collection_cost.py --binary /tmp/bin/patterns --binary-args=--once --out /tmp/cc \
  --json "$OUT/collection_cost.json" --timeout-s 60 > "$OUT/collection_cost.log" 2>&1
echo "collections done at $(( $(date +%s) - T0 )) s"; tail -30 "$OUT/collection_cost.log"
# `ncuadvisor profile` with phase 2 on the declared metrics (the default is still the 13 sections)
NCUADVISOR_COLLECTION=declared timeout 270 python3 benchmarks/profile_cost.py --train --out /tmp/pc --json "$OUT/profile_cost_train.json" \
  --budget-s 255 > "$OUT/profile_cost_train.log" 2>&1
echo "profile_cost done at $(( $(date +%s) - T0 )) s"; tail -25 "$OUT/profile_cost_train.log"
cp /tmp/pc/profile.log "$OUT/pc_profile.log" 2>/dev/null
LEFT=$(( 560 - ($(date +%s) - T0) ))
timeout $LEFT python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_profile.py > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s"; tail -8 "$OUT/gpu_tests.log"
