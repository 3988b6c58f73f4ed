"""benchmarks/profile_cost.py end to end on the fake ncu (real reports captured on the H200), so that a device call
spent on it does not fail on a bug of the script: phase 1 is the training step's duration-only capture, phase 2 and
the naive full run are the forward step's full-section report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# phase 1: the training step's duration-only capture; phase 2 and the full set: the forward step's full-section report
TRAIN_ON_EAGER = dict(
    FAKE_NCU_PHASE1="torch_train_phase1_all", FAKE_NCU_PHASE2="torch_eager", FAKE_NCU_FULL="torch_eager"
)


def profile_cost(tmp_path: Path, args: list[str], **fake: str) -> dict:
    """benchmarks/profile_cost.py with `args` (and --out, --json under tmp_path) on the fake ncu, whose FAKE_NCU_*
    settings are `fake`; its JSON result, after asserting it ran to the end."""
    env = dict(os.environ, PATH=f"{ROOT / 'tests' / 'fake_ncu'}{os.pathsep}{os.environ.get('PATH', '')}", **fake)
    out = tmp_path / "pc.json"
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "profile_cost.py"), *args]
        + ["--out", str(tmp_path / "work"), "--json", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return json.loads(out.read_text())


def test_profile_cost_on_the_fake_ncu(tmp_path):
    args = [
        "--train",
        "--workload",
        str(ROOT / "tests" / "fake_ncu" / "target.py"),
        "--workload-args",
        "",
        "--naive",
        "every",
    ]
    res = profile_cost(tmp_path, args, **TRAIN_ON_EAGER)
    assert res["profile"]["rc"] == 0 and res["naive"]["rc"] == 0 and res["naive"]["mode"] == "every"
    rows = {(r["kernel"], r["grid"]): r for r in res["comparison"]}
    copy = rows[("elementwise_kernel", "(8192, 1, 1)")]
    # the copy's first finding is PYT001 on both sides now that the deep analysis sees phase 1's time share
    assert copy["ours"] == copy["naive"] == copy["naive_first"] == "PYT001" and copy["agree_same_launch"]
    assert copy["ours_variants_timed_only"]  # its 28 µs launches: timed in phase 1, not profiled
    assert copy["naive_findings_by_time"]["PYT001"] == 1.0
    for key in ("agreement", "agreement_same_launch", "agreement_within_launches"):
        assert len(res[key]) == 2 and res[key][1] == len(res["comparison"])
    assert res["naive_launch_choice"]["results"] == 25
    assert (tmp_path / "work" / "profile.ncu-rep").exists() and (tmp_path / "work" / "naive.ncu-rep").exists()


def test_profile_cost_full_set_on_the_same_launches(tmp_path):
    """Every launch does not fit the budget: the full set runs on the launches phase 2 profiled (their mangled
    names, one launch per configuration), is compared in the same merged view, and every launch is extrapolated."""
    log = tmp_path / "argv.jsonl"
    args = [
        "--train",
        "--budget-s",
        "300",
        "--workload",
        str(ROOT / "tests" / "fake_ncu" / "target.py"),
        "--workload-args",
        "",
    ]
    res = profile_cost(tmp_path, args, **TRAIN_ON_EAGER, FAKE_NCU_ARGV_LOG=str(log))
    naive = res["naive"]
    assert naive["mode"] == "same-launches" and naive["rc"] == 0 and naive["extrapolated"]
    call = next(json.loads(line) for line in log.read_text().splitlines() if '"full"' in line)
    assert call[call.index("--filter-mode") + 1] == "per-launch-config" and "--kernel-name" in call
    assert (
        naive["estimate"]["launches"] == 229
        and naive["wall_s_every_launch"] == naive["estimate"][naive["estimate"]["used"]]
    )
    assert res["comparison"] and res["agreement"][1] == len(res["comparison"])
    assert "ours" in res["program_findings"] and isinstance(res["program_findings_same"], bool)


def test_profile_cost_on_a_cuda_binary(tmp_path):
    """--binary: an executable run as it is (no Python, no NVTX range), every launch profiled by the naive run; the
    fake ncu stands for the tiny CUDA program's real captures (phase 1: tiny_phase1, sections: tiny_sections)."""
    prog = tmp_path / "prog"
    prog.write_text('#!/bin/sh\necho "prog $*"\n')
    prog.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    res = profile_cost(tmp_path, ["--binary", str(prog), "--binary-args", "--steps 2"], FAKE_NCU_ARGV_LOG=str(log))
    assert res["plain"]["cmd"] == [str(prog), "--steps", "2"] and res["plain"]["rc"] == 0
    assert res["profile"]["rc"] == 0 and res["naive"]["rc"] == 0
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    naive = next(c for c in calls if "full" in c)
    assert "--nvtx" not in naive and naive[-3:] == [str(prog), "--steps", "2"]
    assert all(c[-3:] == [str(prog), "--steps", "2"] for c in calls if "--version" not in c)
    assert res["comparison"] and res["agreement"][1] == len(res["comparison"])


def test_wall_accuracy_predicts_the_fixed_loops():
    """benchmarks/wall_accuracy.py on the fixtures: the planted traces replayed with the fix's durations give the
    fixed loops (timed without the profiler) within 3% for fp32_matmul and norm_chain; the training step, whose host
    issues more calls with TF32, within 15% (-11% on 2026-12-02); the PyTorch table's column says the same."""
    from wall_accuracy import case_rows, wall_column  # benchmarks/ is on sys.path (tests/conftest.py)

    rows = {r["case"]: r for r in case_rows()}
    assert set(rows) == {"train_step", "fp32_matmul", "norm_chain"}
    for case in ("fp32_matmul", "norm_chain"):
        r = rows[case]
        assert abs(r["predicted_fix_durations_us"] / r["fixed_loop_us"] - 1) < 0.03, r
    t = rows["train_step"]
    assert abs(t["predicted_us"] / t["fixed_loop_us"] - 1) < 0.15 and t["wall_saving_us"] < 0.1 * t["gpu_saving_us"]
    assert wall_column("fp32_matmul", list(rows.values())).endswith("(+1%)")  # TF32 at the library efficiency


# the side-by-side harness (`profile_cost.py measure`, then `table`): the training step's range is 25 launches
# (torch_eager's capture stands for every phase), or 229 (its duration-only capture) of which the full set holds 25
SAME_RANGE = dict(FAKE_NCU_PHASE1="torch_eager", FAKE_NCU_PHASE2="torch_eager", FAKE_NCU_FULL="torch_eager")
WIDER_RANGE = dict(FAKE_NCU_PHASE1="torch_train_phase1_all", FAKE_NCU_PHASE2="torch_eager", FAKE_NCU_FULL="torch_eager")


def side_by_side(tmp_path: Path, *args: str, script: str | None = None, **fake: str) -> subprocess.CompletedProcess:
    """One program measured as a GPU session measures it, on the fake ncu: `profile_cost.py measure` (or a device
    script, `script`, with the fake program as $PROGRAM), its files in tmp_path/out."""
    env = dict(os.environ, PATH=f"{ROOT / 'tests' / 'fake_ncu'}{os.pathsep}{os.environ.get('PATH', '')}", **fake)
    target = str(ROOT / "tests" / "fake_ncu" / "target.py")
    if script:
        env.update(OUT=str(tmp_path / "out"), BUDGET="570", PROGRAM=f"{target} --steps 3")
        cmd = ["bash", str(ROOT / "benchmarks" / "device" / script)]
    else:
        cmd = [sys.executable, str(ROOT / "benchmarks" / "profile_cost.py"), "measure", "--name", "step"]
        cmd += ["--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), *args, "--", target, "--steps", "3"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)


def table(*runs: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "profile_cost.py"), "table", *map(str, runs)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_side_by_side_device_script_and_table(tmp_path):
    """The device script's logic end to end: the four runs, their files within the device tool's limits, and the
    table and agreement printed from them."""
    p = side_by_side(tmp_path, script="cost_gpt2_train.sh", **SAME_RANGE)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = tmp_path / "out"
    files = sorted(f.name for f in out.iterdir())
    assert files == [
        "cost_gpt2_train.json",
        "env.txt",
        "full_gpt2_train.json.xz",
        "logs_gpt2_train.tar.xz",
        "profile_gpt2_train.json.xz",
        "steps.log",
    ]
    assert all((out / f).stat().st_size < 16e6 for f in files)
    res = json.loads((out / "cost_gpt2_train.json").read_text())
    assert res["launches_in_range"] == res["full"]["launches_profiled"] == res["full"]["report_results"] == 25
    assert res["full"]["passes"]["median"] == 36 and res["profile"]["phases"][0]["launches_profiled"] == 25
    full_cmd = res["full"]["cmd"]
    for flag in ("--set full", "--import-source yes", "--clock-control none", "--nvtx-include step_all_threads"):
        assert flag in " ".join(full_cmd)
    assert "--launch-count" not in full_cmd and "-c" not in full_cmd
    assert {"gpu", "driver", "ncu", "date_utc"} <= set(res["machine"]) and res["machine"]["ncu"] == "2025.3.1.0"
    assert all(res[k]["rc"] == 0 and res[k]["wall_s"] > 0 for k in ("plain", "profile", "full", "report"))
    t = table(out / "cost_gpt2_train.json")
    assert t.returncode == 0, t.stderr
    row = next(line for line in t.stdout.splitlines() if line.startswith("| gpt2_train |"))
    assert "| 25 |" in row and "25 × 36" in row
    assert "the first finding agrees on 8 of 8 kernels holding 90% of the GPU time" in t.stdout
    assert "program findings: profile ['PRG002'], full ['PRG002'] (the same)" in t.stdout
    # the full set stopped at its deadline after every launch and a whole report (ncu still exiting): "at least"
    res["full"].update(rc=-9, timed_out=True)
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(res))
    for f in ("profile_gpt2_train.json.xz", "full_gpt2_train.json.xz"):
        (tmp_path / f).write_bytes((out / f).read_bytes())
    t = table(cut)
    assert t.returncode == 0, t.stderr
    row = next(line for line in t.stdout.splitlines() if line.startswith("| gpt2_train |"))
    assert f"| ≥ {res['full']['wall_s']:.1f} |" in row and "stopped at its deadline" in t.stdout
    res["full"]["report_results"] = 24  # a report short of a launch: refused
    cut.write_text(json.dumps(res))
    assert table(cut).returncode == 2


def test_side_by_side_refuses_what_is_not_every_launch(tmp_path):
    """A full set on 25 of the range's 229 launches is measured and kept, but `table` refuses to divide by it (one
    line, exit 2); so it does a run whose full set was skipped, and an older, extrapolating run's JSON."""
    p = side_by_side(tmp_path, "--full-s-per-launch", "0.5", **WIDER_RANGE)
    assert p.returncode == 1 and "incomplete" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
    res = json.loads((tmp_path / "out" / "cost_step.json").read_text())
    assert (res["launches_in_range"], res["full"]["launches_profiled"], res["full"]["rc"]) == (229, 25, 0)
    t = table(tmp_path / "out" / "cost_step.json")
    assert t.returncode == 2 and t.stdout == ""
    assert t.stderr.strip().splitlines() == [
        f"profile_cost: {tmp_path / 'out' / 'cost_step.json'}: the full set profiled 25 of 229 launches of the range "
        "(report: 25 results, rc=0): refusing to divide by an extrapolated time"
    ]
    # a range the budget cannot hold: the full set is skipped, not estimated
    res["full"] = {"cmd": res["full"]["cmd"], "skipped": "the full set on 229 launches needs about 550 s"}
    skipped = tmp_path / "skipped.json"
    skipped.write_text(json.dumps(res))
    t = table(skipped)
    assert t.returncode == 2 and "refusing to divide by an estimate" in t.stderr and len(t.stderr.splitlines()) == 1
    t = table(ROOT / "benchmarks" / "profile_cost_train_h200.json")
    assert t.returncode == 2 and "not a side-by-side run" in t.stderr and len(t.stderr.splitlines()) == 1
