"""Reports written by ncu versions older than the fixtures' (2025.3.1) in the same file format 7: the session data
they write after the first result ends without a command line (ncu 2020.2 to 2021.2; a command line from 2022.2
on), or comes before the first result. Such a file is whole: it must not be called truncated, and a diff of it with
itself must pass `--fail-on regression`. Built from a real fixture by the file's own blocks (the repository has no
report of an older ncu): the command-line block left out, the version ncu states rewritten in place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ncuadvisor.reportfile.blocks import _fields, iter_blocks
from ncuadvisor.reportfile.integrity import check_report

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz  # noqa: E402

NEW = b"2025.3.1.0 (build 36398880)"
OLD = b"2021.2.2.0 (build 30282580)"  # as an A100 report of 2022 states it (same length: the message stays whole)


@pytest.fixture(scope="module")
def pipeline() -> bytes:
    return fuzz.plain("pipeline_v1")


def _session(data: bytes, block) -> dict:
    out: dict = {}
    for s, e in block.header.get(3) or []:
        out.update(_fields(data, s, e))
    return out


def _spans(data: bytes) -> list[tuple[str, bytes]]:
    """Each block of the report as (kind, bytes): "results", "sources", "command line" or "session"."""
    out, i = [], 8 + int.from_bytes(data[4:8], "little")
    for b in iter_blocks(data):
        h = b.header
        kind = "results" if (h.get(2) or [0])[0] else "sources" if (h.get(1) or [0])[0] else "session"
        if kind == "session" and _session(data, b).get(11):
            kind = "command line"
        out.append((kind, data[i : b.payload_end]))
        i = b.payload_end
    return out


def _file(data: bytes, spans: list[bytes], tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(data[: 8 + int.from_bytes(data[4:8], "little")] + b"".join(spans))
    return path


def test_an_old_ncu_without_a_command_line_is_whole(pipeline, tmp_path):
    """ncu 2021.2's layout: the session blocks after the first result end with the host, no command line. With one
    result the file ends there; with more, results follow. Neither is truncated; the same file claiming ncu 2025.3
    (which always records its command line) still is."""
    assert pipeline.count(NEW) == 1
    spans = [(k, b) for k, b in _spans(pipeline) if k != "command line"]
    kinds = [k for k, _ in spans]
    one = max(i for i, k in enumerate(kinds) if k == "session") + 1  # the first result and the session after it
    assert kinds[one - 1 :].count("session") == 1 and "results" in kinds[one:]
    old = pipeline.replace(NEW, OLD)
    old_spans = [b for k, b in _spans(old) if k != "command line"]
    single_old = _file(old, old_spans[:one], tmp_path, "old1.ncu-rep")
    assert check_report(single_old).state == "whole"
    single_new = _file(pipeline, [b for _, b in spans[:one]], tmp_path, "new1.ncu-rep")
    assert check_report(single_new).state == "truncated"  # a 2025.3 file cut before its command line, as before
    many = _file(pipeline, [b for _, b in spans], tmp_path, "many.ncu-rep")  # results after the session: all there
    assert check_report(many).state == "whole" and check_report(many).whole == kinds.count("results")


def test_session_data_before_the_first_result_is_whole(pipeline, tmp_path):
    """ncu 2025.1 has also written every session block before the first result, with no command line: nothing of
    the session is left for after the first result, so a file of one result ends whole."""
    spans = [(k, b) for k, b in _spans(pipeline) if k != "command line"]
    first = [k for k, _ in spans].index("results")
    session = [b for k, b in spans[first:] if k == "session"]
    upto = spans[first + 1 + len(session)]
    assert upto[0] in ("results", "sources")
    blocks = [b for _, b in spans[:first]] + session + [spans[first][1]]
    assert check_report(_file(pipeline, blocks, tmp_path, "first.ncu-rep")).state == "whole"


def test_a_session_that_names_no_ncu_version_and_ends_with_its_host_is_whole(pipeline, tmp_path):
    """A real V100 report (an NVSHMEM Jacobi step, PerfWorks 0.108.5) names no ncu version and records no command
    line: its session after the one result ends with the host block. Every ncu that names itself does so in a block
    before the host, so such a file is whole; cut before its host, or with the version named before a host and no
    command line after it (2025.3), it is still truncated."""
    spans = [(k, b) for k, b in _spans(pipeline) if k != "command line"]
    named = [i for i, (k, b) in enumerate(spans) if k == "session" and NEW in b]
    assert len(named) == 1
    one = max(i for i, (k, _) in enumerate(spans) if k == "session") + 1
    unnamed = [b for i, (_, b) in enumerate(spans[:one]) if i not in named]
    assert check_report(_file(pipeline, unnamed, tmp_path, "unnamed.ncu-rep")).state == "whole"
    before_host = _file(pipeline, unnamed[:-1], tmp_path, "before_host.ncu-rep")  # the host block is the last
    assert check_report(before_host).state == "truncated"
    named_file = _file(pipeline, [b for _, b in spans[:one]], tmp_path, "named.ncu-rep")
    assert check_report(named_file).state == "truncated"


@pytest.mark.slow
def test_diff_of_an_old_report_with_itself_passes_the_gate(pipeline, tmp_path):
    old = pipeline.replace(NEW, OLD)
    path = _file(old, [b for k, b in _spans(old) if k != "command line"], tmp_path, "old.ncu-rep")
    env = {"PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "diff", str(path), str(path), "--fail-on", "regression", "-f", "md"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert b"partial" not in p.stdout and b"truncated" not in p.stdout
