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
from test_python_lines import marked_lines, runner_frames

from ncuadvisor.profile.pylines import parse_range

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


# -- on the GPU machine -------------------------------------------------------------------------------------------


def _table(res: dict) -> str:
    rows = []
    for k in res["kernels"]:
        pl = k.get("python_line") or {}
        rows.append(
            f"{k['time_share']:6.1%} {k['name'][:60]:60} {k['grid']:>16} "
            f"{os.path.basename(pl.get('file', '-'))}:{pl.get('line', '-')} {pl.get('function')} "
            f"bwd={pl.get('backward_of')} nvtx={k.get('nvtx')!r}"
        )
    return "\n".join(rows)


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
    # Inductor's stack traces name the function (forward), the eager frame walk its qualified name (Block.forward)
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


@pytest.mark.gpu
def test_gpu_compiled_kernels_carry_the_users_lines(tmp_path):
    """Real ncu, GPU, PyTorch and Inductor: profile workloads/torch/compiled_lines.py with --python-lines; the block
    compiles (Triton kernels, and no word from the runner that it ran eagerly) and its kernels carry its lines."""
    pytest.importorskip("torch")
    out = tmp_path / "compiled.json"
    side = tmp_path / "kernel_lines.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncuadvisor",
            "profile",
            "--python-lines",
            "--top",
            "1",
            "--nvtx-include",
            "step_all_threads",
            "-o",
            str(out),
            str(SCRIPT),
            "--steps",
            "1",
            "--size",
            "1024",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=500,
        env=dict(
            os.environ,
            NCUADVISOR_KERNEL_LINES=str(side),
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        ),
    )
    print(proc.stdout[-6000:], proc.stderr[-6000:], sep="\n")
    if side.is_file():
        for k in json.loads(side.read_text())["kernels"]:
            print("provenance:", k.get("kernel"), k.get("handle"), k.get("where"), len(k.get("stack_traces") or []))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "runs eagerly" not in proc.stderr and "run the region eagerly" not in proc.stderr
    res = json.loads(out.read_text())
    print(_table(res))
    assert res["report"]["profile"].get("python_lines") is True
    check_compiled_lines(res["kernels"], marked_lines(SCRIPT))
