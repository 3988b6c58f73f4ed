"""No output contradicts itself (`benchmarks/consistency.py`'s checks) on three real reports: a cast and a layout
copy that kernel findings remove whole beside a fusion finding on the same two kernels, cuBLAS kernels loading through
TMA (ideal sectors far below the compulsory bytes), and phase-1 reports of under-filled grids without Speed Of Light.
Each check is also shown to fail on a result broken by hand, so a clean run means something."""

from __future__ import annotations

import copy
import json

import consistency  # benchmarks/ is on sys.path (tests/conftest.py)
import pytest

from ncuadvisor.render.formats import RenderOptions, render_html, render_markdown
from tests.conftest import kernel

REPORTS = ("torch_cast_copy", "profile-cost-2026-11-30/cuda_profile.phase1", "torch_dynshapes")


def _outputs(typed, name: str) -> tuple[dict, str, str]:
    result = typed(name)
    data = json.loads(json.dumps(result.to_dict(), default=str))
    return data, render_markdown(result, RenderOptions()), render_html(result, RenderOptions())


@pytest.mark.parametrize("name", REPORTS)
def test_no_output_contradicts_itself(typed, name):
    data, md, page = _outputs(typed, name)
    assert data["kernels"]
    assert [v.line() for v in consistency.run_checks(data, md, page, name)] == []


def test_a_fusion_of_kernels_removed_whole_claims_nothing_more(analyzed):
    # PYT001 removes the layout copy, PYT002 the cast: all 522.4 µs of both; PRG002's fusion of the two kept 49.0 µs
    r = analyzed("torch_cast_copy")
    (fuse,) = [p for p in r["program_findings"] if p["rule"] == "PRG002"]
    assert fuse["estimated_saving_ns"] == 0.0
    assert "None of the 49.0 µs modelled: PYT002, PYT001 already claim" in fuse["saving_model"]
    claimed = {a["kernel_id"]: a["estimated_saving_ns"] for a in r["top_actions"] if a["scope"] == "kernel"}
    for kid in fuse["kernel_ids"]:
        assert claimed[kid] == pytest.approx(next(k["duration_ns"] for k in r["kernels"] if k["id"] == kid))


def test_ideal_bytes_of_a_tma_kernel_say_why_they_are_small(typed):
    data, _, page = _outputs(typed, "torch_cast_copy")
    tma = [k for k in data["kernels"] if k["roofline"].get("tma_bytes")]
    assert tma and all(k["roofline"]["ideal_bytes"] < k["roofline"]["compulsory_bytes"] / 10 for k in tma)
    assert page.count("loaded through TMA are not counted") == len(tma)


def test_an_under_filled_grid_without_counters_is_not_called_launch(analyzed):
    # gemm_tiled: 15.4 µs on 64 blocks for 132 SMs, a phase-1 report without Speed Of Light: no limiter to name
    k = kernel(analyzed("profile-cost-2026-11-30/cuda_profile.phase1"), "gemm_tiled")
    assert k["roofline"]["bound"] == "launch" and k["roofline"]["duration_ns"] > 5_000
    assert k["bound"] == "unknown"
    assert "64 blocks for 132 SMs" in k["bound_reason"] and "not known" in k["bound_reason"]


def test_each_check_fails_on_a_broken_result(typed):
    data, md, page = _outputs(typed, "torch_cast_copy")

    def checks(broken: dict) -> set[str]:
        return {v.check for v in consistency.run_checks(broken, md, page, "broken")}

    twice = copy.deepcopy(data)
    (fuse,) = [p for p in twice["program_findings"] if p["rule"] == "PRG002"]
    fuse["estimated_saving_ns"] = 49e3  # the saving as it was before the program findings were spent once
    assert "time" in checks(twice)
    lines = copy.deepcopy(data)
    f = next(f for k in lines["kernels"] for f in k["findings"])
    f["source"] = [{"file": None, "line": None, "sass": "S2R R3, SR_CTAID.X", "metric": "inst_executed", "share": 0.75}]
    assert "lines" in checks(lines)
    moved = copy.deepcopy(data)
    moved["kernels"][0]["roofline"]["compulsory_bytes"] *= 2
    assert "bytes" in checks(moved)
    badge = copy.deepcopy(data)
    badge["kernels"][0]["bound"] = "compute" if badge["kernels"][0]["bound"] != "compute" else "memory"
    assert "bound" in checks(badge)
    words = copy.deepcopy(data)
    k = next(k for k in words["kernels"] if k["roofline"].get("limiter") not in (None, "issue") and k["findings"])
    k["findings"][0]["message"] += " The kernel is issue-bound on index math."  # ISU001's words before 2026-12-06
    assert [v.what for v in consistency.run_checks(words, md, page, "broken") if v.check == "bound"] == [
        f"{k['findings'][0]['rule']} says 'issue-bound', the limiter is {k['roofline']['limiter']!r}"
    ]
    estimate = copy.deepcopy(data)
    next(f for k in estimate["kernels"] for f in k["findings"] if f["category"] != "at-roofline")[
        "estimated_speedup"
    ] = 1.5
    assert "other" in checks(estimate)
