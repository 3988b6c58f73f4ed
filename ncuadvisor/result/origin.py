"""Where a kernel group came from: the process that ran it, the ATen op and module around it, the Python line that
launched it and the CUDA graph replay it ran in. Part of the result's types (`result.types` names them too)."""

from __future__ import annotations

from dataclasses import dataclass

from ncuadvisor.result.record import Record, optional

Ident = int | str  # a pid, or a rank as the launcher's environment wrote it


@dataclass(kw_only=True)
class ProcessRef(Record):
    """The process that ran a kernel group (multi-process reports)."""

    pid: Ident
    executable: str | None = optional()
    rank: Ident | None = optional()
    local_rank: Ident | None = optional()
    world_size: Ident | None = optional()


@dataclass(kw_only=True)
class TorchContext(Record):
    """The innermost ATen op and nn.Module of a kernel, from its NVTX ranges (null when none)."""

    torch_op: str | None = None
    torch_module: str | None = None


@dataclass(kw_only=True)
class GraphReplay(Record):
    """The Python line that replayed the CUDA graph a kernel ran in: the call of a function compiled with
    mode="reduce-overhead" (the first frame outside torch, the standard library and installed packages), or the
    user's own `g.replay()`; in backward, the forward line of the node, else the `.backward()` call."""

    file: str
    line: int
    function: str = ""


@dataclass(kw_only=True)
class PythonLine(Record):
    """The Python line that launched a kernel (`ncuadvisor profile --python-lines`): the first frame outside torch
    and the standard library when the ATen op ran; in backward, the forward line that made the autograd node
    (`backward_of` names the node; "backward" when only the `.backward()` call was known). A kernel replayed from a
    CUDA graph has `graph_replay`, the line that replayed it: its own line too when nothing more precise is known
    (a cuBLAS kernel of the graph), else its own (a generated kernel's, from Inductor's provenance)."""

    file: str
    line: int
    function: str = ""
    code: str | None = None
    backward_of: str | None = None
    graph_replay: GraphReplay | None = optional()
