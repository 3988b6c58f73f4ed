#!/bin/bash
# On the GPU machine, from the repository root: `ncuadvisor profile --python-lines` on workloads/torch/python_lines.py.
# 1. a probe without ncu: the torch runner runs the script (its modes, the NVTX ranges, autograd's current node);
# 2. the GPU test tests/test_python_lines.py (the cast, GELU, layout copy and GELU backward placed at their lines);
# 3. `ncuadvisor profile --python-lines --torch-ops --top 4` on the same script (both runner features at once);
# 4. what DRAM bytes would cost phase 1: ncu's replay passes and wall time with and without them (no runner);
# 5. with time left: which of ATen's other scatters update through global atomics (workloads/torch/scatter_ops.py).
# Results, logs and the phase-1 reports (xz) go to $OUT; keeps to $BUDGET seconds (default 120).
#     OUT=/tmp/pl BUDGET=120 bash benchmarks/device/python_line.sh
source benchmarks/device/env.sh
T0=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
lim() { local t=$(( $(left) - $1 )); [ "$t" -lt 15 ] && t=15; echo "$t"; }   # what a step may take, keeping $1 s
SCRIPT=workloads/torch/python_lines.py

# 1. the runner alone (no ncu): does it run, and what does this torch offer it
timeout 40 python3 - > "$OUT/probe.log" 2>&1 <<'EOF'
import subprocess, sys, time
import torch
from ncuadvisor.profile.target import TORCH_RUNNER
print("torch", torch.__version__, "_current_autograd_node:", hasattr(torch._C, "_current_autograd_node"))
for feats in ("lines", "ops,lines"):
    t = time.time()
    p = subprocess.run([sys.executable, "-c", TORCH_RUNNER, feats, "workloads/torch/python_lines.py", "--steps", "2"],
                       capture_output=True, text=True)
    print(f"runner {feats}: rc={p.returncode} {time.time() - t:.1f} s\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
EOF
echo "probe rc=$? at $(( $(date +%s) - T0 )) s"; cat "$OUT/probe.log" | head -40

# 2. the GPU test; its tmp files (result JSON, reports) kept under $OUT/pytest
timeout $(lim 40) python3 -m pytest -q -s -rA -p no:cacheprovider -m gpu --basetemp="$OUT/pytest" \
  tests/test_python_lines.py > "$OUT/gpu_test.log" 2>&1
echo "gpu test rc=$? at $(( $(date +%s) - T0 )) s"; tail -40 "$OUT/gpu_test.log"

# 3. profile with both runner features; -v keeps every line ncu printed
mkdir -p /tmp/pl && cd /tmp/pl || exit 1
timeout $(lim 5) python3 -m ncuadvisor profile --python-lines --torch-ops --top 4 --nvtx-include step_all_threads \
  -o /tmp/pl/both.json --force -v "$OLDPWD/$SCRIPT" --steps 2 --size 1024 > "$OUT/profile_both.log" 2>&1
echo "profile rc=$? at $(( $(date +%s) - T0 )) s"; tail -30 "$OUT/profile_both.log"
cd "$OLDPWD" || exit 1
cp /tmp/pl/both.json "$OUT/" 2>/dev/null
python3 -m ncuadvisor render /tmp/pl/both.json -o "$OUT/both.md" > /dev/null 2>&1 || true
python3 - "$OUT/both.json" > "$OUT/both_lines.txt" 2>&1 <<'EOF'
import json, sys
res = json.load(open(sys.argv[1]))
for k in res["kernels"]:
    pl = k.get("python_line") or {}
    print(f"{k['time_share']:6.1%} {k['name'][:40]:40} {k['grid']:>16} {pl.get('line')} {pl.get('backward_of')} "
          f"op={k.get('torch_op')} mod={k.get('torch_module')} nvtx={k.get('nvtx')!r} code={pl.get('code')!r}")
EOF
cat "$OUT/both_lines.txt"
# the reports: the phase-1 ones compressed (recorded NVTX ranges of the runner, for tests without a GPU), the rest gone
for f in $(find "$OUT/pytest" /tmp/pl -name '*.phase1.ncu-rep' -size -200M 2>/dev/null); do
  xz -6 -T0 -c "$f" > "$OUT/$(basename "$(dirname "$f")").$(basename "$f").xz"
done
find "$OUT" -type l -delete 2>/dev/null
find "$OUT/pytest" \( -name '*.ncu-rep' -o -name '*.ncu-repz' \) -delete 2>/dev/null

# 4. phase 1's cost with the DRAM byte counters the program rules read (profile takes them from phase 2 today)
for M in gpu__time_duration.sum gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum; do
  LOG="$OUT/phase1_cost_$(echo "$M" | tr -c 'a-z0-9_\n' '_' | cut -c1-40).log"
  S=$(date +%s.%N)
  timeout 30 ncu --clock-control none --metrics "$M" -f -o /tmp/pl/cost python3 "$SCRIPT" --steps 1 --size 1024 \
    > "$LOG" 2>&1
  echo "rc=$? wall=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $S}") s metrics=$M" | tee -a "$LOG"
  grep -o -- "- [0-9]* pass[a-z]*" "$LOG" | sort | uniq -c | tee -a "$LOG"
done

# 5. which of ATen's other scatters (embedding backward, bincount, histc, index_put_) update through global atomics:
# one cheap metric pass (the counters ATM001/ATM002 read), only when time is left
if [ "$(left)" -ge 35 ]; then
  S=$(date +%s)
  timeout $(lim 0) ncu --clock-control none --nvtx --nvtx-include step_all_threads \
    --metrics gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    -f -o /tmp/pl/scatter_ops python3 workloads/torch/scatter_ops.py > "$OUT/scatter_ops_ncu.log" 2>&1
  echo "scatter_ops rc=$? in $(( $(date +%s) - S )) s"; grep -c "==PROF== Profiling" "$OUT/scatter_ops_ncu.log"
  ncu --import /tmp/pl/scatter_ops.ncu-rep --csv --page raw --print-units base > "$OUT/scatter_ops.csv" 2>&1
  xz -6 -T0 -c /tmp/pl/scatter_ops.ncu-rep > "$OUT/scatter_ops.ncu-rep.xz" 2>/dev/null
  cut -c1-400 "$OUT/scatter_ops.csv" | head -60
else
  echo "scatter_ops skipped: $(left) s left"
fi
ls -la "$OUT" "$OUT"/pytest/* 2>/dev/null | head -40
echo "done at $(( $(date +%s) - T0 )) s"
