#!/bin/bash
# On the GPU machine, from the repository root: every GPU-machine script of benchmarks/device/ in one call, each kept
# to its share of the time, then the GPU tests with what is left. Each part writes into $OUT/PART/, packed at the end
# into $OUT/PART.tar.xz (the device tool brings back at most 8 files).
#     OUT=/tmp/all TOTAL=520 bash benchmarks/device/all.sh
# PARTS: "NAME:SECONDS ..." (default profile_cost:280); GPU_TESTS: the pytest paths of the GPU tests, or none.
OUT=${OUT:-/tmp/device-out}
TOTAL=${TOTAL:-520}
T0=$(date +%s)
source benchmarks/device/env.sh
left() { echo $(( TOTAL - ($(date +%s) - T0) )); }
part() {  # part NAME SECONDS: run benchmarks/device/NAME.sh with BUDGET=SECONDS (less when less is left)
  local name=$1 want=$2 have; have=$(left)
  [ -f "benchmarks/device/$name.sh" ] || { echo "$name: no script"; return; }
  (( have < 20 )) && { echo "$name: no time left"; return; }
  (( want > have )) && want=$have
  mkdir -p "$OUT/$name"
  OUT="$OUT/$name" BUDGET=$want timeout $(( want + 10 )) bash "benchmarks/device/$name.sh" > "$OUT/$name/run.log" 2>&1
  echo "$name rc=$? at $(( $(date +%s) - T0 )) s"; tail -5 "$OUT/$name/run.log"
}
for spec in ${PARTS:-profile_cost:280}; do part "${spec%%:*}" "${spec##*:}"; done
have=$(left)
if [ "${GPU_TESTS:-}" = none ]; then
  echo "gpu tests: none asked for"
elif (( have > 30 )); then
  timeout "$have" python3 -m pytest -q -n 0 -p no:cacheprovider -m gpu ${GPU_TESTS:-tests/test_profile.py tests/test_python_lines.py} > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests rc=$? at $(( $(date +%s) - T0 )) s"; tail -8 "$OUT/gpu_tests.log"
fi
# at most 8 files come back: one archive per part, the machine and the GPU tests in a last one
shopt -s nullglob  # no part folders (PARTS of no script): nothing to pack
cd "$OUT" && for d in */; do tar -cJf "${d%/}.tar.xz" "${d%/}" && rm -rf "$d"; done
tar -cJf misc.tar.xz --remove-files env.txt gpu_tests.log 2>/dev/null
ls -la "$OUT"
