#!/bin/bash
# On the GPU machine, from the repository root: `ncuadvisor profile --python-lines` on workloads/torch/python_lines.py.
# 1. the GPU test tests/test_python_lines.py (the cast, GELU, layout copy, GELU and GEMM backward at their lines);
# 2. `ncuadvisor profile --python-lines --torch-ops --top 4` on the same script (both runner features at once);
# 3. with time left: which of ATen's other scatters (workloads/torch/scatter_ops.py) update through global atomics.
# The runner alone and phase 1's cost with DRAM byte counters were measured on 2026-12-01 (fixtures/
# python-lines-2026-12-01: probe.log, phase1_cost_*.log). Results, logs and the phase-1 reports (xz) go to $OUT;
# keeps to $BUDGET seconds (default 120).
#     OUT=/tmp/pl BUDGET=120 bash benchmarks/device/python_line.sh
source benchmarks/device/env.sh
lim() { local t=$(( $(left) - $1 )); [ "$t" -lt 15 ] && t=15; echo "$t"; }   # what a step may take, keeping $1 s
SCRIPT=workloads/torch/python_lines.py
python3 -c "import ncu_report; print('ncu_report', ncu_report.__file__)" > "$OUT/ncu_report.txt" 2>&1
echo "ncu_report import rc=$?"; cat "$OUT/ncu_report.txt"

# 1. the GPU test; its tmp files (result JSON, reports) kept under $OUT/pytest
timeout $(lim 50) python3 -m pytest -q -n 0 -s -rA -p no:cacheprovider -m gpu --basetemp="$OUT/pytest" \
  tests/test_python_lines.py > "$OUT/gpu_test.log" 2>&1
echo "gpu test rc=$? at $(( $(date +%s) - T0 )) s"; tail -45 "$OUT/gpu_test.log"
cp "$OUT"/pytest/*/lines.json "$OUT/gpu_test_lines.json" 2>/dev/null

# 2. profile with both runner features; -v keeps every line ncu printed
mkdir -p /tmp/pl && cd /tmp/pl || exit 1
timeout $(lim 5) python3 -m ncuadvisor profile --python-lines --torch-ops --top 4 --nvtx-include step_all_threads \
  -o /tmp/pl/both.json --force -v "$OLDPWD/$SCRIPT" --steps 2 --size 1024 > "$OUT/profile_both.log" 2>&1
echo "profile rc=$? at $(( $(date +%s) - T0 )) s"; grep -v "==PROF== Profiling" "$OUT/profile_both.log" | tail -40
cd "$OLDPWD" || exit 1
cp /tmp/pl/both.json "$OUT/" 2>/dev/null
python3 -m ncuadvisor render /tmp/pl/both.json -o "$OUT/both.md" > /dev/null 2>&1 || true
python3 benchmarks/device/lines_table.py "$OUT/both.json" > "$OUT/both_lines.txt" 2>&1
cat "$OUT/both_lines.txt"
grep -n "Python\|from <code>" "$OUT/both.md" | head -12

# 3. which of ATen's other scatters (embedding backward, bincount, histc, index_put_) update through global atomics:
# one cheap metric pass (the counters ATM001/ATM002 read), only when time is left
if [ "$(left)" -ge 20 ]; then
  S=$(date +%s)
  timeout $(( $(lim 0) + 10 )) ncu --clock-control none --nvtx --nvtx-include step_all_threads \
    --metrics gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    -f -o /tmp/pl/scatter_ops python3 workloads/torch/scatter_ops.py > "$OUT/scatter_ops_ncu.log" 2>&1
  echo "scatter_ops rc=$? in $(( $(date +%s) - S )) s"; grep -c "==PROF== Profiling" "$OUT/scatter_ops_ncu.log"
  ncu --import /tmp/pl/scatter_ops.ncu-rep --csv --page raw --print-units base > "$OUT/scatter_ops.csv" 2>&1
  xz -6 -T0 -c /tmp/pl/scatter_ops.ncu-rep > "$OUT/scatter_ops.ncu-rep.xz" 2>/dev/null
  cut -c1-400 "$OUT/scatter_ops.csv" | head -60
else
  echo "scatter_ops skipped: $(left) s left"
fi

# the reports: the phase-1 ones compressed, the rest gone
for f in $(find "$OUT/pytest" /tmp/pl -name '*.phase1.ncu-rep' -size -200M 2>/dev/null); do
  xz -6 -T0 -c "$f" > "$OUT/$(basename "$(dirname "$f")").$(basename "$f").xz"
done
find "$OUT" -type l -delete 2>/dev/null
find "$OUT/pytest" \( -name '*.ncu-rep' -o -name '*.ncu-repz' \) -delete 2>/dev/null
ls -la "$OUT" "$OUT"/pytest/* 2>/dev/null | head -40
echo "done at $(( $(date +%s) - T0 )) s"
