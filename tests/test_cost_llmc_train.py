"""llm.c's GPT-2 training program measured side by side (benchmarks/device/cost_llmc_train.sh): its inputs, written
with nothing downloaded (workloads/exam/llm.c/train_inputs.py), in the formats the program reads; and the device
script dry-run end to end on the fake ncu, a stub standing in for the built program (this machine has no GPU), so that
the one device call spent on it does not fail on a bug of the script."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INPUTS = ROOT / "workloads" / "exam" / "llm.c" / "train_inputs.py"
FAKE = ROOT / "tests" / "fake_ncu"


def n_parameters(L: int, C: int = 384, maxT: int = 1024, Vp: int = 50304) -> int:
    """fill_in_parameter_sizes in train_gpt2.cu, summed."""
    return Vp * C + maxT * C + L * (12 * C * C + 13 * C) + 2 * C


# The stub: checks the arguments the script passes and the files they name as the program would read them (the
# data loader's and gpt2_build_from_checkpoint's header checks, the file sizes), then exits 0, or 3 saying what is off.
STUB = f"""#!{sys.executable}
import sys
import numpy as np
a = sys.argv[1:]
opt = dict(zip(a[::2], a[1::2]))
def fail(msg):
    print("stub train_gpt2cu: " + msg)
    sys.exit(3)
if len(a) % 2 or any(not k.startswith("-") or len(k) not in (2, 3) for k in a[::2]):
    fail("arguments the program's parser refuses: " + " ".join(a))
for k in ("-i", "-j"):
    h = np.fromfile(opt[k], dtype="<i4", count=256)
    tok = np.fromfile(opt[k], dtype="<u2", offset=1024)
    if h[0] != 20240520 or h[1] != 1 or h[2] != tok.size or tok.size < 4 * 256 + 1 or tok.max() >= 50257:
        fail("bad token shard " + opt[k])
h = np.fromfile(opt["-e"], dtype="<i4", count=256)
if list(h[:8]) != [20240326, 5, 1024, 50257, 3, 6, 384, 50304] or not opt["-e"].endswith(".bin"):
    fail("bad model file " + opt["-e"])
print("stub train_gpt2cu: ok " + " ".join(a))
"""


def test_train_inputs_formats_and_no_overwrite(tmp_path):
    """The two shards and the model file in the formats train_gpt2.cu reads; a second run refuses to overwrite them
    (one line, exit code 2), the files unchanged."""
    import numpy as np  # here, in the test's forked child: numpy's BLAS threads must not start in the test process

    out = tmp_path / "data"
    p = subprocess.run(
        [sys.executable, str(INPUTS), str(out), "--layers", "1", "--tokens", "4097"],
        text=True,
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    for name, n in (("train_000000.bin", 4097), ("val_000000.bin", 1024)):
        h = np.fromfile(out / name, dtype="<i4", count=256)
        tok = np.fromfile(out / name, dtype="<u2", offset=1024)
        assert (h[0], h[1], h[2], tok.size) == (20240520, 1, n, n) and tok.max() < 50257 and h[3:].sum() == 0
    model = out / "model_d1_bf16.bin"
    h = np.fromfile(model, dtype="<i4", count=256)
    assert list(h[:8]) == [20240326, 5, 1024, 50257, 1, 6, 384, 50304] and h[8:].sum() == 0
    assert model.stat().st_size == 1024 + 2 * n_parameters(1)
    # bf16 values: wte ~N(0, 0.02) with the padded rows 0; ln1w 1 (bf16 0x3F80), ln1b 0
    w = np.fromfile(model, dtype="<u2", offset=1024).astype(np.uint32) << 16
    f = w.view(np.float32)
    C, V, Vp = 384, 50257, 50304
    assert 0.019 < f[: V * C].std() < 0.021 and not f[V * C : Vp * C].any()
    ln1 = Vp * C + 1024 * C
    assert (f[ln1 : ln1 + C] == 1).all() and not f[ln1 + C : ln1 + 2 * C].any()
    before = model.read_bytes()
    p = subprocess.run([sys.executable, str(INPUTS), str(out), "--layers", "1"], text=True, capture_output=True)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1 and "not overwriting" in p.stderr
    assert model.read_bytes() == before


@pytest.mark.slow
def test_cost_llmc_train_dry_run(tmp_path):
    """The device script end to end on the fake ncu (its captures stand for the program's: 25 launches), the stub
    for the built program: the inputs written, the four runs made on the program with the script's arguments, the
    range "Train step 1/" passed to `profile` and to the full set, the files within the device tool's limits, and
    the table printed from them."""
    stub = tmp_path / "train_gpt2cu"
    stub.write_text(STUB)
    stub.chmod(0o755)
    fake = dict(FAKE_NCU_PHASE1="torch_eager", FAKE_NCU_PHASE2="torch_eager", FAKE_NCU_FULL="torch_eager")
    env = dict(
        os.environ,
        PATH=f"{FAKE}{os.pathsep}{os.environ.get('PATH', '')}",
        OUT=str(tmp_path / "out"),
        BUDGET="570",
        WORK=str(tmp_path / "w"),
        LLMC_BIN=str(stub),
        FAKE_NCU_ARGV_LOG=str(tmp_path / "argv"),
        **fake,
    )
    p = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "device" / "cost_llmc_train.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    out = tmp_path / "out"
    files = sorted(f.name for f in out.iterdir())
    assert files == [
        "cost_llmc_train.json",
        "env.txt",
        "full_llmc_train.json.xz",
        "logs_llmc_train.tar.xz",
        "profile_llmc_train.json.xz",
        "steps.log",
    ]
    assert all((out / f).stat().st_size < 16e6 for f in files)
    res = json.loads((out / "cost_llmc_train.json").read_text())
    data = tmp_path / "w" / "data_d3"
    # the script's arguments (tmp_path has no spaces)
    args = f"-i {data}/train_000000.bin -j {data}/val_000000.bin -e {data}/model_d3_bf16.bin".split()
    args += "-b 4 -t 256 -x 2 -v 100 -m 0 -s 0 -h 0 -n 0".split()
    # the program as it is (no Python in front), every run on it with these arguments; the stub passed every check
    assert res["program"] == [str(stub), *args] and res["nvtx_include"] == "Train step 1/"
    assert all(res[k]["rc"] == 0 and res[k]["wall_s"] > 0 for k in ("plain", "profile", "full", "report"))
    calls = [json.loads(line) for line in (tmp_path / "argv").read_text().splitlines()]
    runs = [c for c in calls if "--version" not in c]
    assert len(runs) >= 3 and all(c[-len(args) - 1 :] == [str(stub), *args] for c in runs)
    assert all(c[c.index("--nvtx-include") + 1] == "Train step 1/" for c in runs)
    full = next(c for c in runs if "full" in c)
    assert "--launch-count" not in full and "--import-source" in full and "--nvtx" in full
    assert res["launches_in_range"] == res["full"]["launches_profiled"] == res["full"]["report_results"] == 25
    for log in ("plain.log", "profile.log", "full.log"):  # the program's own output, under ncu too
        assert "stub train_gpt2cu: ok -i" in (tmp_path / "w" / "cost" / log).read_text(), log
    row = next(line for line in p.stdout.splitlines() if line.startswith("| llmc_train |"))
    assert "| 25 |" in row
    # the model file of 3 layers, in full
    assert (data / "model_d3_bf16.bin").stat().st_size == 1024 + 2 * n_parameters(3)
