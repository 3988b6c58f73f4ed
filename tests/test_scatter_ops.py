"""ATen's other scatters and histograms (fixtures/scatter-ops-2026-12-01: embedding backward, bincount, histc,
index_put_(accumulate=True) on an H200), a capture of durations, DRAM bytes and the global atom/red/load requests only:
floors from the device's DRAM peak, a verdict on the shared-memory histograms, nothing claimed where nothing is known."""

import lzma
import shutil

import pytest

from ncuadvisor.analysis.ceilings import DRAM_PEAKS, LAUNCH_FLOOR_NS
from ncuadvisor.analysis.pipeline import analyze
from tests.conftest import FIXTURES


def _analyzed(tmp_path_factory, name: str):
    path = tmp_path_factory.mktemp(name) / f"{name}.ncu-rep"
    with lzma.open(FIXTURES / "scatter-ops-2026-12-01" / f"{name}.ncu-rep.xz") as fin, path.open("wb") as out:
        shutil.copyfileobj(fin, out)
    return analyze(path)


@pytest.fixture(scope="module")
def scatter_ops(tmp_path_factory):
    return _analyzed(tmp_path_factory, "scatter_ops")


def test_report_without_peak_metrics_takes_the_device_dram_peak(scatter_ops):
    """Its floors come from the H200's DRAM peak (not the launch floor alone), and no verdict claims that no unit is
    busy: DRAM is the only unit the report measures."""
    (k,) = [k for k in scatter_ops.kernels if k.name == "indexing_backward_kernel"]
    rl = k.roofline
    assert rl.peak_dram_bytes_per_s == DRAM_PEAKS["NVIDIA H200"]
    assert rl.dram_bytes and rl.theoretical_ns == pytest.approx(rl.dram_bytes / DRAM_PEAKS["NVIDIA H200"] * 1e9)
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
def scatter_ops_full(tmp_path_factory):
    return _analyzed(tmp_path_factory, "scatter_ops_full")


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
