"""TIL001's fixed kernel for a filter whose inputs are re-read per use (through L1, or from a shared tile), against the
twins measured beside it: conv9.cu on an H100 (fixtures/conv9-2026-12-06: the report and the plain timings of
`bench_conv9.jsonl`). The fixed kernel is the tile with a register window of 8 outputs a thread (`conv9_smem_reg`,
`conv5_smem_reg`): its shared reads each feed 4.5 taps of a 9×9, its uniform instructions (the weights read from the
constant bank) run once per thread for its 8 outputs, and its time is its FP32 arithmetic plus its shared wavefronts,
added, no less than its busiest unit as busy as now."""

import json
import sys
from pathlib import Path

import pytest

from ncuadvisor.rulekit.models import uniform_share_of
from tests.conftest import FIXTURES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CASES = Path(__file__).resolve().parent / "rule_cases"

CONV9 = "conv9-2026-12-06/conv9"


def _bench() -> dict[str, float]:
    lines = (FIXTURES / "conv9-2026-12-06" / "bench_conv9.jsonl").read_text().splitlines()
    return {row["kernel"]: row["median_us"] for row in map(json.loads, lines) if row}


def _til001(result: dict, name: str) -> tuple[float, dict, bool]:
    """(TIL001's estimate as a ratio of times, the finding, whether it is the kernel's first)."""
    k = next(k for k in result["kernels"] if k["name"] == name)
    f = next(f for f in k["findings"] if f["rule"] == "TIL001")
    return 1.0 / (1.0 - f["estimated_speedup"]), f, f is k["findings"][0]


@pytest.mark.parametrize(
    ("planted", "twin"),
    [
        ("conv9_global", "conv9_smem_reg"),  # re-read through L1, no index arithmetic
        ("conv9_clamped", "conv9_smem_reg"),  # re-read through L1, clamped coordinates
        ("conv9_smem", "conv9_smem_reg"),  # re-read from the shared tile, one output a thread
        ("conv5_global", "conv5_smem_reg"),
    ],
)
def test_the_window_estimate_is_within_30_percent_of_the_twin(analyzed, planted, twin):
    bench = _bench()
    estimated, _, first = _til001(analyzed(CONV9), planted)
    measured = bench[planted] / bench[twin]
    assert first
    assert abs(estimated - measured) / measured <= 0.30, (estimated, measured)


def test_a_filter_over_its_shared_tile_gets_the_window_not_a_products_fraction(analyzed):
    """conv9_smem reads each of its 81 taps from shared memory (each input read 81× there): its fixed kernel is the
    register window, 2.55× (measured 2.22×; 1.88× until its instructions other than the FP32 arithmetic ran once per
    value read), where a matrix product's register-tile fraction (60% of the FP32 peak) said 3.08×."""
    estimated, f, _ = _til001(analyzed(CONV9), "conv9_smem")
    factor = next(e["value"] for e in f["evidence"] if e["metric"] == "shared_reread_factor")
    assert 75 <= factor <= 90
    assert "register window" in f["speedup_model"] and "reaches ~60%" not in f["speedup_model"]
    assert 2.3 <= estimated <= 2.8


def test_a_matrix_product_at_the_shared_level_keeps_its_model(analyzed):
    """flaws.cu's matmul_tiled (H200): shared operands that two loaded values multiply are a product, tiled at both
    levels, not a filter's window."""
    k = next(k for k in analyzed("flaws")["kernels"] if k["name"] == "matmul_tiled")
    f = next(f for f in k["findings"] if f["rule"] == "TIL001")
    assert "tiles the product at both levels" in f["speedup_model"]
    assert all(e["metric"] != "shared_reread_factor" for e in f["evidence"])


def test_the_windowed_twins_are_not_told_to_tile(analyzed):
    kernels = {k["name"]: k for k in analyzed(CONV9)["kernels"]}
    for name in ("conv9_smem_reg", "conv5_smem_reg"):
        assert all(f["rule"] != "TIL001" for f in kernels[name]["findings"]), name


def test_uniform_share_counts_the_weights_read_from_the_constant_bank():
    """The clamped 9×9's real listing (tests/rule_cases/TIL001.toml, from the conv9 report): 47 uniform instructions
    per warp's output (45 `ULDC`, most loading two weights, and 2 `UIADD3`) of its 527; a TMA copy is not
    uniform arithmetic."""
    case = next(
        c for c in tomllib.loads((CASES / "TIL001.toml").read_text())["case"] if c.get("kernel") == "conv9_clamped"
    )
    listing = [(v, s) for _, v, s in case["per_instruction"]["inst_executed"]]
    assert uniform_share_of(listing) == pytest.approx(47 / 527, abs=0.001)
    assert uniform_share_of([(3, "ULDC.64 UR4, c[0x3][0x8]"), (1, "FFMA R1, R2, UR4, R1")]) == 0.75
    assert uniform_share_of([(1, "UTMALDG.2D [UR8], [UR4]"), (1, "FFMA R1, R2, UR4, R1")]) == 0.0
    assert uniform_share_of([]) is None


def test_the_planted_filters_estimates_are_within_30_percent_of_the_window_twin(analyzed):
    """convmap.cu on an H100 (fixtures/convmap-2026-12-06): the coalesced 11×11 filter (re-read through L1) and its
    shared-tile kernel (re-read from the tile, weights loaded per tap) against convmap_window, the card's fix (the tile,
    the weights in shared memory, 8 outputs a thread): measured 3.46× and 3.29×; the window itself is not told to tile
    again."""
    lines = (FIXTURES / "convmap-2026-12-06" / "bench_convmap.jsonl").read_text().splitlines()
    bench = {row["kernel"]: row["median_us"] for row in map(json.loads, lines) if row}
    result = analyzed("convmap-2026-12-06/convmap")
    for planted in ("convmap_coalesced", "convmap_tiled"):
        estimated, _, first = _til001(result, planted)
        measured = bench[planted] / bench["convmap_window"]
        assert first
        assert abs(estimated - measured) / measured <= 0.30, (planted, estimated, measured)
    window = next(k for k in result["kernels"] if k["name"] == "convmap_window")
    assert all(f["rule"] != "TIL001" for f in window["findings"])
