"""A fix whose fixed kernel applies another's fix too is counted after it (`rulekit.engine.counted_after`): a filter's
tile (TIL001 off the matrix-product path) is read in coalesced rows only once the kernel's thread mapping is, so where
MEM001 fires its fix comes first and the tile saves the fraction of the time the coalesced kernel leaves; the two in
turn save what the tile alone claimed. A matrix product's two-level tile is new code with its own mapping: not counted
after anything. The kernels are the rule cases of tests/rule_cases/TIL001.toml, numbers from real reports, run through
the real engine."""

from __future__ import annotations

from typing import Any

import pytest

from ncuadvisor.result.kernel_fixes import kernel_steps
from ncuadvisor.result.types import KernelEntry
from ncuadvisor.rulekit import engine
from tests.test_rule_cases import CASES, RULES, kernel_context, read

FILTER = "a 2-D filter with weights every thread shares: not a matrix product"
PRODUCT = "llm.c matmul_forward_kernel1 (H100): a matrix product, each FMA multiplies two loaded values"


def _case(name: str) -> dict[str, Any]:
    return next(c for c in read(CASES / "TIL001.toml")["case"] if c["name"] == name)


def test_a_filters_tile_is_counted_after_coalescing() -> None:
    ctx = kernel_context(_case(FILTER))
    alone = RULES["TIL001"].check(ctx)
    assert alone is not None and alone.counted_after == ("MEM001",)
    found = engine.run_rules([RULES["TIL001"], RULES["MEM001"]], kernel_context(_case(FILTER))).findings
    assert [f.rule for f in found] == ["MEM001", "TIL001"]
    coalescing, tile = found
    # the tile alone saves 89% of today's time, coalescing 74% (80% on the whole report: the case's listing keeps one
    # load of each kind in flight, the unrolled loops' are trimmed): the tile then saves 1 - 0.114 / 0.261 of the rest
    assert alone.estimated_speedup == pytest.approx(0.886, abs=0.005)
    assert coalescing.estimated_speedup == pytest.approx(0.739, abs=0.005)
    expected = 1 - (1 - alone.estimated_speedup) / (1 - coalescing.estimated_speedup)
    assert tile.estimated_speedup == pytest.approx(expected, rel=1e-9)
    assert "Counted after MEM001's fix" in tile.speedup_model
    # in turn, as "where to start" spends them, the two save what the tile alone claimed
    findings = [f.entry().to_dict() for f in found]
    entry = KernelEntry.from_dict(
        {"id": "k", "name": "k", "duration_ns": 1e6, "analysed_duration_ns": 1e6, "findings": findings}
    )
    steps = kernel_steps(entry, 1e6, floor_ns=0.0)
    assert [s.rule for s in steps] == ["MEM001", "TIL001"]
    assert sum(s.estimated_saving_ns for s in steps) == pytest.approx(alone.estimated_speedup * 1e6, rel=1e-9)


def test_a_matrix_products_tile_is_not_counted_after_anything() -> None:
    found = RULES["TIL001"].check(kernel_context(_case(PRODUCT)))
    assert found is not None and found.counted_after == ()
    assert "tiles the product at both levels" in found.speedup_model


def test_a_tile_that_adds_nothing_to_coalescing_is_left_out() -> None:
    ctx = kernel_context(_case(FILTER))
    tile = RULES["TIL001"].check(ctx)
    coalescing = RULES["MEM001"].check(kernel_context(_case(FILTER)))
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
