"""Which results carry source lines, read from the report file (`reportfile.modules`), against `ncu_report`."""

from __future__ import annotations

import json

import pytest

from ncuadvisor.analysis.pipeline import analyze
from ncuadvisor.load import ReportReader
from ncuadvisor.load.native import import_ncu_report
from ncuadvisor.reportfile.modules import elf_has_lines, results_with_lines


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


def test_analysis_is_the_same_without_the_shortcut(monkeypatch, report_path):
    """The kernels known to carry no lines are neither looked up nor, where no rule of their language reads
    instructions (cuBLAS), read per instruction: the result is the one of the lookups done one by one."""
    path = report_path("torch_compile")
    fast = analyze(path).to_dict()
    monkeypatch.setattr(ReportReader, "without_lines", lambda self, ids: frozenset())
    slow = analyze(path).to_dict()
    assert scrubbed(fast) == scrubbed(slow)
