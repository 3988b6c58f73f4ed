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
$NCUADVISOR_KERNEL_LINES (`read_kernel_lines`): a generated kernel whose launch carries no range of its own (one
replayed from a CUDA graph) takes its line from there by name, when every kernel of that name came from one line.

A CUDA graph replays its kernels without Python: the runner wraps each replay in a range
`pygraph:<line>:<function>:<file>` (in backward `pygraphbwd:<node>:...`) naming the user's line that led to it (the
call of a function compiled with mode="reduce-overhead", a `g.replay()`), and ncu gives every kernel of the graph the
NVTX stack of its launch. A kernel of a graph takes the replay's line (cuBLAS's), or its own by name (a generated
kernel), and keeps the replay's line as its `graph_replay`.
"""

from __future__ import annotations

import json
import linecache
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ncuadvisor.result.types import GraphReplay, KernelEntry, PythonLine

# an autograd node's name may hold colons (torch::autograd::AccumulateGrad): the node ends at the first ":<digits>:";
# "pygraph" is a CUDA graph's replay (every kernel of the graph launched under it)
_RANGE = re.compile(r"^py(?P<graph>graph)?(?:bwd:(?P<node>.*?))?:(?P<line>\d+):(?P<function>[^:]*):(?P<file>.+)$")
SEPARATOR = " > "  # how load.native joins a launch's NVTX ranges
# with --torch-ops, PyTorch's NVTX emission names the runner's dispatch mode as a range of its own
_OWN_MODE = "PythonDispatchMode"


def parse_range(text: str) -> dict[str, Any] | None:
    """One NVTX range of the runner -> {file, line, function, backward_of}, with "graph_replay": True for the range
    of a CUDA graph's replay (the line that led to the replay); None for any other range."""
    m = _RANGE.match(text.strip())
    if not m:
        return None
    out = {
        "file": m["file"],
        "line": int(m["line"]),
        "function": m["function"],
        "backward_of": m["node"] if m["node"] is not None else None,
    }
    if m["graph"]:
        out["graph_replay"] = {"file": out["file"], "line": out["line"], "function": out["function"]}
    return out


def _runner_ranges(nvtx: str) -> tuple[list[dict[str, Any]], str]:
    """A launch's NVTX text -> (the runner's ranges in it, outermost first; the text without them)."""
    if not nvtx or "py" not in nvtx:
        return [], nvtx or ""
    found, kept = [], []
    for part in nvtx.split(SEPARATOR):
        parsed = parse_range(part)
        if parsed is not None:
            found.append(parsed)
        elif not part.startswith(_OWN_MODE):
            kept.append(part)
    return (found, SEPARATOR.join(kept)) if found else ([], nvtx)


def split_nvtx(nvtx: str) -> tuple[dict[str, Any] | None, str]:
    """A launch's NVTX text -> (its innermost Python line, the NVTX text without the runner's ranges). Inside a CUDA
    graph's replay the line carries "graph_replay": the innermost replay's line."""
    found, rest = _runner_ranges(nvtx)
    if not found:
        return None, rest
    where = found[-1]  # the innermost one wins
    replays = [r["graph_replay"] for r in found if "graph_replay" in r]
    if replays and "graph_replay" not in where:
        where = {**where, "graph_replay": replays[-1]}
    return where, rest


def source_text(file: str, line: int, limit: int = 120) -> str | None:
    """The stripped text of `file`:`line`, when the file is readable here (it is: profile runs the script here)."""
    if not os.path.isfile(file):
        return None
    text = linecache.getline(file, line).strip()
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def python_line_entry(where: dict[str, Any]) -> PythonLine:
    """The result's `python_line` of a kernel: file, line, function, the line's code, the autograd node when the
    kernel ran in backward, and the line that replayed the CUDA graph it ran in."""
    replay = where.get("graph_replay")
    return PythonLine(
        file=where["file"],
        line=where["line"],
        function=where["function"],
        code=source_text(where["file"], where["line"]),
        backward_of=where.get("backward_of"),
        graph_replay=GraphReplay(file=replay["file"], line=replay["line"], function=replay["function"])
        if replay
        else None,
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


def place(nvtx: str, name: str, by_name: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The Python line of a kernel from its launch's NVTX text and its name: the innermost range of the runner; but a
    kernel whose innermost range is a CUDA graph's replay (a kernel of the graph with no range of its own) takes its
    own line from `by_name` (`read_kernel_lines`: a generated kernel) when there is one, the replay kept as
    "graph_replay"; a launch with no range of the runner, its line by name alone. None when neither places it."""
    found, _ = _runner_ranges(nvtx)
    own = (by_name or {}).get(name)
    if not found:
        return own
    if own is not None and "graph_replay" in found[-1]:
        return {**own, "graph_replay": found[-1]["graph_replay"]}
    return split_nvtx(nvtx)[0]


def attach_python_lines(kernels: Iterable[KernelEntry], by_name: Mapping[str, dict[str, Any]] | None = None) -> int:
    """Give each kernel entry (and nothing else) its `python_line` (`place`) from its NVTX text and name, and take the
    runner's ranges out of that text. Returns how many kernels got one."""
    found = 0
    for k in kernels:
        nvtx = str(k.nvtx or "")
        where = place(nvtx, k.name, by_name)
        if where is None:
            continue
        k.nvtx = split_nvtx(nvtx)[1]
        k.python_line = python_line_entry(where)
        found += 1
    return found
