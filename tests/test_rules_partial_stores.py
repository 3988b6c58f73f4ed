"""MEM004 on real reports: the predicated contiguous store of fixtures/patterns.ncu-rep.xz (H200) makes DRAM read back
the sectors it writes in part; no other kernel of the planted reports (patterns, flaws, cache) is said to, the
strided twin of that store included (its sectors are wasted: MEM001's)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("report", ["patterns", "flaws", "cache"])
def test_fires_only_on_the_predicated_contiguous_store(analyzed, report):
    result = analyzed(report)
    firing = {k["name"] for k in result["kernels"] for f in k["findings"] if f["rule"] == "MEM004"}
    assert firing == ({"pred_store_contig"} if report == "patterns" else set())
    if report == "patterns":
        k = next(k for k in result["kernels"] if k["name"] == "pred_store_contig")
        f = k["findings"][0]
        assert f["rule"] == "MEM004" and "write whole sectors" in f["fix"]
        assert 0.25 < f["estimated_speedup"] < 0.4  # 60.6 MB of fill reads out of 189 MB DRAM moved
        strided = next(k for k in result["kernels"] if k["name"] == "pred_store_strided")
        assert strided["findings"][0]["rule"] == "MEM001"
