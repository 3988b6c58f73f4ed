"""Phase 2's program started while phase 1 runs (`profile.early`): `ncu --mode launch` at the start, an attach with
phase 2's options for round 1, and every way back to running the program again. With the fake ncu, which implements
launch and attach as the real ncu 2025.3.1 did on the H100 (the launch side waits at the program's first CUDA call;
the attach refuses launch-side options such as --nvtx)."""

from __future__ import annotations

import json
import os

import pytest

from ncuadvisor.profile.early import attach_command, launch_command
from ncuadvisor.profile.ncu import Filters
from tests.test_profile import TARGET, after, fake_ncu_cli


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_NCU_RENDEZVOUS", str(tmp_path))
    monkeypatch.delenv("NCUADVISOR_EARLY_START", raising=False)
    return fake_ncu_cli(tmp_path, monkeypatch, capsys)


def test_attach_command_keeps_phase_2s_options_and_drops_the_launch_side():
    argv = ["/usr/bin/python3", "train.py", "--nvtx"]  # the program's own --nvtx stays the program's
    phase2 = ["/x/ncu", "--clock-control", "none", "--target-processes", "application-only", "--nvtx"]
    phase2 += ["--nvtx-include", "step/", "--section", "Occupancy", "-o", "/w/phase2_1", *argv]
    cmd = attach_command(phase2, argv, 51000)
    assert cmd[:9] == [
        "/x/ncu",
        "--mode",
        "attach",
        "--hostname",
        "127.0.0.1",
        "--port",
        "51000",
        "--max-connections",
        "8",
    ]
    assert "--target-processes" not in cmd and cmd.count("--nvtx") == 0 and "train.py" not in cmd
    assert after(cmd, "--nvtx-include") == "step/" and cmd[-2:] == ["-o", "/w/phase2_1"]
    with pytest.raises(ValueError):
        attach_command(phase2, ["/usr/bin/python3", "other.py"], 51000)


def test_launch_command_holds_the_launch_side_options():
    cmd = launch_command("/x/ncu", ["/usr/bin/python3", "t.py"], Filters(nvtx_include=["step/"]), 52000)
    assert cmd[:3] == ["/x/ncu", "--mode", "launch"] and after(cmd, "--port") == "52000"
    assert after(cmd, "--target-processes") == "application-only" and "--nvtx" in cmd
    assert cmd[-2:] == ["/usr/bin/python3", "t.py"]
    assert "--nvtx" not in launch_command("/x/ncu", ["p.py"], Filters(), 52000)


@pytest.mark.slow
def test_round_1_attaches_to_the_program_started_early(cli, tmp_path):
    r = cli("profile", str(TARGET), "--nvtx-include", "step_all_threads", "-o", "x.json")
    assert r.code == 0, r.err
    (early,) = r.early_calls()
    p1, p2 = r.phase_calls()
    assert p2[:2] == ["--mode", "attach"] and after(p2, "--port") == after(early, "--port")
    assert after(p2, "--nvtx-include") == "step_all_threads" and "--nvtx" in early and "--nvtx" not in p2
    assert r.out.count("target: args=[]") == 2  # the program ran twice, its output passed on both times
    prof = json.loads((tmp_path / "x.json").read_text())["report"]["profile"]
    assert prof["early_start"]["used"] is True and prof["early_start"]["port"] == int(after(early, "--port"))
    assert prof["partial"] is False and [p["phase"] for p in prof["phases"]] == ["phase 1/2", "phase 2/2"]
    assert not list(tmp_path.glob("fake-ncu-attach-*"))  # the launch side ended


@pytest.mark.slow
def test_a_failed_attach_runs_the_program_again(cli, tmp_path):
    r = cli("profile", str(TARGET), "-o", "x.json", FAKE_NCU_SCENARIO="phase2:attach_fail")
    assert r.code == 0, r.err
    p1, attach, p2 = r.phase_calls()
    assert attach[:2] == ["--mode", "attach"] and p2[-1] == str(TARGET) and "--mode" not in p2
    res = json.loads((tmp_path / "x.json").read_text())
    early = res["report"]["profile"]["early_start"]
    assert early["used"] is False and "attach failed" in early["why"]
    assert res["report"]["profile"]["partial"] is False and res["kernels"][0]["profiled"] is True
    assert "could not be used" in r.err


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, env",
    [
        (["--target-processes", "all"], {}),
        ([], {"NCUADVISOR_EARLY_START": "0"}),
    ],
    ids=["following children", "turned off"],
)
def test_no_early_start(cli, tmp_path, args, env):
    r = cli("profile", str(TARGET), *args, "-o", "x.json", **env)
    assert r.code == 0, r.err
    assert r.early_calls() == [] and len(r.phase_calls()) == 2
    assert "early_start" not in json.loads((tmp_path / "x.json").read_text())["report"]["profile"]


@pytest.mark.slow
def test_no_early_start_for_an_executable(cli, tmp_path):
    exe = tmp_path / "prog.sh"
    exe.write_text("#!/bin/sh\necho hello from prog\n")
    exe.chmod(0o755)
    r = cli("profile", "-o", "x.json", "--", str(exe))
    assert r.code == 0, r.err
    assert r.early_calls() == [] and len(r.phase_calls()) == 2


@pytest.mark.slow
def test_a_phase_1_failure_ends_the_early_program(cli, tmp_path):
    r = cli("profile", str(TARGET), "-o", "x.json", FAKE_NCU_SCENARIO="phase1:perm")
    assert r.code == 6, r.err
    assert len(r.early_calls()) == 1
    (rendezvous,) = [p for p in tmp_path.glob("fake-ncu-attach-*") if "." not in p.name]  # the launch side's
    pid = json.loads(rendezvous.read_text())["pid"]
    with pytest.raises(ProcessLookupError):  # killed and reaped: no attach ever came
        os.kill(pid, 0)
