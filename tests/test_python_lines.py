"""`ncuadvisor profile --python-lines`: the Python line that launched each kernel.

The runner's frame walk and range text run here on real Python frames (they need no torch); the parsing of a
launch's NVTX text runs on the texts ncu records (ranges joined by " > ", as load.native reads them) and on the real
reports of fixtures/. The last test is marked `gpu`: it profiles workloads/torch/python_lines.py with the real ncu
and checks that the cast, the GELU and a backward kernel are placed at the lines that launched them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from synthetic import typed_result

from ncuadvisor.profile.pylines import attach_python_lines, parse_range, split_nvtx
from ncuadvisor.profile.target import TORCH_RUNNER, TORCH_RUNNER_FRAMES, resolve_target, runner_features

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "workloads" / "torch" / "python_lines.py"


def marked_lines(path: Path) -> dict[str, int]:
    """`# line: NAME` markers of a script -> their line numbers."""
    out = {}
    for number, text in enumerate(path.read_text().splitlines(), 1):
        m = re.search(r"# line: (\w+)", text)
        if m:
            out[m.group(1)] = number
    return out


def runner_frames(skip_dirs: list[str]) -> dict:
    ns: dict = {}
    exec(compile(TORCH_RUNNER_FRAMES, "<runner>", "exec"), ns)
    ns["_SKIP_DIRS"][:] = skip_dirs
    return ns


def test_runner_is_valid_python_and_takes_its_features_first(tmp_path):
    compile(TORCH_RUNNER, "<runner>", "exec")
    assert runner_features(True, True) == "ops,lines" and runner_features(False, True) == "lines"
    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    try:  # resolve_target checks that torch is importable
        t = resolve_target([str(script), "--epochs", "1"], python_lines=True)
    except Exception as exc:  # no torch here: one clear message naming the option
        assert "--python-lines needs PyTorch" in str(exc)
    else:
        assert t.argv[1:5] == ["-c", TORCH_RUNNER, "lines", str(script)] and t.argv[5:] == ["--epochs", "1"]


def test_frame_walk_skips_library_frames_and_names_the_callers_line(tmp_path):
    """The runner's `_where` on real frames: a call made from a "library" file (skipped, as torch's own files are)
    is placed at the line of user code that called the library."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "fake_torch.py").write_text("import sys\ndef op(where):\n    return where(sys._getframe(0))\n")
    user = tmp_path / "model.py"
    user.write_text("import fake_torch\ndef forward(where):\n    return fake_torch.op(where)  # here\n")
    sys.path.insert(0, str(lib))
    sys.path.insert(0, str(tmp_path))
    try:
        import fake_torch  # noqa: F401
        import model

        ns = runner_frames([str(lib) + os.sep])
        where = model.forward(ns["_where"])
    finally:
        sys.path[:2] = []
        sys.modules.pop("model", None)
        sys.modules.pop("fake_torch", None)
    assert where == f"3:forward:{user}"
    text = ns["_range_text"](where)
    assert parse_range(text) == {"file": str(user), "line": 3, "function": "forward", "backward_of": None}
    bwd = parse_range(ns["_range_text"](where, "GeluBackward0"))
    assert bwd is not None and bwd["backward_of"] == "GeluBackward0" and bwd["line"] == 3
    assert (
        runner_frames([str(lib) + os.sep, str(tmp_path) + os.sep])["_where"](sys._getframe(0)) is not None
    )  # this file


def test_split_nvtx_takes_the_innermost_python_line_and_keeps_the_other_ranges():
    nvtx = "step_all_threads > step > py:25:forward:/w/model.py > py:7:gelu:/w/act.py"
    where, rest = split_nvtx(nvtx)
    assert where == {"file": "/w/act.py", "line": 7, "function": "gelu", "backward_of": None}
    assert rest == "step_all_threads > step"
    where, rest = split_nvtx("step_all_threads > pybwd:GeluBackward0:25:forward:/w/my model.py")
    assert where is not None and where["file"] == "/w/my model.py" and where["backward_of"] == "GeluBackward0"
    assert rest == "step_all_threads"
    assert split_nvtx("step > aten::add > python") == (None, "step > aten::add > python")
    # a node named with C++ colons (the gradient accumulation of a leaf), as the H200 run of compiled_lines.py had it
    where, rest = split_nvtx(
        "pybwd:torch::autograd::AccumulateGrad:40:step:/work/w/compiled_lines.py > step_all_threads"
    )
    assert where == {
        "file": "/work/w/compiled_lines.py",
        "line": 40,
        "function": "step",
        "backward_of": "torch::autograd::AccumulateGrad",
    }
    assert rest == "step_all_threads"
    assert split_nvtx("") == (None, "")


def test_attach_reads_the_line_of_code_and_leaves_other_kernels_alone(tmp_path, typed):
    from dataclasses import replace

    from ncuadvisor.result.types import PythonLine

    src = tmp_path / "model.py"
    src.write_text("import torch\n\ny = x.to(torch.bfloat16)   # the cast\n")
    # a real report whose kernels carry NVTX ranges of their own (step_all_threads): nothing taken, nothing changed
    real = typed("torch_cast_copy")
    base = real.kernels[0]
    kernels = [
        replace(base, name="vectorized_elementwise_kernel", nvtx=f"step > py:3:<module>:{src}", python_line=None),
        replace(base, name="other", nvtx="step", python_line=None),
    ]
    assert attach_python_lines(kernels) == 1
    assert kernels[0].nvtx == "step"
    assert kernels[0].python_line == PythonLine(
        file=str(src), line=3, function="<module>", code="y = x.to(torch.bfloat16)   # the cast", backward_of=None
    )
    assert kernels[1].python_line is None and kernels[1].nvtx == "step"
    before = [k.nvtx for k in real.kernels]
    assert any(before) and attach_python_lines(real.kernels) == 0
    assert [k.nvtx for k in real.kernels] == before


def test_the_result_reads_back_with_a_python_line(analyzed):
    from ncuadvisor.result import KernelEntry

    k = analyzed("torch_cast_copy")["kernels"][0]
    k["python_line"] = {"file": "/w/model.py", "line": 3, "function": "f", "code": "x.float()", "backward_of": None}
    back = KernelEntry.from_dict(k)
    assert back.python_line is not None and back.python_line.line == 3
    assert back.to_dict()["python_line"]["code"] == "x.float()"
    k.pop("python_line")
    assert "python_line" not in KernelEntry.from_dict(k).to_dict()


def check_lines(kernels: list[dict], marks: dict[str, int], backward_forward_line: bool, with_code: bool) -> None:
    """The kernels of workloads/torch/python_lines.py are placed at the lines that launched them: the bf16 cast at
    `h.to(torch.bfloat16)`, GELU at its line, the layout copy at `.contiguous()`; GELU's backward kernel, in backward,
    at the gelu line (the forward line of its node; with `backward_forward_line` False, that or `loss.backward()`)."""
    placed = [k for k in kernels if k.get("python_line")]
    assert placed, "no kernel carries a Python line"
    assert all(Path(k["python_line"]["file"]).name == SCRIPT.name for k in placed), [
        k["python_line"]["file"] for k in placed
    ]
    assert all("py:" not in (k.get("nvtx") or "") for k in kernels)

    def lines(pred, backward: bool) -> set[int]:
        """The lines of the kernels whose demangled name `pred` accepts, in forward or in backward."""
        found = [k for k in kernels if pred(str(k.get("demangled") or k["name"]))]
        assert found, "no such kernel"
        got = [k.get("python_line") or {} for k in found]
        return {int(p["line"]) for p in got if p and bool(p.get("backward_of")) == backward}

    cast = [k for k in placed if "bfloat16_copy_kernel_cuda" in k["demangled"] and not k["python_line"]["backward_of"]]
    assert cast, "no forward cast kernel"
    if with_code:
        assert "bfloat16" in (cast[0]["python_line"].get("code") or ""), cast[:1]
    assert marks["cast"] in lines(lambda d: "bfloat16_copy_kernel_cuda" in d, backward=False)
    assert lines(lambda d: "GeluCUDAKernelImpl" in d and "Backward" not in d, backward=False) == {marks["gelu"]}
    transpose = lines(lambda d: d.startswith("void at::native::elementwise_kernel") and "direct_copy" in d, False)
    assert marks["transpose"] in transpose, transpose
    gelu_bwd = lines(lambda d: "GeluBackward" in d, backward=True)
    print("GELU backward placed at", gelu_bwd, "(gelu line", marks["gelu"], ", backward line", marks["backward"], ")")
    assert gelu_bwd == {marks["gelu"]} if backward_forward_line else gelu_bwd <= {marks["gelu"], marks["backward"]}
    # the matrix product's backward (AddmmBackward0) is placed at the Linear layer's line
    gemm_bwd = [k["python_line"] for k in placed if k["python_line"]["backward_of"] == "AddmmBackward0"]
    assert gemm_bwd and {p["line"] for p in gemm_bwd} == {marks["linear"]}, gemm_bwd


RECORDED = ROOT / "fixtures" / "python-lines-2026-12-01"


@pytest.mark.parametrize("name", ["both"])
def test_recorded_phase_1_places_kernels_at_their_lines(tmp_path, name):
    """Phase 1 of `profile --python-lines --torch-ops` on workloads/torch/python_lines.py, recorded on the H200 (the
    runner's ranges as ncu stored them): every kernel placed at its line, in forward and in backward; the ATen op and
    module ranges stay, the Python line comes out of the same NVTX stack. (The runner's ranges alone, without
    --torch-ops, are in the recorded phase 1 of tests/test_compiled_lines.py.)"""
    import lzma
    import shutil

    from ncuadvisor.profile.merge import analyze_phase1, torch_context
    from ncuadvisor.rulekit import engine

    report = tmp_path / f"{name}.phase1.ncu-rep"
    with lzma.open(RECORDED / f"{name}.phase1.ncu-rep.xz", "rb") as fin, report.open("wb") as fout:
        shutil.copyfileobj(fin, fout)
    p1, _launches, _ = analyze_phase1(report, engine.discover([]))
    assert attach_python_lines(p1.kernels) == len(p1.kernels)
    # recorded before the range named the qualified function (Block.forward): the line numbers are what counts
    check_lines([k.to_dict() for k in p1.kernels], marked_lines(SCRIPT), backward_forward_line=True, with_code=False)
    if name == "both":
        gelu = next(k for k in p1.kernels if "GeluCUDAKernelImpl" in str(k.demangled))
        context = torch_context(str(gelu.nvtx))
        assert (context.torch_op, context.torch_module) == ("aten::gelu", "Block")
        assert not any("PythonDispatchMode" in (k.nvtx or "") for k in p1.kernels)  # the runner's own mode


# -- on the GPU machine -------------------------------------------------------------------------------------------


def kernel_table(res: dict) -> str:
    """One line per kernel of a result: share, name, grid, Python line, function, backward node, NVTX (the GPU tests'
    log)."""
    rows = []
    for k in res["kernels"]:
        pl = k.get("python_line") or {}
        rows.append(
            f"{k['time_share']:6.1%} {k['name'][:60]:60} {k['grid']:>16} "
            f"{os.path.basename(pl.get('file', '-'))}:{pl.get('line', '-')} {pl.get('function')} "
            f"bwd={pl.get('backward_of')} nvtx={k.get('nvtx')!r} | {str(k.get('demangled'))[:90]}"
        )
    return "\n".join(rows)


def profile_python_lines(
    tmp_path, script, out, steps: int, timeout: int, args: Sequence[str] = (), **env: str
) -> subprocess.CompletedProcess:
    """`ncuadvisor profile --python-lines --top 1` of a workload script inside step_all_threads, this checkout first on
    PYTHONPATH; its output printed (the GPU tests' log), `args` added to the script's, `env` to the environment."""
    argv = [sys.executable, "-m", "ncuadvisor", "profile", "--python-lines", "--top", "1", "--nvtx-include"]
    argv += ["step_all_threads", "-o", str(out), str(script), "--steps", str(steps), "--size", "1024", *args]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        argv,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, **env, PYTHONPATH=path),
    )
    print(proc.stdout[-6000:], proc.stderr[-6000:], sep="\n")
    return proc


@pytest.mark.gpu
def test_gpu_python_lines_place_kernels_at_their_lines(tmp_path):
    """Real ncu, real GPU, real PyTorch: profile workloads/torch/python_lines.py with --python-lines; the bf16 cast
    kernel is placed at `h.to(torch.bfloat16)`, the GELU kernel at the gelu line, the layout copy at `.contiguous()`,
    and GELU's backward kernel at the gelu line (the forward line of its node) or at `loss.backward()`. The lines
    come from phase 1 (every launch), so one kernel in depth (--top 1) is enough."""
    pytest.importorskip("torch")
    out = tmp_path / "lines.json"
    proc = profile_python_lines(tmp_path, SCRIPT, out, steps=2, timeout=400)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    print(kernel_table(res))
    assert res["report"]["profile"].get("python_lines") is True
    check_lines(res["kernels"], marked_lines(SCRIPT), backward_forward_line=True, with_code=True)
    gelu_fwd = [k for k in res["kernels"] if "GeluCUDAKernelImpl" in k["demangled"] and k.get("python_line")]
    assert gelu_fwd and gelu_fwd[0]["python_line"]["function"] == "Block.forward", gelu_fwd[:1]


def test_renderers_show_the_python_line(analyzed):
    """The line shows on the kernel card and in the "where to start" entry of the kernel (HTML, markdown, terminal,
    where it takes the place of ATen's own source line)."""
    import io

    from rich.console import Console

    from ncuadvisor.render.html import render_html
    from ncuadvisor.render.markdown import render_markdown
    from ncuadvisor.render.terminal import render_terminal

    res = analyzed("torch_cast_copy")
    first = next(a for a in res["top_actions"] if a.get("kernel_id"))
    k = next(k for k in res["kernels"] if k["id"] == first["kernel_id"])
    k["python_line"] = {
        "file": "/w/model.py",
        "line": 42,
        "function": "forward",
        "code": "y = x.float()",
        "backward_of": None,
    }
    html = render_html(typed_result(res))
    assert "model.py:42" in html and "y = x.float()" in html
    # the "where to start" entry of the kernel: the op from its line of code
    assert 'from <code>y = x.float()</code> at <span class="mono" title="/w/model.py">model.py:42</span>' in html
    assert "Python <code>model.py\\:42</code>" in render_markdown(typed_result(res), max_chars=10**7)
    out = io.StringIO()
    render_terminal(typed_result(res), console=Console(file=out, width=160, color_system=None))
    entry = next(line for line in out.getvalue().splitlines() if "model.py:42" in line)
    assert "y = x.float()" in entry
    k["python_line"]["backward_of"] = "ToCopyBackward0"
    assert "model.py:42, backward of ToCopyBackward0" in render_html(typed_result(res))


# A stand-in for the few torch names the runner touches, so that its modes run here without PyTorch: a torch function
# (gelu) passes through the TorchFunctionMode, its kernel through the TorchDispatchMode, and backward runs the node's
# kernel with no user frame on the stack (as autograd's device thread does), the node current.
FAKE_TORCH = {
    "__init__.py": (
        "from . import cuda, overrides, _C, nn, autograd\n"
        "from .utils import _python_dispatch\n"
        "PUSHED = []\n"
        "class Node:\n"
        "    def __init__(self):\n"
        "        self.metadata = {}\n"
        "    def name(self):\n"
        "        return 'GeluBackward0'\n"
        "class Tensor:\n"
        "    grad_fn = None\n"
        "    def backward(self):\n"
        "        _C.NODE[0] = self.grad_fn\n"
        "        try:\n"
        "            _kernel('bwd')\n"
        "        finally:\n"
        "            _C.NODE[0] = None\n"
        "def _kernel(name):\n"
        "    for m in list(_python_dispatch.MODES):\n"
        "        m.__torch_dispatch__(lambda: name, ())\n"
        "def compile(fn=None, **kw):\n"
        "    return fn\n"
        "def gelu(x):\n"
        "    def run():\n"
        "        _kernel('fwd')\n"
        "        out = Tensor()\n"
        "        out.grad_fn = Node()\n"
        "        return out\n"
        "    for m in list(overrides.MODES):\n"
        "        return m.__torch_function__(run, ())\n"
        "    return run()\n"
    ),
    "_C.py": "NODE = [None]\ndef _current_autograd_node():\n    return NODE[0]\n",
    "cuda/__init__.py": "from . import nvtx\n",
    "cuda/nvtx.py": "import torch\ndef range_push(m):\n    torch.PUSHED.append(m)\ndef range_pop():\n    pass\n",
    "overrides.py": (
        "MODES = []\nclass TorchFunctionMode:\n    def __enter__(self):\n        MODES.append(self)\n"
        "    def __exit__(self, *a):\n        MODES.remove(self)\n"
    ),
    "utils/__init__.py": "",
    "utils/_python_dispatch.py": (
        "MODES = []\nclass TorchDispatchMode:\n    def __enter__(self):\n        MODES.append(self)\n"
        "    def __exit__(self, *a):\n        MODES.remove(self)\n"
    ),
    "nn/__init__.py": "from . import modules\n",
    "nn/modules/__init__.py": "from . import module\n",
    "nn/modules/module.py": "def register_module_forward_pre_hook(h):\n    pass\ndef register_module_forward_hook(h):\n    pass\n",
    "autograd/__init__.py": "from . import profiler\n",
    "autograd/profiler.py": "import contextlib\ndef emit_nvtx(record_shapes=False):\n    return contextlib.nullcontext()\n",
}


def stand_in_torch(folder: Path) -> None:
    for rel, text in FAKE_TORCH.items():
        path = folder / "torch" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize("features", ["lines", "ops,lines"])
def test_runner_ranges_on_a_stand_in_torch(tmp_path, features):
    """The runner's whole script (modes, backward patch, ranges) under a stand-in torch: the forward kernel's range
    names the user's line, the backward kernel's range the node and the forward line that made it."""
    stand_in_torch(tmp_path)
    user = tmp_path / "user.py"
    user.write_text(
        "import torch\n"
        "x = torch.Tensor()\n"
        "y = torch.gelu(x)  # line: gelu\n"
        "y.backward()  # line: backward\n"
        "print('\\n'.join(torch.PUSHED))\n"
    )
    marks = marked_lines(user)
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_RUNNER, features, str(user)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    ranges = [parse_range(line) for line in proc.stdout.splitlines()]
    assert ranges == [
        {"file": str(user), "line": marks["gelu"], "function": "<module>", "backward_of": None},
        {"file": str(user), "line": marks["gelu"], "function": "<module>", "backward_of": "GeluBackward0"},
    ]


def test_sarif_places_a_kernel_at_its_python_line(analyzed):
    """In SARIF a kernel's alerts sit at the Python line that launched it (the user's file), ATen's lines related."""
    import json as _json

    from ncuadvisor.render.sarif import render_sarif, repository_paths, source_files

    res = analyzed("torch_cast_copy")
    k = next(k for k in res["kernels"] if k["findings"])
    k["python_line"] = {
        "file": "/w/model.py",
        "line": 42,
        "function": "f",
        "code": "y = x.float()",
        "backward_of": None,
    }
    typed = typed_result(res)
    assert "/w/model.py" in source_files(typed)
    log = _json.loads(render_sarif(typed, "/w", repository_paths(source_files(typed), ["/w"])))
    mine = [r for r in log["runs"][0]["results"] if r["properties"]["kernelDemangled"] == k["demangled"]]
    assert mine and all(
        r["locations"][0]["physicalLocation"]["region"]["startLine"] == 42
        and r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "model.py"
        and "Python line that launched" in r["message"]["text"]
        for r in mine
    ), mine[:1]


def test_runner_says_once_that_compiled_regions_run_eagerly_under_it(tmp_path):
    """Under --python-lines, torch.compile still returns the compiled callable (Dynamo itself declines to compile while
    the dispatch mode is active), and the runner says so once on stderr: the kernels profiled are eager ATen ones."""
    stand_in_torch(tmp_path)
    user = tmp_path / "user.py"
    user.write_text(
        "import torch\n"
        "f = torch.compile(torch.gelu)\n"
        "g = torch.compile(torch.gelu)\n"
        "y = f(torch.Tensor())\n"
        "print(f is torch.gelu, g is torch.gelu)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_RUNNER, "lines", str(user)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "True True"
    said = [ln for ln in proc.stderr.splitlines() if "torch.compile" in ln]
    assert len(said) == 1 and said[0].startswith("ncuadvisor: --python-lines") and "eager" in said[0]
