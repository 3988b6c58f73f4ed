"""One run of a Python script under the torch runner's "hosttime" feature, as `ncuadvisor profile --host-time` runs
it (torch.profiler, CUDA activities; then the profiler's own cost per call measured and put into the trace), without
ncu: the trace only, gzip-compressed. For the device scripts that record several host timelines of one program.

    python3 benchmarks/device/traced_run.py OUT.json.gz SCRIPT.py [ARGS...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ncuadvisor.profile.hosttime import HOST_TRACE_ENV, host_argv, keep_trace, measured_cost
from ncuadvisor.profile.target import resolve_target


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    dest, words = Path(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "host_trace.json"
        argv = host_argv(resolve_target(words))
        proc = subprocess.run(argv, env={**os.environ, HOST_TRACE_ENV: str(raw)}, check=False)
        if not raw.is_file():
            print(f"no trace (exit code {proc.returncode})", file=sys.stderr)
            return 1
        keep_trace(raw, dest, True, measured_cost(raw))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
