"""`ncuadvisor profile` without a GPU: the fake ncu (tests/fake_ncu/ncu) replays the real ncu's captured outputs and
writes real reports captured on the H200 (tiny_phase1 then tiny_sections, both from workloads/cuda/tiny_launches).

The last test is marked `gpu`: it profiles workloads/cuda/flaws.cu with the real ncu.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.profile import ncu as N
from ncuadvisor.profile import output as O
from ncuadvisor.profile.merge import merge_results, torch_context
from ncuadvisor.profile.reports import planned_reports
from ncuadvisor.profile.selection import select_kernels
from ncuadvisor.profile.target import TORCH_RUNNER, resolve_target
from ncuadvisor.result import Result, TorchContext
from tests.conftest import in_child

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
OUTPUTS = FIXTURES / "ncu_outputs"
FAKE_DIR = ROOT / "tests" / "fake_ncu"
TARGET = FAKE_DIR / "target.py"
SECTIONS_ARGS = sum(
    (["--section", s] for s in __import__("ncuadvisor.pipeline.analyze", fromlist=["x"]).ANALYSIS_SECTIONS), []
)
TINY_ADD = "tiny_add(const float *, const float *, float *, int)"
BIG_ADD = "big_add(const float *, const float *, float *, unsigned long)"
# phase 2's sections for CUDA code: NCU's derived__ metrics come with SourceCounters, so not SpeedOfLight
NO_SOL_SECTIONS = [s for s in N.DECLARED_SECTIONS if s != "SpeedOfLight"]
TENSOR_COUNTS = [p + ".sum" for p in roofline.TENSOR_PATHS.values()]
TENSOR_PEAKS = [p + ".sum.peak_sustained" for p in roofline.TENSOR_PATHS.values()]


# -- helpers ------------------------------------------------------------------------------------------------------


@dataclass
class CliRun:
    code: int
    out: str
    err: str
    calls: list[list[str]]

    def phase_calls(self) -> list[list[str]]:
        """The runs of ncu that profile: its --version and the early start of phase 2's program left out."""
        return [c for c in self.calls if c != ["--version"] and c[:2] != ["--mode", "launch"]]

    def early_calls(self) -> list[list[str]]:
        """The `ncu --mode launch` runs (profile.early): phase 2's program started while phase 1 runs."""
        return [c for c in self.calls if c[:2] == ["--mode", "launch"]]


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """cli(*args, **env) runs `ncuadvisor ...` in this process (main(): exit codes, one error line) in tmp_path
    with the fake ncu first on PATH; returns the exit code, stdout, stderr and the fake's recorded argv."""
    return fake_ncu_cli(tmp_path, monkeypatch, capsys)


def fake_ncu_cli(tmp_path, monkeypatch, capsys):
    """The `cli` fixture's runner, for fixtures that set more up around it."""
    from ncuadvisor import cli as cli_mod

    monkeypatch.chdir(tmp_path)
    log = tmp_path / "ncu_argv.jsonl"
    monkeypatch.setenv("PATH", str(FAKE_DIR) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_NCU_ARGV_LOG", str(log))
    for var in (
        "FAKE_NCU_SCENARIO",
        "FAKE_NCU_VERSION",
        "FAKE_NCU_PHASE1",
        "FAKE_NCU_PHASE2",
        "FAKE_NCU_PHASE2_SC",
        "FAKE_NCU_FULL",
        "NCUADVISOR_NCU",
    ):
        monkeypatch.delenv(var, raising=False)

    def run(*args: str, **env: str) -> CliRun:
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        if log.exists():
            log.unlink()
        monkeypatch.setattr(sys, "argv", ["ncuadvisor", *args])
        capsys.readouterr()
        try:
            cli_mod.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        calls = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        return CliRun(code, out, err, calls)

    return run


def assert_one_error_line(r: CliRun, code: int) -> str:
    assert r.code == code, (r.code, r.err, r.out)
    assert "Traceback" not in r.err and "Traceback" not in r.out
    lines = [x for x in r.err.splitlines() if x.startswith("ncuadvisor: error:")]
    assert len(lines) == 1, r.err
    assert r.err.rstrip().splitlines()[-1] == lines[0]
    return lines[0]


def after(cmd: list[str], opt: str) -> str:
    return cmd[cmd.index(opt) + 1]


# -- finding ncu and its version ----------------------------------------------------------------------------------


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho Version 2025.3.1.0 \\(build 1\\)\n")
    path.chmod(0o755)
    return path


def test_find_ncu_path_first_then_cuda_home_then_usual_folders(tmp_path):
    on_path = _exe(tmp_path / "p" / "ncu")
    home = _exe(tmp_path / "cuda" / "bin" / "ncu")
    opt = _exe(tmp_path / "opt" / "nsight-compute" / "2025.3.1" / "ncu")
    std = [str(tmp_path / "opt" / "nsight-compute" / "*")]
    assert N.find_ncu(env={"PATH": str(on_path.parent), "CUDA_HOME": str(tmp_path / "cuda")}, standard_dirs=std) == str(
        on_path
    )
    assert N.find_ncu(env={"PATH": "", "CUDA_HOME": str(tmp_path / "cuda")}, standard_dirs=std) == str(home)
    assert N.find_ncu(env={"PATH": "", "CUDA_PATH": str(tmp_path / "cuda")}, standard_dirs=std) == str(home)
    assert N.find_ncu(env={"PATH": ""}, standard_dirs=std) == str(opt)
    assert N.find_ncu(str(opt), env={"PATH": ""}, standard_dirs=[]) == str(opt)
    with pytest.raises(N.NcuNotFound) as exc:
        N.find_ncu(env={"PATH": str(tmp_path / "nothing"), "CUDA_HOME": str(tmp_path / "none")}, standard_dirs=[])
    assert str(tmp_path / "none" / "bin" / "ncu") in exc.value.searched


def test_default_search_folders_cover_the_usual_installs():
    cands = N.candidate_paths({"CUDA_HOME": "/ch", "CUDA_PATH": "/cp"}, standard_dirs=None)
    assert cands[:2] == ["/ch/bin/ncu", "/cp/bin/ncu"]
    assert "/usr/local/cuda/bin" in N.STANDARD_DIRS and "/opt/nvidia/nsight-compute/*" in N.STANDARD_DIRS


def test_parse_version_real_text():
    line = next(x for x in (FIXTURES / "versions.txt").read_text().splitlines() if x.startswith("ncu:"))
    assert N.parse_version(line) == (2025, 3, 1, 0)
    fake = subprocess.run([str(FAKE_DIR / "ncu"), "--version"], capture_output=True, text=True).stdout
    assert " ".join(fake.split()) in line  # the fake prints the real text
    assert N.parse_version("no version here") is None
    assert N.parse_version("Version 2022.1.0 (build 1)")[:2] == (2022, 1)


# -- command lines ------------------------------------------------------------------------------------------------

TARGET_ARGV = ["/usr/bin/python3", "train.py", "--epochs", "1"]


def test_phase1_command_defaults():
    cmd = N.phase1_command("ncu", "/tmp/w/phase1", TARGET_ARGV, N.Filters())
    assert cmd == [
        "ncu",
        "--clock-control",
        "none",
        "--metrics",
        "gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,"
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "-o",
        "/tmp/w/phase1",
        *TARGET_ARGV,
    ]


def test_phase1_command_every_option():
    f = N.Filters(
        nvtx_include=["step/"],
        kernel="regex:gemm|softmax",
        launch_skip=5,
        cache_control="none",
        target_processes="application-only",
    )
    cmd = N.phase1_command("ncu", "/w/p1", TARGET_ARGV, f)
    assert cmd[-len(TARGET_ARGV) :] == TARGET_ARGV and cmd[-len(TARGET_ARGV) - 2 : -len(TARGET_ARGV)] == ["-o", "/w/p1"]
    assert after(cmd, "--clock-control") == "none"
    assert "--nvtx" in cmd and after(cmd, "--nvtx-include") == "step/"
    assert after(cmd, "-k") == "regex:gemm|softmax"
    assert after(cmd, "--launch-skip") == "5"
    assert after(cmd, "--cache-control") == "none"
    assert after(cmd, "--target-processes") == "application-only"
    assert after(cmd, "--metrics") == ",".join(N.PHASE1_COLLECTED) and "--section" not in cmd and "--set" not in cmd
    base = N.phase1_command("ncu", "x", ["a"], N.Filters(clock_control="base", record_nvtx=True))
    assert after(base, "--clock-control") == "base" and "--nvtx" in base and "--nvtx-include" not in base


def test_phase2_command_one_launch_per_kernel():
    cmd = N.phase2_command(
        "ncu",
        "/w/p2",
        TARGET_ARGV,
        N.Filters(nvtx_include=["step/"], kernel="regex:x", launch_skip=3),
        [TINY_ADD, BIG_ADD, TINY_ADD],
        ["SpeedOfLight", "Occupancy"],
    )
    assert cmd[1:3] == ["--clock-control", "none"]
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == ["SpeedOfLight", "Occupancy"]
    assert after(cmd, "--import-source") == "yes"
    assert after(cmd, "--kernel-name-base") == "demangled"
    kid = after(cmd, "--kernel-id")
    assert (
        kid == r"::regex:^(tiny_add\(const float \*, const float \*, float \*, int\)|big_add\(const float \*, "
        r"const float \*, float \*, unsigned long\))$:1"
    )
    assert after(cmd, "--nvtx-include") == "step/" and "--nvtx" in cmd
    # the user's skip counts every launch in phase 2; their kernel filter is already in the chosen names
    assert after(cmd, "--launch-skip-before-match") == "3" and "--launch-skip" not in cmd and "-k" not in cmd
    assert cmd[-len(TARGET_ARGV) - 2 :] == ["-o", "/w/p2", *TARGET_ARGV]


def test_phase2_fallback_command_per_launch_config():
    cmd = N.phase2_command(
        "ncu",
        "/w/p2",
        ["./a"],
        N.Filters(),
        ["tiny_add"],
        ["SpeedOfLight"],
        strategy="per-launch-config",
        name_base="function",
    )
    assert after(cmd, "--kernel-id") == "::regex:^(tiny_add)$:"
    assert after(cmd, "--filter-mode") == "per-launch-config" and after(cmd, "--launch-count") == "1"
    assert after(cmd, "--kernel-name-base") == "function"


def test_phase2_declared_collection_names_the_analysis_metrics():
    """The declared collection: the sections of per-instruction data, and every metric the rules, the roofline and
    the cards read, by name, except NCU's rule-derived metrics (not collectable by name) and device attributes."""
    from ncuadvisor.analysis import roofline
    from ncuadvisor.pipeline.analyze import CARD_METRICS
    from ncuadvisor.rulekit import engine

    read = roofline.METRICS + CARD_METRICS + engine.required_metrics(engine.discover([]))
    metrics = N.declared_metrics([N.DURATION_METRIC, *read])
    assert metrics[0] == N.DURATION_METRIC and len(metrics) == len(set(metrics))
    assert set(metrics) == {m for m in read if not m.startswith(("derived__", "device__attribute"))} | {
        N.DURATION_METRIC
    }
    assert "SourceCounters" in N.DECLARED_SECTIONS and "SpeedOfLight" in N.DECLARED_SECTIONS
    cmd = N.phase2_command("ncu", "/w/p2", ["./a"], N.Filters(), ["k"], N.DECLARED_SECTIONS, metrics=metrics)
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"] == N.DECLARED_SECTIONS
    assert cmd.count("--metrics") == 1 and after(cmd, "--metrics").split(",") == metrics
    assert "--metrics" not in N.phase2_command("ncu", "/w/p2", ["./a"], N.Filters(), ["k"], ["SpeedOfLight"])


def test_declared_collection_follows_the_kernels_languages():
    """Phase 2 collects what the rules of the chosen kernels' possible languages read: for ATen and cuBLAS kernels
    none of the CUDA-only metrics (warp stall reasons, the tail-effect counters), and no SourceCounters: the rules of
    PyTorch kernels that read per-instruction data are gated or read it for lines ATen has not, so it waits for a
    later round (`profile.instructions`; with `instructions=True` it is that round's); for cuBLAS kernels alone no
    SourceCounters at all; a name that may be the user's own code (gemm_tiled) gets every rule's metrics but those of
    the ATen-only rules, and SourceCounters."""
    from ncuadvisor.profile.session import declared_collection
    from ncuadvisor.rulekit import engine

    rules = engine.discover([])
    every_s, every_m = declared_collection(rules, None)
    torch_s, torch_m = declared_collection(
        rules, [("elementwise_kernel", "at::native::elementwise_kernel"), ("nvjet_a", "nvjet_a")]
    )
    lib_s, lib_m = declared_collection(rules, [("nvjet_a", "nvjet_a"), ("sm90_xmma_gemm", "sm90_xmma_gemm")])
    own_s, own_m = declared_collection(rules, [("gemm_tiled", "gemm_tiled(float*)")])
    assert own_s == every_s
    # the user's own code gets every rule's metrics but those only rules of ATen kernels read
    aten_only = set(engine.required_metrics([r for r in rules if set(getattr(r, "languages", ())) == {"pytorch"}]))
    assert set(own_m) <= set(every_m) and set(every_m) - set(own_m) <= aten_only
    assert "smsp__inst_executed_op_shared_atom.sum" in torch_m and "smsp__inst_executed_op_shared_atom.sum" not in own_m
    # no SpeedOfLight (its two percentages: 9 replay passes): the derived__ metrics CUDA's rules read come with
    # SourceCounters (measured on the H200: 20 passes instead of 25, both derived__ metrics in the report)
    assert every_s == ["LaunchStats", "Occupancy", "SourceCounters"] == own_s
    assert torch_s == ["LaunchStats", "Occupancy"] == lib_s
    torch_later, torch_later_m = declared_collection(
        rules, [("elementwise_kernel", "at::native::elementwise_kernel"), ("nvjet_a", "nvjet_a")], instructions=True
    )
    assert torch_later == every_s and torch_later_m == torch_m
    assert any(m.startswith("derived__") for m in engine.required_metrics(rules))  # what the section was kept for
    from ncuadvisor.analysis import roofline

    for metrics in (every_m, torch_m, lib_m):  # derived from the units instead, and those are collected
        assert not set(roofline.NOT_COLLECTED) & set(metrics)
        assert set(roofline.SOL_COMPUTE_UNITS + roofline.SOL_L2_UNITS + roofline.L1_UNITS) <= set(metrics)
    stall = "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
    assert stall in every_m and stall not in torch_m and stall not in lib_m
    assert set(lib_m) <= set(torch_m) < set(every_m)
    issue = "smsp__issue_active.avg.pct_of_peak_sustained_active"  # ISU001 also speaks about ATen kernels
    assert issue in torch_m and issue not in lib_m
    assert N.DURATION_METRIC in lib_m and "dram__bytes_read.sum" in lib_m  # the roofline's, always


def test_full_command():
    cmd = N.full_command("ncu", "/w/full", ["./a", "x"], N.Filters(nvtx_include=["step/"], kernel="k", launch_skip=2))
    assert after(cmd, "--set") == "full" and after(cmd, "--import-source") == "yes"
    assert after(cmd, "-k") == "k" and after(cmd, "--launch-skip") == "2" and after(cmd, "--nvtx-include") == "step/"
    assert "--section" not in cmd and cmd[-4:] == ["-o", "/w/full", "./a", "x"]


def test_regex_escaping_of_demangled_names():
    name = (
        "void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16, float, (bool)0>"
        "(int, T2, const T1 *, T2 *)"
    )
    rx = N.names_regex([name])
    assert ":" not in rx  # ncu splits --kernel-id at colons: `.` stands for each colon
    import re

    assert re.fullmatch(rx, name) and not re.fullmatch(rx, name + "x")
    assert re.fullmatch(N.names_regex(["a[1]{x}|y$^+?"]), "a[1]{x}|y$^+?")


def test_nvtx_expression():
    assert N.nvtx_expression("step") == "step/"
    assert N.nvtx_expression("step/") == "step/"
    assert N.nvtx_expression("dom@step/") == "dom@step/"
    assert N.nvtx_expression("regex:it_[0-9]+/") == "regex:it_[0-9]+/"


def test_planned_reports_never_collide_with_the_output(tmp_path):
    names = [p.name for p in planned_reports(tmp_path / "step", full=False)]
    assert "step.phase1.ncu-rep" in names and "step.ncu-rep" in names and "step.ncu-repz" in names
    assert [p.name for p in planned_reports(tmp_path / "step", full=True)] == ["step.ncu-rep", "step.ncu-repz"]


# -- ncu's output, as the real ncu printed it ---------------------------------------------------------------------


def feed(path: Path) -> O.OutputParser:
    p = O.OutputParser()
    for line in path.read_text().splitlines():
        p.feed(line)
    return p


def test_progress_lines_with_count():
    p = feed(OUTPUTS / "tiny_sections.txt")
    prog = [e for e in p.events if e.kind == "progress"]
    assert len(prog) == 20 and p.profiled == 20
    assert (prog[0].name, prog[0].index, prog[0].i, prog[0].n, prog[0].passes) == ("tiny_add", 0, 1, 20, 36)
    assert prog[-1].i == 20
    assert p.report == "/tmp/capture_work/files/tiny_sections.ncu-rep"
    assert any("Unable to access the following 6 metrics" in w for w in p.warnings)
    outs = [e.text for e in p.events if e.kind == "output" and e.text.strip()]
    assert outs == [x for x in outs if x.startswith("tiny_add x2000")]  # the program's own line, nothing else


def test_progress_lines_without_count_and_one_pass():
    p = feed(OUTPUTS / "tiny_phase1.txt")
    prog = [e for e in p.events if e.kind == "progress"]
    assert len(prog) == 2001 and prog[-1].name == "big_add" and prog[-1].index == 2000
    assert prog[0].passes == 1 and prog[0].n is None
    assert p.pids == [3561] and not p.errors and p.app_exit is None


def test_truncated_names_and_program_output():
    p = feed(OUTPUTS / "torch_eager.txt")
    names = [e.name for e in p.events if e.kind == "progress"]
    assert "nvjet_sm90_tst_256x128_64x4_1..." in names and len(names) == 25
    # the program's lines in that mixed capture read as output (kept by no one: ncu's own come from its log file)
    lines = (OUTPUTS / "torch_eager.txt").read_text().splitlines()
    assert O.parse_line(next(x for x in lines if x.startswith("transformer_step"))).kind == "output"
    assert not any(e.kind == "output" for e in p.events)


def test_target_exit_code():
    p = feed(OUTPUTS / "target_exit3.txt")
    assert p.app_exit == 3 and p.profiled == 1 and p.report.endswith("target_exit3.ncu-rep")
    assert not p.errors  # the exit code is its own event, not an ncu failure


def test_no_kernels_and_available_kernels():
    p = feed(OUTPUTS / "no_kernels.txt")
    assert p.no_kernels and p.available == ["copy_vec4"] and p.profiled == 0


def test_missing_executable_error():
    p = feed(OUTPUTS / "no_executable.txt")
    assert len(p.errors) == 1 and p.errors[0].error_kind == "no-executable"


def test_permission_error_reading():
    line = (
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
        "Counters on the target device 0. For instructions on enabling permissions and to get more "
        "information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
    )
    ev = O.parse_line(line)
    assert ev.kind == "error" and ev.error_kind == "permission"
    for needle in ("admin", "root", "NVreg_RestrictProfilingToAdminUsers=0", "SYS_ADMIN"):
        assert needle in ev.reading


def test_other_errors_and_every_captured_log_parses():
    assert O.parse_line("==ERROR== Failed to find any CUDA devices.").error_kind == "no-gpu"
    assert O.parse_line("==ERROR== unrecognised option '--frobnicate'").error_kind == "usage"
    assert O.parse_line("==ERROR== Something new").error_kind == "other"
    for log in sorted(OUTPUTS.glob("*.txt")):
        p = feed(log)
        assert all(e.kind != "error" for e in p.events) or log.name == "no_executable.txt", log.name


def test_phase2_progress_lines_of_the_real_ncu():
    # captured by `ncuadvisor profile` on the H200 (tests/fake_ncu/outputs/README.md): no launch index, and under
    # --kernel-id the kernel id context:stream:name:invocation
    p = feed(FAKE_DIR / "outputs" / "phase2_kernel_id.txt")
    prog = [e for e in p.events if e.kind == "progress"]
    assert p.profiled == 6 and all(e.code == 1 and e.passes == 36 and e.index is None for e in prog)
    assert prog[0].name.startswith("void at::native::<unnamed>::vectorized_layer_norm_kernel<c10::BFloat16")
    assert prog[0].name.endswith("T1 *)") and not prog[0].name.startswith("1:7:")
    assert p.report.endswith("phase2_1.ncu-rep") and p.pids == [1019]
    lines = (FAKE_DIR / "outputs" / "phase2_kernel_id.txt").read_text().splitlines()
    assert O.parse_line(next(x for x in lines if x.startswith("transformer_step"))).kind == "output"
    p = feed(FAKE_DIR / "outputs" / "phase2_per_launch_config.txt")
    assert [e.name for e in p.events if e.kind == "progress"] == [
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT",
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_TNT",
    ]
    assert any("No source files were imported" in w for w in p.warnings)


def test_every_option_we_pass_exists_in_the_real_ncu():
    import re

    help_text = (FAKE_DIR / "outputs" / "ncu_help.txt").read_text()
    known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text)) | set(re.findall(r"^\s+(-[a-z]) \[", help_text, re.M))
    f = N.Filters(
        nvtx_include=["step/"],
        kernel="regex:x",
        launch_skip=2,
        cache_control="none",
        target_processes="all",
        record_nvtx=True,
    )
    cmds = [N.phase1_command("ncu", "o", ["./a"], f), N.full_command("ncu", "o", ["./a"], f)]
    cmds += [
        N.phase2_command("ncu", "o", ["./a"], f, ["k"], ["SpeedOfLight"], strategy=s, name_base=b)
        for s in ("kernel-id", "per-launch-config")
        for b in ("demangled", "function")
    ]
    used = {a for c in cmds for a in c[1:-1] if a.startswith("-")}
    assert used and used <= known, used - known
    sections = (OUTPUTS / "list_sections.txt").read_text()
    from ncuadvisor.pipeline.analyze import ANALYSIS_SECTIONS

    assert all(re.search(rf"^{s}\s", sections, re.M) for s in ANALYSIS_SECTIONS)


def test_partial_progress_and_line_splitting():
    ev = O.parse_partial('==PROF== Profiling "tiny_add" - 3 (4/20): 0%....50%..')
    assert (ev.name, ev.i, ev.n, ev.code) == ("tiny_add", 4, 20, 50)
    assert O.parse_partial("hello") is None
    s = O.LineSplitter()
    assert s.feed("a\nb") == ["a"] and s.partial == "b"
    assert s.feed("c\r\nd\re") == ["bc"] and s.partial == "e" and s.flush() == ["e"]
    assert s.feed("x\r") == [] and s.feed("\ny") == ["x"] and s.flush() == ["y"]  # \r\n split across two reads
    # a program's own progress bar (tqdm redraws its line with \r): its last state, once
    assert s.feed("\rtrain:   0%|   | 0/3\rtrain:  33%|#  | 1/3") == [] and s.partial == "train:  33%|#  | 1/3"
    assert s.feed("\rtrain: 100%|###| 3/3\ndone\n") == ["train: 100%|###| 3/3", "done"]
    # ncu's line after a line the program left open (the merged pipe): still a line of ncu's, partial and complete
    assert s.feed('\rtrain:  33%|#  | 1/3==PROF== Profiling "k" - 0: 0%....50%') == []
    assert O.parse_partial(s.partial).code == 50
    assert s.feed("....100% - 36 passes\n") == [
        "train:  33%|#  | 1/3",
        '==PROF== Profiling "k" - 0: 0%....50%....100% - 36 passes',
    ]
    assert O.parse_line(s.feed("\rtrain:  66%|## | 2/3==WARNING== Note\n")[1]).kind == "warning"


# -- choosing kernels and merging ---------------------------------------------------------------------------------


@dataclass
class K:
    name: str
    duration_ns: float
    demangled: str = ""
    grid: str = ""
    block: str = ""


def test_select_top_and_coverage():
    ks = [K("c", 5), K("a", 60), K("b", 30), K("d", 5)]
    assert [k.name for k in select_kernels(ks)] == ["a", "b"]  # 90% by default
    assert [k.name for k in select_kernels(ks, coverage=0.5)] == ["a"]
    assert [k.name for k in select_kernels(ks, coverage=0.95)] == ["a", "b", "c"]
    assert [k.name for k in select_kernels(ks, coverage=1.0)] == ["a", "b", "c", "d"]
    assert [k.name for k in select_kernels(ks, top=3)] == ["a", "b", "c"]
    assert [k.name for k in select_kernels(ks, top=1, coverage=1.0)] == ["a"]
    assert [k.name for k in select_kernels(ks, coverage=0.0)] == ["a"]  # at least one
    assert select_kernels([]) == []
    assert len(select_kernels([K("x", 0), K("y", 0)])) == 2


def test_phase1_ranking_on_a_real_report(report_path):
    from ncuadvisor.profile.merge import analyze_phase1

    result, launches, kernels = analyze_phase1(report_path("tiny_phase1"), [])
    assert [k.name for k in kernels] == ["tiny_add", "big_add"] and kernels[0].launches == 2000
    assert len(launches) == 2001 and launches[0]["kernel_id"] == "k0" and launches[-1]["kernel_id"] == "k1"
    assert [k.name for k in select_kernels(kernels)] == ["tiny_add"]  # 95% of the time
    assert [k.name for k in select_kernels(kernels, top=2)] == ["tiny_add", "big_add"]
    assert [k.name for k in select_kernels(kernels, coverage=0.99)] == ["tiny_add", "big_add"]


@pytest.fixture(scope="module")
def merged(tmp_path_factory, typed):
    import lzma

    from ncuadvisor.profile.merge import analyze_phase1
    from ncuadvisor.rulekit import engine

    folder = tmp_path_factory.mktemp("merge")
    paths = {}
    for name in ("tiny_phase1", "tiny_sections"):
        paths[name] = folder / f"{name}.ncu-rep"
        with lzma.open(FIXTURES / f"{name}.ncu-rep.xz") as fin, paths[name].open("wb") as fout:
            shutil.copyfileobj(fin, fout)
    rules = engine.discover([])
    p1, launches, _ = in_child(lambda: analyze_phase1(paths["tiny_phase1"], rules))
    deep = typed("tiny_sections")  # the same rules: engine.discover([])
    m = merge_results(p1, [(str(paths["tiny_sections"]), deep)], launches=launches, rules=rules)
    return p1.to_dict(), deep.to_dict(), m.to_dict()


def test_merge_keeps_every_phase1_kernel_with_phase1_time(merged):
    p1, deep, m = merged
    assert [k["name"] for k in m["kernels"]] == [k["name"] for k in p1["kernels"]] == ["tiny_add", "big_add"]
    assert sum(k["time_share"] for k in m["kernels"]) == pytest.approx(1.0)
    assert m["report"]["total_duration_ns"] == pytest.approx(p1["report"]["total_duration_ns"])
    durations = [k["duration_ns"] for k in m["kernels"]]
    assert durations == sorted(durations, reverse=True)
    tiny, big = m["kernels"]
    d = deep["kernels"][0]
    assert tiny["profiled"] is True and tiny["launches"] == 2000 and d["launches"] == 20
    assert tiny["duration_ns"] == pytest.approx(p1["kernels"][0]["duration_ns"]) != pytest.approx(d["duration_ns"])
    assert tiny["roofline"] == d["roofline"] and tiny["sections"] == d["sections"] and tiny["bound"] == d["bound"]
    assert big["profiled"] is False and big["bound"] == "unknown" and big["findings"] == []
    assert big["launches"] == 1 and big["name"] == "big_add"
    assert m["report"]["results"] == 2001 and m["report"]["kernels"] == 2
    assert not any("lacks sections" in w for w in m["report"]["warnings"])


def test_merge_program_rules_see_every_launch(merged):
    _, deep, m = merged
    prg = {p["rule"]: p for p in m["program_findings"]}
    assert "PRG001" in prg and "2000 launches" in prg["PRG001"]["title"]  # from the 2001 phase-1 launches
    assert "2000 launches" not in json.dumps(deep["program_findings"])  # the 20-launch deep report alone cannot
    total = m["report"]["total_duration_ns"]
    for a in m["top_actions"]:
        assert a["program_fraction"] == pytest.approx(a["estimated_saving_ns"] / total)


def test_merge_renders_in_every_format(merged):
    from ncuadvisor.render import to_json
    from ncuadvisor.render.html import render_html
    from ncuadvisor.render.markdown import render_markdown

    m = merged[2]
    assert "big_add" in render_html(Result.from_dict(m)) and "big_add" in render_markdown(Result.from_dict(m))
    assert json.loads(to_json(m))["kernels"][1]["profiled"] is False


def test_merge_flags_deep_kernels_unknown_to_phase1(merged, typed):
    p1, _, _ = merged
    m = merge_results(Result.from_dict(p1), [("flaws.ncu-rep", typed("probe"))]).to_dict()
    assert all(k["profiled"] is False for k in m["kernels"])
    assert any("not seen in phase 1" in w for w in m["report"]["warnings"])


def test_merge_without_deep_results(merged):
    p1 = merged[0]
    m = merge_results(Result.from_dict(p1), []).to_dict()
    assert [k["profiled"] for k in m["kernels"]] == [False, False]
    assert sum(k["time_share"] for k in m["kernels"]) == pytest.approx(1.0)


def test_torch_context():
    nv = "step > module:Block > module:Linear > aten::linear, seq = 3 > aten::addmm, seq = 4"
    assert torch_context(nv) == TorchContext(torch_op="aten::addmm", torch_module="Linear")
    assert torch_context("") == TorchContext(torch_op=None, torch_module=None)


# -- the target ---------------------------------------------------------------------------------------------------


def test_resolve_target(tmp_path):
    t = resolve_target([str(TARGET), "--epochs", "1"])
    assert t.argv == [sys.executable, str(TARGET), "--epochs", "1"] and t.stem == "target"
    exe = tmp_path / "my_binary"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    t = resolve_target([str(exe), "--size", "4096"])
    assert t.argv == [str(exe), "--size", "4096"] and t.stem == "my_binary" and t.script is None
    assert resolve_target(["python3", "-c", "1"]).argv[0] == shutil.which("python3")


def test_torch_runner_keeps_torch_optional():
    code = (
        "import sys, ncuadvisor, ncuadvisor.cli, ncuadvisor.profile.session, ncuadvisor.profile.ncu; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    assert "emit_nvtx" in TORCH_RUNNER and "runpy.run_path" in TORCH_RUNNER
    compile(TORCH_RUNNER, "<runner>", "exec")


# -- the command, end to end with the fake ncu --------------------------------------------------------------------


@pytest.mark.slow
def test_profile_default_two_phases(cli, tmp_path):
    r = cli("profile", str(TARGET), "--epochs", "1", "-o", "step.json")
    assert r.code == 0, r.err
    assert "Traceback" not in r.err
    calls = r.phase_calls()
    assert len(calls) == 2
    p1, p2 = calls
    assert p1[:4] == ["--clock-control", "none", "--metrics", ",".join(N.PHASE1_COLLECTED)]
    assert p1[4] == "--log-file" and p1[5].endswith("phase1.log") and p1[6] == "-o"  # ncu's messages, apart
    assert p1[-3:] == [str(TARGET), "--epochs", "1"] and p1[-4] == sys.executable
    # the declared collection by default: tiny_add may be CUDA code, so every rule's metrics
    assert [p2[i + 1] for i, a in enumerate(p2) if a == "--section"] == NO_SOL_SECTIONS
    assert after(p2, "--import-source") == "yes"
    # coverage 0.9: tiny_add; its first launch is phase 1's first, so a window of one launch holds it
    assert after(p2, "--kernel-name") == "regex:^(tiny_add)$" and after(p2, "--kernel-name-base") == "function"
    assert after(p2, "--launch-count") == "1" and "--kernel-id" not in p2
    assert "target: args=['--epochs', '1']" in r.out  # the program's own output passes through
    assert [
        p["launches_profiled"] for p in json.loads((tmp_path / "step.json").read_text())["report"]["profile"]["phases"]
    ] == [2001, 1]
    assert (tmp_path / "step.phase1.ncu-rep").is_file() and (tmp_path / "step.ncu-rep").is_file()
    assert not list(tmp_path.glob(".ncuadvisor-*"))  # the private folder is gone
    res = json.loads((tmp_path / "step.json").read_text())
    assert [k["name"] for k in res["kernels"]] == ["tiny_add", "big_add"]
    assert [k["profiled"] for k in res["kernels"]] == [True, False]
    assert sum(k["time_share"] for k in res["kernels"]) == pytest.approx(1.0)
    prof = res["report"]["profile"]
    assert prof["mode"] == "two-phase" and prof["partial"] is False and prof["ncu_version"] == "2025.3.1.0"
    assert prof["selection"]["chosen"] == ["tiny_add"] and prof["selection"]["coverage"] == 0.9
    assert prof["reports"] == ["step.phase1.ncu-rep", "step.ncu-rep"]
    assert res["report"]["phase1_report"] == "step.phase1.ncu-rep"
    assert "tiny_add" in r.out and "wrote step.json" in r.out  # the terminal summary


@pytest.mark.slow
def test_profile_sections_collection_on_request(cli, tmp_path):
    """NCUADVISOR_COLLECTION=sections: phase 2 collects the whole analysis sections (the way back)."""
    r = cli("profile", str(TARGET), "-o", "step.json", NCUADVISOR_COLLECTION="sections")
    assert r.code == 0, r.err
    p2 = r.phase_calls()[1]
    assert p2[p2.index("--section") : p2.index("--section") + len(SECTIONS_ARGS)] == SECTIONS_ARGS
    assert "--metrics" not in p2
    prof = json.loads((tmp_path / "step.json").read_text())["report"]
    assert prof["profile"]["selection"]["collection"]["mode"] == "sections"


@pytest.mark.slow
def test_profile_declared_collection(cli, tmp_path):
    """The default, declared collection: phase 2 names the analysis metrics with the sections of per-instruction
    data; the result says so, records the replay passes ncu printed, and keeps no 'lacks sections' warning."""
    r = cli("profile", str(TARGET), "-o", "step.json")
    assert r.code == 0, r.err
    p2 = r.phase_calls()[1]
    assert [p2[i + 1] for i, a in enumerate(p2) if a == "--section"] == NO_SOL_SECTIONS
    assert "gpu__time_duration.sum" in after(p2, "--metrics").split(",")
    prof = json.loads((tmp_path / "step.json").read_text())["report"]
    assert prof["profile"]["selection"]["collection"]["mode"] == "declared"
    assert prof["profile"]["selection"]["collection"]["metrics"] == len(after(p2, "--metrics").split(","))
    assert all(p["replay_passes"] for p in prof["profile"]["phases"])  # what the (replayed) ncu output printed
    assert not any("lacks sections" in w for w in prof["warnings"])
    assert any("by name" in w for w in prof["warnings"])


@pytest.mark.slow
def test_profile_html_by_default_named_after_the_program(cli, tmp_path):
    r = cli("profile", str(TARGET), "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "target.html").read_text().lstrip().lower().startswith("<!doctype html")
    assert (tmp_path / "target.phase1.ncu-rep").exists() and (tmp_path / "target.ncu-rep").exists()


@pytest.mark.slow
def test_profile_options_reach_ncu(cli):
    r = cli(
        "profile",
        str(TARGET),
        "--nvtx-range",
        "step",
        "--kernel",
        "regex:tiny|big",
        "--launch-skip",
        "5",
        "--cache-control",
        "none",
        "--target-processes",
        "application-only",
        "--clock-control",
        "base",
        "-o",
        "x.json",
        "-q",
    )
    assert r.code == 0, r.err
    p1, p2 = r.phase_calls()
    (early,) = r.early_calls()  # phase 2 attaches to the program started early: the launch side holds --nvtx
    assert "--nvtx" in early and after(early, "--target-processes") == "application-only"
    assert p2[:2] == ["--mode", "attach"] and "--nvtx" not in p2 and "--target-processes" not in p2
    assert "--nvtx" in p1 and after(p1, "--target-processes") == "application-only"
    for cmd in (p1, p2):
        assert after(cmd, "--nvtx-include") == "step/"
        assert after(cmd, "--cache-control") == "none" and after(cmd, "--clock-control") == "base"
    assert after(p1, "-k") == "regex:tiny|big" and after(p1, "--launch-skip") == "5"
    assert after(p2, "--launch-skip-before-match") == "5" and "-k" not in p2


@pytest.mark.slow
def test_profile_nvtx_include_verbatim(cli):
    r = cli("profile", str(TARGET), "--nvtx-include", "step_all_threads", "-o", "x.json", "-q")
    assert r.code == 0, r.err
    assert after(r.phase_calls()[0], "--nvtx-include") == "step_all_threads"


@pytest.mark.slow
def test_profile_top_k_and_fallback_round(cli, tmp_path):
    # --top 2 asks for big_add too. big_add is phase 1's last launch (a window of 2001 launches), so round 1
    # profiles the first launch of each launch configuration of the two mangled names (2 launches); the fake's
    # phase-2 report (tiny_sections) never holds big_add: a kernel-id round retries it alone, then the result
    # lists it with its phase-1 time
    r = cli("profile", str(TARGET), "--top", "2", "-o", "x.json", "-q")
    assert r.code == 0, r.err
    calls = r.phase_calls()
    assert len(calls) == 3
    assert after(calls[1], "--kernel-name-base") == "mangled"
    assert after(calls[1], "--kernel-name") == "regex:^(_Z8tiny_addPKfS0_Pfi|_Z7big_addPKfS0_Pfm)$"
    assert after(calls[1], "--filter-mode") == "per-launch-config" and after(calls[1], "--launch-count") == "1"
    assert "--kernel-id" not in calls[1]
    assert after(calls[2], "--kernel-id") == "::regex:^(" + N.escape_regex(BIG_ADD) + ")$:1"
    sel = json.loads((tmp_path / "x.json").read_text())["report"]["profile"]["selection"]
    assert sel["window_launches"] == 2001 and sel["config_launches"] == 2
    assert [r["strategy"] for r in sel["rounds"]] == ["config", "kernel-id"]
    res = json.loads((tmp_path / "x.json").read_text())
    assert res["report"]["profile"]["selection"]["chosen"] == ["tiny_add", "big_add"]
    assert [k["profiled"] for k in res["kernels"]] == [True, False]
    assert any("1 of the 2 chosen kernels could not be profiled" in w for w in res["report"]["warnings"])
    assert not (tmp_path / "x.round2.ncu-rep").exists()  # a round that found nothing new leaves no report


@pytest.mark.slow
def test_profile_coverage_option(cli, tmp_path):
    r = cli("profile", str(TARGET), "--coverage", "0.5", "-o", "x.json", "-q")
    assert r.code == 0, r.err
    res = json.loads((tmp_path / "x.json").read_text())
    assert res["report"]["profile"]["selection"]["chosen"] == ["tiny_add"]


@pytest.mark.slow
def test_profile_full(cli, tmp_path):
    r = cli("profile", "--full", "-o", "full.md", "--", str(TARGET), "--top", "3")
    assert r.code == 0, r.err
    (cmd,) = r.phase_calls()
    assert after(cmd, "--set") == "full" and after(cmd, "--import-source") == "yes"
    assert cmd[-3:] == [str(TARGET), "--top", "3"]  # after `--`, even our option names go to the program
    assert (tmp_path / "full.ncu-rep").exists() and (tmp_path / "full.md").exists()


@pytest.mark.slow
def test_profile_full_json(cli, tmp_path):
    r = cli("profile", "--full", "-o", "full.json", "-q", str(TARGET))
    assert r.code == 0, r.err
    res = json.loads((tmp_path / "full.json").read_text())
    assert res["report"]["profile"]["mode"] == "full"
    assert all(k["profiled"] for k in res["kernels"])


@pytest.mark.slow
def test_profile_no_keep(cli, tmp_path):
    r = cli("profile", str(TARGET), "--no-keep", "-o", "x.json", "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "x.json").exists() and not list(tmp_path.glob("*.ncu-rep"))


@pytest.mark.slow
def test_profile_never_overwrites(cli, tmp_path):
    (tmp_path / "x.json").write_text("mine")
    r = cli("profile", str(TARGET), "-o", "x.json")
    assert "already exists" in assert_one_error_line(r, 2)
    assert r.calls == [] and (tmp_path / "x.json").read_text() == "mine"  # ncu never ran
    (tmp_path / "x.json").unlink()
    (tmp_path / "x.phase1.ncu-rep").write_text("old report")
    r = cli("profile", str(TARGET), "-o", "x.json")
    assert "x.phase1.ncu-rep: already exists" in assert_one_error_line(r, 2)
    assert (tmp_path / "x.phase1.ncu-rep").read_text() == "old report"
    r = cli("profile", str(TARGET), "-o", "x.json", "--force", "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "x.phase1.ncu-rep").stat().st_size > 1000


@pytest.mark.slow
def test_profile_refuses_to_overwrite_the_script(cli, tmp_path):
    script = tmp_path / "t.py"
    script.write_text("print(1)\n")
    r = cli("profile", str(script), "-o", "t.md")
    assert r.code == 0 or r.code == 4 or r.code == 2  # t.md is not the script: allowed
    r = cli("profile", str(script), "-o", str(script))
    assert_one_error_line(r, 2)
    assert script.read_text() == "print(1)\n"


# -- error paths --------------------------------------------------------------------------------------------------


def test_error_ncu_not_found(cli, monkeypatch):
    monkeypatch.setattr(N, "STANDARD_DIRS", [])
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))
    r = cli("profile", str(TARGET), "-o", "x.json")
    line = assert_one_error_line(r, 5)
    assert "ncu (Nsight Compute) not found" in line and "developer.nvidia.com/nsight-compute" in line
    assert "CUDA toolkit" in line


def test_error_explicit_ncu_missing(cli, tmp_path):
    r = cli("profile", str(TARGET), "--ncu", str(tmp_path / "nope" / "ncu"), "-o", "x.json")
    assert "not found" in assert_one_error_line(r, 5)


def test_error_ncu_too_old(cli):
    r = cli("profile", str(TARGET), "-o", "x.json", FAKE_NCU_VERSION="2019.5.0.0")
    assert "too old" in assert_one_error_line(r, 5)


def test_error_script_not_found(cli):
    r = cli("profile", "missing_train.py", "-o", "x.json")
    assert "missing_train.py: script not found" in assert_one_error_line(r, 2)
    assert r.calls == []


def test_error_binary_not_found_or_not_executable(cli, tmp_path):
    assert "no such file" in assert_one_error_line(cli("profile", "--", "./nope", "-x"), 2)
    (tmp_path / "data.bin").write_text("x")
    assert "not an executable" in assert_one_error_line(cli("profile", "./data.bin"), 2)
    assert "command not found" in assert_one_error_line(cli("profile", "no_such_command_xyz"), 2)


def test_error_no_target(cli):
    assert "nothing to profile" in assert_one_error_line(cli("profile"), 2)


def test_error_bad_combinations(cli, tmp_path):
    assert "--full" in assert_one_error_line(cli("profile", "--full", "--top", "3", str(TARGET)), 2)
    exe = tmp_path / "b"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert "Python scripts only" in assert_one_error_line(cli("profile", "--torch-ops", str(exe)), 2)
    assert "cannot tell the format" in assert_one_error_line(cli("profile", str(TARGET), "-o", "x.txt"), 2)


def test_error_permission(cli):
    r = cli("profile", str(TARGET), "-o", "x.json", FAKE_NCU_SCENARIO="perm")
    line = assert_one_error_line(r, 6)
    assert "ERR_NVGPUCTRPERM" in line and "NVreg_RestrictProfilingToAdminUsers=0" in line and "SYS_ADMIN" in line
    assert "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission" in r.err  # ncu's own line, verbatim
    assert len(r.phase_calls()) == 1


def test_error_no_gpu(cli):
    r = cli("profile", str(TARGET), "-o", "x.json", FAKE_NCU_SCENARIO="nogpu")
    line = assert_one_error_line(r, 6)
    assert "no usable NVIDIA GPU" in line and "Failed to find any CUDA devices" in line
    assert "==ERROR== Failed to find any CUDA devices" in r.err


def test_error_nothing_profiled(cli):
    r = cli("profile", str(TARGET), "--nvtx-range", "nosuchrange", "-o", "x.json", FAKE_NCU_SCENARIO="no_kernels")
    line = assert_one_error_line(r, 7)
    assert "no kernel was profiled" in line and "nosuchrange/" in line and "tiny_add, big_add" in line
    assert "==WARNING== No kernels were profiled." in r.err


def test_error_program_fails_before_any_kernel(cli):
    r = cli("profile", str(TARGET), "--exit-code", "2", "-o", "x.json", FAKE_NCU_SCENARIO="no_kernels")
    assert "exited with code 2 before any kernel" in assert_one_error_line(r, 7)


@pytest.mark.slow
def test_program_exit_code_gives_a_partial_report(cli, tmp_path):
    r = cli("profile", str(TARGET), "--exit-code", "3", "-o", "x.json", "-q")
    assert r.code == 4, r.err
    assert "Traceback" not in r.err
    assert "==ERROR== The application returned an error code (3)." in r.err
    assert r.err.strip().splitlines()[-1].startswith("ncuadvisor: warning: the program exited with code 3")
    res = json.loads((tmp_path / "x.json").read_text())
    assert res["report"]["profile"]["partial"] is True
    assert any("exited with code 3" in w and "partial" in w for w in res["report"]["warnings"])
    assert [k["profiled"] for k in res["kernels"]] == [True, False]  # what was collected is still analysed


@pytest.mark.slow
def test_phase2_collecting_nothing_is_incomplete(cli, tmp_path):
    r = cli("profile", str(TARGET), "-o", "x.json", "-q", FAKE_NCU_SCENARIO="phase2:no_kernels")
    assert r.code == 4, r.err
    res = json.loads((tmp_path / "x.json").read_text())
    assert [k["profiled"] for k in res["kernels"]] == [False, False]
    rounds = res["report"]["profile"]["selection"]["rounds"]
    assert len(rounds) >= 3 and [r["strategy"] for r in rounds[:3]] == ["window", "kernel-id", "per-launch-config"]
    assert res["report"]["path"].endswith("x.phase1.ncu-rep")


@pytest.mark.slow
def test_ctrl_c_keeps_and_analyses_what_was_collected(tmp_path):
    ready = tmp_path / "ready"
    env = dict(
        os.environ,
        PATH=str(FAKE_DIR) + os.pathsep + os.environ["PATH"],
        FAKE_NCU_SCENARIO="phase1:hang",
        FAKE_NCU_READY=str(ready),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    code = "from ncuadvisor.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "profile", str(TARGET), "-o", "x.json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while not ready.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert ready.exists(), proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "ncuadvisor: interrupted" in err.strip().splitlines()[-1]
    res = json.loads((tmp_path / "x.json").read_text())
    assert res["report"]["profile"]["partial"] is True
    assert res["report"]["warnings"][0].startswith("partial: interrupted")
    assert [k["name"] for k in res["kernels"]] == ["tiny_add", "big_add"]
    assert (tmp_path / "x.phase1.ncu-rep").exists()


# On a terminal: the progress bar as a user sees it. The command runs in a pseudo-terminal (stdout and stderr both the
# terminal, as in a shell), and what it wrote, escape codes included, is read back.

TERMINAL_ENV = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERM", "COLORTERM")


def run_on_a_terminal(tmp_path: Path, columns: int, *args: str, term: str = "xterm-256color") -> tuple[int, str]:
    """Run `ncuadvisor profile ARGS` with the fake ncu in a pseudo-terminal `columns` wide; its exit code and all
    it wrote (rich reads the width from the terminal itself: COLUMNS and the colour variables are left out)."""
    pty = pytest.importorskip("pty", reason="needs a pseudo-terminal (pty)")
    import fcntl
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_ENV and not k.startswith("FAKE_NCU_")}
    env.update(
        TERM=term,
        PATH=str(FAKE_DIR) + os.pathsep + os.environ["PATH"],
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ncuadvisor", "profile", *args],
            cwd=tmp_path,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
    finally:
        os.close(slave)
    raw = bytearray()
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    data = os.read(master, 65536)
                except OSError:  # Linux: EIO once the program and its children have closed the terminal
                    break
                if not data:
                    break
                raw += data
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.time()))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, raw.decode("utf-8", "replace")


def screen_rows(raw: str) -> list[str]:
    """The rows a terminal is left showing after `raw`: text, carriage return, line feed, cursor up and erase line
    (what rich's live display uses) are applied; other escape codes are dropped; long rows are not wrapped."""
    import re

    rows, r, c = [""], 0, 0
    for tok in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if tok == "\r":
            c = 0
        elif tok == "\n":
            r += 1
            rows += [""] * (r + 1 - len(rows))
        elif tok.startswith("\x1b["):
            if tok.endswith("A"):
                r = max(0, r - int(tok[2:-1] or 1))
            elif tok == "\x1b[2K":
                rows[r] = ""
        else:
            row = rows[r].ljust(c)
            rows[r] = row[:c] + tok + row[c + len(tok) :]
            c += len(tok)
    return [row.rstrip() for row in rows]


@pytest.mark.slow
@pytest.mark.parametrize("columns", [100, 40])
def test_progress_bar_on_a_terminal(tmp_path, columns):
    """Phase 1 (2001 launches of tiny_phase1) and phase 2 (a window of one launch) each draw a live bar that is
    redrawn in place, names its phase, counts up to the last launch, fits the width, and is gone at the end; the
    program's output and the summary are left on their own rows, not glued to a stale copy of the bar."""
    import re

    code, raw = run_on_a_terminal(tmp_path, columns, str(TARGET), "-o", "step.json")
    assert code == 0, raw
    assert "Traceback" not in raw
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    frames = {p: [f for f in re.split(r"[\r\n]", plain) if re.search(rf"phase {p}/2(?!:)", f)] for p in (1, 2)}
    assert len(frames[1]) >= 2 and len(frames[2]) >= 2, frames  # drawn when it starts, redrawn when it ends
    assert re.search(r"\s2001\s", frames[1][-1]), frames[1]  # every launch of phase 1 counted (no total known)
    assert re.search(r"\s1/1\s", frames[2][-1]), frames[2]  # ncu's own count: launch 1 of --launch-count 1
    too_wide = [f for f in frames[1] + frames[2] if len(f) > columns]
    assert not too_wide, too_wide
    assert "\x1b[2K" in raw and raw.count("\n") < 200  # redrawn in place, not a line per launch
    rows = screen_rows(raw)
    assert not [r for r in rows if re.search(r"phase [12]/2(?!:)", r)], rows  # no stale bar left on screen
    order = [
        "phase 1/2: timing every kernel launch",
        "target: args=[]",
        "2001 launches profiled",
        "phase 2/2: the analysis metrics",
        "target: args=[]",
        "1 launch profiled",
        "wrote step.json",
    ]
    at, seen = 0, []
    for row in rows:
        if at < len(order) and row.strip().startswith(order[at]):
            seen.append(row)
            at += 1
    assert at == len(order), (seen, rows)


@pytest.mark.slow
def test_progress_on_a_dumb_terminal(tmp_path):
    """TERM=dumb: no live bar and no escape codes, the same rows as in a pipe (no blank rows from the bar)."""
    code, raw = run_on_a_terminal(tmp_path, 100, str(TARGET), "-o", "step.json", term="dumb")
    assert code == 0, raw
    assert "\x1b" not in raw and "Traceback" not in raw
    rows = raw.replace("\r\n", "\n").split("\n")
    # the host's launch interval, measured before phase 1, says its value or why there is none in one row
    assert rows[0].startswith("  host launch interval"), rows
    rows = rows[1:]
    assert rows[:2] == ["phase 1/2: timing every kernel launch", "target: args=[]"], rows
    assert rows[2].startswith("  2001 launches profiled in "), rows
    i = rows.index("phase 2/2: the analysis metrics, one launch per kernel")
    assert rows[i + 1] == "target: args=[]" and rows[i + 2].startswith("  1 launch profiled in "), rows


# -- on the GPU machine -------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_profile_flaws_end_to_end(tmp_path):
    """Real ncu, real GPU: profile copy_strided and copy_vec4 of workloads/cuda/flaws.cu; the report must name
    copy_strided's uncoalesced access (MEM001) and keep both kernels' phase-1 times."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        pytest.skip("needs nvcc")
    exe = tmp_path / "flaws"
    subprocess.run(
        [nvcc, "-arch=sm_90", "-lineinfo", "-O3", "-o", str(exe), str(ROOT / "workloads/cuda/flaws.cu")],
        check=True,
        cwd=ROOT / "workloads/cuda",
    )
    out = tmp_path / "flaws.json"
    code = "from ncuadvisor.cli import main; main()"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "profile",
            "--top",
            "2",
            "-o",
            str(out),
            "--",
            str(exe),
            "--once",
            "--only",
            "copy_strided,copy_vec4",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    names = {k["name"]: k for k in res["kernels"]}
    assert set(names) == {"copy_strided", "copy_vec4"}
    strided = names["copy_strided"]
    assert strided["profiled"] is True and strided["launches"] == 1
    assert strided["findings"] and strided["findings"][0]["rule"] == "MEM001", strided["findings"][:2]
    assert sum(k["time_share"] for k in res["kernels"]) == pytest.approx(1.0)
    assert (tmp_path / "flaws.phase1.ncu-rep").exists() and (tmp_path / "flaws.ncu-rep").exists()


@pytest.mark.gpu
def test_gpu_profile_multiprocess_ranks(tmp_path):
    """Real ncu, real GPU: workloads/cuda/multiproc.cu runs its kernels in 2 worker processes with RANK set (as
    torchrun does); the result splits kernels per process, shows the ranks, and finds rank 0's strided copy."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        pytest.skip("needs nvcc")
    exe = tmp_path / "multiproc"
    subprocess.run(
        [nvcc, "-arch=sm_90", "-lineinfo", "-O3", "-o", str(exe), str(ROOT / "workloads/cuda/multiproc.cu")],
        check=True,
        cwd=ROOT / "workloads/cuda",
    )
    out = tmp_path / "mp.json"
    code = "from ncuadvisor.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "profile", "--coverage", "1.0", "-o", str(out), "--", str(exe)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    procs = res["report"]["processes"]
    assert sorted(p.get("rank") for p in procs) == [0, 1], procs
    assert all(p["label"].startswith("rank ") for p in procs)
    strided = next(k for k in res["kernels"] if k["name"] == "copy_strided_rank")
    assert strided["process"]["rank"] == 0 and strided["profiled"] is True
    assert strided["findings"][0]["category"] == "coalescing", strided["findings"][:2]
    scale = [k for k in res["kernels"] if k["name"] == "scale_add"]
    assert sorted(k["process"]["rank"] for k in scale) == [0, 1] and all(k["profiled"] for k in scale)
    assert (tmp_path / "mp.ncu-rep.processes.json").exists()


def test_window_launch_count_from_phase1_order():
    from types import SimpleNamespace as K

    from ncuadvisor.profile.selection import window_launch_count

    a, b, c = (K(name=n, demangled=n + "(int)", grid="(1, 1, 1)", block="(32, 1, 1)") for n in "abc")
    kernels = [a, b, c]
    order = ["k0", "k0", "k2", "k0", "k1", "k2"]  # a a c a b c
    launches = [{"kernel_id": kid} for kid in order]
    assert window_launch_count(launches, kernels, [a, b]) == 4  # a a (c filtered out) a b
    assert window_launch_count(launches, kernels, [c]) == 1
    assert window_launch_count(launches, kernels, [a, b, c]) == 5
    assert window_launch_count(launches[:3], kernels, [b]) is None


def test_window_strategy_command_line():
    cmd = N.phase2_command(
        "ncu", "/tmp/x", ["./prog"], N.Filters(), ["a", "b"], ["SpeedOfLight"], strategy="window", launch_count=7
    )
    assert after(cmd, "--kernel-name") == "regex:^(a|b)$" and after(cmd, "--launch-count") == "7"
    with pytest.raises(ValueError):
        N.phase2_command("ncu", "/tmp/x", ["./prog"], N.Filters(), ["a"], [], strategy="window")


def test_bar_shows_function_names_when_ncu_prints_mangled_ones():
    """Phase 2 filters by mangled name, so real ncu prints `==PROF== Profiling "_ZN2at6native…"`: the bar maps it
    back to the function name phase 1 saw (seen on the H200 on 2026-11-30, before the mapping existed)."""
    from ncuadvisor.profile import output as ncu_mod
    from ncuadvisor.profile.progress import ProgressUI

    ui = ProgressUI()
    shown = []
    ui._update = lambda detail, launch: shown.append(detail)
    mangled = (
        "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"
    )
    ev = ncu_mod.parse_line(f'==PROF== Profiling "{mangled}" - 8 (9/9): 0%....50%....100% - 36 passes')
    assert ev.kind == "progress" and ev.name == mangled
    ui.display_names = {mangled: "vectorized_elementwise_kernel"}
    ui.event(ev)
    ui.display_names = {}
    ui.event(ev)
    assert shown[0] == "vectorized_elementwise_kernel · 36 passes"
    assert shown[1].startswith("_ZN2at6native29")


@pytest.mark.slow
def test_profile_places_a_kernel_at_its_tensor_ceiling_without_phase_2(cli, tmp_path):
    """Phase 1 (here a full-section report of real cuBLAS kernels, which holds the metrics phase 1 collects) shows
    the TF32 `sm90_xmma_gemm` at 88% of its tensor pipe: it is placed, left out of phase 2's kernel names, listed in
    the result's selection, and the progress line says so; the FP32 SIMT GEMM (tensor pipe idle) goes to phase 2."""
    r = cli(
        "profile", str(TARGET), "-o", "step.json", FAKE_NCU_PHASE1="torch_gemm_conv", FAKE_NCU_PHASE2="torch_gemm_conv"
    )
    assert r.code == 0, r.err
    p2 = r.phase_calls()[1]
    names = after(p2, "--kernel-name")
    assert "sm80_xmma_gemm" in names and "sm90_xmma_gemm" not in names
    sel = json.loads((tmp_path / "step.json").read_text())["report"]["profile"]["selection"]
    assert [n[:14] for n in sel["at_tensor_ceiling"]] == ["sm90_xmma_gemm"]
    assert len(sel["chosen"]) == 2
    assert "1 more placed near their tensor ceiling by phase 1" in r.err
    # the FP32 GEMM ran its tensor pipe 0.0003% in phase 1: not idle, so the tensor FLOP counts stay
    assert set(TENSOR_COUNTS) <= set(after(p2, "--metrics").split(","))
    assert "no tensor FLOP counts" not in r.err


@pytest.mark.slow
def test_profile_leaves_the_tensor_counts_out_when_phase_1_saw_the_pipe_idle(cli, tmp_path):
    """Phase 1 (a full-section report of patterns.cu, which holds the metrics phase 1 collects) measured the tensor
    pipe 0% on every launch: phase 2 asks for the tensor paths' peaks but not their FLOP counts, and says so."""
    r = cli("profile", str(TARGET), "-o", "step.json", FAKE_NCU_PHASE1="patterns", FAKE_NCU_PHASE2="patterns")
    assert r.code == 0, r.err
    metrics = after(r.phase_calls()[1], "--metrics").split(",")
    assert not set(TENSOR_COUNTS) & set(metrics)
    assert set(TENSOR_PEAKS) <= set(metrics) and "gpu__time_duration.sum" in metrics
    assert "no tensor FLOP counts in phase 2" in r.err
    res = json.loads((tmp_path / "step.json").read_text())
    assert res["report"]["profile"]["selection"]["collection"]["metrics"] == len(metrics)


@pytest.mark.parametrize(
    "option", [["--top", "99999999999999999999999"], ["--launch-skip", "99999999999999999999999"], ["--top", "0"]]
)
def test_every_option_is_checked_before_the_program_starts(cli, option):
    r = cli("profile", *option, "-o", "step.json", "--", sys.executable, str(TARGET))
    assert r.code == 2, (r.code, r.err)
    assert "Traceback" not in r.err and r.phase_calls() == []  # ncu never ran


def _profile_subprocess(tmp_path: Path, *args: str, scenario: str = "", timeout: float = 90):
    env = dict(
        os.environ,
        PATH=str(FAKE_DIR) + os.pathsep + os.environ["PATH"],
        FAKE_NCU_SCENARIO=scenario,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    t0 = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "profile", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    return p, time.monotonic() - t0


@pytest.mark.slow
def test_timeout_stops_a_hanging_program_and_analyses_what_was_collected(tmp_path):
    p, seconds = _profile_subprocess(tmp_path, "--timeout", "2", "-o", "x.json", str(TARGET), scenario="phase1:hang")
    assert p.returncode == 4, p.stderr
    assert seconds < 40 and "Traceback" not in p.stderr
    res = json.loads((tmp_path / "x.json").read_text())
    assert res["report"]["profile"]["partial"] is True
    assert res["report"]["warnings"][0].startswith("partial: the program was stopped at --timeout 2 s during phase 1")
    assert [k["name"] for k in res["kernels"]] == ["tiny_add", "big_add"]
    assert "--timeout" in p.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_a_child_the_program_left_holding_the_output_is_ended(tmp_path):
    """The program starts a child that keeps ncu's output pipe open and outlives it: the run ends when ncu does
    (after a short grace), and the child is ended with the process group."""
    program = tmp_path / "forks.py"
    program.write_text(
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('parent done', flush=True)\n"
    )
    p, seconds = _profile_subprocess(tmp_path, "-o", "x.json", str(program), scenario="passthrough", timeout=120)
    assert p.returncode == 0, p.stderr
    assert seconds < 60, seconds
    pid = int((tmp_path / "child.pid").read_text())
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import fuzz

    assert not fuzz._running(pid)  # ended (a zombie until its new parent reaps it counts as ended)


@pytest.mark.parametrize(
    "printed, was",
    [
        ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters", 6),
        ("\n".join(f'==PROF== Profiling "tiny_add" - {i}: 0%....50%....100% - 1 pass' for i in range(50)), 4),
        ("==ERROR== The application returned an error code (3).", 4),
        ("==PROF== Report: /tmp/elsewhere.ncu-rep", 0),
    ],
    ids=["permission", "fifty progress lines", "an error code", "a report path"],
)
def test_the_programs_output_is_never_taken_for_ncus(cli, tmp_path, printed, was):
    """ncu's own messages are read from its log file: a program printing lines that look like ncu's changes
    nothing (they once made the run exit 6, mark both phases partial, or turn exit 0 into 4)."""
    program = tmp_path / "imitates.py"
    program.write_text(f"print({printed!r})\n")
    r = cli("profile", "-o", "x.json", str(program))
    assert r.code == 0, (was, r.code, r.err)
    assert printed.splitlines()[0] in r.out  # the program's output still passes through
    res = json.loads((tmp_path / "x.json").read_text())
    assert res["report"]["profile"]["partial"] is False
    calls = r.phase_calls()
    assert all("--log-file" in c and c.index("--log-file") < c.index("-o") for c in calls)


@pytest.mark.slow
def test_the_programs_output_is_streamed_not_kept(tmp_path):
    """64 MiB of program output, half of it on one line: passed through, and profile's memory does not grow with
    it (it once held every line: 1 GiB of output took 2.9 GB)."""
    program = tmp_path / "talks.py"
    program.write_text(
        "import sys\n"
        "line = 'x' * (1 << 20) + '\\n'\n"
        "for _ in range(32):\n    sys.stdout.write(line)\n"
        "sys.stdout.write('y' * (32 << 20) + '\\n')\n"
    )
    env = dict(
        os.environ,
        PATH=str(FAKE_DIR) + os.pathsep + os.environ["PATH"],
        FAKE_NCU_SCENARIO="passthrough",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    driver = (  # the peak written by an exit handler: the command ends the process itself (cli.app.run)
        "import atexit, runpy, sys\n"
        "def peak():\n"
        "    kb = [int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM:')][0]\n"
        "    open('peak_kb', 'w').write(str(kb))\n"
        "atexit.register(peak)\n"
        "sys.argv = ['ncuadvisor'] + sys.argv[1:]\n"
        "runpy.run_module('ncuadvisor', run_name='__main__')\n"
    )
    with open(tmp_path / "out.txt", "wb") as out:
        p = subprocess.run(
            [sys.executable, "-c", driver, "profile", "-o", "x.json", "-q", str(program)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    assert p.returncode == 0, p.stderr[-2000:]
    assert (tmp_path / "out.txt").stat().st_size >= 64 << 20
    assert int((tmp_path / "peak_kb").read_text()) < 330 << 10  # KiB: 258 MB measured (it was 431 MB when kept)
