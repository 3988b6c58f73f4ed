"""LIB002, the verdict on a library kernel at its shape, on real reports: it closes the gap of ATen's random-number
generator in AlpriElse/cs599k's rms_norm_triton_looping report (the foreign cache, not committed: no licence), it gives
way to GEN001 where GEN001 names a mechanism (the engine runs it in a second fallback tier), and the scorers read it as
a verdict: the gap scan's `verdict` class, and "leave the kernel" where a label allows NONE."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import FIXTURES, FOREIGN_CACHE, ROOT, report_json

sys.path.insert(0, str(ROOT / "benchmarks"))
import exam  # noqa: E402  (benchmarks/ is a folder of scripts)
import gaps  # noqa: E402
from foreign import judge  # noqa: E402

LOOPING = FOREIGN_CACHE / "AlpriElse+cs599k__rms_norm_rms_norm_triton_looping.ncu-rep"


@pytest.mark.skipif(not LOOPING.is_file(), reason=f"the foreign cache {FOREIGN_CACHE} lacks the looping report")
def test_the_generator_at_its_shape_gets_the_verdict_with_its_reason():
    """GH200, ncu 2025.1.0, full set: ATen's uniform generator, 6.9 µs, 2.29× its issue floor (it reads no global
    memory: every instruction is its own), 50% occupancy from 56 registers, the SMs active 75% of a 2-wave launch. No
    rule names a mechanism (GEN001: the top stall is "not selected", no wait to name); the verdict states the limiter
    and the bound it is within, 1 ÷ (0.85 × 0.50 × 0.78) = 3.03×, claims nothing, and points at the call."""
    doc = report_json(LOOPING)
    (k,) = doc["kernels"]
    first = k["findings"][0]
    assert first["rule"] == "LIB002" and first["category"] == "at-roofline" and first["estimated_speedup"] == 0.0
    assert k["headroom"] == pytest.approx(2.289, abs=1e-3)
    assert "occupancy 50%, limited by registers (4 blocks/SM, 56 registers per thread" in first["message"]
    assert "account for up to 3.03×" in first["message"]
    assert "tl.rand" in first["fix"] and "torch.compile" in first["fix"]
    assert k.get("no_rule") is None  # no longer "a gap in the rule set"
    (row,) = gaps.rows_of(doc, LOOPING.name, gaps.MIN_SHARE)
    assert row.cls == "verdict" and row.why.startswith("LIB002")


def test_the_verdict_gives_way_to_a_mechanism_the_fallback_names():
    """flyinglandlord/sglang (H800, full set, Apache-2.0): the same ATen generator. Its 16.4 µs launch is 1.61× its
    floor, within what LIB002 credits (1.73×: 75% occupancy, tests/rule_cases/LIB002.toml), but GEN001 names the
    partial last wave (1.33 waves): the mechanism stays first and the verdict is not said; the 33.5 µs launches are
    below 1.6× (ROOF001)."""
    doc = report_json(FIXTURES / "foreign" / "flyinglandlord+sglang__profile.ncu-rep.xz")
    rng = [k for k in doc["kernels"] if k["name"] == "distribution_elementwise_grid_stride_kernel"]
    variants = [v for k in rng for v in k.get("variants") or [] if v.get("per_launch_ns") == 16448]
    assert variants and variants[0]["findings"][0]["rule"] == "GEN001"
    assert "partial last wave" in variants[0]["findings"][0]["title"]
    every = [f["rule"] for k in doc["kernels"] for f in k["findings"]]
    every += [f["rule"] for k in doc["kernels"] for v in k.get("variants") or [] for f in v.get("findings") or []]
    assert "LIB002" not in every


def test_a_verdict_scores_as_leave_the_kernel_where_the_label_allows_none():
    """foreign.py's `judge`: a verdict (category at-roofline) is right where the label names its rule or allows NONE;
    a finding that names a mechanism is not NONE; a verdict against a label of mechanisms alone stays wrong."""
    assert judge("LIB002", ["NONE", "ROOF001", "LCH001"], verdict=True) == "right"
    assert judge("ROOF001", ["ROOF001"], verdict=True) == "right"
    assert judge("LIB002", ["LCH001", "MEM001"], verdict=True) == "wrong"
    assert judge("GEN001", ["NONE", "ROOF001"], verdict=False) == "wrong"
    label = {"report": "r", "kernel": "k", "expected": ["NONE"]}
    doc = {"kernels": [{"name": "k", "findings": [{"rule": "LIB002", "category": "at-roofline", "title": "t"}]}]}
    assert exam.score(label, doc).verdict == "right"
    doc["kernels"][0]["findings"][0]["category"] = "latency"
    assert exam.score(label, doc).verdict == "wrong"
