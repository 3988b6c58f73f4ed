# Sourced by the GPU-machine scripts of benchmarks/device/ (from the repository root): finds ncu_report (the installed
# package, else the copy inside the Nsight Compute install, extras/python), puts the repository first on PYTHONPATH,
# sets the NCCL switches the machine needs and writes what the machine is to $OUT/env.txt.
#     OUT=/tmp/x BUDGET=120 bash benchmarks/device/PURPOSE.sh     (each script keeps to $BUDGET seconds)
OUT=${OUT:-/tmp/device-out}
BUDGET=${BUDGET:-120}
mkdir -p "$OUT" /tmp/bin
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
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
