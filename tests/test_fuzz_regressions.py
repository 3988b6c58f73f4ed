"""One test per defect the fuzz campaign found (benchmarks/fuzz.py), each on a real report read by the real
ncu_report, run as a user runs the command (a subprocess) where the defect showed there."""

from __future__ import annotations

import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path

import fuzz  # benchmarks/ is on sys.path (tests/conftest.py)
import pytest

from ncuadvisor.reportfile.blocks import iter_blocks
from ncuadvisor.reportfile.integrity import check_report
from ncuadvisor.result.types import Result

ROOT = Path(__file__).resolve().parent.parent


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def run(*args: str, cwd: Path, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(cwd))
    return subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args], cwd=cwd, env=env, capture_output=True, timeout=timeout, **kw
    )


@pytest.fixture(scope="module")
def pipeline() -> bytes:
    return fuzz.plain("pipeline_v1")


def test_profile_never_takes_a_report_path_the_program_printed(tmp_path):
    """`==PROF== Report: PATH` printed by the profiled program is not ncu's report: it is neither moved nor removed."""
    from ncuadvisor.profile.ncu import produced_report

    victim = tmp_path / "precious.ncu-rep"
    victim.write_bytes(b"NVR\0user data")
    work = tmp_path / ".ncuadvisor-x"
    work.mkdir()
    base = str(work / "phase1")
    assert produced_report(base, str(victim)) is None
    (work / "phase1.ncu-rep").write_bytes(b"NVR\0ncu's own")
    assert produced_report(base, str(victim)) == work / "phase1.ncu-rep"
    assert produced_report(base, base + ".ncu-rep") == work / "phase1.ncu-rep"
    assert victim.read_bytes() == b"NVR\0user data"


def _damaged_payload(data: bytes, tmp_path: Path) -> bytes:
    """A byte flip inside the second result's payload that the strict walk catches (seeded search)."""
    rng = random.Random(7)
    blocks = [b for b in iter_blocks(data) if (b.header.get(2) or [0])[0]]
    b = blocks[1]
    for _ in range(200):
        at = rng.randrange(b.payload_start + 4, b.payload_start + 4096)
        m = fuzz._flip(data, at, rng)
        (tmp_path / "probe.ncu-rep").write_bytes(m)
        found = check_report(tmp_path / "probe.ncu-rep")
        if found.dropped_blocks == 1 and found.cut_at is None:
            return m
    raise AssertionError("no damaging flip found")


@pytest.mark.slow
def test_a_damaged_result_is_left_out_and_counted_never_a_kernel_nan(pipeline, tmp_path):
    mutant = _damaged_payload(pipeline, tmp_path)
    src = tmp_path / "m.ncu-rep"
    src.write_bytes(mutant)
    p = run("report", str(src), "-f", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["report"]["warnings"][0].startswith("partial: the report file is damaged: this analyses its 2 whole")
    assert len(res["kernels"]) == 2
    assert all(k["name"] and k["name"] != "nan" and k["duration_ns"] > 0 for k in res["kernels"])
    md = run("report", str(src), "-f", "md", cwd=tmp_path)
    assert "partial: the report file is damaged" in md.stdout.decode()  # said in every format, not only JSON


@pytest.mark.slow
def test_a_crafted_result_count_is_refused_at_once(pipeline, tmp_path):
    mutant = next(m for _c, lab, m in fuzz.mutants(pipeline, random.Random(1), {"count"}, 0) if "4294967297" in lab)
    src = tmp_path / "m.ncu-rep"
    src.write_bytes(mutant)
    p = run("report", str(src), cwd=tmp_path, timeout=20)
    assert p.returncode == 2 and b"no whole kernel result" in p.stderr, p.stderr


@pytest.mark.slow
def test_a_failed_write_leaves_no_temporary_file(pipeline, tmp_path):
    """A write that fails (here: the file size limit, as a full disk would) is one line, exit 2, and nothing beside
    the output."""
    saved = tmp_path / "saved.json"
    src = tmp_path / "r.ncu-rep"
    src.write_bytes(pipeline)
    assert run("report", str(src), "-o", str(saved), cwd=tmp_path).returncode == 0

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = tmp_path / "out.html"
    p = run("render", str(saved), "-o", str(out), cwd=tmp_path, preexec_fn=small_files)
    assert p.returncode == 2, p.stderr
    assert p.stderr.decode().startswith("ncuadvisor: error:") and b"Traceback" not in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.ncu-rep", "saved.json"]


def test_an_output_created_meanwhile_is_never_clobbered(tmp_path):
    from ncuadvisor.cli.common import write_output
    from ncuadvisor.errors import OutputError

    target = tmp_path / "out.md"
    target.write_text("another run's output")
    with pytest.raises(OutputError, match="already exists"):
        write_output(target, "mine")
    assert target.read_text() == "another run's output"
    write_output(target, "mine", force=True)
    assert target.read_text() == "mine"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.md"]


def test_a_fifo_output_is_written_in_place_never_replaced(tmp_path):
    from ncuadvisor.cli.common import write_output

    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_output(fifo, "through the pipe", force=True)
    reader.join(10)
    assert got == [b"through the pipe"]
    assert fifo.is_fifo()


@pytest.mark.slow
def test_lone_surrogates_in_saved_json_render(pipeline, tmp_path):
    src = tmp_path / "r.ncu-rep"
    src.write_bytes(pipeline)
    saved = tmp_path / "saved.json"
    assert run("report", str(src), "-o", str(saved), cwd=tmp_path).returncode == 0
    text = saved.read_text().replace('"name": "', '"name": "\\udc80\\ud800', 1)
    saved.write_text(text)
    p = run("render", str(saved), "-o", str(tmp_path / "out.html"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "out.html").stat().st_size > 0


@pytest.mark.slow
def test_hostile_bound_and_rule_in_saved_json_are_escaped_on_the_terminal(pipeline, tmp_path):
    src = tmp_path / "r.ncu-rep"
    src.write_bytes(pipeline)
    saved = tmp_path / "saved.json"
    assert run("report", str(src), "-o", str(saved), cwd=tmp_path).returncode == 0
    res = json.loads(saved.read_text())
    res["kernels"][0]["bound"] = "[link=http://x.example]memory-bound\x1b]0;title\x07"
    saved.write_text(json.dumps(res))
    p = run("render", str(saved), "-f", "terminal", cwd=tmp_path)
    out = p.stdout.decode()
    assert p.returncode in (0, 2), p.stderr  # shown escaped, or refused by the schema: never exit 3
    assert "\x1b]" not in out and "\x07" not in out and "x.example" not in out.replace("[link=http://x.example]", "")


@pytest.mark.slow
def test_stdout_that_cannot_be_written_is_exit_2(tmp_path):
    with open("/dev/full", "wb") as full:
        p = subprocess.run(
            [sys.executable, "-m", "ncuadvisor", "rules"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            timeout=60,
        )
    assert p.returncode == 2
    assert p.stderr.decode().strip() == "ncuadvisor: error: cannot write to standard output (No space left on device)"


@pytest.mark.slow
def test_the_gate_refuses_a_partial_after_unless_allowed(pipeline, tmp_path):
    before = tmp_path / "before.ncu-rep"
    before.write_bytes(pipeline)
    blocks = [b for b in iter_blocks(pipeline) if (b.header.get(2) or [0])[0]]
    after = tmp_path / "after.ncu-rep"
    after.write_bytes(pipeline[: (blocks[-1].payload_start + blocks[-1].payload_end) // 2])  # the last result cut
    p = run("diff", str(before), str(after), "--fail-on", "regression", "-f", "md", cwd=tmp_path)
    assert p.returncode == 2 and b"--allow-partial" in p.stderr, p.stderr
    assert "partial: the after report is incomplete" in p.stdout.decode()
    p = run("diff", str(before), str(after), "--fail-on", "regression", "--allow-partial", "-f", "json", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    assert json.loads(p.stdout)["warnings"][0].startswith("partial: the after report is incomplete")


@pytest.mark.slow
def test_a_bad_xz_names_the_users_file_not_the_private_copy(tmp_path):
    bad = tmp_path / "x.ncu-rep.xz"
    bad.write_bytes((ROOT / "fixtures" / "probe.ncu-rep.xz").read_bytes()[:5000])
    p = run("report", str(bad), cwd=tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 2 and str(bad) in err and "ncuadvisor-" not in err.replace(str(tmp_path), ""), err
    assert [x.name for x in tmp_path.iterdir()] == ["x.ncu-rep.xz"]  # the private folder is gone


@pytest.mark.slow
def test_non_utf8_ncu_version_is_a_missing_ncu_not_an_internal_error(tmp_path):
    ncu = tmp_path / "ncu"
    ncu.write_bytes(b"#!/bin/sh\nprintf 'NVIDIA \\377\\376 Nsight Compute\\n'\n")
    ncu.chmod(0o755)
    p = run("profile", "--ncu", str(ncu), "-o", str(tmp_path / "x.json"), "--", "true", cwd=tmp_path)
    assert p.returncode == 5, p.stderr


@pytest.mark.slow
def test_sigterm_during_decompression_leaves_no_private_folder(tmp_path):
    """SIGTERM while a large .xz is being decompressed ends like Ctrl-C (exit 130, one line) and the private
    decompressed copy is removed."""
    import lzma
    import time

    plain = fuzz.plain("pipeline_v1")
    file_header = plain[: 8 + int.from_bytes(plain[4:8], "little")]
    chunks = 12
    size = (chunks * 16) << 20
    block_header = bytes([5 << 3]) + _varint(size)  # one block whose payload (field 5) is ~200 MB of zeros
    head = file_header + len(block_header).to_bytes(4, "little") + block_header
    zeros = lzma.compress(bytes(16 << 20), preset=0)
    src = tmp_path / "big.ncu-rep.xz"
    # several xz streams of a layout the streaming check accepts, so the decompression runs until the signal
    src.write_bytes(lzma.compress(head) + zeros * chunks)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    p = subprocess.Popen(
        [sys.executable, "-m", "ncuadvisor", "report", str(src)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not any(tmp.iterdir()) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    caught = p.poll() is None
    p.send_signal(signal.SIGTERM)
    _out, err = p.communicate(timeout=60)
    assert caught, "the run ended before the signal: the test proves nothing"
    assert p.returncode == 130, err
    assert err.decode().strip().startswith("ncuadvisor:") and b"Traceback" not in err
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_a_cut_at_a_block_boundary_is_said_in_every_format(pipeline, tmp_path, monkeypatch):
    """pipeline_v1 cut right after the module block that its 2nd result needs: analysed (exit 0) and said partial
    first in JSON, markdown, HTML, SARIF and on the terminal; the diff gate refuses it as the "after" side."""
    blocks = list(iter_blocks(pipeline))
    last_sources = max(k for k, b in enumerate(blocks) if (b.header.get(1) or [0])[0])
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(pipeline[: blocks[last_sources].payload_end])
    monkeypatch.setenv("COLUMNS", "400")
    for fmt in ("json", "md", "html", "sarif"):
        p = run("report", str(cut), "-f", fmt, cwd=tmp_path)
        text = p.stdout.decode()
        assert p.returncode == 0, p.stderr
        assert "block boundary where ncu never stops" in text, fmt
    res = json.loads(run("report", str(cut), "-f", "json", cwd=tmp_path).stdout)
    assert res["report"]["warnings"][0].startswith("partial: the report file is truncated: this analyses its 1 whole")
    sarif = json.loads(run("report", str(cut), "-f", "sarif", cwd=tmp_path).stdout)
    note = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]
    assert note["level"] == "warning" and note["message"]["text"].startswith("partial:")
    p = run("report", str(cut), cwd=tmp_path)
    assert p.returncode == 0 and "block boundary where ncu never stops" in " ".join(p.stdout.decode().split())
    whole = tmp_path / "whole.ncu-rep"
    whole.write_bytes(pipeline)
    p = run("diff", str(whole), str(cut), "--fail-on", "regression", "-f", "md", cwd=tmp_path)
    assert p.returncode == 2 and b"--allow-partial" in p.stderr, p.stderr


def _unparseable_for_ncu_report(data: bytes) -> bytes:
    """pipeline_v1 with its 2nd result's ClockStatus (field 25) missing its required first field (the key 0x08 made
    0x18): every field ncuadvisor reads still parses, but ncu_report's own schema rejects the result, and its
    protobuf logs "Can't parse message ... missing required fields" (after absl's "WARNING: All log messages before
    absl::InitializeLog() ...") on the process's stderr when the result is opened."""
    from ncuadvisor.reportfile.blocks import _fields

    b = [b for b in iter_blocks(data) if (b.header.get(2) or [0])[0]][1]
    start = b.payload_start + 4
    s, e = _fields(data, start, start + int.from_bytes(data[b.payload_start : start], "little"))[25][0]
    assert data[s] == 0x08
    return data[:s] + b"\x18" + data[s + 1 :]


@pytest.mark.slow
def test_native_log_lines_never_reach_stderr_on_a_run_that_exits_0(pipeline, tmp_path):
    """The native library's log lines (absl's InitializeLog warning, protobuf's "Can't parse message") stay off the
    user's terminal on a run that succeeds, and the result ncu_report cannot parse is said partial, first."""
    mutant = tmp_path / "m.ncu-rep"
    mutant.write_bytes(_unparseable_for_ncu_report(pipeline))
    assert not check_report(mutant).damaged  # the strict walk reads only ncuadvisor's fields: it cannot see this
    probe = subprocess.run(  # ncu_report alone, to show that this file makes it log
        [sys.executable, "-c", "import sys, ncu_report; ncu_report.load_report(sys.argv[1]).range_by_idx(0)"
         ".action_by_idx(1).name()", str(mutant)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "Can't parse message" in probe.stderr
    for fmt in ("json", "terminal", "md"):
        p = run("report", str(mutant), "-f", fmt, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert p.stderr == b"", p.stderr  # nothing at all: no absl line, no "Can't parse message"
    res = json.loads(run("report", str(mutant), "-f", "json", cwd=tmp_path).stdout)
    first = res["report"]["warnings"][0]
    assert first.startswith("partial: the report file is damaged: ncu_report cannot parse 1 of its results"), first
    assert "transpose_tile" in first


def _saved_with(title: str, rule: str, name: str) -> Result:
    """A saved result (pipeline_v2's golden JSON) read as `render` reads it, with its first kernel's name and first
    finding's rule, title and message replaced."""
    saved = json.loads((ROOT / "tests" / "golden" / "pipeline_v2.json").read_text())
    k = saved["kernels"][0]
    k["name"] = k["demangled"] = name
    k["findings"][0].update(title=title, rule=rule, message=title)
    return Result.from_dict(saved)


HOSTILE_MD = "@octocat ping [x](http://evil.example) <img src=x> `code`"


def test_sarif_help_escapes_a_saved_title_no_rule_documents():
    """A saved result's finding under a rule code no documentation matches: its title becomes the rule's help, and
    is escaped as markdown (no live mention, link or HTML); a backtick in the code cannot end the inline code."""
    from ncuadvisor.render.sarif import build_sarif

    saved = _saved_with(HOSTILE_MD, "ZZZ999`[y](http://evil.example)`", "k")
    log = build_sarif(saved, "/src", {})
    rule = next(r for r in log["runs"][0]["tool"]["driver"]["rules"] if r["id"].startswith("ZZZ999"))
    help_md = rule["help"]["markdown"]
    assert "\\@octocat" in help_md and "\\[x\\]" in help_md and "<img" not in help_md, help_md
    line = next(x for x in help_md.splitlines() if "ncuadvisor rules" in x)
    assert line.count("`") == 2 and line.startswith("`ncuadvisor rules ZZZ999"), line  # the link stays code


def test_markdown_leaves_no_live_mention_from_report_text():
    """Kernel names and finding titles from a report or a saved result: an @mention is escaped (\\@), so a PR
    comment made from the markdown pings nobody."""
    from ncuadvisor.render.markdown import render_markdown

    text = render_markdown(_saved_with(HOSTILE_MD, "MEM001", "@org/team_kernel"))
    assert "\\@org" in text and "\\@octocat" in text  # in markdown: a backslash
    assert "<b>#1 @\u2060org/team_kernel</b>" in text  # in a raw HTML block (<summary>): a word joiner
    assert re.search(r"(?<![\\])@(octocat|org)", text) is None, text


@pytest.mark.slow
def test_non_utf8_report_text_writes_every_file_output(pipeline, tmp_path):
    """A Latin-1 byte in a kernel name (report text is not always UTF-8): every file output is written (exit 0), and
    nothing is left beside it."""
    src = tmp_path / "m.ncu-rep"
    src.write_bytes(fuzz._rename(pipeline, b"k\xe9rnel_\xff"))
    outs = tmp_path / "outs"
    outs.mkdir()
    for ext in ("html", "md", "sarif", "json"):
        p = run("report", str(src), "-o", str(outs / f"r.{ext}"), "-q", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert (outs / f"r.{ext}").stat().st_size > 0
    assert sorted(x.name for x in outs.iterdir()) == ["r.html", "r.json", "r.md", "r.sarif"]
    names = [k["name"] for k in json.loads((outs / "r.json").read_text())["kernels"]]
    assert any("\ufffd" in n or "é" in n for n in names), names


@pytest.mark.slow
def test_a_zstd_bomb_is_refused_quickly_and_leaves_nothing(pipeline, tmp_path):
    """A .ncu-repz whose stream is a whole report head followed by zeros (2 GB expanded, a few KB compressed) is
    refused in seconds, with the private folder removed."""
    zstandard = pytest.importorskip("zstandard")
    head = next(b.payload_end for b in iter_blocks(pipeline) if (b.header.get(2) or [0])[0])
    cctx = zstandard.ZstdCompressor(level=1)
    src = tmp_path / "bomb.ncu-repz"
    with src.open("wb") as fh, cctx.stream_writer(fh) as w:
        w.write(pipeline[:head])
        zeros = bytes(16 << 20)
        for _ in range(128):
            w.write(zeros)
    assert src.stat().st_size < (1 << 20)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(src)], env=env, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2 and p.stderr.startswith(f"ncuadvisor: error: {src}"), p.stderr
    assert "no block header after it" in p.stderr or "decompression bomb" in p.stderr, p.stderr
    assert list(tmp.iterdir()) == []


@pytest.mark.slow
def test_ctrl_c_during_report_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while `report` decompresses a large .xz: exit
    130 with one `ncuadvisor: interrupted` line, never silent, and the private decompressed copy removed."""
    import lzma
    import time

    plain = fuzz.plain("pipeline_v1")
    file_header = plain[: 8 + int.from_bytes(plain[4:8], "little")]
    block_header = bytes([5 << 3]) + _varint((12 * 16) << 20)  # one block whose payload is ~200 MB of zeros
    src = tmp_path / "big.ncu-rep.xz"
    head = file_header + len(block_header).to_bytes(4, "little") + block_header
    src.write_bytes(lzma.compress(head) + lzma.compress(bytes(16 << 20), preset=0) * 12)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    p = subprocess.Popen(
        [sys.executable, "-m", "ncuadvisor", "report", str(src)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not any(tmp.iterdir()) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    caught = p.poll() is None
    os.killpg(p.pid, signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    assert caught, "the run ended before the signal: the test proves nothing"
    assert p.returncode == 130, err
    lines = [x for x in err.decode().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("ncuadvisor: interrupted"), err
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("command", ["report-json", "report-html", "render-md", "diff-md", "terminal"])
def test_stdout_on_a_full_disk_is_exit_2_never_a_cut_file(pipeline, tmp_path, command):
    """Standard output redirected to a file that fills up partway (the file size limit, as a full disk): exit 2 and
    one line, never exit 0 with the first 80 KB of the output."""
    src = tmp_path / "r.ncu-rep"
    src.write_bytes(pipeline)
    saved = tmp_path / "saved.json"
    if command == "render-md":  # the saved result only this one reads
        assert run("report", str(src), "-o", str(saved), cwd=tmp_path).returncode == 0
    args = {
        "report-json": ["report", str(src), "-f", "json"],
        "report-html": ["report", str(src), "-f", "html"],
        "render-md": ["render", str(saved), "-f", "md"],
        "diff-md": ["diff", str(src), str(src), "-f", "md"],
        "terminal": ["report", str(src)],
    }[command]
    whole = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), COLUMNS="100"),
        capture_output=True,
        timeout=60,
    ).stdout
    limit = len(whole) // 2

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), COLUMNS="100")
    with open(tmp_path / "out.txt", "wb") as out:
        p = subprocess.run(
            [sys.executable, "-m", "ncuadvisor", *args],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            preexec_fn=small_files,
            timeout=60,
        )
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.decode().strip().splitlines()[-1].startswith("ncuadvisor: error: cannot write to standard output")
    assert b"Traceback" not in p.stderr and b"Exception ignored" not in p.stderr


REPLACE_AFTER_CHECK = """
import os, sys
from ncuadvisor.load import reader
from ncuadvisor.cli.app import run

path, other = sys.argv[1], sys.argv[2]
checked = reader.ReportReader._checked


def checked_then_replaced(self, local, metrics):
    found = checked(self, local, metrics)
    os.replace(other, path)  # another file takes the report's name once its check is done
    return found


reader.ReportReader._checked = checked_then_replaced
sys.argv = ["ncuadvisor", "report", path, "-f", "json"]
run()
"""


@pytest.mark.parametrize("other", ["another report", "garbage"])
def test_a_report_replaced_after_its_check_is_read_as_checked(pipeline, tmp_path, other):
    """The file checked is the file read: the report's name given to other bytes after the check changes nothing
    (the native library once re-opened the path: SIGABRT with nothing printed, or a false "cannot parse")."""
    src = tmp_path / "r.ncu-rep"
    src.write_bytes(pipeline)
    expected = json.loads(run("report", str(src), "-f", "json", cwd=tmp_path).stdout)
    swap = tmp_path / "swap"
    swap.write_bytes(fuzz.plain("probe") if other == "another report" else pipeline[: len(pipeline) // 3] + b"\0" * 999)
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    p = subprocess.run(
        [sys.executable, "-c", REPLACE_AFTER_CHECK, str(src), str(swap)], env=env, capture_output=True, timeout=120
    )
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    got = json.loads(p.stdout)
    assert [k["name"] for k in got["kernels"]] == [k["name"] for k in expected["kernels"]]
    assert got["report"]["warnings"] == expected["report"]["warnings"]


@pytest.mark.slow
def test_the_gate_refuses_reports_of_different_gpus_unless_allowed(pipeline, tmp_path):
    src = tmp_path / "r.ncu-rep"
    src.write_bytes(pipeline)
    before = tmp_path / "before.json"
    assert run("report", str(src), "-o", str(before), cwd=tmp_path).returncode == 0
    saved = json.loads(before.read_text())
    saved["report"]["device"]["name"] = "NVIDIA A100-SXM4-80GB"
    after = tmp_path / "after.json"
    after.write_text(json.dumps(saved))
    p = run("diff", str(before), str(after), "--fail-on", "regression", "-f", "md", cwd=tmp_path)
    assert p.returncode == 2 and b"--allow-cross-device" in p.stderr and b"different GPUs" in p.stderr, p.stderr
    assert "different GPUs" in p.stdout.decode()  # the diff is still written, with its warning
    p = run("diff", str(before), str(after), "--fail-on", "regression", "--allow-cross-device", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert run("diff", str(before), str(after), cwd=tmp_path).returncode == 0  # no gate: a warning only


def test_force_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    from ncuadvisor.cli.common import write_output

    out = tmp_path / "private.json"
    out.write_text("old")
    out.chmod(0o600)
    write_output(out, "new", force=True)
    assert out.read_text() == "new" and (out.stat().st_mode & 0o777) == 0o600
    fresh = tmp_path / "fresh.json"
    write_output(fresh, "x")
    umask = os.umask(0)
    os.umask(umask)
    assert (fresh.stat().st_mode & 0o777) == 0o666 & ~umask


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_as_the_output_appears_is_never_a_traceback_nor_a_left_folder(tmp_path, sig):
    """A signal sent the moment the output appears (the command is exiting: exit handlers remove the private
    decompressed copy) ends the run with exit 0 (the work was done) or one line and exit 130; never "Exception ignored
    in atexit callback", never a private folder left behind."""
    import select
    import time

    src = tmp_path / "probe.ncu-rep.xz"
    src.write_bytes((ROOT / "fixtures" / "probe.ncu-rep.xz").read_bytes())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
        p = subprocess.Popen(
            [sys.executable, "-m", "ncuadvisor", "report", str(src), "-f", "json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        select.select([p.stdout], [], [], 60)
        time.sleep(delay)
        p.send_signal(sig)
        _out, err = p.communicate(timeout=60)
        assert b"Exception ignored" not in err and b"Traceback" not in err, (delay, err)
        assert p.returncode in (0, 130), (delay, p.returncode, err)
        assert list(tmp.iterdir()) == [], (delay, list(tmp.iterdir()))


@pytest.mark.slow
@pytest.mark.parametrize("bomb", ["gzip of 600 MB of spaces", "xz of 600 MB of zeros", "100,000 nested ["])
def test_a_host_trace_bomb_is_refused_within_bounded_memory(tmp_path, bomb, report_path):
    import gzip
    import lzma

    trace = tmp_path / "trace.json"
    if bomb.startswith("gzip"):
        with gzip.open(trace, "wb", compresslevel=1) as f:
            for _ in range(600):
                f.write(b" " * (1 << 20))
    elif bomb.startswith("xz"):
        comp = lzma.LZMACompressor(preset=0)
        with open(trace, "wb") as f:
            for _ in range(600):
                f.write(comp.compress(bytes(1 << 20)))
            f.write(comp.flush())
    else:
        trace.write_bytes(b"[" * 100_000 + b"]" * 100_000)

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    p = run("report", str(report_path("probe")), "--host-trace", str(trace), cwd=tmp_path, preexec_fn=limit_memory)
    lines = p.stderr.decode().strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and str(trace) in lines[0], p.stderr


@pytest.mark.slow
def test_a_block_claiming_a_terabyte_is_refused_before_it_is_written(tmp_path):
    """A .xz whose first block header claims a 1 TiB payload, then zeros: refused on the claim (the zeros were
    written to the private folder up to the expansion limit first, the zero-fill check waiting for the payload)."""
    import lzma

    plain = fuzz.plain("pipeline_v1")
    file_header = plain[: 8 + int.from_bytes(plain[4:8], "little")]
    block_header = bytes([5 << 3]) + _varint(1 << 40)
    head = file_header + len(block_header).to_bytes(4, "little") + block_header
    comp = lzma.LZMACompressor(preset=0)
    body = comp.compress(head) + b"".join(comp.compress(bytes(1 << 20)) for _ in range(300)) + comp.flush()
    src = tmp_path / "claim.ncu-rep.xz"
    src.write_bytes(body)

    def small_files() -> None:  # the private copy may not grow past 16 MiB
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))

    p = run("report", str(src), cwd=tmp_path, preexec_fn=small_files)
    assert p.returncode == 2 and b"decompression bomb" in p.stderr, p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["claim.ncu-rep.xz"]
