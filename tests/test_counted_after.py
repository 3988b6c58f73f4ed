"""A fix whose fixed kernel applies another's fix too is counted after it (`rulekit.engine.counted_after`): a filter's
tile (TIL001 off the matrix-product path) is read in coalesced rows only once the kernel's thread mapping is, so where
MEM001 fires its fix comes first and the tile saves the fraction of the time the coalesced kernel leaves; the two in
turn save what the tile alone claimed. A matrix product's two-level tile is new code with its own mapping: not counted
after anything. The kernels are the rule cases of tests/rule_cases/TIL001.toml and MEM001.toml, numbers from real
reports, run through the real engine, and a foreign report read whole from the foreign corpus's cache."""

from __future__ import annotations

from typing import Any

import pytest

from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.result.kernel_fixes import kernel_steps
from ncuadvisor.rulekit import engine
from tests.conftest import FOREIGN_CACHE
from tests.test_rule_cases import CASES, RULES, kernel_context, read

FILTER = "a 2-D filter with weights every thread shares: not a matrix product, the filter's words"
STRIDED = "a 2-D kernel whose mapping strides every access, its unrolled row walk no record: another mapping"
PRODUCT = "llm.c matmul_forward_kernel1 (H100): a matrix product, each FMA multiplies two loaded values"
# Swagatam1812/hpca-gpu-memory-profiling's naive conv2d (A100): a foreign report whose repository has no licence, read
# from the foreign corpus's cache (benchmarks/foreign.py), never committed; its numbers are in no file here
NAIVE_CONV = FOREIGN_CACHE / "Swagatam1812+hpca-gpu-memory-profiling__naive.ncu-rep"


def _case(name: str, code: str = "TIL001") -> dict[str, Any]:
    return next(c for c in read(CASES / f"{code}.toml")["case"] if c["name"] == name)


@pytest.mark.skipif(not NAIVE_CONV.is_file(), reason=f"{NAIVE_CONV.name} is not in the foreign cache {FOREIGN_CACHE}")
def test_a_filters_tile_is_counted_after_coalescing() -> None:
    """The naive 11×11 conv2d (row = ...threadIdx.x, weights every thread shares), the whole report: MEM001 first
    (-80%; the author's coalesced variant measured -79%), then the filter's tile counted on the coalesced kernel,
    and in turn the two save what the tile alone would."""
    kernel = next(k for k in analyze(NAIVE_CONV).kernels if k.name == "kernel_conv2d_baseline")
    coalescing, tile = kernel.findings[:2]
    assert (coalescing.rule, tile.rule) == ("MEM001", "TIL001")
    assert coalescing.estimated_speedup == pytest.approx(0.80, abs=0.02)
    assert "Counted after MEM001's fix" in (tile.speedup_model or "")
    assert "stage the block's input tile with its halo" in tile.fix
    steps = kernel_steps(kernel, kernel.duration_ns, floor_ns=0.0)
    assert [s.rule for s in steps][:2] == ["MEM001", "TIL001"]
    alone = 1 - (1 - coalescing.estimated_speedup) * (1 - tile.estimated_speedup)
    assert sum(s.estimated_saving_ns for s in steps[:2]) == pytest.approx(alone * kernel.duration_ns, rel=1e-6)


def test_a_matrix_products_tile_is_not_counted_after_anything() -> None:
    found = RULES["TIL001"].check(kernel_context(_case(PRODUCT)))
    assert found is not None and found.counted_after == ()
    assert "tiles the product at both levels" in found.speedup_model


def test_a_tile_that_adds_nothing_to_coalescing_is_left_out() -> None:
    # convmap.cu's coalesced filter's tile (counted after MEM001) and its strided kernel's coalescing (H100)
    tile = RULES["TIL001"].check(kernel_context(_case(FILTER)))
    coalescing = RULES["MEM001"].check(kernel_context(_case(STRIDED, "MEM001")))
    assert tile is not None and coalescing is not None
    coalescing.estimated_speedup = 0.95  # a coalesced kernel faster than the tiled one: the tile adds nothing to it
    engine.counted_after([tile, coalescing])
    assert tile.estimated_speedup == 0.0


def test_products_on_a_real_report_keep_their_factors(typed):
    """flaws.ncu-rep.xz (H200), whole listings: a naive product's row of A is the same in every lane of a warp but not
    in every block, so no factor is grid-uniform and the FMAs stay a product's (two levels, not counted after
    MEM001); the weights of no kernel there are read from an address the thread indices do not reach."""
    result = typed("flaws")
    shares = {
        k.name: next(e.value for e in f.evidence if e.metric == "fma_product_share")
        for k in result.kernels
        for f in k.findings
        if f.rule == "TIL001" and any(e.metric == "fma_product_share" for e in f.evidence)
    }
    assert shares.get("matmul_naive") == 1.0 and shares.get("matmul_tiled") == 1.0, shares
    naive = next(f for k in result.kernels if k.name == "matmul_naive" for f in k.findings if f.rule == "TIL001")
    assert "tiles the product at both levels" in naive.speedup_model
    assert "Counted after" not in naive.speedup_model
