#!/bin/bash
# On the GPU machine, from the repository root: `ncuadvisor profile --host-time` on the planted training step
# (workloads/torch/planted.py train_step, 12 calls, ncu on the last: --nvtx-include step_all_threads) with TF32 off
# and on, and the same step's loop timed without any profiler (planted.py --bench), so that the wall saving the
# host timeline predicts for TEN002 can be checked against the one measured on the same host. Keeps to $BUDGET
# seconds (default 330).
#     OUT=/tmp/hw BUDGET=330 bash benchmarks/device/host_time.sh
source benchmarks/device/env.sh
BUDGET=${BUDGET:-330}
part_start
STEPS=${STEPS:-12}
for variant in planted tf32; do
  (( $(left) < 60 )) && { say "no time left for $variant"; break; }
  timeout $(( $(left) - 40 )) python3 -m ncuadvisor profile --host-time --nvtx-include step_all_threads --force \
    -o "$OUT/train_$variant.json" workloads/torch/planted.py --case "train_step:$variant" --steps "$STEPS" \
    > "$OUT/profile_$variant.log" 2>&1
  say "profile $variant rc=$?"; tail -12 "$OUT/profile_$variant.log"
  # the same report and trace through `report --host-trace`: the estimates must be the ones of the profile
  rep=$(ls "$OUT"/train_$variant.ncu-rep* 2>/dev/null | head -1)
  [ -n "$rep" ] && python3 -m ncuadvisor report "$rep" --host-trace "$OUT/train_$variant.host-trace.json.gz" \
    -f json -o "$OUT/report_$variant.json" --force -q && say "report --host-trace $variant ok"
done
(( $(left) > 30 )) && timeout $(( $(left) - 5 )) python3 workloads/torch/planted.py --bench \
  --case train_step:planted+tf32 --iters 25 > "$OUT/bench_train.jsonl" 2> "$OUT/bench_train.log"
say "bench rc=$?"; cat "$OUT/bench_train.jsonl"
python3 - "$OUT" <<'PY' | tee -a "$OUT/steps.log"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for v in ("planted", "tf32"):
    p = out / f"train_{v}.json"
    if not p.exists():
        continue
    r = json.loads(p.read_text())
    print(v, json.dumps(r.get("host_timeline")))
    for a in r["top_actions"][:3]:
        print("  ", a["rule"], round(a["estimated_saving_ns"]), a.get("estimated_wall_saving_ns"))
PY
rm -f "$OUT"/*.ncu-rep "$OUT"/*.ncu-repz  # the reports are large; the JSON results and the traces come back
ls -la "$OUT"
