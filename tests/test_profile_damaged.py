"""`profile` on damaged or misleading runs, end to end with the fake ncu (tests/fake_ncu, replaying real reports):
a report cut where only ncu's own count shows it, a report path the profiled program prints, a report ncu wrote
that has no whole result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncuadvisor.reportfile.blocks import iter_blocks
from ncuadvisor.reportfile.integrity import check_report

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz  # noqa: E402


def profile_full_on(tmp_path: Path, data: bytes, name: str) -> tuple[subprocess.CompletedProcess, Path]:
    """`ncuadvisor profile --full` with the fake ncu writing `data` as its report (saved as src/NAME.ncu-rep: the
    name picks the fake's progress lines); the finished run and the output folder it ran in."""
    cut = tmp_path / "src" / f"{name}.ncu-rep"
    cut.parent.mkdir()
    cut.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    fake = ROOT / "tests" / "fake_ncu"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{fake}{os.pathsep}{os.environ['PATH']}", FAKE_NCU_FULL=str(cut))
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "profile", "--full", "-o", "full.json", "-q", str(fake / "target.py")],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return p, out


@pytest.mark.slow
def test_profile_says_partial_when_ncu_profiled_more_launches_than_its_report_holds(tmp_path):
    """A report cut exactly at a block boundary reads as a whole, shorter report (the file records no count). ncu's
    own output does: one `==PROF== Profiling` line per launch it profiled. The fake ncu replays the 20 progress lines
    of tiny_sections and writes the report cut after its 6th result: exit 4, said first in the result."""
    tiny = fuzz.plain("tiny_sections")
    blocks = [b for b in iter_blocks(tiny) if (b.header.get(2) or [0])[0]]
    p, out = profile_full_on(tmp_path, tiny[: blocks[5].payload_end], "tiny_sections")  # the fake's 20 lines
    assert check_report(tmp_path / "src" / "tiny_sections.ncu-rep").boundary is None  # the file alone cannot tell
    assert p.returncode == 4, p.stderr
    res = json.loads((out / "full.json").read_text())
    first = res["report"]["warnings"][0]
    assert first.startswith("partial: the report ncu wrote in full holds 6 results of the 20 launches"), first
    assert sum(k["launches"] for k in res["kernels"]) == 6
    assert res["report"]["profile"]["partial"] is True


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["phase2:no_kernels", ""])
@pytest.mark.parametrize("keep", [True, False])
def test_profile_never_moves_or_removes_a_report_the_program_printed(scenario, keep, tmp_path):
    """End to end with the fake ncu: the profiled program prints `==PROF== Report: PATH` for a report of the user's
    (a real one, which would analyse). Whether ncu writes its own phase-2 report or none, `profile` neither moves,
    analyses nor deletes the user's file, with and without --no-keep: it is byte for byte what it was."""
    mine = tmp_path / "mine"
    mine.mkdir()
    victim = mine / "precious.ncu-rep"
    victim.write_bytes(fuzz.plain("pipeline_v1"))
    before = (victim.read_bytes(), victim.stat().st_mtime_ns, victim.stat().st_ino)
    prog = tmp_path / "prog.py"
    prog.write_text(f"print('==PROF== Report: {victim}', flush=True)\n")
    out = tmp_path / "out"
    out.mkdir()
    fake = ROOT / "tests" / "fake_ncu"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    env.pop("FAKE_NCU_SCENARIO", None)
    if scenario:
        env["FAKE_NCU_SCENARIO"] = scenario
    args = ["profile", "-o", "result.json", "-q", *([] if keep else ["--no-keep"]), str(prog)]
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args], cwd=out, env=env, capture_output=True, text=True, timeout=300
    )
    assert "Traceback" not in p.stderr
    assert p.returncode == (4 if scenario else 0), p.stderr
    assert (victim.read_bytes(), victim.stat().st_mtime_ns, victim.stat().st_ino) == before
    assert [x.name for x in mine.iterdir()] == ["precious.ncu-rep"]
    res = json.loads((out / "result.json").read_text())
    assert str(victim) not in json.dumps(res["report"])
    assert "scale_add" not in {k["name"] for k in res["kernels"]}  # the user's report's kernels were not analysed
    placed = sorted(x.name for x in out.iterdir() if x.suffix == ".ncu-rep")
    ncu_wrote = ["result.ncu-rep", "result.phase1.ncu-rep"] if not scenario else ["result.phase1.ncu-rep"]
    assert placed == (ncu_wrote if keep else []), placed  # only the reports ncu wrote, named by profile
    assert not [x for x in out.iterdir() if x.name.startswith(".")]


@pytest.mark.slow
def test_profile_refusing_ncus_report_leaves_no_private_folder(tmp_path):
    """ncu (the fake one) writes a report cut inside its first result: no whole result, so profile refuses it (one
    line), and neither the private run folder nor a partly placed report is left beside the output."""
    tiny = fuzz.plain("tiny_sections")
    first = next(b for b in iter_blocks(tiny) if (b.header.get(2) or [0])[0])
    p, out = profile_full_on(tmp_path, tiny[: (first.payload_start + first.payload_end) // 2], "tiny_first_cut")
    assert p.returncode == 2, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert lines[-1].startswith("ncuadvisor: error:") and "no whole kernel result" in lines[-1], p.stderr
    assert "Traceback" not in p.stderr
    assert not [x for x in out.iterdir() if x.name.startswith(".")], list(out.iterdir())
    assert not (out / "full.json").exists()


@pytest.mark.slow
def test_profile_is_partial_when_ncu_writes_a_damaged_report(tmp_path):
    """ncu (the fake one, replaying a real report) writes a report cut inside its results: exit 4, said first in the
    result, and no private folder left beside the output."""
    tiny = fuzz.plain("tiny_sections")
    blocks = [b for b in iter_blocks(tiny) if (b.header.get(2) or [0])[0]]
    p, out = profile_full_on(
        tmp_path, tiny[: (blocks[5].payload_start + blocks[5].payload_end) // 2], "tiny_cut"
    )  # 5 whole results, the 6th cut
    assert p.returncode == 4, p.stderr
    assert "damaged report" in p.stderr
    res = json.loads((out / "full.json").read_text())
    assert res["report"]["warnings"][0].startswith("partial: the report file is truncated: this analyses its 5 whole")
    assert res["report"]["profile"]["partial"] is True
    assert not [x for x in out.iterdir() if x.name.startswith(".")]
