"""A training step timed as a loop: the wall time per step between two CUDA events, and the GPU's kernel time per step
as torch.profiler records it (CUDA activities only), for the `--time N` option of gpt_step.py and cnn_step.py.

    from step_timing import time_steps
    row = time_steps(step, 20)   # after the warm-up: {"steps", "wall_us", "kernel_us", "kernels", "memory_us", "top"}

First `n` steps back to back between two CUDA events, without the profiler (its own host cost would count); then `n`
more under torch.profiler, whose Chrome trace gives every kernel's duration on the GPU: their sum per step
(`kernel_us`), their count per step (`kernels`), the copies' and fills' time per step (`memory_us`), and the
kernel functions that took the most time (`top`: function name -> [µs per step, launches per step], the 15 largest).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def function_name(kernel: str) -> str:
    """`void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, ...>(...)` -> `bn_fw_tr_1C11_kernel_NCHW`."""
    text = re.sub(r"^void ", "", kernel)
    cut = min((i for i in (text.find("<"), text.find("(")) if i >= 0), default=len(text))
    return text[:cut].split("::")[-1].strip() or kernel[:60]


def time_steps(step: Callable[[], Any], n: int) -> dict[str, Any]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        step()
    end.record()
    end.synchronize()
    wall_us = start.elapsed_time(end) * 1e3 / n
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
