#!/bin/bash
# On the GPU machine, from the repository root: the alternatives to ATen's sort-based accumulations, timed and
# profiled (workloads/torch/scatter_ops.py). 1. CUDA-event medians of 25 calls: index_put_(accumulate=True) against
# index_add_ (each also under torch.use_deterministic_algorithms), the dense embedding gradient against
# nn.Embedding(sparse=True), backward alone and with an SGD step; 2. `ncuadvisor profile` of the twins with an SGD
# step (embedding dense and sparse, index_add_), the result JSON and markdown and both reports (xz) to $OUT.
#     OUT=/tmp/st BUDGET=150 bash benchmarks/device/scatter_twins.sh
source benchmarks/device/env.sh
part_start
S=workloads/torch/scatter_ops.py
T=$(( $(left) / 3 ))
{ timeout "$T" python3 $S --time 25 --case index_put,index_add,embedding_backward,embedding_sparse
  timeout "$T" python3 $S --time 25 --sgd --case embedding_backward,embedding_sparse
  timeout "$T" python3 $S --time 25 --deterministic --case index_put,index_add; } > "$OUT/times.log" 2>&1
say "times rc=$?"; grep "scatter_ops.py: time" "$OUT/times.log"
mkdir -p /tmp/twins && cd /tmp/twins || exit 1
T=$(( $(left) - 15 ))
timeout "$T" python3 -m ncuadvisor profile --nvtx-include step_all_threads --coverage 1.0 -o /tmp/twins/twins.json \
  --force "$OLDPWD/$S" --case embedding_backward,embedding_sparse,index_add --sgd --steps 2 > "$OUT/profile.log" 2>&1
say "profile rc=$?"; grep -v "==PROF== Profiling" "$OUT/profile.log" | tail -30
cd "$OLDPWD" || exit 1
cp /tmp/twins/twins.json "$OUT/" 2>/dev/null
[ -f /tmp/twins/twins.json ] && python3 -m ncuadvisor render /tmp/twins/twins.json -o "$OUT/twins.md" > /dev/null 2>&1
for r in /tmp/twins/*.ncu-rep; do [ "$(left)" -gt 3 ] && timeout $(( $(left) - 2 )) xz -T0 -6 -c "$r" > "$OUT/$(basename "$r").xz"; done
say "done"
