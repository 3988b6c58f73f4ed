"""The Python line that launched a kernel (`ncuadvisor profile --python-lines`).

Under `--python-lines` the script runs in the torch runner (`profile.target.TORCH_RUNNER`), which wraps every ATen
op in an NVTX range naming the Python line that called it: `py:<line>:<function>:<file>`, or, for an op autograd runs
in backward, `pybwd:<node>:<line>:<function>:<file>` (the forward line that made the node, else the `.backward()`
call). ncu records the NVTX stack of each launch, so the innermost such range of a kernel's launch is where it came
from; no matching by launch order is needed. This module reads those ranges back out of a kernel's `nvtx` text,
into the kernel's `python_line`, and leaves the other ranges as its NVTX.

A kernel group (one kernel and launch shape) takes the line of its first launch. The runner's modes are for eager
code: while a TorchDispatchMode is active, torch.compile runs the functions it would compile without compiling them.
"""

from __future__ import annotations

import linecache
import os
import re
from collections.abc import Iterable
from typing import Any

from ncuadvisor.result.types import KernelEntry, PythonLine

_RANGE = re.compile(r"^(?:py|pybwd:(?P<node>[^:]*)):(?P<line>\d+):(?P<function>[^:]*):(?P<file>.+)$")
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


def attach_python_lines(kernels: Iterable[KernelEntry]) -> int:
    """Give each kernel entry (and nothing else) its `python_line` from its NVTX text, and take the runner's ranges
    out of that text; returns how many kernels got one."""
    found = 0
    for k in kernels:
        where, rest = split_nvtx(str(k.nvtx or ""))
        if where is None:
            continue
        k.nvtx = rest
        k.python_line = python_line_entry(where)
        found += 1
    return found
