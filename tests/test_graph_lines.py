"""`ncuadvisor profile --python-lines` on kernels replayed from a CUDA graph (torch.compile's mode="reduce-overhead",
`torch.cuda.graph` and `g.replay()`): the runner wraps each replay in a range naming the user's line that led to it,
and every kernel of the replayed graph, cuBLAS's included, takes that line unless a more precise one is known.

The frame walk runs here on real Python frames, the whole runner on a stand-in torch; the parsing and the placement
run on NVTX texts as ncu records them, with the kernel names, NVTX ranges and runner's file of the H200 run of
workloads/torch/compiled_lines.py under mode="reduce-overhead" (fixtures/compiled-lines-2026-12-01/run3). The last
test is marked `gpu`: it profiles that workload under CUDA graphs with the real ncu and PyTorch.
"""

from __future__ import annotations

import json
import os
import re
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
from synthetic import typed_result
from test_compiled_lines import run_stand_in
from test_python_lines import FAKE_TORCH, kernel_table, marked_lines, profile_python_lines

from ncuadvisor.profile.graph_replays import TORCH_RUNNER_GRAPHS
from ncuadvisor.profile.pylines import attach_python_lines, parse_range, place, read_kernel_lines, split_nvtx
from ncuadvisor.profile.target import TORCH_RUNNER_FRAMES

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "workloads" / "torch" / "compiled_lines.py"
RECORDED = ROOT / "fixtures" / "compiled-lines-2026-12-01" / "run3"


def runner_frames(skip_dirs: list[str]) -> dict:
    """The runner's frame walks and range texts, those of replays included, run here without torch."""
    ns: dict = {}
    exec(compile(TORCH_RUNNER_FRAMES + TORCH_RUNNER_GRAPHS, "<runner>", "exec"), ns)
    ns["_SKIP_DIRS"][:] = skip_dirs
    return ns


def test_replay_walk_passes_over_the_compiled_function_to_the_line_calling_it(tmp_path):
    """The runner's `_replay_where` on real frames: the replay is called from a "torch" file (skipped), inside a
    function whose frame is Dynamo's rewrite of it (skipped: its line is the function's first), called through an
    installed package (skipped): the line is the user's call. Without Dynamo's map the walk stops in the function, as
    `_where` (the walk of eager ops, which names the op's line inside a compiled function's graph break) does."""
    lib = tmp_path / "torchlib"
    lib.mkdir()
    (lib / "fake_graphs.py").write_text("import sys\ndef replay(where):\n    return where(sys._getframe(0))\n")
    installed = tmp_path / "venv" / "lib" / "site-packages"
    installed.mkdir(parents=True)
    (installed / "trainer_pkg.py").write_text("def fit(fn, where):\n    return fn(where)\n")
    user = tmp_path / "train_graphs.py"
    user.write_text(
        "import fake_graphs, trainer_pkg\n"
        "def block(where):\n"
        "    return fake_graphs.replay(where)  # line: inside\n"
        "def step(where):\n"
        "    return trainer_pkg.fit(block, where)  # line: call\n"
    )
    marks = marked_lines(user)
    sys.path[:0] = [str(lib), str(installed), str(tmp_path)]
    try:
        import train_graphs

        ns = runner_frames([str(lib) + os.sep])
        ns["_DYNAMO_UTILS"] = "ncuadvisor_test_dynamo_utils"
        assert train_graphs.step(ns["_replay_where"]) == f"{marks['inside']}:block:{user}"
        sys.modules["ncuadvisor_test_dynamo_utils"] = types.SimpleNamespace(
            orig_code_map={train_graphs.block.__code__: None}
        )
        where = train_graphs.step(ns["_replay_where"])
        eager = train_graphs.step(ns["_where"])
    finally:
        sys.path[:3] = []
        for name in ("train_graphs", "fake_graphs", "trainer_pkg", "ncuadvisor_test_dynamo_utils"):
            sys.modules.pop(name, None)
    assert where == f"{marks['call']}:step:{user}"
    assert eager == f"{marks['inside']}:block:{user}"
    assert parse_range(ns["_graph_range_text"](where)) == {
        "file": str(user),
        "line": marks["call"],
        "function": "step",
        "backward_of": None,
        "graph_replay": {"file": str(user), "line": marks["call"], "function": "step"},
    }
    bwd = parse_range(ns["_graph_range_text"](where, "torch::autograd::AccumulateGrad"))
    assert bwd is not None and bwd["backward_of"] == "torch::autograd::AccumulateGrad" and bwd["line"] == marks["call"]
    assert ns["_replay_where"](None) is None


def test_split_nvtx_inside_a_replay_keeps_the_innermost_line_and_the_replay():
    """A kernel of a replayed graph: the replay's range is its line; a range of its own inside the replay (innermost)
    is its line, the replay kept beside it; a replay inside an op's range is innermost and wins."""
    replay = {"file": "/w/c.py", "line": 37, "function": "step"}
    where, rest = split_nvtx("step > pygraph:37:step:/w/c.py > step_all_threads")
    assert where == {**replay, "backward_of": None, "graph_replay": replay} and rest == "step > step_all_threads"
    where, rest = split_nvtx("pygraph:37:step:/w/c.py > py:31:Block.forward:/w/c.py > step_all_threads")
    assert where is not None and (where["line"], where["graph_replay"]) == (31, replay)
    assert rest == "step_all_threads"
    where, _ = split_nvtx("py:12:train:/w/t.py > pygraphbwd:CompiledFunctionBackward:40:step:/w/t.py")
    assert where is not None and where["line"] == 40 and where["backward_of"] == "CompiledFunctionBackward"
    assert where["graph_replay"] == {"file": "/w/t.py", "line": 40, "function": "step"}
    assert "graph_replay" not in (split_nvtx("step > py:3:f:/w/a.py")[0] or {})
    assert parse_range("pygraphx:3:f:/w/a.py") is None and parse_range("graph:3:f:/w/a.py") is None


def recorded_kernels() -> list[dict]:
    """The kernel groups of the H200 run under mode="reduce-overhead" (run3, before replays had a range), from its
    table: share, name (the table cut names at 58 characters: a generated kernel's is made whole from that run's
    file of generated kernels), the line that run gave it ({file, line, function, backward_of} or None), and its NVTX
    text with the runner's ranges taken out."""
    generated = {r["kernel"] for r in json.loads((RECORDED / "graphs_kernel_lines.json").read_text())["kernels"]}
    rows = []
    for text in (RECORDED / "graphs_lines.txt").read_text().splitlines():
        m = re.match(r"\s*([\d.]+)% (\S+)\s+x\d+ (\S+?):(\w+) (\S+) bwd=(\S+) nvtx='([^']*)'$", text)
        assert m, text
        line = None
        if m[4] != "None":
            line = {"file": m[3], "line": int(m[4]), "function": m[5], "backward_of": None if m[6] == "None" else m[6]}
        whole = [name for name in generated if name.startswith(m[2])]
        rows.append(
            {"share": float(m[1]) / 100, "name": whole[0] if len(whole) == 1 else m[2], "line": line, "nvtx": m[7]}
        )
    return rows


def with_range(nvtx: str, runner_range: str) -> str:
    """An NVTX text as ncu records it with one more range of the runner: a push/pop range of the thread it was
    pushed on, after the script's own push/pop range ("step", main thread), before its start/end range."""
    parts = nvtx.split(" > ")
    return " > ".join([*parts[:-1], runner_range, parts[-1]] if nvtx.startswith("step >") else [runner_range, *parts])


def test_recorded_reduce_overhead_run_is_placed_whole_with_replay_ranges(typed):
    """The kernels of the H200 run under CUDA graphs, each launch's NVTX text as ncu records it once the runner
    wraps the replays (the replay's range pushed on the thread that replays: the forward's on the main thread, inside
    the script's "step" range; the backward's on autograd's thread, as `pygraphbwd:CompiledFunctionBackward` at the
    `.backward()` call; the eager kernels' ranges as that run recorded them), and that run's file of generated
    kernels: every kernel is placed, where run3 left the cuBLAS kernels inside the graphs and a reused Triton kernel
    (over half of the GPU time) with no line. A generated kernel keeps its own line from the file, the replay beside
    it; a cuBLAS kernel takes the replay's line; an eager kernel keeps its line and is not marked replayed."""
    rows = recorded_kernels()
    file = "/work/main/workloads/torch/compiled_lines.py"  # where run3 ran the workload
    marks = marked_lines(SCRIPT)
    by_name = read_kernel_lines(RECORDED / "graphs_kernel_lines.json")
    forward = f"pygraph:{marks['call']}:step:{file}"
    backward = f"pygraphbwd:CompiledFunctionBackward:{marks['backward']}:step:{file}"
    base = typed("torch_cast_copy").kernels[0]
    kernels, eager = [], {}
    for i, row in enumerate(rows):
        nvtx, line = row["nvtx"], row["line"]
        if row["name"].startswith("triton_") or line is None:  # a kernel of the graphs: no range of its own
            nvtx = with_range(nvtx, forward if nvtx.startswith("step >") else backward)
        else:  # an eager kernel, at the line run3 gave it
            eager[i] = line
            node = line["backward_of"]
            own = f"pybwd:{node}:" if node else "py:"
            nvtx = with_range(nvtx, f"{own}{line['line']}:{line['function']}:{file}")
        kernels.append(replace(base, id=i, name=row["name"], nvtx=nvtx, python_line=None))
    share = {i: row["share"] for i, row in enumerate(rows)}
    unplaced_before = [i for i, row in enumerate(rows) if row["line"] is None]
    assert sum(share[i] for i in unplaced_before) > 0.5
    assert attach_python_lines(kernels, by_name) == len(kernels)
    assert not any("py" in (k.nvtx or "") for k in kernels)
    assert all(k.nvtx == rows[k.id]["nvtx"] for k in kernels)  # the script's own ranges, as they were
    cublas = [k for k in kernels if k.id in unplaced_before and not k.name.startswith("triton_")]
    assert {k.name for k in cublas} >= {"Kernel2", "splitKreduce_kernel"}
    for k in cublas:
        pl = k.python_line
        assert pl.graph_replay is not None and (pl.line, pl.function) == (pl.graph_replay.line, "step")
        assert pl.line == (marks["backward"] if pl.backward_of else marks["call"])
    assert {k.python_line.backward_of for k in cublas} == {None, "CompiledFunctionBackward"}
    triton = {k.name: k.python_line for k in kernels if k.name.startswith("triton_")}
    assert triton and all(pl.graph_replay is not None for pl in triton.values())
    for name, pl in triton.items():
        if name in by_name:  # its own line, from Inductor's provenance
            assert (pl.line, pl.backward_of) == (by_name[name]["line"], by_name[name]["backward_of"]), name
            assert pl.graph_replay.line in (marks["call"], marks["backward"]) and pl.line != pl.graph_replay.line
        else:  # a name Inductor gave kernels of two lines: the replay's
            assert name == "triton_per_fused_sum_1" and pl.line == pl.graph_replay.line == marks["backward"]
    for i, line in eager.items():
        pl = kernels[i].python_line
        assert pl.graph_replay is None and (pl.line, pl.backward_of) == (line["line"], line["backward_of"])


def test_place_prefers_a_generated_kernels_own_line_only_inside_a_replay():
    """By name: a launch with no range of the runner, or inside a replay (its line kept as the replay); a launch with
    an op's range of its own keeps it."""
    own = {"file": "/w/m.py", "line": 31, "function": "Block.forward", "backward_of": None}
    by_name = {"triton_poi_fused_0": own}
    replay = {"file": "/w/m.py", "line": 37, "function": "step"}
    assert place("step", "triton_poi_fused_0", by_name) == own
    assert place("step > pygraph:37:step:/w/m.py", "triton_poi_fused_0", by_name) == {**own, "graph_replay": replay}
    assert place("py:33:f:/w/m.py", "triton_poi_fused_0", by_name)["line"] == 33
    assert place("step > pygraph:37:step:/w/m.py", "gemm", by_name) == {
        **replay,
        "backward_of": None,
        "graph_replay": replay,
    }
    assert place("step", "gemm", by_name) is None and place("", "gemm") is None


def test_a_replayed_kernel_reads_back_and_shows_it_was_replayed(analyzed, tmp_path):
    """The replay's line is part of the result (it reads back, and validates against the JSON Schema); every
    renderer says the kernel was replayed from a CUDA graph, and where when the kernel has a line of its own."""
    import io

    from rich.console import Console

    from ncuadvisor.render.html import render_html
    from ncuadvisor.render.markdown import render_markdown
    from ncuadvisor.render.sarif import render_sarif, repository_paths, source_files
    from ncuadvisor.render.terminal import render_terminal
    from ncuadvisor.result import KernelEntry
    from ncuadvisor.saved.validate import load_saved

    res = analyzed("torch_cast_copy")
    first = next(a for a in res["top_actions"] if a.get("kernel_id"))
    k = next(k for k in res["kernels"] if k["id"] == first["kernel_id"])
    replay = {"file": "/w/train.py", "line": 42, "function": "step"}
    k["python_line"] = {**replay, "code": "out = model(x)", "backward_of": None, "graph_replay": replay}
    back = KernelEntry.from_dict(k)
    assert back.python_line is not None and back.python_line.graph_replay is not None
    assert back.to_dict()["python_line"]["graph_replay"] == replay
    saved = tmp_path / "graphs.json"
    saved.write_text(json.dumps(res))
    checked = load_saved(saved)
    assert any(x.python_line and x.python_line.graph_replay for x in checked.kernels)

    here = "train.py:42, replayed from a CUDA graph"
    assert f'<span class="mono" title="/w/train.py">{here}</span>' in render_html(typed_result(res))
    md = render_markdown(typed_result(res), max_chars=10**7)
    assert "<code>{}</code>".format(here.replace(":", "\\:")) in md
    out = io.StringIO()
    render_terminal(typed_result(res), console=Console(file=out, width=200, color_system=None))
    assert any(here in line and "out = model(x)" in line for line in out.getvalue().splitlines())
    typed = typed_result(res)
    log = json.loads(render_sarif(typed, "/w", repository_paths(source_files(typed), ["/w"])))
    texts = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert any("Python line that replayed the CUDA graph the kernel ran in" in t for t in texts), texts[:1]

    # a generated kernel: its own line (in backward), the replay's elsewhere
    k["python_line"] = {
        "file": "/w/model.py",
        "line": 31,
        "function": "Block.forward",
        "code": "h = self.norm(x)",
        "backward_of": "CompiledFunctionBackward",
        "graph_replay": {"file": "/w/train.py", "line": 40, "function": "step"},
    }
    there = "model.py:31, backward of CompiledFunctionBackward, replayed from a CUDA graph at train.py:40"
    assert there in render_html(typed_result(res))
    typed = typed_result(res)
    log = json.loads(render_sarif(typed, "/w", repository_paths(source_files(typed), ["/w"])))
    texts = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert any("launched the kernel (replayed from a CUDA graph at train.py:40)" in t for t in texts), texts[:1]


# The stand-in torch of tests/test_python_lines.py with a CUDA graph and a compile that replays one the way cudagraph
# trees do: from torch's code, inside the frame of the compiled function (Dynamo's rewrite of it, in Dynamo's map
# when the stand-in has Dynamo), its backward replaying another with the node CompiledFunctionBackward current.
FAKE_GRAPHS = {
    **FAKE_TORCH,
    "__init__.py": FAKE_TORCH["__init__.py"]
    .replace("def compile(fn=None, **kw):\n    return fn\n", "from ._fake_graphs import compile, run_graph\n")
    .replace("            _kernel('bwd')\n", "            self.grad_fn.run()\n"),
    "cuda/__init__.py": "from . import nvtx\nfrom .graphs import CUDAGraph\n",
    "cuda/graphs.py": "import torch\nclass CUDAGraph:\n    def replay(self):\n        torch.PUSHED.append('replayed')\n",
    "_fake_graphs.py": (
        "import torch\n"
        "def compile(fn=None, mode=None, **kw):\n"
        "    try:\n"
        "        from torch._dynamo import utils\n"
        "        utils.orig_code_map[fn.__code__] = fn.__code__\n"
        "    except ImportError:\n"
        "        pass\n"
        "    return lambda *args: fn(*args)\n"
        "def run_graph(x):\n"
        "    torch.cuda.CUDAGraph().replay()\n"
        "    out = torch.Tensor()\n"
        "    out.grad_fn = torch.Node()\n"
        "    out.grad_fn.name = lambda: 'CompiledFunctionBackward'\n"
        "    out.grad_fn.run = lambda: torch.cuda.CUDAGraph().replay()\n"
        "    return out\n"
    ),
}
DYNAMO = {"_dynamo/__init__.py": "from . import utils\n", "_dynamo/utils.py": "orig_code_map = {}\n"}


@pytest.mark.parametrize("dynamo", [True, False])
def test_runner_names_the_line_of_each_replay_on_a_stand_in_torch(tmp_path, dynamo):
    """The whole runner under a stand-in torch: a compiled function's graph replays at the line calling it (with
    Dynamo's map; without it, the walk stops at the line inside the function that replayed), its backward graph at
    the .backward() call with the node CompiledFunctionBackward, a user's own g.replay() at its line. Each range is
    pushed just before the replay."""
    script = (
        "import torch\n"
        "def block(x):\n"
        "    return torch.run_graph(x)  # line: inside\n"
        "f = torch.compile(block, mode='reduce-overhead')\n"
        "y = f(torch.Tensor())  # line: call\n"
        "y.backward()  # line: backward\n"
        "g = torch.cuda.CUDAGraph()\n"
        "g.replay()  # line: replay\n"
        "print('\\n'.join(torch.PUSHED))\n"
    )
    proc, user, marks = run_stand_in(tmp_path, {**FAKE_GRAPHS, **(DYNAMO if dynamo else {})}, script)
    assert proc.returncode == 0, proc.stderr
    pushed = proc.stdout.splitlines()
    assert pushed[1::2] == ["replayed"] * 3, pushed
    ranges = [parse_range(text) for text in pushed[0::2]]
    assert [r and (r["line"], r["function"], r["backward_of"], r["graph_replay"]["line"]) for r in ranges] == [
        (marks["call"], "<module>", None, marks["call"])
        if dynamo
        else (marks["inside"], "block", None, marks["inside"]),
        (marks["backward"], "<module>", "CompiledFunctionBackward", marks["backward"]),
        (marks["replay"], "<module>", None, marks["replay"]),
    ]


# -- on the GPU machine -------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_kernels_replayed_from_cuda_graphs_carry_the_replay_line(tmp_path):
    """Real ncu, GPU, PyTorch and Inductor: workloads/torch/compiled_lines.py under mode="reduce-overhead" (cudagraph
    trees: three measured steps, recorded and replayed). Every kernel is placed; the kernels of the graphs, cuBLAS's
    included, say they were replayed, the forward graph's at the line calling the compiled block; the generated
    kernels keep their own lines in the block."""
    pytest.importorskip("torch")
    out = tmp_path / "graphs.json"
    side = tmp_path / "kernel_lines.json"
    proc = profile_python_lines(
        tmp_path,
        SCRIPT,
        out,
        steps=3,
        timeout=500,
        args=["--mode", "reduce-overhead"],
        NCUADVISOR_KERNEL_LINES=str(side),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    print(kernel_table(res))
    kernels = res["kernels"]
    placed = sum(k["time_share"] for k in kernels if k.get("python_line"))
    replayed = [k for k in kernels if (k.get("python_line") or {}).get("graph_replay")]
    print(f"placed: {placed:.1%} of GPU time; replayed from CUDA graphs: {sum(k['time_share'] for k in replayed):.1%}")
    marks = marked_lines(SCRIPT)
    assert placed > 0.99, [k["name"] for k in kernels if not k.get("python_line")]
    gemm = [k for k in replayed if "gemm" in k["name"].lower()]
    assert gemm, [k["name"] for k in replayed]
    fwd = [k["python_line"] for k in gemm if not k["python_line"]["backward_of"]]
    assert fwd and all(p["graph_replay"]["line"] == marks["call"] for p in fwd), fwd
    triton = [k["python_line"] for k in kernels if k["name"].startswith("triton_")]
    assert triton and all(p.get("graph_replay") for p in triton), triton
    block = {marks["norm"], marks["gelu"], marks["residual"]}
    assert any(p["line"] in block for p in triton), triton
