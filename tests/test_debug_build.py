"""A debug build (`nvcc -G`) is said first: its modules carry full DWARF debug information (`.debug_info`), which a
`-lineinfo` build's do not (nvcc 13.0: -G adds .debug_info and .debug_abbrev to -lineinfo's line tables). The
repository has no -G report: pipeline_v1's module (built with -lineinfo) with one section renamed `.debug_info` in its
ELF's section-name table, read through the real reader and pipeline."""

from __future__ import annotations

from pathlib import Path

from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.reportfile.modules import debug_modules


def test_a_debug_build_is_said_first(report_path, tmp_path):
    src = Path(report_path("pipeline_v1"))
    data = src.read_bytes()
    assert data.count(b".debug_info\x00") == 0 and b".debug_frame\x00" in data
    debug = tmp_path / "debug.ncu-rep"
    debug.write_bytes(data.replace(b".debug_frame\x00", b".debug_info\x00\x00"))  # same length: the ELF stays whole
    assert set((debug_modules(debug) or {}).values()) == {True}
    assert set((debug_modules(src) or {}).values()) == {False}
    warnings = analyze(debug).to_dict()["report"]["warnings"]
    assert (
        warnings[0].startswith("this is a debug build (nvcc -G")
        and "profile a release build with -lineinfo" in warnings[0]
    )
    assert not any("debug build" in w for w in analyze(src).to_dict()["report"]["warnings"])
