"""workloads/torch/planted.py's single-fix variants (conv_nchw: TF32 alone, channels_last alone) and the device part
that times them (benchmarks/device/tf32_twin.sh), checked as far as a machine without a GPU allows: the argument
checks, the saving lines, the accuracy table's reading of them, and the script's flow with ncu and nvidia-smi
stubbed."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "workloads" / "torch" / "planted.py"


def _module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def planted():
    return _module(PLANTED, "planted")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PLANTED), *args], capture_output=True, text=True, timeout=120)


def test_help_names_the_single_fix_variants():
    p = _run("--help")
    assert p.returncode == 0 and "conv_nchw: +tf32+channels_last" in p.stdout


def test_variants_are_checked_per_case(planted):
    cases = planted.parse_cases("conv_nchw:planted+twin+tf32+channels_last,fp32_matmul", ["planted", "twin"])
    assert cases == [("conv_nchw", ["planted", "twin", "tf32", "channels_last"]), ("fp32_matmul", ["planted", "twin"])]
    for spec, words in (("fp32_matmul:tf32", "unknown variant 'tf32' of fp32_matmul"), ("convo", "unknown case")):
        p = _run("--bench", "--case", spec)
        assert p.returncode != 0 and words in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_a_fix_alone_is_measured_against_the_planted_code(planted):
    # the numbers of fixtures/planted/bench_torch.jsonl: planted 285.376 µs, the twin (both fixes) 68.096 µs
    line = planted.fix_saving("conv_nchw", "tf32", 285.376, 68.096)
    assert line == {"case": "conv_nchw", "fix": "tf32", "saving_us": 217.28, "saving_pct": 76.14}
    assert "variant" not in line  # the accuracy table reads per-variant medians from lines with a "variant"


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch installed: the case would run")
def test_running_a_case_without_pytorch_is_one_line():
    p = _run("--bench", "--case", "conv_nchw:planted+tf32")
    assert p.returncode != 0 and p.stderr.strip() == "planted.py: needs PyTorch with a CUDA GPU (no torch module)"


def test_accuracy_compares_an_estimate_with_its_own_fix(tmp_path):
    accuracy = _module(ROOT / "benchmarks" / "accuracy.py", "accuracy")
    lines = [
        {"case": "conv_nchw", "variant": "planted", "median_us": 285.4},
        {"case": "conv_nchw", "saving_us": 217.3, "saving_pct": 76.1},
        {"case": "conv_nchw", "fix": "tf32", "saving_us": 150.0, "saving_pct": 52.6},
        {"case": "conv_nchw", "fix": "channels_last", "saving_us": -3.0, "saving_pct": -1.1},
    ]
    (tmp_path / "twins").mkdir()
    (tmp_path / "twins" / "bench_conv_fixes.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    fixes = accuracy._fix_savings(tmp_path)
    assert fixes == {("conv_nchw", "tf32"): 150.0, ("conv_nchw", "channels_last"): -3.0}
    assert ("conv_nchw", accuracy.RULE_FIX["TEN002"]) in fixes


def test_device_part_runs_its_steps_within_budget(tmp_path):
    """The script with ncu and nvidia-smi stubbed: both steps run, each says its exit code, and the capture is packed."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "nvidia-smi").write_text("#!/bin/bash\necho stub-gpu\n")
    (stubs / "ncu").write_text(
        '#!/bin/bash\n[ "$1" = --version ] && { echo stub-ncu; exit 0; }\n'
        'for a in "$@"; do [ "$prev" = -o ] && echo report > "$a.ncu-rep"; prev=$a; done\n'
        'echo "==PROF== Profiling stub"\n'
    )
    for f in stubs.iterdir():
        f.chmod(0o755)
    out = tmp_path / "out"
    env = dict(
        os.environ, PATH=f"{stubs}{os.pathsep}{os.environ['PATH']}", OUT=str(out), WORK=str(tmp_path), BUDGET="60"
    )
    p = subprocess.run(
        ["bash", "benchmarks/device/tf32_twin.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr
    steps = (out / "steps.log").read_text()
    assert "bench rc=" in steps and "ncu rc=0" in steps and steps.rstrip().endswith("done")
    assert (out / "bench_conv_fixes.log").exists() and (out / "torch_conv_fixes.ncu-rep.xz").stat().st_size > 0


def test_accuracy_scores_matmul_naive_against_the_twin_of_its_cards_fix():
    """matmul_naive's TIL001 estimate is scored against matmul_regtile (the card's two levels, alone), read from the
    H100 report and bench of fixtures/regtile-2026-12-06, not against flaws' one-level matmul_tiled (H200)."""
    accuracy = _module(ROOT / "benchmarks" / "accuracy.py", "accuracy")
    alone = accuracy.FIX_ALONE_TWINS[("flaws.ncu-rep.xz", "matmul_naive")]
    assert alone["twin"] == "matmul_regtile" and "H100" in (alone["report"].parent / "env.txt").read_text()
    estimated, measured = accuracy.fix_alone_pair(alone, "matmul_naive", "tiling")
    assert measured == pytest.approx(2364.672 / 643.2)  # bench_regtile.jsonl's medians
    assert estimated == pytest.approx(4.61, abs=0.01)  # TIL001 on matmul_naive in the H100 report
    assert abs(estimated - measured) / measured <= 0.30
    # a first finding of another category scores no estimate (1×), which misses
    estimated_wrong, _ = accuracy.fix_alone_pair(alone, "matmul_naive", "coalescing")
    assert estimated_wrong == 1.0
