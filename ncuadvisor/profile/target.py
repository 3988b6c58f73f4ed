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
from ncuadvisor.profile.graph_replays import TORCH_RUNNER_GRAPHS
from ncuadvisor.profile.host_runner import TORCH_RUNNER_HOSTTIME

# What `--torch-ops` and `--python-lines` run instead of the script, with `python -c` (so the target's Python needs
# only torch), as `python -c RUNNER FEATURES script args...`; FEATURES is a comma list:
#   ops    PyTorch's NVTX emission (every ATen op becomes an NVTX range), the calling nn.Module as an outer range
#          "module:<Type>";
#   lines  an NVTX range per ATen op naming the Python line that called it (a TorchDispatchMode): the first frame
#          outside torch and the standard library, as "py:<line>:<function>:<file>" (the function's qualified name,
#          Block.forward: the module class); an op that autograd runs in
#          backward gets "pybwd:<node>:<line>:<function>:<file>", the line of the forward op that made its node (the
#          line is recorded on the node's metadata by a TorchFunctionMode in forward), else the `.backward()` call.
#          Code under torch.compile compiles as it would without the runner (the dispatch mode says it ignores compile
#          internals, the function mode passes through while Dynamo traces), and each Triton kernel Inductor generates
#          is launched inside a range naming the user's line its nodes came from (Inductor's provenance tracking: the
#          stack traces of a kernel's FX nodes; in backward the forward line, the node CompiledFunctionBackward).
#          That line is also written as a mark, "# ncuadvisor-line <line>:<function>:<file>", above each kernel call
#          of the generated wrapper: the ATen ops compiled code calls (cuBLAS) take their line from it.
#          With $NCUADVISOR_KERNEL_LINES set, the runner writes there, as JSON, what it learnt of each generated
#          kernel (name, provenance stack traces, the line chosen, forward or backward graph), read back by
#          profile.pylines.
#          Each CUDA graph replay runs inside a range "pygraph:<line>:<function>:<file>" naming the line that led
#          to it, in backward "pygraphbwd:<node>:<line>:<function>:<file>" (profile.graph_replays).
# The frame walk, the range text, the reading of a stack trace and of the marks come first and need no torch (tests
# run them without it).
TORCH_RUNNER_FRAMES = r"""
import os, sys
_SKIP_DIRS = []
_GENERATED_DIRS = []  # Inductor's generated code: not the user's, but its marks name the user's lines
_BACKWARD_CALL = [None]
_MARK = "# ncuadvisor-line "
_MARKED = {}


def _generated(filename):
    return any(filename.startswith(d) for d in _GENERATED_DIRS)


def _skipped(filename):
    return filename.startswith("<") or _generated(filename) or any(filename.startswith(d) for d in _SKIP_DIRS)


def _node_of(node):
    # an autograd node's name and the forward line the runner stored on it ("" when none)
    try:
        where = node.metadata.get("ncuadvisor_line") or ""
    except Exception:
        where = ""
    try:
        return node.name(), where
    except Exception:
        return type(node).__name__, where


def _marked_where(filename, lineno):
    # the mark the runner has Inductor write just above each kernel call of its generated code, next to Inductor's
    # own provenance comment: "# ncuadvisor-line <line>:<function>:<file>" ("-" when none is known); "" when the
    # call has no mark (the scan stops at the call before)
    key = (filename, lineno)
    if key not in _MARKED:
        import linecache

        found = ""
        for n in range(lineno - 1, max(lineno - 12, 0), -1):
            text = linecache.getline(filename, n).strip()
            if text.startswith(_MARK):
                found = text[len(_MARK):].strip()
                found = "" if found == "-" else found
                break
            if not text.startswith("#") and any(c in text for c in (".run(", "extern_kernels.", "torch.ops.")):
                break
        _MARKED[key] = found
    return _MARKED[key]


def _generated_where(frame):
    # the user's line of the kernel called from the innermost frame of generated code, "" when not known
    while frame is not None:
        if _generated(frame.f_code.co_filename):
            return _marked_where(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return ""


def _where(frame):
    while frame is not None:
        code = frame.f_code
        if _generated(code.co_filename):
            marked = _marked_where(code.co_filename, frame.f_lineno)
            if marked:
                return marked
        elif not _skipped(code.co_filename):
            # the qualified name (Python 3.11+) names the class too: Block.forward
            return "%d:%s:%s" % (frame.f_lineno, getattr(code, "co_qualname", code.co_name), code.co_filename)
        frame = frame.f_back
    return None


def _range_text(where, node=None):
    return ("pybwd:%s:%s" % (node, where)) if node else ("py:" + where)


_QUALNAMES = {}


def _qualname(filename, lineno, name):
    # a traceback names a frame's function (forward); the frame walk of eager code its qualified name
    # (Block.forward): the definitions of the file that hold the line, outermost first, when the innermost is `name`
    key = (filename, lineno, name)
    if key not in _QUALNAMES:
        import ast

        def inner(node, prefix):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    if child.lineno <= lineno <= (getattr(child, "end_lineno", None) or child.lineno):
                        if isinstance(child, ast.ClassDef):
                            return inner(child, prefix + child.name + ".")
                        deeper = inner(child, prefix + child.name + ".<locals>.")
                        return deeper or (prefix + child.name if child.name == name else None)
            return None

        try:
            with open(filename) as f:
                found = inner(ast.parse(f.read()), "")
        except Exception:
            found = None
        _QUALNAMES[key] = found or name
    return _QUALNAMES[key]


def _trace_where(traces):
    # Inductor's stack traces of a kernel's nodes (formatted tracebacks, innermost frame last) -> the innermost
    # frame of user code of the first trace that has one, as "<line>:<function>:<file>"
    import re

    for trace in traces or ():
        found = None
        for m in re.finditer(r'File "(.+?)", line (\d+), in (\S+)', trace or ""):
            if not _skipped(m.group(1)):
                found = m.groups()
        if found:
            file, line, name = found
            return "%s:%s:%s" % (line, _qualname(file, int(line), name), file)
    return None
"""

TORCH_RUNNER_MAIN = r"""
features = sys.argv[1].split(",")
script = sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
import contextlib, runpy
import torch
from torch.cuda import nvtx as _nvtx

_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)

if "ops" in features:
    # Dynamo traces global module hooks into compiled code: they name nothing there, and reach no global of the
    # runner (Dynamo looks them up in the module __main__, which runpy has replaced)
    def _pre(module, args, _push=_nvtx.range_push, _compiling=_is_compiling):
        if not _compiling():
            _push("module:" + type(module).__name__)

    def _post(module, args, out, _pop=_nvtx.range_pop, _compiling=_is_compiling):
        if not _compiling():
            _pop()

    torch.nn.modules.module.register_module_forward_pre_hook(_pre)
    torch.nn.modules.module.register_module_forward_hook(_post)

_modes = contextlib.ExitStack()
if "lines" in features:
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    _SKIP_DIRS[:] = [os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.__file__) + os.sep]
    import importlib.util

    try:
        _CAN_COMPILE = hasattr(TorchDispatchMode, "ignore_compile_internals") and bool(
            importlib.util.find_spec("torch._inductor")
        )
    except Exception:
        _CAN_COMPILE = False
    _current_node = getattr(torch._C, "_current_autograd_node", None)

    def _op_range():
        # in backward (autograd's current node, on autograd's own thread for CUDA): the forward line that made the
        # node, else the .backward() call; in forward: the first frame of user code
        node = _current_node() if _current_node is not None else None
        if node is not None:
            # an op of compiled backward code: the forward line Inductor's mark names
            where = _generated_where(sys._getframe()) if _GENERATED_DIRS else ""
            name, stored = _node_of(node)
            where = where or stored or _BACKWARD_CALL[0]
            return _range_text(where, name) if where else None
        where = _where(sys._getframe())
        if where:
            return _range_text(where)
        if _current_node is None and _BACKWARD_CALL[0]:  # a torch without _current_autograd_node
            return _range_text(_BACKWARD_CALL[0], "backward")
        return None

    class _ForwardLines(TorchFunctionMode):
        # above autograd: after the op, its outputs carry the node backward will run; the node keeps the line
        def __init__(self):
            super().__init__()
            # read through the mode itself: Dynamo traces the mode, and the runner's globals are not where it looks
            self._compiling = _is_compiling

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if self._compiling():  # Dynamo traces this mode into the graph: nothing of it but the op
                return func(*args, **(kwargs or {}))
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
        @classmethod
        def ignore_compile_internals(cls):
            # decided before the mode is entered (Dynamo reads it then too): compiled code runs compiled
            return _CAN_COMPILE

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
    _KERNEL_WHERE = {}  # generated kernel name -> the user's line, from its latest compile
    _HANDLE_WHERE = {}  # (kernel name, provenance handle) -> the user's line, while the wrapper is written
    _KERNEL_LOG = []  # what provenance tracking gave for each generated kernel, for $NCUADVISOR_KERNEL_LINES

    def _compiled_kernel_lines():
        # each launch of a Triton kernel Inductor generated inside a range naming its line: the line Inductor's
        # provenance tracking gives (the stack traces of the kernel's FX nodes, read as each kernel is generated and
        # written as a mark above its call), else the line that called the compiled code. None when all of it is in
        # place, else what is missing.
        try:
            from torch._inductor.runtime import triton_heuristics as _th
            from torch._inductor.runtime.cache_dir_utils import cache_dir as _cache_dir

            _autotuner = _th.CachingAutotuner
        except Exception as exc:
            return "%s: %s" % (type(exc).__name__, exc)
        _GENERATED_DIRS.append(os.path.join(_cache_dir(), ""))
        _run = _autotuner.run

        def _launch(self, *args, **kwargs):
            frame = sys._getframe(1)
            where = _generated_where(frame) or _KERNEL_WHERE.get(getattr(self.fn, "__name__", None))
            node = _current_node() if _current_node is not None else None
            where = where or (_BACKWARD_CALL[0] if node is not None else _where(frame))
            if not where:
                return _run(self, *args, **kwargs)
            try:
                name = node.name() if node is not None else None
            except Exception:
                name = type(node).__name__
            _nvtx.range_push(_range_text(where, name))
            try:
                return _run(self, *args, **kwargs)
            finally:
                _nvtx.range_pop()

        _autotuner.run = _launch
        try:
            import torch._inductor.config as _icfg
            import torch._inductor.debug as _idebug

            _orig = _idebug.set_kernel_post_grad_provenance_tracing
            _icfg.trace.provenance_tracking_level
        except Exception:
            return "no provenance tracking in torch._inductor"

        def _traced(node_schedule, kernel_name, *args, **kwargs):
            handle = _orig(node_schedule, kernel_name, *args, **kwargs)
            try:
                traces = getattr(_idebug, "_inductor_kernel_stack_trace", {}).get("%s:%s" % (kernel_name, handle))
                traces = list(traces or ())
                where = _trace_where(traces)
                _HANDLE_WHERE[(kernel_name, handle)] = where
                if where:
                    _KERNEL_WHERE[kernel_name] = where
                try:  # a kernel of a backward graph (AOTAutograd compiles forward and backward apart)
                    from torch._inductor.virtualized import V

                    backward = bool(getattr(V.graph, "is_backward", False))
                except Exception:
                    backward = None
                _KERNEL_LOG.append(
                    {"kernel": kernel_name, "handle": handle, "where": where, "backward": backward, "stack_traces": traces}
                )
            except Exception as exc:
                _KERNEL_LOG.append({"kernel": kernel_name, "error": "%s: %s" % (type(exc).__name__, exc)})
            return handle

        _idebug.set_kernel_post_grad_provenance_tracing = _traced
        for _name in ("torch._inductor.codegen.triton", "torch._inductor.codegen.cpp"):
            try:  # the modules that import the function by name
                _mod = __import__(_name, fromlist=["_"])
                if hasattr(_mod, "set_kernel_post_grad_provenance_tracing"):
                    _mod.set_kernel_post_grad_provenance_tracing = _traced
            except Exception:
                pass
        try:  # the mark above each kernel call of the generated wrapper (Python wrappers: "#" comments)
            from torch._inductor.codegen.wrapper import PythonWrapperCodegen as _wrapper

            _write_handle = _wrapper.write_provenance_debug_handle

            def _write_marked(self, kernel_name, debug_handle=None, *args, **kwargs):
                _write_handle(self, kernel_name, debug_handle, *args, **kwargs)
                if debug_handle is not None and getattr(self, "comment", None) == "#":
                    self.writeline(_MARK + (_HANDLE_WHERE.get((kernel_name, debug_handle)) or "-"))

            _wrapper.write_provenance_debug_handle = _write_marked
        except Exception:
            pass
        if not _icfg.trace.provenance_tracking_level:
            _icfg.trace.provenance_tracking_level = 1
        # a cached graph skips code generation, and with it the provenance: compile each graph here
        _icfg.fx_graph_cache = False
        try:
            torch._functorch.config.enable_autograd_cache = False
        except Exception:
            pass
        out = os.environ.get("NCUADVISOR_KERNEL_LINES")
        if out:
            import atexit, json

            def _write():
                with open(out, "w") as f:
                    json.dump({"torch": getattr(torch, "__version__", None), "kernels": _KERNEL_LOG}, f, indent=1)

            atexit.register(_write)
        return None

    _compile = getattr(torch, "compile", None)
    _COMPILE_STATE = []  # [None] once Inductor's hooks are in place, [why not] when they cannot be

    def _compile_with_lines(*args, **kwargs):
        # the hooks go in at the first torch.compile (an eager script never imports Inductor); said once when they
        # cannot: then a PyTorch whose dispatch modes cannot let Dynamo compile runs the region eagerly
        if not _COMPILE_STATE:
            try:
                _COMPILE_STATE.append(_compiled_kernel_lines() if _CAN_COMPILE else "no ignore_compile_internals")
            except Exception as exc:
                _COMPILE_STATE.append("%s: %s" % (type(exc).__name__, exc))
            if _COMPILE_STATE[0] is not None and not _CAN_COMPILE:
                print(
                    "ncuadvisor: --python-lines could not follow torch.compile in this PyTorch (%s): the compiled "
                    "region runs eagerly under the runner's dispatch mode, and these kernels are eager ATen ones"
                    % _COMPILE_STATE[0],
                    file=sys.stderr,
                )
            elif _COMPILE_STATE[0] is not None:
                print(
                    "ncuadvisor: --python-lines could not read Inductor's provenance in this PyTorch (%s): the "
                    "compiled region's kernels carry the line that called it, not their own" % _COMPILE_STATE[0],
                    file=sys.stderr,
                )
        return _compile(*args, **kwargs)

    if _compile is not None:
        torch.compile = _compile_with_lines
    _modes.enter_context(_ForwardLines())
    _modes.enter_context(_OpLines())
if "lines" in features:
    _graph_replay_lines()  # profile.graph_replays: each CUDA graph replay in a range naming its line
if "ops" in features:
    _modes.enter_context(torch.autograd.profiler.emit_nvtx(record_shapes=False))
if "hosttime" in features:
    _modes.enter_context(_host_time_profile())
with _modes:
    runpy.run_path(script, run_name="__main__")
"""
TORCH_RUNNER = TORCH_RUNNER_FRAMES + TORCH_RUNNER_GRAPHS + TORCH_RUNNER_HOSTTIME + TORCH_RUNNER_MAIN


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
