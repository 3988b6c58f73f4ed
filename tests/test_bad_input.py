"""The bad-input corpus, run as a user runs the command (a subprocess): every case ends in one clear line on stderr and
exit code 2, or in a correct analysis of what is there that says what is missing; never a traceback, never a hang.
Reports are real reports (fixtures/) read by the real ncu_report; the damaged ones are cut or mangled copies of them."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES


def run(*args, cwd=None, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args], capture_output=True, text=True, cwd=cwd, timeout=timeout
    )


def assert_one_clear_line(p, *needles):
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(lines) == 1, p.stderr  # no native-library log lines, no traceback
    assert lines[0].startswith("ncuadvisor: error: ")
    for n in needles:
        assert n in lines[0]


def make_case(kind, tmp_path, report_path):
    probe = report_path("probe").read_bytes()
    path = tmp_path / "x.ncu-rep"
    if kind == "missing":
        return tmp_path / "nope.ncu-rep"
    if kind == "directory":
        return tmp_path
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(os.urandom(1 << 16))
    elif kind == "text":
        path.write_text("==PROF== this is a log file that was saved with the wrong name\n" * 50)
    elif kind.startswith("cut"):
        path.write_bytes(probe[: int(kind[3:])])
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "bad_xz":
        path = tmp_path / "x.ncu-rep.xz"
        path.write_bytes((FIXTURES / "probe.ncu-rep.xz").read_bytes()[:5000])
    elif kind == "magic_then_garbage":
        path.write_bytes(probe[:16] + os.urandom(1 << 16))
    elif kind == "zstd_bad_checksum":
        path = tmp_path / "x.ncu-repz"
        data = bytearray((FIXTURES / "probe.ncu-repz").read_bytes())
        data[len(data) // 2] ^= 0x40
        path.write_bytes(bytes(data))
    elif kind == "xz_zeros_bomb":
        import lzma

        path = tmp_path / "x.ncu-rep.xz"
        path.write_bytes(lzma.compress(probe[:4] + bytes(64 << 20)))
    elif kind == "zstd_garbage":
        path = tmp_path / "x.ncu-repz"
        path.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(1 << 16))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, needles",
    [
        ("missing", ["no such file"]),
        ("directory", ["is a directory"]),
        ("empty", ["empty file"]),
        ("random", ["unknown file format"]),
        ("text", ["unknown file format"]),
        ("cut8", ["no whole kernel result"]),  # inside the file header: refused before the native library reads it
        ("cut200", ["no whole kernel result"]),
        ("cut5000", ["no whole kernel result"]),
        ("cut100000", ["no whole kernel result"]),
        ("cut500000", ["no whole kernel result"]),  # inside the first result: never a phantom kernel "nan"
        ("fifo", ["not a regular file"]),  # would block a reader forever
        ("bad_xz", []),
        ("magic_then_garbage", []),
        ("zstd_garbage", ["damaged compressed report"]),  # a .ncu-repz that is no zstd stream
        ("zstd_bad_checksum", ["damaged compressed report"]),  # read anyway before: refused now
        ("xz_zeros_bomb", ["not an Nsight Compute report"]),  # refused on its first bytes, nothing written to /tmp
    ],
)
def test_unusable_input_is_one_clear_line_and_exit_2(kind, needles, tmp_path, report_path):
    path = make_case(kind, tmp_path, report_path)
    p = run("report", str(path), timeout=60)
    assert_one_clear_line(p, *needles)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path, report_path):
    path = tmp_path / "x.ncu-rep"
    path.write_bytes(report_path("probe").read_bytes())
    path.chmod(0)
    assert_one_clear_line(run("report", str(path)), "permission denied")


@pytest.mark.slow
@pytest.mark.parametrize("fraction, whole", [(0.5, 1), (0.999, 3)])
def test_report_cut_late_is_analysed_and_said_partial(tmp_path, report_path, fraction, whole):
    """A report cut inside its results (a full disk, a copy interrupted): ncu_report reads the results before the cut
    without complaint; we analyse the whole ones, drop the one the cut went through, and say so first."""
    probe = report_path("probe").read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(probe[: int(len(probe) * fraction)])
    out = tmp_path / "cut.json"
    p = run("report", str(path), "-f", "json", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    res = json.loads(out.read_text())
    assert res["report"]["warnings"][0].startswith("partial: the report file is truncated")
    assert f"its {whole} whole results" in res["report"]["warnings"][0]
    assert len(res["kernels"]) == whole
    assert all(k["name"] and k["name"] != "nan" for k in res["kernels"])
    assert "copy_vec4" in {k["name"] for k in res["kernels"]}  # the first result of the file


@pytest.mark.slow
def test_ncu_repz_gives_the_same_analysis(tmp_path):
    """fixtures/probe.ncu-repz is probe.ncu-rep compressed with `zstd -19` (ncu 2026.3+ writes zstd-compressed
    .ncu-repz; the ncu 2025.3.1 at hand writes .ncu-rep only): ncu_report reads it, and the analysis is the same."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run("report", str(FIXTURES / "probe.ncu-repz"), "-f", "json", "-o", str(a)).returncode == 0
    assert run("report", str(FIXTURES / "probe.ncu-rep.xz"), "-f", "json", "-o", str(b)).returncode == 0
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert [(k["name"], k["duration_ns"], [f["rule"] for f in k["findings"]]) for k in ra["kernels"]] == [
        (k["name"], k["duration_ns"], [f["rule"] for f in k["findings"]]) for k in rb["kernels"]
    ]
    assert len(ra["kernels"]) == 4


@pytest.mark.slow
@pytest.mark.parametrize(
    "fixture, warning",
    [
        ("flaws_basic", "lacks sections"),  # --set basic only: the roofline and the rules that need no more
        ("tiny_phase1", None),  # one metric only (gpu__time_duration): time shares, program-level advice
    ],
)
def test_reports_with_fewer_sections_are_analysed(tmp_path, fixture, warning):
    out = tmp_path / "r.json"
    p = run("report", str(FIXTURES / f"{fixture}.ncu-rep.xz"), "-f", "json", "-o", str(out))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    res = json.loads(out.read_text())
    assert res["kernels"]
    if warning:
        assert any(warning in w for w in res["report"]["warnings"])


@pytest.mark.slow
@pytest.mark.parametrize("fixture, processes", [("multiproc", 2), ("multigpu", 2)])
def test_reports_of_several_processes_and_gpus(tmp_path, fixture, processes):
    out = tmp_path / "r.json"
    p = run("report", str(FIXTURES / f"{fixture}.ncu-rep.xz"), "-f", "json", "-o", str(out))
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    assert len(res["report"]["processes"]) == processes
    assert {k["process"]["pid"] for k in res["kernels"]} == {pr["pid"] for pr in res["report"]["processes"]}


@pytest.mark.slow
def test_multi_process_ncu_repz_is_split_by_process(tmp_path):
    """A .ncu-repz is read from its decompressed copy, so the report-file layout (which process each result came
    from) is there as for a .ncu-rep: the real 2-process fixture, zstd-compressed, keeps both processes."""
    import lzma

    zstandard = pytest.importorskip("zstandard")
    path = tmp_path / "multiproc.ncu-repz"
    path.write_bytes(zstandard.ZstdCompressor(level=3).compress(lzma.open(FIXTURES / "multiproc.ncu-rep.xz").read()))
    out = tmp_path / "r.json"
    p = run("report", str(path), "-f", "json", "-o", str(out))
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    assert sorted(pr["pid"] for pr in res["report"]["processes"]) == [18918, 18919]
    assert res["report"]["ncu_version"] == "2025.3.1.0"  # read from the plain bytes, as for a .ncu-rep


@pytest.mark.slow
@pytest.mark.parametrize(
    "args,needle",
    [
        (["report", "fixtures/flaws_basic.ncu-rep.xz", "-f", "markdown"], "'--format'"),
        (["report", "fixtures/flaws_basic.ncu-rep.xz", "--top", "abc"], "'--top'"),
        (["report", "fixtures/flaws_basic.ncu-rep.xz", "--bogus"], "--bogus"),
        (["report"], "'path'"),
        (["report", "a.ncu-rep", "b.ncu-rep"], "(b.ncu-rep)"),
        (["diff", "fixtures/flaws_basic.ncu-rep.xz"], "'after'"),
        (["no-such-command"], "no-such-command"),
        (["report", "fixtures/flaws_basic.ncu-rep.xz", "--top", "-3"], "'--top'"),
        (
            [
                "report",
                "fixtures/flaws_basic.ncu-rep.xz",
                "--source-root",
                "no/such/folder",
                "-o",
                "no/such/folder/x.sarif",
            ],
            "'--source-root'",
        ),
    ],
)
def test_command_line_misuse_is_a_usage_error(args, needle):
    """Misused options and arguments are the user's error (exit 2, one line naming it and the help to read), not an
    'internal error': typer >= 0.29 raises its own copy of click's exceptions, which a plain `click.ClickException`
    check misses."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = run(*args, cwd=root)
    assert_one_clear_line(p, needle, "--help`)")
    assert "internal error" not in p.stderr


def test_no_arguments_shows_the_help():
    p = run()
    assert p.returncode == 2 and "Usage" in p.stdout
    assert "error" not in p.stderr


@pytest.mark.slow
def test_an_unknown_rule_code_is_bad_input():
    p = run("rules", "NOPE001")
    assert_one_clear_line(p, "no rule 'NOPE001'")


# -- the filesystem: where the output goes -------------------------------------------------------------------------


@pytest.mark.slow
def test_output_to_a_fifo_is_written_in_place(tmp_path, report_path):
    """`-o FIFO --force` (a device, a pipe): written through, never replaced by a regular file."""
    import threading

    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    p = run("report", str(report_path("probe")), "-o", str(fifo), "--force", "-q")
    reader.join(30)
    assert p.returncode == 0, p.stderr
    assert fifo.is_fifo() and got and got[0].startswith(b"#")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.md"]


@pytest.mark.slow
def test_output_to_a_fifo_without_force_is_refused(tmp_path, report_path):
    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    assert_one_clear_line(run("report", str(report_path("probe")), "-o", str(fifo)), "already exists")
    assert fifo.is_fifo()


@pytest.mark.slow
def test_output_folder_that_fills_up_leaves_nothing_behind(tmp_path, report_path):
    """A write that fails half-way (the file size limit stands in for a full disk): one line, exit 2, and neither
    the output nor its temporary file is left."""
    import resource
    import signal

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = tmp_path / "out" / "r.html"
    out.parent.mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(report_path("probe")), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_files,
    )
    assert_one_clear_line(p, "cannot write")
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize("value", ["nan", "-inf", "inf", "1" * 400])
def test_a_threshold_that_is_no_finite_number_is_a_config_error(tmp_path, report_path, value):
    (tmp_path / "ncuadvisor.toml").write_text(f"[thresholds.MEM001]\nmin_excess_fraction = {value}\n")
    p = run("report", str(report_path("probe")), "-f", "json", cwd=tmp_path)
    assert_one_clear_line(p, "thresholds.MEM001.min_excess_fraction", "finite number")


@pytest.mark.parametrize(
    "text",
    ["this is [not toml", "x = " + "[" * 5000 + "]" * 5000 + "\n", "\udcff".encode("utf-8", "surrogateescape")],
    ids=["invalid", "nested 5,000 deep", "not UTF-8"],
)
def test_an_unrelated_pyproject_above_never_stops_the_report(tmp_path, report_path, text):
    """A pyproject.toml up the tree that is not ncuadvisor's (no [tool.ncuadvisor] in it) is passed over whatever
    it holds; the same file naming [tool.ncuadvisor] is one clear line."""
    work = tmp_path / "project" / "sub"
    work.mkdir(parents=True)
    data = text if isinstance(text, bytes) else text.encode()
    (tmp_path / "pyproject.toml").write_bytes(data)
    p = run("report", str(report_path("probe")), "-f", "json", cwd=work)
    assert p.returncode == 0 and json.loads(p.stdout)["kernels"], p.stderr
    (tmp_path / "pyproject.toml").write_bytes(b"[tool.ncuadvisor]\nselect = ['MEM']\n" + data)
    assert_one_clear_line(run("report", str(report_path("probe")), cwd=work), "pyproject.toml")


def test_a_symlink_loop_is_said_as_such(tmp_path):
    loop = tmp_path / "loop.ncu-rep"
    loop.symlink_to(loop)
    assert_one_clear_line(run("report", str(loop), cwd=tmp_path), "symbolic links")


@pytest.mark.parametrize("option", ["report", "-o", "--config", "--rules-dir", "--host-trace", "diff"])
def test_a_path_under_a_folder_without_search_permission_is_one_line(
    tmp_path, report_path, option, monkeypatch, capsys
):
    """Every path option: a folder without search permission (EACCES, here raised by the file system's calls for
    any path under /locked, since this suite may run as root) is one line and exit 2, never an internal error."""
    import pathlib

    from ncuadvisor.cli.app import main

    locked = "/locked/x"
    real_stat = os.stat

    def stat(path, *a, **kw):
        if str(path).startswith("/locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(pathlib.os, "stat", stat, raising=False)
    probe = str(report_path("probe"))
    argv = {
        "report": ["report", locked + ".ncu-rep"],
        "-o": ["report", probe, "-o", locked + ".json"],
        "--config": ["report", probe, "--config", locked + ".toml"],
        "--rules-dir": ["report", probe, "--rules-dir", locked],
        "--host-trace": ["report", probe, "--host-trace", locked + ".json"],
        "diff": ["diff", probe, locked + ".ncu-rep"],
    }[option]
    monkeypatch.setattr(sys, "argv", ["ncuadvisor", *argv])
    with pytest.raises(SystemExit) as done:
        main()
    err = capsys.readouterr().err
    assert done.value.code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ncuadvisor: error: /locked") and "denied" in lines[0], err


def test_garbage_after_an_xz_stream_is_refused(tmp_path):
    bad = tmp_path / "probe.ncu-rep.xz"
    bad.write_bytes((FIXTURES / "probe.ncu-rep.xz").read_bytes() + b"appended, not xz")
    assert_one_clear_line(run("report", str(bad), cwd=tmp_path), str(bad), "garbage after the last xz stream")
    assert [p.name for p in tmp_path.iterdir()] == ["probe.ncu-rep.xz"]
