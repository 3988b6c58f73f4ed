"""The absolute cap on a compressed report's decompressed copy: a small hostile file cannot fill the disk (the
1000x ratio stays: real reports reach 1,095x), whatever the ratio allows; the cap is set by NCUADVISOR_MAX_DECOMPRESSED
and the free space of the private folder's disk is kept. Real fixtures, read by the real code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncuadvisor.errors import InputError
from ncuadvisor.reportfile import sniff

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "fixtures" / "pipeline_v1.ncu-rep.xz"  # 61 KiB that expand to 2.3 MiB


def run(tmp_path: Path, cap: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path), NCUADVISOR_MAX_DECOMPRESSED=cap)
    return subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(REPORT), "-f", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_report_past_the_cap_is_refused_with_one_line_and_nothing_left(tmp_path):
    p = run(tmp_path, "1M")
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert "expands past 1 MiB, the cap on a decompressed report" in lines[0]
    assert "NCUADVISOR_MAX_DECOMPRESSED" in lines[0] and str(REPORT) in lines[0]
    assert p.stdout == ""
    assert list(tmp_path.iterdir()) == []  # the private copy and its folder are gone


def test_a_cap_that_is_no_size_is_one_line(tmp_path):
    p = run(tmp_path, "lots")
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "ncuadvisor: error: NCUADVISOR_MAX_DECOMPRESSED='lots' is not a size: give bytes or a number with K, M, G or "
        "T (e.g. 8G)"
    ], p.stderr


@pytest.mark.parametrize(
    ("text", "size"),
    [("", sniff.MAX_DECOMPRESSED), ("3M", 3 << 20), ("8GiB", 8 << 30), ("1t", 1 << 40), ("4096", 4096)],
)
def test_the_cap_reads_sizes(monkeypatch, text, size):
    monkeypatch.setenv(sniff.MAX_DECOMPRESSED_ENV, text)
    assert sniff.max_decompressed() == size


@pytest.mark.parametrize("text", ["0", "-1", "2X", "1.5G", "9" * 20])
def test_the_cap_refuses_what_is_no_size(monkeypatch, text):
    monkeypatch.setenv(sniff.MAX_DECOMPRESSED_ENV, text)
    with pytest.raises(InputError, match="is not a size"):
        sniff.max_decompressed()


def test_a_report_under_the_cap_is_read_whole(monkeypatch, tmp_path):
    monkeypatch.setattr(sniff.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv(sniff.MAX_DECOMPRESSED_ENV, "3M")
    copy = sniff.decompress(REPORT)
    assert copy.parent.parent == tmp_path
    assert copy.stat().st_size == 2442610 and copy.read_bytes()[:4] == b"NVR\0"


def test_the_copy_stops_before_the_disk_fills(monkeypatch, tmp_path):
    """Free space under the margin (no disk has 2^62 bytes free) stops the copy, which is removed."""
    monkeypatch.setattr(sniff.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sniff, "FREE_SPACE_MARGIN", 1 << 62)
    with pytest.raises(InputError, match="not enough free space for its decompressed copy") as caught:
        sniff.decompress(REPORT)
    assert str(REPORT) in str(caught.value)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
