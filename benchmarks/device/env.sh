# Sourced by the GPU-machine scripts of benchmarks/device/ (from the repository root): finds ncu_report (the installed
# package, else the copy inside the Nsight Compute install, extras/python), puts the repository first on PYTHONPATH,
# sets the NCCL switches the machine needs and writes what the machine is to $OUT/env.txt.
#     OUT=/tmp/x BUDGET=120 bash benchmarks/device/PURPOSE.sh     (each script keeps to $BUDGET seconds)
OUT=${OUT:-/tmp/device-out}
BUDGET=${BUDGET:-120}
mkdir -p "$OUT" /tmp/bin
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# a carried wheel first (`pip download --no-deps -d .whl ncu-report`, `.whl` in the call's carry): the copy inside
# Nsight Compute 2025.3.1 (extras/python) segfaults on import in the GPU machine's Python 3.12 beside torch
if ls .whl/ncu_report-*.whl > /dev/null 2>&1 && [ -z "${NCU_REPORT_SITE:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export NCU_REPORT_SITE=/tmp/site PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
if ! python3 -c "import ncu_report" 2>/dev/null; then
  FOUND=$(find /opt/nvidia /usr/local/cuda* "$(dirname "$(readlink -f "$(which ncu)")")/.." -name ncu_report.py \
    -path '*extras/python*' 2>/dev/null | head -1)
  [ -z "$FOUND" ] && FOUND=$(find / -xdev -name ncu_report.py -path '*extras/python*' 2>/dev/null | head -1)
  export PYTHONPATH=$(dirname "$FOUND")
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
[ -f "$OUT/env.txt" ] || { date -u; nvidia-smi -L; ncu --version; echo "PYTHONPATH=$PYTHONPATH"
  python3 -c "import ncu_report, torch, triton; print(ncu_report.__file__, torch.__version__, triton.__version__)"; } \
  > "$OUT/env.txt" 2>&1
# The part's clock, the seconds left of its $BUDGET, a step log ($OUT/steps.log), and its first lines (part_start).
T0=${T0:-$(date +%s)}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
say() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/steps.log"; }
part_start() {
  say "start; budget $BUDGET s; $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1)"
  git log -1 --format='%H %s' >> "$OUT/steps.log" 2>&1
}
# llmc_build W ROOT NAME...: the exam corpus's llm.c programs (workloads/exam/llm.c/NAME.cu), built in parallel as
# upstream's dev/cuda/Makefile builds them plus -lineinfo and sm_90, into W/bin (logs in W/logs/build_NAME.log); the
# absolute path goes into -lineinfo's line table, so that --import-source finds the file from any folder
llmc_build() {
  local w=$1 root=$2 n; shift 2
  for n in "$@"; do
    ( timeout 240 nvcc -arch=sm_90 -lineinfo -O3 --use_fast_math -std=c++17 -Xcompiler -fopenmp \
        ${EXAM_NVCC_FLAGS:-} "$root/workloads/exam/llm.c/$n.cu" -lcublas -lcublasLt -o "$w/bin/$n" > "$w/logs/build_$n.log" 2>&1
      echo "build $n rc=$?" >> "$w/logs/build_$n.log" ) &
  done
  wait
}
