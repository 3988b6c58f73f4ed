#!/bin/bash
# On the GPU machine, from the repository root, in ONE device call: how long `ncuadvisor report` takes on the report
# users compare it with, a full-set capture of 60 launches of a training step nobody here wrote, against reading every
# metric of that report once through ncu_report (the floor; goal: the report in at most half of it). The program is
# cost_gpt2_train.sh's: workloads/torch/library_step.py --model gpt2 --layers 1 --steps 3 (one eager training step of
# transformers' GPT2LMHeadModel, random weights), its launches in the process-wide NVTX range "step_all_threads";
# captured with `ncu --clock-control none --set full --import-source yes -c 60`. Then benchmarks/report_speed.py on
# that report: ncuadvisor built into a wheel here (`pip wheel --no-deps --no-build-isolation`: no registry on this
# machine, hatchling must be installed or carried in .whl/), installed with the carried ncu_report wheel (.whl/) into
# a fresh venv that sees this Python's packages, then floor / report pairs alternating in one run.
# Writes to $OUT: report_speed_60.txt (the table and the medians), gpt2_full60.ncu-rep.xz (the capture), ncu.log,
# env.txt, steps.log.
# Expected (H100, measured 2026-12-06: ~1.83 s per launch for the full set, ~13 s for the program): the capture
# ~13 + 60 x 1.83 = ~125 s; the wheel and the venv ~30 s; 5 pairs of (floor ~1.5 s + report ~1 s, each with ~1 s of
# interpreter start) ~20 s; xz of the ~120 MB report ~60 s (-6, two threads): ~4 min of the 8.
#     OUT=/tmp/out BUDGET=470 bash benchmarks/device/report_speed_60.sh     (the device call's carry: .whl)
BUDGET=${BUDGET:-470}
PROGRAM=${PROGRAM:-workloads/torch/library_step.py --model gpt2 --layers 1 --steps 3}
COUNT=${COUNT:-60}
PAIRS=${PAIRS:-5}
source benchmarks/device/env.sh
part_start
python3 -c "import transformers; print('transformers', transformers.__version__)" >> "$OUT/env.txt" 2>&1
nproc >> "$OUT/env.txt"; uptime >> "$OUT/env.txt"
# the build backend: installed, else from wheels carried in .whl/ (hatchling and its dependencies); else the
# ncuadvisor wheel carried in .whl/, built elsewhere from this tree (`pip wheel . --no-deps -w .whl`)
BUILT=()
if ! python3 -c "import hatchling" 2>/dev/null \
  && ! python3 -m pip install -q --no-index --find-links .whl hatchling >> "$OUT/steps.log" 2>&1; then
  if ls .whl/ncuadvisor-*.whl > /dev/null 2>&1; then
    BUILT=(--built "$(ls .whl/ncuadvisor-*.whl | head -1)")
    say "no hatchling here: the carried ${BUILT[1]} is installed (built elsewhere: it must be this tree's)"
  else
    say "no hatchling here and no ncuadvisor wheel in .whl/: pip download -d .whl hatchling, or pip wheel . -w .whl"
  fi
fi
REPORT=/tmp/gpt2_full60
say "capture: ncu --set full -c $COUNT on $PROGRAM"
timeout $(( $(left) - 150 )) ncu --clock-control none --set full --import-source yes -c "$COUNT" \
  --nvtx --nvtx-include step_all_threads -o "$REPORT" -f python3 $PROGRAM > "$OUT/ncu.log" 2>&1
say "capture rc=$? ($(grep -c '==PROF== Profiling' "$OUT/ncu.log") launches profiled), $(du -m "$REPORT.ncu-rep" 2>/dev/null | cut -f1) MB"
[ -f "$REPORT.ncu-rep" ] || { say "no report: see ncu.log"; tail -20 "$OUT/ncu.log"; exit 1; }
# the measurement, PYTHONPATH cleared by report_speed.py itself (the installed wheel runs, not this checkout)
timeout $(( $(left) - 70 )) python3 benchmarks/report_speed.py "$REPORT.ncu-rep" --pairs "$PAIRS" \
  --venv /tmp/ncuadvisor-wheel --no-build-isolation "${BUILT[@]}" $(ls .whl/ncu_report-*.whl 2>/dev/null | sed 's/^/--wheel /') \
  > "$OUT/report_speed_60.txt" 2>&1
say "report_speed rc=$?"
cat "$OUT/report_speed_60.txt"
# the capture itself, for the fixtures (xz at a level that fits the time left)
if (( $(left) > 40 )); then
  timeout $(( $(left) - 10 )) xz -6 -T2 -c "$REPORT.ncu-rep" > "$OUT/gpt2_full60.ncu-rep.xz" \
    && say "xz: $(du -k "$OUT/gpt2_full60.ncu-rep.xz" | cut -f1) kB" || { rm -f "$OUT/gpt2_full60.ncu-rep.xz"; say "xz: no time"; }
fi
say "done"
