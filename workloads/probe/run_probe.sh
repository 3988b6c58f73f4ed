#!/usr/bin/env bash
# Probe capture on the GPU machine: what ncu and its reports look like here.
set -x
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
which ncu; ncu --version > $OUT/ncu_version.txt 2>&1
ncu --list-sets > $OUT/ncu_list_sets.txt 2>&1
ncu --list-sections > $OUT/ncu_list_sections.txt 2>&1
nvcc -arch=sm_90 -lineinfo -O3 -o probe probe.cu || exit 1
SECS="--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section SourceCounters --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight_RooflineChart --section SpeedOfLight_HierarchicalTensorRooflineChart"
time ncu --clock-control none --import-source yes $SECS -o $OUT/probe ./probe > $OUT/ncu_stdout_sections.txt 2> $OUT/ncu_stderr_sections.txt
time ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base ./probe > $OUT/ncu_phase1_csv.txt 2>&1
time ncu --clock-control none --set full --import-source yes -o $OUT/probe_full ./probe > /dev/null 2>&1
ncu --clock-control none -k regex:nomatch ./probe > $OUT/ncu_nokernel.txt 2>&1; echo "rc=$?" >> $OUT/ncu_nokernel.txt
ncu --clock-control none ./does_not_exist > $OUT/ncu_noexe.txt 2>&1; echo "rc=$?" >> $OUT/ncu_noexe.txt
ls -la $OUT; xz -9 -T4 $OUT/*.ncu-rep; ls -la $OUT
