"""ATen's other scatters and histograms (fixtures/scatter-ops-2026-12-01: embedding backward, bincount, histc,
index_put_(accumulate=True) on an H200), a capture of durations, DRAM bytes and the global atom/red/load requests only:
floors from the device's DRAM peak, a verdict on the shared-memory histograms, nothing claimed where nothing is known."""

import pytest

from ncuadvisor.analysis.ceilings import DRAM_PEAKS, LAUNCH_FLOOR_NS
from ncuadvisor.load import ReportReader
from tests.conftest import FIXTURES

FOLDER = "scatter-ops-2026-12-01"


@pytest.fixture(scope="module")
def scatter_ops(typed):
    return typed(f"{FOLDER}/scatter_ops")


def test_report_without_peak_metrics_takes_the_device_dram_peak(scatter_ops):
    """Its floors come from the device's DRAM peak (not the launch floor alone): its attributes' memory clock × bus
    width, within 0.3% of the H200's measured peak; and no verdict claims that no unit is busy: DRAM is the only
    unit the report measures."""
    (k,) = [k for k in scatter_ops.kernels if k.name == "indexing_backward_kernel"]
    rl = k.roofline
    assert rl.peak_dram_bytes_per_s == pytest.approx(DRAM_PEAKS["NVIDIA H200"], rel=0.003)
    assert rl.sources and rl.sources["dram_peak"].startswith("report: device attributes")
    assert rl.dram_bytes and rl.theoretical_ns == pytest.approx(rl.dram_bytes / rl.peak_dram_bytes_per_s * 1e9)
    assert rl.theoretical_ns > 4 * LAUNCH_FLOOR_NS and 3 < (k.headroom or 0) < 10
    assert k.no_rule is not None and "(the report measures no unit but DRAM)" in k.no_rule.message
    assert not any("no unit is busy" in (x.no_rule.message if x.no_rule else "") for x in scatter_ops.kernels)


def test_shared_memory_histograms_get_a_verdict_and_nothing_else_does(scatter_ops):
    """bincount's and histc's kernelHistogram1D flush 0.04-0.06 global reductions per load: ATM003 says what slows them
    and that PyTorch has no cheaper form; the sorts, the reductions (one semaphore atomic per block) and the
    sort-based accumulations stay silent."""
    hits = {(k.name, k.grid): f for k in scatter_ops.kernels for f in k.findings if f.rule == "ATM003"}
    assert {name for name, _ in hits} == {"kernelHistogram1D"} and len(hits) == 2
    for f in hits.values():
        assert f.category == "at-roofline" and f.estimated_speedup == 0.0 and f.confidence == "low"
        assert "bincount / histc" in f.title and "shared-memory atomics" in f.message
    assert not any(f.rule == "ATM002" for k in scatter_ops.kernels for f in k.findings)


def test_no_shared_memory_histogram_where_none_was_planted(analyzed):
    """Full captures whose kernels execute shared-memory atomics (CUB's radix sort in torch_scatter) or flush one
    atomic per block (ATen's reductions in torch_train): no ATM003."""
    for name in ("torch_scatter", "torch_train", "torch_eager"):
        r = analyzed(name)
        found = [f for k in r["kernels"] for f in k["findings"] + [x for v in k["variants"] for x in v["findings"]]]
        assert not any(f["rule"] == "ATM003" for f in found), name


def test_no_fusion_through_histograms_or_latency_limited_kernels(scatter_ops):
    """Before, PRG002 chained 20 launches across embedding backward, bincount, histc and index_put_, histograms
    included, on a report without Speed Of Light: the machine model's limiter (latency) and an atomics verdict break
    a run as Speed Of Light's bound and an atomics finding do."""
    by_id = {k.id: k for k in scatter_ops.kernels}
    for p in scatter_ops.program_findings:
        if p.rule == "PRG002":
            for kid in p.kernel_ids:
                k = by_id[kid]
                assert k.roofline.limiter != "latency" and not any(f.rule.startswith("ATM") for f in k.findings)
    assert not any("kernelHistogram1D" in p.message for p in scatter_ops.program_findings if p.rule == "PRG002")


@pytest.mark.slow  # the script packs a 100 MB report with xz: about 35 s
def test_device_capture_part_on_the_fake_ncu(tmp_path):
    """benchmarks/device/scatter_full.sh with the fake ncu writing this capture: the report is packed and ncuadvisor's
    markdown of it holds the histogram verdict, so a device call spent on the script does not fail on its own bug."""
    import os
    import subprocess

    root = FIXTURES.parent
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "nvidia-smi").write_text("#!/bin/bash\necho stub-gpu\n")
    (stubs / "nvidia-smi").chmod(0o755)
    out = tmp_path / "out"
    path = os.pathsep.join([str(stubs), str(root / "tests" / "fake_ncu"), os.environ["PATH"]])
    env = dict(
        os.environ,
        PATH=path,
        OUT=str(out),
        WORK=str(tmp_path / "work"),
        BUDGET="100",
        FAKE_NCU_PHASE2=str(FIXTURES / "scatter-ops-2026-12-01" / "scatter_ops.ncu-rep.xz"),
    )
    p = subprocess.run(
        ["bash", "benchmarks/device/scatter_full.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=200
    )
    assert p.returncode == 0, p.stderr
    steps = (out / "steps.log").read_text()
    assert "report rc=0" in steps and steps.rstrip().endswith("done"), steps
    assert "ATM003" in (out / "scatter_ops_full.md").read_text()
    assert (out / "scatter_ops_full.ncu-rep.xz").stat().st_size > 100_000


@pytest.fixture(scope="module")
def scatter_ops_full(typed):
    return typed(f"{FOLDER}/scatter_ops_full")


def test_histograms_found_by_their_shared_atomics_in_a_full_capture(scatter_ops_full):
    """The same program captured with the 13 analysis sections (41 of its 46 launches): ATM003 fires on both
    kernelHistogram1D results through the shared-memory atomic counter itself (several per load), not only through
    the global-atomics band of the lean capture; the CUB radix sort, which also runs shared atomics, stays silent."""
    hits = [(k, f) for k in scatter_ops_full.kernels for f in k.findings if f.rule == "ATM003"]
    assert sorted(k.name for k, _ in hits) == ["kernelHistogram1D", "kernelHistogram1D"]
    for _k, f in hits:
        shared = [e.value for e in f.evidence if e.metric == "shared_atomics_per_load"]
        assert shared and shared[0] is not None and shared[0] > 1.0, f.evidence  # several shared atomics per load
    assert not any(f.rule == "ATM003" for k in scatter_ops_full.kernels if "RadixSort" in k.name for f in k.findings)


# the launches of each accumulation in the captures, by result (fixtures/README.md): embedding backward's arange, radix
# sort (results 5-14) through sum_and_scatter; index_put_'s arange, radix sort (41-44) and indexing_backward_kernel
EMBEDDING_CHAIN, EMBEDDING_SORT = range(4, 25), range(5, 15)
INDEX_PUT_CHAIN, INDEX_PUT_SORT = range(40, 46), range(41, 45)


def _durations(path) -> dict[int, float]:
    frame = ReportReader(path).results(["gpu__time_duration.sum"])
    return {int(r["result_id"]): float(r["gpu__time_duration.sum"]) for r in frame.rows()}


def _atm004(result) -> dict[str, dict[str, float]]:
    """ATM004's findings by the op they name: their evidence as {metric: value}."""
    out = {}
    for p in result.program_findings:
        if p.rule == "ATM004":
            op = "embedding" if "nn.Embedding" in p.title else "index_put_" if "index_put_" in p.title else p.title
            assert op not in out, p.title
            out[op] = {e.metric: e.value for e in p.evidence} | {"saving": p.estimated_saving_ns}
    return out


@pytest.mark.parametrize("name", ["scatter_ops", "scatter_ops_full"])
def test_sort_based_accumulations_are_costed_as_measured(typed, report_path, name):
    """ATM004 names each accumulation that ATen sorts first and sums its launches as measured: nn.Embedding's dense
    gradient (arange, 10 launches of radix sort, zero fill, unique-by-key, segment offsets, compute_grad_weight,
    sum_and_scatter) and index_put_(accumulate=True) (arange, 4 launches of radix sort, indexing_backward_kernel),
    claiming no saving. The full capture stopped before index_put_'s sort: only the embedding chain is there."""
    result = typed(f"{FOLDER}/{name}")
    ns = _durations(report_path(f"{FOLDER}/{name}"))
    found = _atm004(result)
    expected = {"embedding": (EMBEDDING_CHAIN, EMBEDDING_SORT)}
    if name == "scatter_ops":
        expected["index_put_"] = (INDEX_PUT_CHAIN, INDEX_PUT_SORT)
    assert set(found) == set(expected)
    for op, (chain, sort) in expected.items():
        ev = found[op]
        assert ev["chain_ns"] == pytest.approx(sum(ns[i] for i in chain), abs=1), op
        assert ev["sort_ns"] == pytest.approx(sum(ns[i] for i in sort), abs=1), op
        assert ev["program_fraction"] == pytest.approx(ev["chain_ns"] / result.report.total_duration_ns, abs=1e-3)
        assert ev["saving"] == 0.0
    (p,) = [p for p in result.program_findings if p.rule == "ATM004" and "nn.Embedding" in p.title]
    assert "sparse=True" in p.fix and "SparseAdam" in p.fix_code and p.confidence == "low"
    assert "DeviceRadixSortOnesweepKernel" in p.kernels and "sum_and_scatter" in p.kernels


def test_no_sort_based_accumulation_elsewhere(analyzed):
    """torch_scatter's twin sorts with torch.sort and reduces with segment_reduce, the sorted rewrite ATM002 prescribes
    (no ATen accumulation follows its sort); the training step and eager captures sort nothing: no ATM004."""
    for name in ("torch_scatter", "torch_train", "torch_eager"):
        r = analyzed(name)
        assert not any(p["rule"] == "ATM004" for p in r["program_findings"]), name


def test_kernels_a_program_finding_covers_point_to_it(scatter_ops_full):
    """The radix sort of the embedding backward has no kernel rule of its own, but ATM004 speaks to its chain: its
    verdict and its table cell name that finding instead of "no rule applies"; a large kernel outside every program
    finding keeps the plain verdict."""
    from ncuadvisor.render.markdown import render_markdown

    by_name = {k.name: k for k in scatter_ops_full.kernels}
    sort = by_name["DeviceRadixSortOnesweepKernel"]
    assert sort.no_rule is not None and sort.no_rule.program_rule == "ATM004"
    assert sort.no_rule.message.startswith("No kernel rule applies; the program finding ATM004 (")
    ids = {str(i) for f in scatter_ops_full.program_findings for i in f.kernel_ids}
    outside = [k for k in scatter_ops_full.kernels if str(k.id) not in ids and k.time_share >= 0.05]
    # outside every program finding, a large kernel has a finding of its own (GEN001 at worst) or the plain verdict
    assert outside and all(k.findings or (k.no_rule and k.no_rule.program_rule is None) for k in outside)
    # the fallback's finding on the sort gave way to the program finding that covers the kernel
    assert any(s.rule == "GEN001" and "ATM004" in s.reason for s in sort.suppressed)
    md = render_markdown(scatter_ops_full)
    row = next(ln for ln in md.splitlines() if ln.startswith("| 1 |"))
    assert "DeviceRadixSortOnesweepKernel" in row and row.rstrip().endswith("| see ATM004 (program) |")


def test_index_math_is_advised_only_on_tensoriterator_kernels(scatter_ops_full):
    """ISU001's PyTorch advice (contiguous inputs of one dtype, torch.compile) speaks to TensorIterator loops. The
    segment sums of embedding backward and CUB's sort passes issue mostly index math too, but by design: they get no
    ISU001 and point to the program finding that covers their chain."""
    by_name = {k.name: k for k in scatter_ops_full.kernels}
    for name in ("compute_grad_weight", "sum_and_scatter", "DeviceRadixSortHistogramKernel"):
        assert not any(f.rule == "ISU001" for f in by_name[name].findings), name
    for name in ("compute_grad_weight", "sum_and_scatter"):  # 12% and 8% of the time: a verdict each
        k = by_name[name]
        assert not k.findings and k.no_rule is not None and k.no_rule.program_rule == "ATM004", name
