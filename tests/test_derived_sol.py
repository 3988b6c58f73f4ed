"""The Speed Of Light percentages and L1's throughput derived from single unit counters where a report lacks NCU's
own (`roofline.derive_sol`, `roofline.L1_UNITS`), checked on real reports that hold both: close to the measured
ones, and the same bound. benchmarks/derived_sol.py runs the whole analysis both ways on every such fixture."""

from __future__ import annotations

import pytest

from ncuadvisor.analysis import ceilings, roofline
from ncuadvisor.load import ReportReader


def rows(report_path, name):
    return ReportReader(report_path(name)).results(roofline.METRICS).rows()


@pytest.mark.parametrize("name", ["patterns", "cache", "torch_eager"])
def test_derived_percentages_are_close_and_keep_the_bound(report_path, name):
    """patterns holds a pointer chase whose L2 throughput (78%) is far above NCU's memory percentage (51%: L2's tag
    lookups); cache a stencil whose memory percentage is L2's output crossbar (90%)."""
    checked = 0
    for row in rows(report_path, name):
        measured = roofline.compute(row)
        if "memory_pct" not in measured.sol or "compute_pct" not in measured.sol:
            continue
        assert measured.sol_derived is None
        without = dict(row, **{m: None for m in roofline.NOT_COLLECTED})
        derived = roofline.compute(without)
        assert sorted(derived.sol_derived) == ["compute_pct", "l1_pct", "memory_pct"]
        assert derived.sol["l1_pct"] == pytest.approx(measured.sol["l1_pct"], abs=0.1), row["name"]
        assert derived.busy_pct["l1"] == derived.sol["l1_pct"]
        assert derived.sol["memory_pct"] == pytest.approx(measured.sol["memory_pct"], abs=5.5), row["name"]
        assert derived.sol["compute_pct"] == pytest.approx(measured.sol["compute_pct"], abs=5.5), row["name"]
        assert (derived.bound, derived.limiter) == (measured.bound, measured.limiter), row["name"]
        checked += 1
    assert checked >= 5


def test_l2_throughput_is_only_the_fallback(report_path):
    """Without the single L2 counters, L2's throughput stands for L2 (an overestimate on the pointer chase)."""
    chase = next(r for r in rows(report_path, "patterns") if r["name"] == "chase_interleaved")
    bare = dict(chase, **{m: None for m in (*roofline.DERIVED_SOL, *roofline.SOL_L2_UNITS)})
    full = roofline.compute(chase)
    r = roofline.compute(dict(chase, **{m: None for m in roofline.DERIVED_SOL}))
    assert r.sol["memory_pct"] == pytest.approx(full.sol["memory_pct"], abs=1.0)
    assert roofline.compute(bare).sol["memory_pct"] == pytest.approx(full.sol["l2_pct"])


def test_nothing_to_derive_from_leaves_them_missing(report_path):
    """A duration-only row (a phase-1 report): no percentage is made up."""
    row = rows(report_path, "tiny_phase1")[0]
    r = roofline.compute(row)
    assert "memory_pct" not in r.sol and "compute_pct" not in r.sol and r.sol_derived is None


def test_the_tensor_pipe_alone_derives_nothing(report_path):
    """Phase 1 of `profile` collects the tensor pipe with the duration and DRAM bytes: too little for either."""
    row = next(r for r in rows(report_path, "torch_eager") if r["name"].startswith("nvjet"))
    kept = {"gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", ceilings.PIPE_PCT["tensor"]}
    r = roofline.compute({k: (v if k in kept or not isinstance(v, float) else None) for k, v in row.items()})
    assert r.sol == {} and r.sol_derived is None
