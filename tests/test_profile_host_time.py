"""`ncuadvisor profile --host-time`: one more run of the script, without ncu, under torch.profiler (the torch
runner's "hosttime" feature), whose trace is the result's host timeline.

Without a GPU: a stand-in torch whose profiler "records" a real trace of fixtures/host-trace-2026-12-02, and the
fake ncu (tests/fake_ncu) for the phases. The GPU test at the end profiles a small PyTorch training loop for real.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ncuadvisor.analysis.hosttrace import read_trace
from ncuadvisor.profile.hosttime import HOST_TRACE_ENV, host_argv, host_trace_path
from ncuadvisor.profile.target import TORCH_RUNNER, resolve_target
from tests.test_profile import fake_ncu_cli

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "fixtures" / "host-trace-2026-12-02"
FAKE_DIR = ROOT / "tests" / "fake_ncu"

# a stand-in torch: just what the runner imports, and a profiler whose trace is a real one ($STAND_IN_TRACE)
STAND_IN = {
    "__init__.py": "from . import cuda, profiler\n",
    "cuda/__init__.py": (
        "from . import nvtx\nSYNCED = []\ndef synchronize():\n    SYNCED.append(1)\n"
        "def is_initialized():\n    return False\n"  # the runner then measures no profiler cost
    ),
    "cuda/nvtx.py": "def range_push(m):\n    pass\ndef range_pop():\n    pass\n",
    "profiler.py": (
        "import lzma, os\n"
        "class ProfilerActivity:\n    CPU, CUDA = 'cpu', 'cuda'\n"
        "class profile:\n"
        "    def __init__(self, activities=()):\n"
        "        assert list(activities) == [ProfilerActivity.CUDA], activities\n"
        "    def __enter__(self):\n        return self\n"
        "    def __exit__(self, *a):\n        return False\n"
        "    def export_chrome_trace(self, path):\n"
        "        with open(path, 'wb') as f:\n"
        "            f.write(lzma.decompress(open(os.environ['STAND_IN_TRACE'], 'rb').read()))\n"
    ),
}


def stand_in_torch(folder: Path) -> Path:
    for rel, text in STAND_IN.items():
        path = folder / "torch" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def test_the_runner_traces_the_script_and_exports_at_its_end(tmp_path):
    """The runner's "hosttime" feature: the script runs (its arguments reach it), then the trace is exported to
    $NCUADVISOR_HOST_TRACE, also when the script ends with sys.exit."""
    stand_in_torch(tmp_path)
    user = tmp_path / "user.py"
    user.write_text("import sys\nprint('args', sys.argv[1:])\nsys.exit(0)\n")
    out = tmp_path / "trace.json"
    proc = subprocess.run(
        [sys.executable, "-c", TORCH_RUNNER, "hosttime", str(user), "--steps", "3"],
        capture_output=True,
        text=True,
        env=dict(
            os.environ,
            PYTHONPATH=str(tmp_path),
            STAND_IN_TRACE=str(TRACES / "trace_norm_chain_planted.json.xz"),
            **{HOST_TRACE_ENV: str(out)},
        ),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "args ['--steps', '3']" in proc.stdout
    assert len(read_trace(out).kernels) == 30


def test_the_host_run_has_none_of_the_ncu_runs_instrumentation(tmp_path, monkeypatch):
    """--host-time beside --python-lines: the ncu runs get the dispatch mode, the host run only the profiler (the
    mode's own host time would be in the timeline)."""
    monkeypatch.syspath_prepend(str(stand_in_torch(tmp_path / "standin")))
    script = tmp_path / "train.py"
    script.write_text("pass\n")
    target = resolve_target([str(script), "--epochs", "1"], python_lines=True, python="/usr/bin/python3")
    assert target.argv[3] == "lines"
    argv = host_argv(target)
    assert argv == ["/usr/bin/python3", "-c", TORCH_RUNNER, "hosttime", str(script), "--epochs", "1"]
    plain = resolve_target([str(script)], python="/usr/bin/python3")
    assert host_argv(plain)[3:] == ["hosttime", str(script)]


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """cli(*args) runs `ncuadvisor ...` in this process with the fake ncu first on PATH (test_profile's runner) and the
    stand-in torch importable (here and in the programs it runs); returns the exit code, stdout and stderr."""
    stand_in = stand_in_torch(tmp_path / "standin")
    monkeypatch.syspath_prepend(str(stand_in))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(stand_in), str(ROOT)]))
    runner = fake_ncu_cli(tmp_path, monkeypatch, capsys)

    def run(*args: str, trace: str = "trace_norm_chain_planted") -> tuple[int, str, str]:
        r = runner(*args, STAND_IN_TRACE=str(TRACES / f"{trace}.json.xz"))
        return r.code, r.out, r.err

    return run


@pytest.mark.slow
def test_profile_host_time_keeps_the_trace_and_says_why_it_does_not_fit(cli, tmp_path):
    """The fake ncu profiles the tiny CUDA launches of tests/fake_ncu; the host run "records" norm_chain's trace: a
    trace of another program, kept beside the reports, read, and not used, which the result says."""
    code, out, err = cli("profile", "--host-time", str(FAKE_DIR / "target.py"), "-o", "step.json")
    assert code == 0, err
    kept = tmp_path / "step.host-trace.json.gz"
    assert kept.is_file() and len(read_trace(kept).kernels) == 30
    res = json.loads((tmp_path / "step.json").read_text())
    h = res["host_timeline"]
    assert h["used"] is False and "none of its 30 kernel launches" in h["note"]
    assert any("timeline not used" in w for w in res["report"]["warnings"])
    assert "step.host-trace.json.gz" in res["report"]["profile"]["reports"]
    assert "host time: one plain run" in err
    # --no-keep removes it with the reports
    code, _, err = cli("profile", "--host-time", "--no-keep", "--force", str(FAKE_DIR / "target.py"), "-o", "s2.json")
    assert code == 0, err
    assert not (tmp_path / "s2.host-trace.json.gz").exists() and (tmp_path / "s2.json").is_file()


@pytest.mark.slow
def test_profile_host_time_never_overwrites_a_kept_trace(cli, tmp_path):
    (tmp_path / "step.host-trace.json.gz").write_bytes(gzip.compress(b"{}"))
    code, _, err = cli("profile", "--host-time", str(FAKE_DIR / "target.py"), "-o", "step.json")
    assert code == 2 and "step.host-trace.json.gz: already exists" in err and "Traceback" not in err


@pytest.mark.slow
def test_profile_host_time_refuses_what_it_cannot_run(cli, tmp_path):
    exe = tmp_path / "prog"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    code, _, err = cli("profile", "--host-time", str(exe), "-o", "x.json")
    assert code == 2 and "--host-time runs a Python script" in err and "report --host-trace" in err


def test_host_trace_path_sits_beside_the_reports(tmp_path):
    assert host_trace_path(tmp_path / "step") == tmp_path / "step.host-trace.json.gz"


# -- on the GPU ---------------------------------------------------------------------------------------------------

STEP_SCRIPT = """
import sys
import torch

torch.backends.cuda.matmul.allow_tf32 = False
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)).cuda()
opt = torch.optim.AdamW(model.parameters(), foreach=True)
x, y = torch.randn(4096, 512, device="cuda"), torch.randn(4096, 512, device="cuda")
for i in range(int(sys.argv[1])):
    ctx = torch.cuda.nvtx.range("step") if i == 2 else torch.autograd.profiler.record_function("warm")
    with ctx:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
"""


@pytest.mark.gpu
def test_gpu_profile_host_time_end_to_end(tmp_path):
    """Real ncu, real GPU, real torch: a small fp32 MLP training loop of 12 steps, ncu on step 2 (--nvtx-range step),
    the host run tracing all of them: the trace's kernels match the report's, its steps are counted, and the TF32
    entry gets a wall saving no larger than its GPU saving."""
    if shutil.which("ncu") is None:
        pytest.skip("needs ncu")
    pytest.importorskip("torch")
    script = tmp_path / "mlp_step.py"
    script.write_text(STEP_SCRIPT)
    out = tmp_path / "mlp.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ncuadvisor.cli import main; main()",
            "profile",
            "--host-time",
            "--nvtx-range",
            "step",
            "-o",
            str(out),
            str(script),
            "12",
        ],  # fmt: skip
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    h = res["host_timeline"]
    assert h["used"] is True, h
    assert 9 <= h["windows"] <= 13 and h["matched_launches"] > 0
    assert 0 < h["gpu_busy_share"] <= 1 and h["host_ns_per_launch"] > 0
    # the profiler's own cost per call, measured after the script on the same host (profile.host_runner)
    assert h["profiler_call_cost_ns"] is not None and 0 <= h["profiler_call_cost_ns"] < 50_000, h
    walls = [a for a in res["top_actions"] if a.get("estimated_wall_saving_ns") is not None]
    assert walls, res["top_actions"]
    for a in walls:
        assert -0.05 * a["estimated_saving_ns"] <= a["estimated_wall_saving_ns"] <= 1.05 * a["estimated_saving_ns"]
    assert (tmp_path / "mlp.host-trace.json.gz").is_file()
    assert "wall time" in proc.stdout
