#!/bin/bash
# On the GPU machine, from the repository root: ATen's other scatters and histograms (workloads/torch/scatter_ops.py:
# embedding backward, bincount, histc, index_put_(accumulate=True)) captured with the 13 analysis sections, as the
# torch fixtures were; fixtures/scatter-ops-2026-12-01 holds durations, DRAM bytes and global atom/red/load requests
# only. With the sections, the shared-memory atomic counters (smsp__inst_executed_op_shared_atom.sum), the warp stalls
# and the SASS of kernelHistogram1D, of CUB's radix sort and of the sort-based accumulations (indexing_backward_kernel,
# compute_grad_weight, sum_and_scatter) can be read without a GPU. Writes to $OUT: the report (xz), ncu's log, and
# ncuadvisor's markdown of it; keeps to $BUDGET seconds (default 120; the capture takes about 60 s).
#     OUT=/tmp/sf BUDGET=120 bash benchmarks/device/scatter_full.sh
source benchmarks/device/env.sh
part_start
WORK=${WORK:-/tmp/scatter_full}  # the raw report, before it is packed into $OUT
mkdir -p "$WORK"
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
--section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis \
--section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats \
--section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"

T=$(( $(left) - 25 ))
say "ncu, 13 sections, on scatter_ops.py (46 launches in step_all_threads), ${T} s"
# shellcheck disable=SC2086  # SECS is a list of arguments
timeout "$T" ncu --clock-control none --import-source yes $SECS --nvtx --nvtx-include step_all_threads \
  -o "$WORK/scatter_ops_full" -f python3 workloads/torch/scatter_ops.py --steps 2 > "$OUT/scatter_ops_full_ncu.log" 2>&1
say "ncu rc=$?"
grep -E "measured step|==ERROR==" "$OUT/scatter_ops_full_ncu.log" | tail -8
grep -c "==PROF== Profiling" "$OUT/scatter_ops_full_ncu.log" | sed 's/^/launches profiled: /'
REP="$WORK/scatter_ops_full.ncu-rep"
if [ -f "$REP" ]; then
  T=$(( $(left) - 12 ))
  [ "$T" -gt 5 ] && timeout "$T" python3 -m ncuadvisor report "$REP" -f md -o "$OUT/scatter_ops_full.md" --force -q \
    > "$OUT/report.log" 2>&1
  say "report rc=$?"
  [ "$(left)" -gt 3 ] && { timeout $(( $(left) - 2 )) xz -T0 -6 -c "$REP" > "$OUT/scatter_ops_full.ncu-rep.xz" \
    || rm -f "$OUT/scatter_ops_full.ncu-rep.xz"; }
fi
say "done"
