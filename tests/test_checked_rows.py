"""A big report's results parsed once: the row reader (`fastread.read_rows`, in workers) parses each result for the
integrity check as well (`ReportReader._checked`). The check must find what the whole walk finds, and the rows must
be the rows read the old way, on a whole report and on reports with one result damaged."""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from ncuadvisor.load import reader as load
from ncuadvisor.reportfile.blocks import FileView, _varint, iter_blocks, u32
from ncuadvisor.reportfile.integrity import check_report

METRICS = ["gpu__time_duration.sum", "launch__registers_per_thread", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
BIG = "tiny_phase1"  # 2,001 results: past FILE_SPLIT_MIN (read in workers)


def _result_span(path, index: int) -> tuple[int, int]:
    """(start, end) of the payload bytes of result `index` (file order)."""
    with open(path, "rb") as fh:
        mm = FileView(fh)
        k = 0
        for block in iter_blocks(mm):
            j = block.payload_start
            for _ in range(int((block.header.get(1) or [0])[0])):
                j += 4 + u32(mm, j)
            for _ in range(int((block.header.get(2) or [0])[0])):
                n = u32(mm, j)
                if k == index:
                    return j + 4, j + 4 + n
                k += 1
                j += 4 + n
    raise AssertionError("no such result")


def _top_fields(data: bytes) -> list[tuple[int, int, int]]:
    """(field number, offset of its tag, wire type) of a message's top-level fields."""
    out, i = [], 0
    while i < len(data):
        at = i
        key, i = _varint(data, i, len(data))
        wire = key & 7
        if wire == 0:
            _, i = _varint(data, i, len(data))
        elif wire == 2:
            n, i = _varint(data, i, len(data))
            i += n
        else:
            i += 8 if wire == 1 else 4
        out.append((key >> 3, at, wire))
    return out


def _same_frames(a, b) -> None:
    assert a.columns == b.columns
    assert [[str(v) for v in r.values()] for r in a] == [[str(v) for v in r.values()] for r in b]


def _both(path):
    """(reader with the rows read while checking, reader the old way)."""
    fused = load.ReportReader(path, METRICS)
    old = load.ReportReader(path)
    return fused, old


def test_whole_report_is_checked_by_the_row_reader(report_path):
    path = report_path(BIG)
    fused, old = _both(path)
    assert fused._prefetched is not None, "the big report's rows were not read with the check"
    assert dataclasses.asdict(fused.integrity) == dataclasses.asdict(check_report(path))
    assert not fused.integrity.damaged and fused.integrity.results_parsed
    _same_frames(fused.results(METRICS), old.results(METRICS))
    assert fused._prefetched is None  # handed over once


@pytest.mark.parametrize("name", ["probe", "multiproc", "tiny_sections"])
def test_small_report_is_checked_by_the_row_reader(report_path, name):
    """Below FILE_SPLIT_MIN the rows are read in this process, with the same check."""
    path = report_path(name)
    fused, old = _both(path)
    assert fused._prefetched is not None
    assert dataclasses.asdict(fused.integrity) == dataclasses.asdict(check_report(path))
    _same_frames(fused.results(METRICS), old.results(METRICS))


@pytest.mark.parametrize("name,index", [pytest.param(BIG, 1234, marks=pytest.mark.slow), ("probe", 1)])
@pytest.mark.parametrize("damage", ["unparsable", "nameless"])
def test_damaged_result_sends_the_file_through_the_whole_walk(report_path, tmp_path, damage, name, index):
    """One result of a report (big: read in workers; small: in this process) that does not parse, or names no
    kernel: the same integrity (its block left out, the same counts and warning) and the same rows as the whole walk
    gives."""
    path = tmp_path / f"{damage}.ncu-rep"
    shutil.copy(report_path(name), path)
    start, end = _result_span(path, index)
    data = bytearray(path.read_bytes())
    payload = bytes(data[start:end])
    if damage == "unparsable":
        data[start] = 0x07  # field 0, wire type 7: no protobuf parser accepts it
    else:
        names = [(f, at) for f, at, wire in _top_fields(payload) if f in (5, 6, 7) and wire == 2]
        assert names, "the result names its kernel"
        for _, at in names:
            data[start + at] = 9 << 3 | 2  # field 9, which the schema read here does not know
    path.write_bytes(bytes(data))
    whole = check_report(path)
    assert whole.damaged and whole.dropped_blocks == 1
    fused, old = _both(path)
    assert fused._prefetched is None
    assert dataclasses.asdict(fused.integrity) == dataclasses.asdict(whole)
    _same_frames(fused.results(METRICS), old.results(METRICS))
