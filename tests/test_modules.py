"""Which results carry source lines, read from the report file (`reportfile.modules`), against `ncu_report`."""

from __future__ import annotations

import json
import lzma
import shutil
import struct
from pathlib import Path

import pytest
from conftest import FIXTURES

from ncuadvisor.load import ReportReader
from ncuadvisor.load.native import import_ncu_report
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.reportfile.cubin import ELF_MAGIC, EM_CUDA, SHT_NOBITS, Cubin
from ncuadvisor.reportfile.modules import elf_has_lines, embedded_cubins, module_images, results_with_lines


def lines_per_ncu_report(path) -> list[bool]:
    """Whether ncu_report finds a source line for any of a result's listed instructions (every tenth of them)."""
    ncu = import_ncu_report()
    ctx = ncu.load_report(str(path))
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            metric = action.metric_by_name("inst_executed")
            found = False
            if metric is not None and metric.has_correlation_ids():
                ids = metric.correlation_ids()
                for i in range(0, metric.num_instances(), max(1, metric.num_instances() // 10)):
                    info = action.source_info(int(ids.as_uint64(i)))
                    if info is not None and (info.file_name() or info.line()):
                        found = True
                        break
            out.append(found)
    return out


@pytest.mark.parametrize("name", ["torch_compile", "patterns", "torch_eager"])
def test_line_information_as_ncu_report_finds_it(name, report_path):
    """torch.compile's report mixes Triton kernels (lines in the generated Python) and ATen/cuBLAS kernels (none);
    patterns.cu is built with -lineinfo; the eager PyTorch step has no lines at all."""
    path = report_path(name)
    truth = lines_per_ncu_report(path)
    assert results_with_lines(path) == truth
    some = set(range(0, len(truth), 3))  # only some results read: the others answer "may have lines"
    assert results_with_lines(path, some) == [has if rid in some else True for rid, has in enumerate(truth)]


def test_not_a_report_or_not_an_elf(tmp_path):
    bad = tmp_path / "x.ncu-rep"
    bad.write_bytes(b"NVR\0" + b"\xff" * 64)
    assert results_with_lines(bad) is None
    assert elf_has_lines(b"\x7fELF" + b"\0" * 60, 0, 64) is None  # a 32-bit or empty header: unknown


def scrubbed(result: dict) -> str:
    result = dict(result, created="X")
    return json.dumps(result, sort_keys=True, default=str)


def test_analysis_is_the_same_without_the_shortcut(monkeypatch, report_path, typed):
    """The kernels known to carry no lines are neither looked up nor, where no rule of their language reads
    instructions (cuBLAS), read per instruction: the result is the one of the lookups done one by one."""
    path = report_path("torch_compile")
    fast = typed("torch_compile").to_dict()  # the default analysis, with the shortcut
    monkeypatch.setattr(ReportReader, "without_lines", lambda self, ids: frozenset())
    slow = analyze(path).to_dict()
    assert scrubbed(fast) == scrubbed(slow)


def elf_scan(path) -> list[tuple[int, bytes]]:
    """The reference the block walk is held to: every 64-bit little-endian ELF for CUDA found by scanning the file
    for ELF headers, each as (where it starts, its bytes up to its furthest section or header table)."""
    raw = Path(path).read_bytes()
    out = []
    at = raw.find(ELF_MAGIC)
    while at >= 0:
        if struct.unpack_from("<H", raw, at + 0x12)[0] == EM_CUDA:
            phoff, shoff = struct.unpack_from("<QQ", raw, at + 0x20)
            phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", raw, at + 0x36)
            end = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
            for i in range(shnum):
                kind, _, _, offset, size = struct.unpack_from("<IQQQQ", raw, at + shoff + i * shentsize + 4)
                if kind != SHT_NOBITS:
                    end = max(end, offset + size)
            out.append((at, raw[at : at + end]))
        at = raw.find(ELF_MAGIC, at + 4)
    return out


def _fixture_params():
    out = []
    for src in sorted(FIXTURES.rglob("*.ncu-rep.xz")):
        name = src.relative_to(FIXTURES).as_posix().removesuffix(".ncu-rep.xz")
        big = src.stat().st_size > 1_000_000  # 40 MB or more decompressed
        out.append(pytest.param(name, marks=[pytest.mark.slow] if big else [], id=name))
    return out


@pytest.mark.parametrize("name", _fixture_params())
def test_the_block_walk_finds_the_modules_an_elf_scan_finds(name, report_path, tmp_path):
    """The modules the report's blocks hold (each module's CUBIN) are the ELF images a scan of the whole file finds,
    at the same offsets with the same bytes, on every fixture; and the line tables read from them are the same."""
    if "/" in name:  # a fixture in a folder of its own
        path = tmp_path / "report.ncu-rep"
        with lzma.open(FIXTURES / f"{name}.ncu-rep.xz") as src, path.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    else:
        path = report_path(name)
    scanned = elf_scan(path)
    walked = module_images(path)
    assert scanned, "no module in the report"
    assert walked is not None and [start for start, _ in walked] == [at for at, _ in scanned]
    raw = Path(path).read_bytes()
    for (start, end), (_, image) in zip(walked, scanned):
        assert raw[start:end].startswith(image)  # the walk's image is whole: the scan stops at its last header
    cubins = embedded_cubins(path)
    assert [c.image for c in cubins] == [raw[start:end] for start, end in walked]
    for cubin, (_, image) in zip(cubins, scanned):
        other = Cubin(image)
        assert cubin.functions == other.functions
        assert table_rows(cubin) == table_rows(other)


def table_rows(cubin: Cubin) -> dict[str, list[list[tuple]]]:
    return {
        name: [[(r.address, r.file, r.line, r.context, r.function) for r in t.rows] for t in tables]
        for name, tables in cubin.tables().items()
    }


def test_results_of_one_module_share_their_sass(monkeypatch, report_path):
    """Launches of the same code (the eager step's elementwise kernels at several shapes) are disassembled once per
    module and address: fewer calls to ncu_report's disassembler, the same result as asking it for every result.
    The rules' gates are set aside (every ATen kernel disassembled, as a report whose kernels pass them would be)."""
    import ncu_report

    from ncuadvisor.load import deep
    from ncuadvisor.load import reader as load
    from ncuadvisor.rulekit import engine

    path = report_path("torch_eager")
    monkeypatch.setattr(load, "DETAIL_IN_PROCESS_MAX", 1000)  # every deep read in this process, where it is counted
    monkeypatch.setattr(engine, "gated_sass_languages", lambda rules: set())
    calls = []
    sass_by_pc = ncu_report.IAction.sass_by_pc
    monkeypatch.setattr(ncu_report.IAction, "sass_by_pc", lambda self, pc: calls.append(pc) or sass_by_pc(self, pc))
    shared = scrubbed(analyze(path).to_dict())
    shared_calls = len(calls)
    sass_of = deep.sass_of
    monkeypatch.setattr(deep, "sass_of", lambda action, pcs, known=None: sass_of(action, pcs))
    calls.clear()
    assert scrubbed(analyze(path).to_dict()) == shared
    assert 0 < shared_calls < len(calls)
