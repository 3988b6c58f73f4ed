"""Rules on the exam corpus's real H100 reports (fixtures/exam-h100-2026-12-06/exam_reports.tar.xz: public llm.c and
Triton tutorial kernels, profiled with the full set): a mechanism a label named and the rules first missed."""

import tarfile

from ncuadvisor.pipeline.analyze import analyze
from tests.conftest import ROOT, kernel

EXAM = ROOT / "fixtures" / "exam-h100-2026-12-06" / "exam_reports.tar.xz"


def _result(name: str, tmp_path) -> dict:
    with tarfile.open(EXAM) as tar:
        tar.extract(f"{name}.ncu-rep", tmp_path, filter="data")
    return analyze(tmp_path / f"{name}.ncu-rep").to_dict()


def test_shared_memory_tree_is_named_first_not_index_math(tmp_path):
    """llm.c layernorm_forward_v2: mean_kernel and rstd_kernel end in an 8-round shared-memory tree whose barriers are
    6% of the stalls but whose instructions are half of those executed; normalization_kernel has no tree."""
    result = _result("layernorm_forward_v2", tmp_path)
    for name in ("mean_kernel", "rstd_kernel"):
        rules = [f["rule"] for f in kernel(result, name)["findings"]]
        assert rules and rules[0] == "WRP001", (name, rules)
        assert "ISU001" not in rules, (name, rules)
        first = kernel(result, name)["findings"][0]
        assert "Shared-memory tree reduction" in first["title"]
    assert "WRP001" not in [f["rule"] for f in kernel(result, "normalization_kernel")["findings"]]


def test_tiled_loop_through_shared_memory_is_no_tree(analyzed):
    """flaws' matmul_tiled waits at a barrier and loads and stores shared memory in its k-loop, but stages global
    loads there and halves no stride: a tile cache, which WRP001 leaves alone."""
    assert "WRP001" not in [f["rule"] for f in kernel(analyzed("flaws"), "matmul_tiled")["findings"]]
