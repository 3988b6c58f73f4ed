"""The JSON result is a contract: its shape, its order and its value ranges."""

import json

from ncuadvisor.render import to_json

BOUNDS = {"memory", "compute", "latency", "launch", "unknown"}


def test_top_level_shape(analyzed):
    r = json.loads(to_json(analyzed("probe")))
    assert r["schema_version"] == 1
    assert {"path", "ncu_version", "device", "results", "kernels", "total_duration_ns"} <= set(r["report"])
    assert isinstance(r["program_findings"], list) and isinstance(r["top_actions"], list)


def test_kernels_ordered_by_total_time_with_roofline(analyzed):
    kernels = analyzed("probe")["kernels"]
    times = [k["duration_ns"] for k in kernels]
    assert times == sorted(times, reverse=True)
    assert abs(sum(k["time_share"] for k in kernels) - 1) < 1e-9
    for k in kernels:
        assert {
            "name",
            "demangled",
            "launches",
            "duration_ns",
            "time_share",
            "bound",
            "roofline",
            "findings",
            "ncu_rules",
        } <= set(k)
        assert k["bound"] in BOUNDS
        assert {"flops", "dram_bytes", "ideal_bytes", "intensity", "theoretical_ns", "headroom"} <= set(k["roofline"])


def test_findings_ordered_by_value(analyzed):
    from ncuadvisor.rulekit.contract import CATEGORIES

    for k in analyzed("probe")["kernels"]:
        values = [f["estimated_speedup"] for f in k["findings"] if f["category"] != "at-roofline"]
        assert values == sorted(values, reverse=True)
        for f in k["findings"]:
            assert 0 <= f["estimated_speedup"] <= 1
            assert f["category"] in CATEGORIES
            assert {"rule", "title", "evidence", "fix", "source", "speedup_model"} <= set(f)
            for s in f["source"]:
                assert {"file", "line", "code"} <= set(s)


def test_top_actions_ranked_by_time_saved(analyzed):
    actions = analyzed("probe")["top_actions"]
    savings = [a["estimated_saving_ns"] for a in actions]
    assert savings == sorted(savings, reverse=True) and actions[0]["kernel"] == "copy_strided"
