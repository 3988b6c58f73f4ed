"""The Python line that launched a kernel (`ncuadvisor profile --python-lines`).

Under `--python-lines` the script runs in the torch runner (`profile.target.TORCH_RUNNER`), which wraps every ATen
op in an NVTX range naming the Python line that called it: `py:<line>:<function>:<file>`, or, for an op autograd runs
in backward, `pybwd:<node>:<line>:<function>:<file>` (the forward line that made the node, else the `.backward()`
call). ncu records the NVTX stack of each launch, so the innermost such range of a kernel's launch is where it came
from; no matching by launch order is needed. This module reads those ranges back out of a kernel's `nvtx` text,
into the kernel's `python_line`, and leaves the other ranges as its NVTX.

A kernel group (one kernel and launch shape) takes the line of its first launch.

Code under torch.compile compiles as it would without the runner; each kernel Inductor generates is launched inside
a range of the same form, naming the line its FX nodes came from (Inductor's provenance tracking), with the node
`CompiledFunctionBackward` in backward. The runner also writes what it learnt of each generated kernel to the file
$NCUADVISOR_KERNEL_LINES (`read_kernel_lines`): a generated kernel whose launch carries no range (one replayed from a
CUDA graph) takes its line from there by name, when every kernel of that name came from one line.
"""

from __future__ import annotations

import json
import linecache
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ncuadvisor.result.types import KernelEntry, PythonLine

# an autograd node's name may hold colons (torch::autograd::AccumulateGrad): the node ends at the first ":<digits>:"
_RANGE = re.compile(r"^(?:py|pybwd:(?P<node>.*?)):(?P<line>\d+):(?P<function>[^:]*):(?P<file>.+)$")
SEPARATOR = " > "  # how load.native joins a launch's NVTX ranges
# with --torch-ops, PyTorch's NVTX emission names the runner's dispatch mode as a range of its own
_OWN_MODE = "PythonDispatchMode"


def parse_range(text: str) -> dict[str, Any] | None:
    """One NVTX range of the runner -> {file, line, function, backward_of}; None for any other range."""
    m = _RANGE.match(text.strip())
    if not m:
        return None
    return {
        "file": m["file"],
        "line": int(m["line"]),
        "function": m["function"],
        "backward_of": m["node"] if m["node"] is not None else None,
    }


def split_nvtx(nvtx: str) -> tuple[dict[str, Any] | None, str]:
    """A launch's NVTX text -> (its innermost Python line, the NVTX text without the runner's ranges)."""
    if not nvtx or "py" not in nvtx:
        return None, nvtx or ""
    where = None
    kept = []
    for part in nvtx.split(SEPARATOR):
        parsed = parse_range(part)
        if parsed is not None:
            where = parsed  # the innermost one wins
        elif not part.startswith(_OWN_MODE):
            kept.append(part)
    if where is None:
        return None, nvtx
    return where, SEPARATOR.join(kept)


def source_text(file: str, line: int, limit: int = 120) -> str | None:
    """The stripped text of `file`:`line`, when the file is readable here (it is: profile runs the script here)."""
    if not os.path.isfile(file):
        return None
    text = linecache.getline(file, line).strip()
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def python_line_entry(where: dict[str, Any]) -> PythonLine:
    """The result's `python_line` of a kernel: file, line, function, the line's code, and the autograd node when
    the kernel ran in backward."""
    return PythonLine(
        file=where["file"],
        line=where["line"],
        function=where["function"],
        code=source_text(where["file"], where["line"]),
        backward_of=where.get("backward_of"),
    )


# where the runner writes what it learnt of each kernel torch.compile generated (profile sets it)
KERNEL_LINES_ENV = "NCUADVISOR_KERNEL_LINES"
# the node autograd runs a compiled region's backward as (AOTAutograd's autograd.Function)
COMPILED_BACKWARD = "CompiledFunctionBackward"


def read_kernel_lines(path: str | Path | None) -> dict[str, dict[str, Any]]:
    """The runner's file of generated kernels ({"torch", "kernels": [{kernel, handle, where, backward,
    stack_traces}]}) -> kernel name -> {file, line, function, backward_of}, for the names whose every record names
    one and the same line (a name two compiles gave different lines is left out); {} when there is no such file."""
    if not path:
        return {}
    try:
        records = json.loads(Path(path).read_text()).get("kernels") or []
    except (OSError, ValueError, AttributeError):
        return {}
    seen: dict[str, set[tuple[str, bool]]] = {}
    for r in records:
        if isinstance(r, dict) and isinstance(r.get("kernel"), str) and isinstance(r.get("where"), str):
            seen.setdefault(r["kernel"], set()).add((r["where"], bool(r.get("backward"))))
    out = {}
    for name, wheres in seen.items():
        if len(wheres) != 1:
            continue
        ((where, backward),) = wheres
        parsed = parse_range("py:" + where)
        if parsed is not None:
            parsed["backward_of"] = COMPILED_BACKWARD if backward else None
            out[name] = parsed
    return out


def attach_python_lines(kernels: Iterable[KernelEntry], by_name: Mapping[str, dict[str, Any]] | None = None) -> int:
    """Give each kernel entry (and nothing else) its `python_line` from its NVTX text, and take the runner's ranges
    out of that text; a kernel with no such range takes its line from `by_name` (`read_kernel_lines`) by its name.
    Returns how many kernels got one."""
    found = 0
    for k in kernels:
        where, rest = split_nvtx(str(k.nvtx or ""))
        if where is None:
            where = (by_name or {}).get(k.name)
            if where is None:
                continue
        else:
            k.nvtx = rest
        k.python_line = python_line_entry(where)
        found += 1
    return found
