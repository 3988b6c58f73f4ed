"""The program to profile: a Python script (run with this Python, optionally under PyTorch's NVTX emission) or an
executable, resolved and checked before ncu runs."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ncuadvisor.errors import InputError

# What `--torch-ops` and `--python-lines` run instead of the script, with `python -c` (so the target's Python needs
# only torch), as `python -c RUNNER FEATURES script args...`; FEATURES is a comma list:
#   ops    PyTorch's NVTX emission (every ATen op becomes an NVTX range), the calling nn.Module as an outer range
#          "module:<Type>";
#   lines  an NVTX range per ATen op naming the Python line that called it (a TorchDispatchMode): the first frame
#          outside torch and the standard library, as "py:<line>:<function>:<file>" (the function's qualified name,
#          Block.forward: the module class); an op that autograd runs in
#          backward gets "pybwd:<node>:<line>:<function>:<file>", the line of the forward op that made its node (the
#          line is recorded on the node's metadata by a TorchFunctionMode in forward), else the `.backward()` call.
# The frame walk and the range text come first and need no torch (tests run them without it).
TORCH_RUNNER_FRAMES = r"""
import os, sys
_SKIP_DIRS = []
_BACKWARD_CALL = [None]


def _skipped(filename):
    return filename.startswith("<") or any(filename.startswith(d) for d in _SKIP_DIRS)


def _where(frame):
    while frame is not None:
        code = frame.f_code
        if not _skipped(code.co_filename):
            # the qualified name (Python 3.11+) names the class too: Block.forward
            return "%d:%s:%s" % (frame.f_lineno, getattr(code, "co_qualname", code.co_name), code.co_filename)
        frame = frame.f_back
    return None


def _range_text(where, node=None):
    return ("pybwd:%s:%s" % (node, where)) if node else ("py:" + where)
"""

TORCH_RUNNER_MAIN = r"""
features = sys.argv[1].split(",")
script = sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
import contextlib, runpy
import torch
from torch.cuda import nvtx as _nvtx

if "ops" in features:
    def _pre(module, args):
        _nvtx.range_push("module:" + type(module).__name__)

    def _post(module, args, out):
        _nvtx.range_pop()

    torch.nn.modules.module.register_module_forward_pre_hook(_pre)
    torch.nn.modules.module.register_module_forward_hook(_post)

_modes = contextlib.ExitStack()
if "lines" in features:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    _SKIP_DIRS[:] = [os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.__file__) + os.sep]
    _current_node = getattr(torch._C, "_current_autograd_node", None)

    def _op_range():
        # in backward (autograd's current node, on autograd's own thread for CUDA): the forward line that made the
        # node, else the .backward() call; in forward: the first frame of user code
        node = _current_node() if _current_node is not None else None
        if node is not None:
            try:
                where = node.metadata.get("ncuadvisor_line")
            except Exception:
                where = None
            try:
                name = node.name()
            except Exception:
                name = type(node).__name__
            where = where or _BACKWARD_CALL[0]
            return _range_text(where, name) if where else None
        where = _where(sys._getframe())
        if where:
            return _range_text(where)
        if _current_node is None and _BACKWARD_CALL[0]:  # a torch without _current_autograd_node
            return _range_text(_BACKWARD_CALL[0], "backward")
        return None

    class _ForwardLines(TorchFunctionMode):
        # above autograd: after the op, its outputs carry the node backward will run; the node keeps the line
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            try:
                outs = out if isinstance(out, (tuple, list)) else (out,)
                for t in outs:
                    fn = getattr(t, "grad_fn", None) if isinstance(t, torch.Tensor) else None
                    if fn is not None and "ncuadvisor_line" not in fn.metadata:
                        where = _where(sys._getframe())
                        if where:
                            fn.metadata["ncuadvisor_line"] = where
            except Exception:
                pass
            return out

    class _OpLines(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            try:
                text = _op_range()
            except Exception:
                text = None
            if text is None:
                return func(*args, **(kwargs or {}))
            _nvtx.range_push(text)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                _nvtx.range_pop()

    _backward = torch.Tensor.backward

    def _tensor_backward(self, *args, **kwargs):
        _BACKWARD_CALL[0] = _where(sys._getframe())
        return _backward(self, *args, **kwargs)

    torch.Tensor.backward = _tensor_backward
    _compile = getattr(torch, "compile", None)

    def _compile_eagerly(*args, **kwargs):
        # Dynamo does not compile while a dispatch mode is active: the compiled region runs as eager ATen kernels
        if not _COMPILE_SAID:
            _COMPILE_SAID.append(1)
            print(
                "ncuadvisor: --python-lines records lines through a dispatch mode, under which torch.compile runs "
                "the region eagerly: these kernels are eager ATen ones; profile without --python-lines to see the "
                "compiled (Triton) kernels",
                file=sys.stderr,
            )
        return _compile(*args, **kwargs)

    _COMPILE_SAID = []
    if _compile is not None:
        torch.compile = _compile_eagerly
    _modes.enter_context(_ForwardLines())
    _modes.enter_context(_OpLines())
if "ops" in features:
    _modes.enter_context(torch.autograd.profiler.emit_nvtx(record_shapes=False))
with _modes:
    runpy.run_path(script, run_name="__main__")
"""
TORCH_RUNNER = TORCH_RUNNER_FRAMES + TORCH_RUNNER_MAIN


@dataclass
class Target:
    argv: list[str]  # what ncu launches
    display: str  # how we name it to the user
    stem: str  # default output name
    script: Path | None = None


def runner_features(torch_ops: bool, python_lines: bool) -> str:
    """The FEATURES word of the torch runner: "ops", "lines" or "ops,lines"."""
    return ",".join(f for f, on in (("ops", torch_ops), ("lines", python_lines)) if on)


def resolve_target(
    words: Sequence[str], torch_ops: bool = False, python: str | None = None, python_lines: bool = False
) -> Target:
    """`train.py args` -> [python, train.py, args]; `./bin args` -> as given, checked to exist and be executable.
    With `torch_ops` or `python_lines` a script runs under the torch runner (`TORCH_RUNNER`)."""
    if not words:
        raise InputError(
            "nothing to profile: give a Python script or an executable (e.g. `ncuadvisor profile train.py`)"
        )
    first, rest = words[0], list(words[1:])
    if first.startswith("-"):
        raise InputError(
            f"{first}: not an option of `ncuadvisor profile`; put the program first, or after `--` "
            "(e.g. `ncuadvisor profile -- ./my_binary --size 4096`)"
        )
    python = python or sys.executable
    if first.endswith(".py"):
        script = Path(first)
        if not script.is_file():
            raise InputError(f"{first}: script not found")
        if torch_ops or python_lines:
            if importlib.util.find_spec("torch") is None:
                flag = "--torch-ops" if torch_ops else "--python-lines"
                raise InputError(f"{flag} needs PyTorch in this Python (pip install 'ncuadvisor[torch]')")
            argv = [python, "-c", TORCH_RUNNER, runner_features(torch_ops, python_lines), str(script), *rest]
        else:
            argv = [python, str(script), *rest]
        return Target(argv=argv, display=" ".join([first, *rest]), stem=script.stem, script=script)
    if torch_ops or python_lines:
        flag = "--torch-ops" if torch_ops else "--python-lines"
        raise InputError(f"{flag} works on Python scripts only (ncuadvisor profile {flag} train.py)")
    if os.sep in first or (os.altsep and os.altsep in first):
        path = Path(first)
        if not path.exists():
            raise InputError(f"{first}: no such file")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise InputError(f"{first}: not an executable file")
        exe = str(path.resolve()) if not path.is_absolute() else str(path)
    else:
        found = shutil.which(first)
        if found is None:
            raise InputError(f"{first}: command not found (give its path, e.g. ./{first})")
        exe = found
    return Target(argv=[exe, *rest], display=" ".join([first, *rest]), stem=Path(first).name.split(".")[0] or "profile")
