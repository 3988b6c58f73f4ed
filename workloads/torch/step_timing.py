"""A training step timed as a loop: the wall time per step between two CUDA events, and the GPU's kernel time per step
as torch.profiler records it (CUDA activities only), for the `--time N` option of gpt_step.py and cnn_step.py.

    from step_timing import measured_step, time_steps
    loss, step_ms, warmup_s = measured_step(step, 3)   # 2 warm-up calls, then one inside the NVTX ranges
    row = time_steps(step, 20)   # after the warm-up: {"steps", "wall_us", "kernel_us", "kernels", "memory_us", "top"}

`measured_step`: `steps - 1` warm-up calls outside any NVTX range, then one call inside the push/pop range "step" and
the process-wide start/end range "step_all_threads" (`ncu --nvtx-include step_all_threads` also takes the backward
kernels, which autograd launches from its own thread), timed between two CUDA events.

First `n` steps back to back between two CUDA events, without the profiler (its own host cost would count); then `n`
more under torch.profiler, whose Chrome trace gives every kernel's duration on the GPU: their sum per step
(`kernel_us`), their count per step (`kernels`), the copies' and fills' time per step (`memory_us`), and the
kernel functions that took the most time (`top`: function name -> [µs per step, launches per step], the 15 largest).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planted import time_loop  # this folder: the scripts that import this module put it on sys.path


def function_name(kernel: str) -> str:
    """`void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, ...>(...)` -> `bn_fw_tr_1C11_kernel_NCHW`."""
    text = re.sub(r"^void ", "", kernel)
    cut = min((i for i in (text.find("<"), text.find("(")) if i >= 0), default=len(text))
    return text[:cut].split("::")[-1].strip() or kernel[:60]


def measured_step(step: Callable[[], Any], steps: int) -> tuple[Any, float, float]:
    """`steps - 1` warm-up calls, then the measured one inside the NVTX ranges: (its output, its ms between two CUDA
    events, the warm-up's seconds)."""
    import torch

    t0 = time.perf_counter()
    for _ in range(max(1, steps) - 1):
        step()
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.nvtx.range("step"):
        rid = torch.cuda.nvtx.range_start("step_all_threads")
        start.record()
        out = step()
        end.record()
        torch.cuda.nvtx.range_end(rid)
    torch.cuda.synchronize()
    return out, start.elapsed_time(end), warmup_s


def time_steps(step: Callable[[], Any], n: int) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    wall_us = time_loop(step, n)  # planted.py's loop between two CUDA events
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        events = json.loads(path.read_text()).get("traceEvents", [])
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    memory = [e for e in events if e.get("cat") in ("gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
    top: dict[str, list[float]] = {}
    for e in kernels:
        t = top.setdefault(function_name(str(e.get("name", ""))), [0.0, 0.0])
        t[0] += float(e.get("dur", 0.0)) / n
        t[1] += 1 / n
    largest = sorted(top.items(), key=lambda kv: -kv[1][0])[:15]
    return {
        "steps": n,
        "wall_us": round(wall_us, 1),
        "kernel_us": round(sum(float(e.get("dur", 0.0)) for e in kernels) / n, 1),
        "kernels": round(len(kernels) / n, 1),
        "memory_us": round(sum(float(e.get("dur", 0.0)) for e in memory) / n, 1),
        "top": {name: [round(us, 1), round(count, 1)] for name, (us, count) in largest},
    }
