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
