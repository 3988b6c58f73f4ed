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

# Runs a script under PyTorch's NVTX emission (every ATen op becomes an NVTX range), with the module that called it
# as an outer range "module:<Type>". Passed with `python -c`, so the target's Python needs only torch.
TORCH_RUNNER = r"""
import os, runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
import torch
from torch.cuda import nvtx as _nvtx
def _pre(module, args):
    _nvtx.range_push("module:" + type(module).__name__)
def _post(module, args, out):
    _nvtx.range_pop()
torch.nn.modules.module.register_module_forward_pre_hook(_pre)
torch.nn.modules.module.register_module_forward_hook(_post)
with torch.autograd.profiler.emit_nvtx(record_shapes=False):
    runpy.run_path(script, run_name="__main__")
"""


@dataclass
class Target:
    argv: list[str]  # what ncu launches
    display: str  # how we name it to the user
    stem: str  # default output name
    script: Path | None = None


def resolve_target(words: Sequence[str], torch_ops: bool = False, python: str | None = None) -> Target:
    """`train.py args` -> [python, train.py, args]; `./bin args` -> as given, checked to exist and be executable."""
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
        if torch_ops:
            if importlib.util.find_spec("torch") is None:
                raise InputError("--torch-ops needs PyTorch in this Python (pip install 'ncuadvisor[torch]')")
            argv = [python, "-c", TORCH_RUNNER, str(script), *rest]
        else:
            argv = [python, str(script), *rest]
        return Target(argv=argv, display=" ".join([first, *rest]), stem=script.stem, script=script)
    if torch_ops:
        raise InputError("--torch-ops works on Python scripts only (ncuadvisor profile --torch-ops train.py)")
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
