#!/bin/bash
# On the GPU machine, from the repository root: `ncuadvisor profile --python-lines` on code under torch.compile
# (workloads/torch/compiled_lines.py: a compiled LayerNorm+GELU+Linear block, eager code around it, forward and
# backward).
# 1. the GPU test tests/test_compiled_lines.py: the block compiles (Triton kernels) and each generated kernel carries
#    the user's line (in backward the forward line); the runner writes what Inductor's provenance tracking gave for
#    each generated kernel ($NCUADVISOR_KERNEL_LINES), printed here;
# 2. with time left: `profile --python-lines --torch-ops` on the same script; the runner alone, without ncu (does
#    Dynamo compile under it, how often; the compile's cost); the block compiled without the runner (Inductor's
#    kernel names and generated code); under CUDA graphs (mode="reduce-overhead"), where kernels replay without
#    Python and take the line of their graph's replay (or their own by name, from the runner's file).
# Logs, the result JSON and the provenance file go to $OUT; keeps to $BUDGET seconds (default 150).
#     OUT=/tmp/cl BUDGET=150 bash benchmarks/device/compiled_lines.sh
#     PARTS="compiled_lines:150" OUT=/tmp/all bash benchmarks/device/all.sh
source benchmarks/device/env.sh
lim() { local t=$(( $(left) - $1 )); [ "$t" -lt 15 ] && t=15; echo "$t"; }   # what a step may take, keeping $1 s
part_start
SCRIPT=workloads/torch/compiled_lines.py
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)
import torch._inductor.debug as d, torch._inductor.config as c
print('provenance hook', hasattr(d, 'set_kernel_post_grad_provenance_tracing'), 'level', c.trace.provenance_tracking_level)
from torch.utils._python_dispatch import TorchDispatchMode
print('ignore_compile_internals', hasattr(TorchDispatchMode, 'ignore_compile_internals'))" 2>&1 | tee "$OUT/torch.txt"
python3 -c "import ncu_report; print('ncu_report', ncu_report.__file__)" 2>&1 | tee "$OUT/ncu_report.txt"

# 1. the GPU test; its tmp files (result JSON, provenance file, reports) kept under $OUT/pytest
say "gpu test"
timeout $(lim 25) python3 -m pytest -q -n 0 -s -rA -p no:cacheprovider -m gpu --basetemp="$OUT/pytest" \
  tests/test_compiled_lines.py > "$OUT/gpu_test.log" 2>&1
say "gpu test rc=$?"
grep -v "==PROF== Profiling" "$OUT/gpu_test.log" | tail -80
find "$OUT/pytest" -name compiled.json -exec cp {} "$OUT/compiled_result.json" \;
find "$OUT/pytest" -name kernel_lines.json -exec cp {} "$OUT/kernel_lines.json" \;
python3 - "$OUT/kernel_lines.json" <<'PY' 2>&1 | tee "$OUT/provenance.txt"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:
    sys.exit(f"no provenance file: {exc}")
print("torch", d.get("torch"), len(d["kernels"]), "generated kernels")
for k in d["kernels"]:
    print(f"{k.get('kernel')}:{k.get('handle')} -> {k.get('where')} {k.get('error') or ''}")
    for t in (k.get("stack_traces") or [])[:3]:
        print("    | " + " / ".join(ln.strip() for ln in t.strip().splitlines()[-2:]))
PY

# profile_lines NAME KEEP_S TAIL [profile options] -- [script arguments]: `ncuadvisor profile --python-lines --top 1` of
# the script inside step_all_threads, the runner's kernel-lines file beside its result, both and its table to $OUT
profile_lines() {
  local name=$1 keep=$2 tail_n=$3 opts=() rc; shift 3
  while [ "$1" != "--" ]; do opts+=("$1"); shift; done; shift
  mkdir -p /tmp/cl && cd /tmp/cl || exit 1
  NCUADVISOR_KERNEL_LINES="/tmp/cl/${name}_kernel_lines.json" timeout "$(lim "$keep")" python3 -m ncuadvisor profile \
    --python-lines "${opts[@]}" --top 1 --nvtx-include step_all_threads -o "/tmp/cl/$name.json" --force \
    "$OLDPWD/$SCRIPT" "$@" > "$OUT/profile_$name.log" 2>&1
  rc=$?
  cd "$OLDPWD" || exit 1
  say "profile $name rc=$rc"
  grep -v "==PROF== Profiling" "$OUT/profile_$name.log" | tail -"$tail_n"
  cp "/tmp/cl/$name.json" "/tmp/cl/${name}_kernel_lines.json" "$OUT/" 2>/dev/null
  python3 benchmarks/device/lines_table.py "$OUT/$name.json" 2>&1 | tee "$OUT/${name}_lines.txt"
}

# 2. both runner features at once (--torch-ops too: module hooks and PyTorch's NVTX emission around compiled code)
if [ "$(left)" -ge 50 ]; then
  say "profile --python-lines --torch-ops"
  profile_lines both 25 15 --torch-ops -- --steps 1 --size 1024
else
  say "profile both skipped: $(left) s left"
fi

# 3. CUDA graphs (mode="reduce-overhead"): replayed kernels run without Python; each replay runs inside the runner's
#    range naming the line that called the compiled block (in backward the .backward() call), which every kernel of
#    the graph carries: a generated kernel takes its own line by name from the runner's file, the others (cuBLAS) the
#    replay's. The table ends with the share of the GPU time placed. Three steps: cudagraph trees warm up, record,
#    then replay.
if [ "$(left)" -ge 45 ]; then
  say "profile reduce-overhead"
  profile_lines graphs 5 8 -- --steps 3 --size 1024 --mode reduce-overhead
else
  say "profile reduce-overhead skipped: $(left) s left"
fi

# 4. the runner without ncu: does Dynamo compile under it (graphs, recompiles, graph breaks), and how long it takes
if [ "$(left)" -ge 40 ]; then
  say "runner alone"
  S=$(date +%s)
  RUNNER=$(python3 -c "from ncuadvisor.profile.target import TORCH_RUNNER; print(TORCH_RUNNER)")
  NCUADVISOR_KERNEL_LINES="$OUT/kernel_lines_alone.json" TORCH_LOGS=graph_breaks,recompiles timeout $(lim 20) \
    python3 -c "$RUNNER" lines "$SCRIPT" --steps 1 --size 1024 > "$OUT/runner_alone.log" 2>&1
  say "runner alone rc=$? in $(( $(date +%s) - S )) s"; tail -15 "$OUT/runner_alone.log"
else
  say "runner alone skipped: $(left) s left"
fi
if [ "$(left)" -ge 30 ]; then
  S=$(date +%s)
  TORCH_LOGS=output_code timeout $(lim 5) python3 "$SCRIPT" --steps 1 --size 1024 > "$OUT/plain_compile.log" 2>&1
  say "plain compile rc=$? in $(( $(date +%s) - S )) s"
  grep -o "def triton_[a-z_0-9]*\|Provenance debug handles.*\|extern_kernels\.[a-z_]*" "$OUT/plain_compile.log" | sort | uniq -c | head -30
  xz -6 -T0 "$OUT/plain_compile.log" 2>/dev/null
fi

# the phase-1 reports compressed, the others gone
for f in $(find "$OUT/pytest" -name '*.phase1.ncu-rep' -size -200M 2>/dev/null); do
  xz -6 -T0 -c "$f" > "$OUT/$(basename "$f").xz"
done
find "$OUT" -type l -delete 2>/dev/null
find "$OUT/pytest" \( -name '*.ncu-rep' -o -name '*.ncu-repz' \) -delete 2>/dev/null
ls -la "$OUT" | head -30
say "done"
