"""Where the uncommitted corpora live (`benchmarks/corpora.py`): the exam reports come out of their committed archive
into their folder, whole, the first time they are asked for, and any deleted later comes back; the foreign cache is
one folder for the scans, the scorers and the tests."""

from __future__ import annotations

import tarfile

import corpora  # benchmarks/ is on sys.path (tests/conftest.py)
import foreign

from tests.conftest import FOREIGN_CACHE


def test_the_exam_reports_come_out_of_the_archive_whole_and_once(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "exam"
    monkeypatch.setattr(corpora, "EXAM_DIR", folder)
    with tarfile.open(corpora.EXAM_ARCHIVE, "r:xz") as tar:
        names = sorted(m.name.rsplit("/", 1)[-1] for m in tar.getmembers() if m.name.endswith(".ncu-rep"))
    assert len(names) == 31
    assert corpora.exam_dir() == folder
    assert sorted(p.name for p in folder.glob("*.ncu-rep*")) == names  # no ".part" left behind
    assert (folder / "gelu_forward_v1.ncu-rep").read_bytes()[:3] == b"NVR"
    stamp = (folder / names[0]).stat().st_mtime_ns
    corpora.exam_dir()  # a second call extracts nothing again
    assert (folder / names[0]).stat().st_mtime_ns == stamp
    assert [p.name for p in corpora.corpus_paths("exam", big=False)] == names
    (folder / names[3]).unlink()  # a report deleted from a full folder comes back, the others stay as they were
    corpora.exam_dir()
    assert (folder / names[3]).read_bytes()[:3] == b"NVR"
    assert (folder / names[0]).stat().st_mtime_ns == stamp


def test_one_foreign_cache_for_the_scans_the_scorer_and_the_tests() -> None:
    assert corpora.CORPORA["foreign"][0] == foreign.CACHE == FOREIGN_CACHE
