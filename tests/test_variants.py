"""Launches of another size: one kernel and launch shape, several problem sizes or call sites (real reports)."""

import pytest

from ncuadvisor.model import launch_clusters, split_variants
from tests.synthetic import typed_result


def test_launch_clusters_split_sizes_not_noise():
    # launch-to-launch noise of a few % stays together; 14 vs 28 µs (a transposing copy) splits
    assert launch_clusters([14e3, 14.2e3, 13.9e3, 14.1e3]) == [[2, 0, 3, 1]]
    assert [sorted(c) for c in launch_clusters([14e3, 28e3, 14.1e3, 28.3e3, 14.2e3])] == [[0, 2, 4], [1, 3]]
    # a 2 µs kernel's jitter (2.0 vs 2.6 µs: 1.3x, but 600 ns) is not a second size
    assert len(launch_clusters([2000.0, 2600.0, 2100.0, 2650.0])) == 1
    assert launch_clusters([0.0, 0.0]) == [[0, 1]]  # no durations (a report without them): one group
    assert launch_clusters([]) == []


def test_split_variants_keeps_small_sizes_with_the_group():
    ids = list(range(10))
    durs = [10e3] * 9 + [30e3]  # the lone 30 µs launch is 25% of the time: a variant of its own
    (v,) = split_variants(ids, durs, representative=0)
    assert v.result_ids == [9] and v.launches == 1 and v.duration_ns == 30e3
    durs = [10e3] * 9 + [11e3]
    assert split_variants(ids, durs, representative=0) == []
    ids = list(range(30))
    durs = [10e3] * 29 + [25e3]  # 25 of 315 µs: under 10% of the group's time, analysed with the rest
    assert split_variants(ids, durs, representative=0) == []


@pytest.fixture(scope="module")
def eager(analyzed):
    return analyzed("torch_eager")


def test_eager_copy_kernel_splits_at_its_two_sizes(eager):
    copy = next(k for k in eager["kernels"] if k["name"] == "elementwise_kernel" and k["grid"] == "(8192, 1, 1)")
    assert copy["launches"] == 6 and copy["analysed_launches"] == 4
    (v,) = copy["variants"]
    assert v["launches"] == 2 and 27_000 < v["launch_range_ns"][0] <= v["launch_range_ns"][1] < 29_000
    assert copy["analysed_duration_ns"] + v["duration_ns"] == pytest.approx(copy["duration_ns"])
    assert v["profiled"] and v["findings"] and v["findings"][0]["rule"] == "PYT001"
    assert "analysed here" in copy["launch_note"]
    # one action per rule and kernel in "where to start": the variant's saving adds to the kernel's
    pyt = [a for a in eager["top_actions"] if a["rule"] == "PYT001" and a["kernel_id"] == copy["id"]]
    assert len(pyt) == 1
    main_saving = (
        copy["analysed_duration_ns"] * next(f for f in copy["findings"] if f["rule"] == "PYT001")["estimated_speedup"]
    )
    assert pyt[0]["estimated_saving_ns"] == pytest.approx(
        main_saving + v["duration_ns"] * v["findings"][0]["estimated_speedup"]
    )


def test_eager_gemm_at_two_sizes(eager):
    # one cuBLAS kernel and grid at two K's: 15.8 µs (analysed) and 45.3 µs (near its bound, a variant)
    g = next(k for k in eager["kernels"] if k["name"].startswith("nvjet") and k["grid"] == "(2, 64, 1)")
    (v,) = g["variants"]
    assert (
        g["analysed_launches"] == 1 and v["launches"] == 1 and v["launch_range_ns"][0] > 2 * g["analysed_duration_ns"]
    )
    assert [f["rule"] for f in v["findings"]] == ["ROOF001"]


def test_uniform_launches_have_no_variants(analyzed):
    res = analyzed("model_step_315")
    small = next(k for k in res["kernels"] if k["name"] == "layernorm_fwd")
    assert small["launches"] > 40 and small["variants"] == [] and small["analysed_launches"] == small["launches"]


def test_variants_render(eager):
    from ncuadvisor.render.html import render_html
    from ncuadvisor.render.markdown import render_markdown

    html, md = render_html(typed_result(eager)), render_markdown(typed_result(eager))
    assert html.count("Launches of another size") == 3 and md.count("Launches of another size") == 3
    assert "(the findings above speak for 4 of the 6 launches)" in html


def test_phase1_time_decides_what_the_deep_analysis_sees(report_path, analyzed):
    """`ncuadvisor profile` analyses one launch per kernel in phase 2; rules that weigh a kernel by its share of the
    program's time must see phase 1's share, not the share of that launch in the small phase-2 report."""
    from ncuadvisor.pipeline.analyze import analyze
    from ncuadvisor.profile.merge import Phase1Time
    from ncuadvisor.profile.selection import kernel_key
    from ncuadvisor.result import Result

    path = report_path("torch_eager")
    copy = next(
        k
        for k in analyzed("torch_eager")["kernels"]
        if k["name"] == "elementwise_kernel" and k["grid"] == "(8192, 1, 1)"
    )
    key = kernel_key(copy)
    ids = copy["result_ids"]

    def first_rules(per_launch_ns: float, total_ns: float) -> list[str]:
        phase1 = {
            "kernels": [{"id": "k0", "demangled": copy["demangled"], "grid": copy["grid"], "block": copy["block"]}],
            "report": {"total_duration_ns": total_ns},
        }
        launches = [{"kernel_id": "k0", "result_id": r, "duration_ns": per_launch_ns} for r in ids]
        told = Phase1Time(Result.from_dict(phase1), launches)
        res = analyze(path, group_time=told).to_dict()
        k = next(k for k in res["kernels"] if kernel_key(k) == key)
        return [f["rule"] for f in k["findings"]]

    assert "PYT001" in first_rules(14_000.0, 6 * 14_000.0 / 0.10)  # 10% of the program: a copy worth removing
    assert "PYT001" not in first_rules(14_000.0, 6 * 14_000.0 / 0.01)  # 1%: under PYT001's 2% threshold


def test_profile_merge_names_the_sizes_phase_2_did_not_profile(report_path, typed):
    """Phase 1 of the training step (every launch timed) merged with a deep report: the copy kernel's profiled
    launch (14 µs) speaks for the 24 launches of its size; the 4 launches of 28 µs were timed only."""
    from ncuadvisor.profile.merge import analyze_phase1, merge_results
    from ncuadvisor.rulekit import engine

    rules = engine.discover([])
    p1, launches, _ = analyze_phase1(report_path("torch_train_phase1_all"), rules)
    deep = typed("torch_eager")  # the same rules: engine.discover([])
    m = merge_results(p1, [("torch_eager.ncu-rep", deep)], launches=launches, rules=rules).to_dict()
    copy = next(k for k in m["kernels"] if k["name"] == "elementwise_kernel" and k["grid"] == "(8192, 1, 1)")
    assert copy["profiled"] and copy["launches"] == 28 and copy["analysed_launches"] == 24
    (v,) = copy["variants"]
    assert v["launches"] == 4 and v["profiled"] is False and v["findings"] == [] and v["bound"] == "unknown"
    assert "timed in phase 1 only" in copy["launch_note"]
    assert v["time_share"] == pytest.approx(v["duration_ns"] / m["report"]["total_duration_ns"])
    unprofiled = [k for k in m["kernels"] if not k["profiled"]]
    assert all(not v["profiled"] for k in unprofiled for v in k.get("variants") or [])


def test_diff_counts_a_variants_findings(eager):
    """`ncuadvisor diff`: a problem found only on the launches of another size is still a finding of the kernel."""
    import copy

    from ncuadvisor.comparison.compare import findings_of
    from ncuadvisor.result import KernelEntry

    copy_k = next(k for k in eager["kernels"] if k["name"] == "elementwise_kernel" and k["grid"] == "(8192, 1, 1)")
    both = findings_of([KernelEntry.from_dict(copy_k)])["PYT001"].estimated_saving_ns
    v = copy_k["variants"][0]
    assert both == pytest.approx(copy_k["analysed_duration_ns"] * 1.0 + v["duration_ns"] * 1.0)
    only_variant = copy.deepcopy(copy_k)
    only_variant["findings"] = [f for f in only_variant["findings"] if f["rule"] != "PYT001"]
    assert findings_of([KernelEntry.from_dict(only_variant)])["PYT001"].estimated_saving_ns == pytest.approx(
        v["duration_ns"]
    )


def test_profile_merge_keeps_each_process_to_its_own_launches(report_path):
    """Two worker processes run the same kernels: each process's kernel stands for its own launches only."""
    from ncuadvisor.pipeline.analyze import analyze
    from ncuadvisor.profile.merge import Phase1Time, analyze_phase1, merge_results
    from ncuadvisor.rulekit import engine

    rules = engine.discover([])
    p1, launches, _ = analyze_phase1(report_path("multiproc_phase1"), rules)
    deep = analyze(report_path("multiproc"), rules=rules, group_time=Phase1Time(p1, launches))
    m = merge_results(p1, [("multiproc.ncu-rep", deep)], launches=launches, rules=rules).to_dict()
    shared = [k for k in m["kernels"] if k["name"] == "scale_add"]
    assert len(shared) == 2 and {k["process"]["pid"] for k in shared} == {p.pid for p in p1.report.processes}
    for k in m["kernels"]:
        if k["profiled"]:
            assert k["analysed_launches"] + sum(v["launches"] for v in k["variants"]) == k["launches"]
