"""`ncuadvisor profile --python-lines` on code under torch.compile: the runner lets Dynamo compile, and each kernel
Inductor generates is launched inside a range naming the user's line its FX nodes came from (Inductor's provenance
tracking).

The reading of Inductor's stack traces runs here on real Python tracebacks (no torch needed); the whole runner runs
on a stand-in torch whose Inductor generates one kernel and launches it, forward and in backward. The last test is
marked `gpu`: it profiles workloads/torch/compiled_lines.py with the real ncu, PyTorch and Inductor, and checks that
the code compiled (Triton kernels) and that those kernels carry the lines of the block they came from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from test_python_lines import FAKE_TORCH, kernel_table, marked_lines, profile_python_lines, runner_frames

from ncuadvisor.profile.pylines import parse_range
from ncuadvisor.profile.target import TORCH_RUNNER

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "workloads" / "torch" / "compiled_lines.py"


def test_trace_where_takes_the_innermost_user_frame_of_a_stack_trace(tmp_path):
    """Inductor's stack trace of an FX node is a formatted traceback, innermost frame last; library frames (torch's
    own, the runner's "<string>") are skipped, and the first trace with a user frame wins."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "nn.py").write_text("import traceback\ndef layer_norm():\n    return ''.join(traceback.format_stack())\n")
    user = tmp_path / "model.py"
    user.write_text("import nn\ndef forward():\n    return nn.layer_norm()  # here\n")
    sys.path[:0] = [str(lib), str(tmp_path)]
    try:
        import model

        trace = model.forward()
    finally:
        sys.path[:2] = []
        sys.modules.pop("model", None)
        sys.modules.pop("nn", None)
    ns = runner_frames([str(lib) + os.sep])
    where = ns["_trace_where"]([trace])
    assert where == f"3:forward:{user}"
    assert parse_range(ns["_range_text"](where, "CompiledFunctionBackward")) == {
        "file": str(user),
        "line": 3,
        "function": "forward",
        "backward_of": "CompiledFunctionBackward",
    }
    # a trace of library frames only gives nothing; the next trace is read
    only_lib = "".join(traceback.format_list([(str(lib / "nn.py"), 3, "layer_norm", "x")]))
    assert ns["_trace_where"]([only_lib, trace]) == where
    assert ns["_trace_where"]([only_lib]) is None and ns["_trace_where"]([]) is None
    assert ns["_trace_where"](None) is None


def test_trace_where_names_the_function_as_eager_code_does(tmp_path):
    """A traceback names the function (forward); the line takes the qualified name the frame walk of eager code
    gives (Block.forward, make.<locals>.inner), read from the definitions of the file that hold the line; a file
    that cannot be read keeps the traceback's name."""
    user = tmp_path / "model.py"
    user.write_text(
        "class Block:\n"
        "    @staticmethod\n"
        "    def forward(x):\n"
        "        return x + 1  # here\n"
        "def make():\n"
        "    def inner(x):\n"
        "        return x * 2\n"
        "    return inner\n"
    )
    ns = runner_frames([])
    code = compile(user.read_text(), str(user), "exec")
    module: dict = {}
    exec(code, module)
    frames = {
        4: module["Block"].forward.__code__,
        7: module["make"]().__code__,
    }
    for line, fcode in frames.items():
        trace = "".join(traceback.format_list([(str(user), line, fcode.co_name, "")]))
        assert ns["_trace_where"]([trace]) == f"{line}:{fcode.co_qualname}:{user}"
    assert ns["_qualname"](str(tmp_path / "gone.py"), 4, "forward") == "forward"
    assert ns["_qualname"](str(user), 4, "other") == "other"  # the definition holding the line is not that function


# Inductor's generated wrapper as the runner has it written: each kernel call under Inductor's own comments and the
# runner's mark (a real layout: torch 2.13's wrapper of a LayerNorm+GELU block, names kept, arguments cut)
WRAPPER = """def call(k1, k2, k3):
    buf0 = empty_strided_cuda((64, 64), (64, 1), torch.float32)
    # Topologically Sorted Source Nodes: [h, h_1], Original ATen: [aten.native_layer_norm, aten.gelu]
    # [Provenance debug handles] triton_per_fused_gelu_native_layer_norm_0:1
    # ncuadvisor-line 31:forward:/w/model.py
    stream0 = get_raw_stream(0)
    a = k1.run(buf0, stream=stream0)
    # [Provenance debug handles] extern_kernels.mm:2
    # ncuadvisor-line -
    b = k2.run(buf0, stream=stream0)
    c = k3.run(buf0, stream=stream0)
    return a, b, c


def get_raw_stream(i):
    return i


def empty_strided_cuda(*args):
    return None


class torch:
    float32 = "float32"
"""


def test_marks_above_a_kernel_call_name_its_line(tmp_path):
    """The mark just above a kernel call of generated code names the line; a mark of "-" (provenance gave no user
    frame) names none; a call without a mark of its own does not borrow the mark of the call before. A frame walk
    passes over generated code to the user's frame when the call has no mark."""
    generated = tmp_path / "torchinductor_me"
    generated.mkdir()
    wrapper = generated / "cabc.py"
    wrapper.write_text(WRAPPER)
    ns = runner_frames([])
    ns["_GENERATED_DIRS"][:] = [str(generated) + os.sep]
    module: dict = {}
    exec(compile(WRAPPER, str(wrapper), "exec"), module)

    class Kernel:
        def run(self, *args, stream):
            frame = sys._getframe(1)
            return ns["_generated_where"](frame), ns["_where"](frame)

    a, b, c = module["call"](Kernel(), Kernel(), Kernel())
    assert a == ("31:forward:/w/model.py", "31:forward:/w/model.py")
    here = sys._getframe(0).f_code
    assert b[0] == "" and c[0] == ""
    # no mark: the walk goes on to this test's frame, the caller of the generated code
    assert b[1].endswith(f":{here.co_qualname}:{here.co_filename}") and c[1] == b[1]
    assert ns["_skipped"](str(wrapper))  # generated code is never the user's line


def test_kernel_lines_file_names_generated_kernels(tmp_path, typed):
    """The runner's file of generated kernels: a kernel with no range of the runner (its launch replayed from a CUDA
    graph) takes its line by name, forward or backward; a name two compiles placed at two lines, a record without a
    line and an unreadable file give nothing; a range on the launch wins over the file."""
    from dataclasses import replace

    from ncuadvisor.profile.pylines import COMPILED_BACKWARD, attach_python_lines, read_kernel_lines

    side = tmp_path / "kernel_lines.json"
    records = [
        {"kernel": "triton_per_fused_gelu_native_layer_norm_0", "handle": 1, "where": "31:forward:/w/m.py"},
        {"kernel": "triton_per_fused_gelu_native_layer_norm_0", "handle": 1, "where": "31:forward:/w/m.py"},
        {"kernel": "triton_per_fused_gelu_backward_0", "handle": 3, "where": "32:forward:/w/m.py", "backward": True},
        {"kernel": "triton_poi_fused_add_0", "handle": 2, "where": "33:forward:/w/m.py", "backward": False},
        {"kernel": "triton_poi_fused_add_0", "handle": 2, "where": "50:other:/w/n.py", "backward": False},
        {"kernel": "triton_poi_fused_mul_1", "handle": 4, "where": None},
        {"kernel": "triton_poi_fused_mul_2", "error": "KeyError: 'x'"},
    ]
    side.write_text(json.dumps({"torch": "2.11.0", "kernels": records}))
    by_name = read_kernel_lines(side)
    assert by_name == {
        "triton_per_fused_gelu_native_layer_norm_0": {
            "file": "/w/m.py",
            "line": 31,
            "function": "forward",
            "backward_of": None,
        },
        "triton_per_fused_gelu_backward_0": {
            "file": "/w/m.py",
            "line": 32,
            "function": "forward",
            "backward_of": COMPILED_BACKWARD,
        },
    }
    assert read_kernel_lines(tmp_path / "none.json") == {} and read_kernel_lines(None) == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert read_kernel_lines(tmp_path / "bad.json") == {}

    base = typed("torch_cast_copy").kernels[0]
    kernels = [
        replace(base, name="triton_per_fused_gelu_backward_0", nvtx="step", python_line=None),
        replace(base, name="triton_per_fused_gelu_native_layer_norm_0", nvtx="step > py:7:f:/w/x.py", python_line=None),
        replace(base, name="triton_poi_fused_add_0", nvtx="step", python_line=None),
    ]
    assert attach_python_lines(kernels, by_name) == 2
    assert kernels[0].python_line is not None and kernels[0].python_line.line == 32
    assert kernels[0].python_line.backward_of == COMPILED_BACKWARD and kernels[0].nvtx == "step"
    assert kernels[1].python_line is not None and kernels[1].python_line.line == 7  # the range wins
    assert kernels[2].python_line is None


# A stand-in for the few names of torch, Dynamo and Inductor the runner touches under torch.compile: `compile`
# "generates" a wrapper per graph (forward, then backward) into the cache folder, the way Inductor does (provenance
# handle, then the comment, then the kernel call), loads it from there and calls it; backward runs the backward
# wrapper with the node CompiledFunctionBackward current.
FAKE_COMPILE = {
    "__init__.py": FAKE_TORCH["__init__.py"]
    .replace("def compile(fn=None, **kw):\n    return fn\n", "from ._fake_compile import compile\n")
    .replace(
        "            _kernel('bwd')\n",
        "            getattr(self.grad_fn, 'run', None) and self.grad_fn.run()\n",
    )
    + "from . import compiler, _functorch\n",
    "compiler.py": "def is_compiling():\n    return False\n",
    "utils/_python_dispatch.py": FAKE_TORCH["utils/_python_dispatch.py"]
    + "    @classmethod\n    def ignore_compile_internals(cls):\n        return False\n",
    "_fake_compile.py": (
        "import builtins, os, traceback\n"
        "def compile(fn=None, **kw):\n"
        "    import torch\n"
        "    from torch._inductor.codegen import triton as codegen\n"
        "    from torch._inductor.codegen.wrapper import PythonWrapperCodegen\n"
        "    from torch._inductor.runtime.cache_dir_utils import cache_dir\n"
        "    from torch._inductor.runtime.triton_heuristics import CachingAutotuner\n"
        "    from torch._inductor.virtualized import V\n"
        "    code = fn.__code__\n"
        "    trace = ''.join(traceback.format_list([(code.co_filename, code.co_firstlineno + 1, code.co_name, '')]))\n"
        "    def generate(name, backward):\n"
        "        V.graph.is_backward = backward\n"
        "        w = PythonWrapperCodegen()\n"
        "        w.writeline('def call(kernel):')\n"
        "        codegen.codegen_kernel([trace], name, w)\n"
        "        w.writeline('    return kernel.run(1, stream=0)')\n"
        "        path = os.path.join(cache_dir(), name + '.py')\n"
        "        with open(path, 'w') as f:\n"
        "            f.write('\\n'.join(w.lines) + '\\n')\n"
        "        ns = {}\n"
        "        exec(builtins.compile(open(path).read(), path, 'exec'), ns)\n"
        "        kernel = CachingAutotuner(name)\n"
        "        return lambda: ns['call'](kernel)\n"
        "    fwd = generate('triton_poi_fused_gelu_0', False)\n"
        "    bwd = generate('triton_poi_fused_gelu_backward_0', True)\n"
        "    def compiled(*args):\n"
        "        fwd()\n"
        "        out = torch.Tensor()\n"
        "        out.grad_fn = torch.Node()\n"
        "        out.grad_fn.name = lambda: 'CompiledFunctionBackward'\n"
        "        out.grad_fn.run = bwd\n"
        "        return out\n"
        "    return compiled\n"
    ),
    "_functorch/__init__.py": "from . import config\n",
    "_functorch/config.py": "enable_autograd_cache = True\n",
    "_inductor/__init__.py": "",
    "_inductor/config.py": "fx_graph_cache = True\nclass trace:\n    provenance_tracking_level = 0\n",
    "_inductor/debug.py": (
        "_inductor_kernel_stack_trace = {}\n"
        "_handle = [0]\n"
        "def set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name, is_extern=False):\n"
        "    from . import config\n"
        "    if config.trace.provenance_tracking_level == 0:\n"
        "        return None\n"
        "    _handle[0] += 1\n"
        "    _inductor_kernel_stack_trace.setdefault('%s:%d' % (kernel_name, _handle[0]), []).extend(node_schedule)\n"
        "    return _handle[0]\n"
    ),
    "_inductor/virtualized.py": "class _G:\n    is_backward = False\nclass _V:\n    graph = _G()\nV = _V()\n",
    "_inductor/codegen/__init__.py": "",
    "_inductor/codegen/triton.py": (
        "from ..debug import set_kernel_post_grad_provenance_tracing\n"
        "def codegen_kernel(traces, kernel_name, wrapper):\n"
        "    handle = set_kernel_post_grad_provenance_tracing(traces, kernel_name)\n"
        "    wrapper.write_provenance_debug_handle(kernel_name, handle)\n"
    ),
    "_inductor/codegen/wrapper.py": (
        "class PythonWrapperCodegen:\n"
        "    comment = '#'\n"
        "    def __init__(self):\n"
        "        self.lines = []\n"
        "    def writeline(self, line):\n"
        "        self.lines.append(line)\n"
        "    def write_provenance_debug_handle(self, kernel_name, debug_handle=None):\n"
        "        if debug_handle is not None:\n"
        "            self.writeline('    # [Provenance debug handles] %s:%s' % (kernel_name, debug_handle))\n"
    ),
    "_inductor/runtime/__init__.py": "",
    "_inductor/runtime/cache_dir_utils.py": (
        "import os\ndef cache_dir():\n    d = os.environ['TORCHINDUCTOR_CACHE_DIR']\n"
        "    os.makedirs(d, exist_ok=True)\n    return d\n"
    ),
    "_inductor/runtime/triton_heuristics.py": (
        "class _Fn:\n    def __init__(self, name):\n        self.__name__ = name\n"
        "class CachingAutotuner:\n    def __init__(self, name):\n        self.fn = _Fn(name)\n"
        "    def run(self, *args, stream):\n        return self.fn.__name__\n"
    ),
}


USER_COMPILES = (
    "import torch\n"
    "def block(x):\n"
    "    return torch.gelu(x)  # line: gelu\n"
    "f = torch.compile(block)\n"
    "y = f(torch.Tensor())  # line: call\n"
    "y.backward()  # line: backward\n"
    "print('\\n'.join(torch.PUSHED))\n"
)


def run_stand_in(
    tmp_path: Path, files: dict[str, str], script: str = USER_COMPILES
) -> tuple[subprocess.CompletedProcess, Path, dict]:
    """Run the runner ("lines") on a user script (by default one that compiles a function) under a stand-in torch
    made of `files`: the process, the script and its marked lines."""
    for rel, text in files.items():
        path = tmp_path / "torch" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    user = tmp_path / "user.py"
    user.write_text(script)
    env = dict(
        os.environ,
        PYTHONPATH=str(tmp_path),
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
        NCUADVISOR_KERNEL_LINES=str(tmp_path / "kernel_lines.json"),
    )
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_RUNNER, "lines", str(user)], capture_output=True, text=True, env=env, timeout=60
    )
    return proc, user, marked_lines(user)


def test_runner_names_each_generated_kernel_by_its_provenance(tmp_path):
    """The whole runner under a stand-in Inductor: provenance tracking is switched on and the graph cache off, the
    generated wrapper carries the mark above its kernel call, and each launch is in a range naming the user's line
    of the kernel's node, the backward one with the node CompiledFunctionBackward; the file of generated kernels
    says the same, with which graph each came from."""
    proc, user, marks = run_stand_in(tmp_path, {**FAKE_TORCH, **FAKE_COMPILE})
    assert proc.returncode == 0, proc.stderr
    assert "ncuadvisor:" not in proc.stderr, proc.stderr
    ranges = [parse_range(line) for line in proc.stdout.splitlines()]
    line = marks["gelu"]
    assert ranges == [
        {"file": str(user), "line": line, "function": "block", "backward_of": None},
        {"file": str(user), "line": line, "function": "block", "backward_of": "CompiledFunctionBackward"},
    ]
    wrapper = (tmp_path / "inductor" / "triton_poi_fused_gelu_0.py").read_text()
    assert f"# ncuadvisor-line {line}:block:{user}" in wrapper
    side = json.loads((tmp_path / "kernel_lines.json").read_text())
    got = [(k["kernel"], k["where"], k["backward"], len(k["stack_traces"])) for k in side["kernels"]]
    assert got == [
        ("triton_poi_fused_gelu_0", f"{line}:block:{user}", False, 1),
        ("triton_poi_fused_gelu_backward_0", f"{line}:block:{user}", True, 1),
    ]


def test_runner_without_provenance_places_compiled_kernels_at_the_call(tmp_path):
    """An Inductor without provenance tracking: the runner says so once, the code still compiles, and a generated
    kernel's launch names the line that called the compiled code (forward), the .backward() call (backward)."""
    older = {
        "_inductor/debug.py": "_inductor_kernel_stack_trace = {}\n",
        "_inductor/codegen/triton.py": "def codegen_kernel(traces, kernel_name, wrapper):\n    pass\n",
    }
    proc, user, marks = run_stand_in(tmp_path, {**FAKE_TORCH, **FAKE_COMPILE, **older})
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("ncuadvisor:")]
    assert len(said) == 1 and "provenance" in said[0], proc.stderr
    ranges = [parse_range(line) for line in proc.stdout.splitlines()]
    assert [(r["line"], r["backward_of"]) for r in ranges if r] == [
        (marks["call"], None),
        (marks["backward"], "CompiledFunctionBackward"),
    ], proc.stdout


# -- on the GPU machine -------------------------------------------------------------------------------------------


def check_compiled_lines(kernels: list[dict], marks: dict[str, int]) -> None:
    """The kernels of workloads/torch/compiled_lines.py: Inductor's Triton kernels exist (the block compiled) and
    each carries a line of the compiled block (the fused LayerNorm+GELU kernel the norm or gelu line; in backward,
    the forward line, the node CompiledFunctionBackward); so do the cuBLAS kernels Inductor calls; the eager cast
    after the block is at its own line."""
    block = {marks["norm"], marks["gelu"], marks["residual"]}
    triton = [k for k in kernels if k["name"].startswith("triton_")]
    assert triton, "no Triton kernel: the block did not compile"
    assert all(k.get("python_line") for k in triton), [k["name"] for k in triton if not k.get("python_line")]
    for k in triton:
        pl = k["python_line"]
        assert Path(pl["file"]).name == SCRIPT.name, (k["name"], pl)
        assert "py:" not in (k.get("nvtx") or ""), k["nvtx"]
    fwd = [k for k in triton if not k["python_line"].get("backward_of")]
    bwd = [k for k in triton if k["python_line"].get("backward_of")]
    assert fwd and bwd, ([k["name"] for k in fwd], [k["name"] for k in bwd])
    assert {k["python_line"]["line"] for k in fwd} <= block, [(k["name"], k["python_line"]) for k in fwd]
    assert {k["python_line"]["line"] for k in bwd} <= block, [(k["name"], k["python_line"]) for k in bwd]
    assert all(k["python_line"]["backward_of"] == "CompiledFunctionBackward" for k in bwd), bwd[:1]
    norm = [k for k in fwd if "layer_norm" in k["name"]]
    assert norm and {k["python_line"]["line"] for k in norm} <= {marks["norm"], marks["gelu"]}, norm[:1]
    # the qualified name, as eager code has it (recorded before the runner read it: forward)
    assert all(k["python_line"]["function"] in ("forward", "Block.forward") for k in fwd), fwd[:1]
    # the matrix products Inductor leaves to cuBLAS (extern kernels) are placed by the mark above their call:
    # the Linear layer's line, forward and backward
    gemm = [k for k in kernels if not k["name"].startswith("triton_") and k.get("python_line")]
    gemm = [k for k in gemm if k["python_line"]["line"] == marks["residual"]]
    assert gemm and any(k["python_line"].get("backward_of") == "CompiledFunctionBackward" for k in gemm), [
        (k["name"], k.get("python_line")) for k in kernels if not k["name"].startswith("triton_")
    ]
    cast = [k for k in kernels if "bfloat16_copy_kernel_cuda" in str(k.get("demangled"))]
    assert cast and cast[0].get("python_line"), cast[:1]
    assert cast[0]["python_line"]["line"] == marks["cast"] and not cast[0]["python_line"]["backward_of"]


RECORDED = ROOT / "fixtures" / "compiled-lines-2026-12-01"


def test_recorded_phase_1_places_compiled_kernels_at_their_lines(tmp_path):
    """Phase 1 of `profile --python-lines` on workloads/torch/compiled_lines.py, recorded on the H200 (torch 2.11):
    the Triton kernels Inductor generated and the cuBLAS kernels it called carry the lines of the compiled block,
    forward and backward; the eager code around it its own lines, the gradient accumulation of the input (a node
    named with C++ colons) included."""
    import lzma
    import shutil

    from ncuadvisor.profile.merge import analyze_phase1
    from ncuadvisor.profile.pylines import attach_python_lines, read_kernel_lines
    from ncuadvisor.rulekit import engine

    report = tmp_path / "compiled.phase1.ncu-rep"
    with lzma.open(RECORDED / "compiled.phase1.ncu-rep.xz", "rb") as fin, report.open("wb") as fout:
        shutil.copyfileobj(fin, fout)
    p1, _launches, _ = analyze_phase1(report, engine.discover([]))
    assert attach_python_lines(p1.kernels, read_kernel_lines(RECORDED / "kernel_lines.json")) == len(p1.kernels)
    kernels = [k.to_dict() for k in p1.kernels]
    marks = marked_lines(SCRIPT)
    check_compiled_lines(kernels, marks)
    accumulate = [k["python_line"] for k in kernels if "AccumulateGrad" in str(k["python_line"].get("backward_of"))]
    assert accumulate and accumulate[0]["line"] == marks["backward"], accumulate
    # one Triton kernel Inductor reuses for three sums of one backward graph (the Linear bias, the LayerNorm weight
    # and bias): its marks name two lines, the kernel group takes its first launch's
    sums = [r for r in json.loads((RECORDED / "kernel_lines.json").read_text())["kernels"]]
    sums = {r["where"].split(":")[0] for r in sums if r["kernel"] == "triton_per_fused_sum_1"}
    assert sums == {str(marks["norm"]), str(marks["residual"])}, sums


@pytest.mark.gpu
def test_gpu_compiled_kernels_carry_the_users_lines(tmp_path):
    """Real ncu, GPU, PyTorch and Inductor: profile workloads/torch/compiled_lines.py with --python-lines; the block
    compiles (Triton kernels, and no word from the runner that it ran eagerly) and its kernels carry its lines."""
    pytest.importorskip("torch")
    out = tmp_path / "compiled.json"
    side = tmp_path / "kernel_lines.json"
    proc = profile_python_lines(tmp_path, SCRIPT, out, steps=1, timeout=500, NCUADVISOR_KERNEL_LINES=str(side))
    if side.is_file():
        for k in json.loads(side.read_text())["kernels"]:
            print("provenance:", k.get("kernel"), k.get("handle"), k.get("where"), len(k.get("stack_traces") or []))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "runs eagerly" not in proc.stderr and "run the region eagerly" not in proc.stderr
    res = json.loads(out.read_text())
    print(kernel_table(res))
    assert res["report"]["profile"].get("python_lines") is True
    check_compiled_lines(res["kernels"], marked_lines(SCRIPT))
    norm = [k["python_line"] for k in res["kernels"] if k["name"].startswith("triton_per_fused_gelu_native_layer")]
    assert norm and norm[0]["function"] == "Block.forward", norm  # the qualified name, as eager code has it
