"""Roofline numbers against values computed by hand from the fixture's raw metrics and the kernels' code."""

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.load import ReportReader
from tests.conftest import in_child


@pytest.fixture(scope="module")
def rows(report_path):
    def read():
        frame = ReportReader(report_path("probe")).results(roofline.METRICS)
        return {r["name"]: r for r in frame.rows()}

    return in_child(read)


def test_fp32_flops_match_the_kernel_code(rows):
    r = roofline.compute(rows["fma_loop"])
    # fma_loop: 132*16 blocks x 256 threads x (4096 iterations x 2 FFMA x 2 FLOP + one FMUL + one FADD)
    threads = 132 * 16 * 256
    assert r.flops_by_precision["fp32"] == pytest.approx(threads * (4096 * 2 * 2 + 2), rel=1e-9)
    assert r.bound == "compute" and r.limiting_precision == "fp32"


def test_peaks_come_from_the_report(rows):
    row = rows["fma_loop"]
    r = roofline.compute(row)
    sm_hz = row["sm__cycles_elapsed.avg.per_second"]
    assert r.peak_flops_per_s["fp32"] == pytest.approx(16896 * 2 * sm_hz)  # 132 SMs x 128 FMA/clk x 2
    assert 60e12 < r.peak_flops_per_s["fp32"] < 70e12
    bw = row["dram__bytes.sum.peak_sustained"] * row["dram__cycles_elapsed.avg.per_second"]
    assert r.peak_dram_bytes_per_s == pytest.approx(bw)
    assert 4.7e12 < bw < 4.9e12  # H200: 1504 B/clk x 3.2 GHz


def test_memory_floor_and_headroom_of_a_copy(rows):
    row = rows["copy_vec4"]
    r = roofline.compute(row)
    dram = row["dram__bytes_read.sum"] + row["dram__bytes_write.sum"]
    ideal = row["memory_l2_theoretical_sectors_global_ideal"] * 32
    assert ideal == 2 * 64 * 1024 * 1024 * 4  # read and write 64M floats once
    left = row["dram__bytes_read.sum"] + row["lts__t_sectors_srcunit_tex_op_write.sum"] * 32
    # DRAM's write count misses the output lines still dirty in L2 at kernel end; the SMs' writes do not
    assert dram < ideal <= left
    assert r.compulsory_bytes == pytest.approx(min(left, ideal))
    floor_ns = r.compulsory_bytes / r.peak_dram_bytes_per_s * 1e9
    assert r.theoretical_ns == pytest.approx(floor_ns) and r.limiter == "dram"
    assert r.headroom == pytest.approx(row["gpu__time_duration.sum"] / floor_ns)
    assert r.headroom < 1.5 and r.bound == "memory"
    assert r.intensity == 0


def test_wasted_sectors_show_as_headroom(rows):
    r = roofline.compute(rows["copy_strided"])
    # DRAM sees the same bytes (L2 absorbs the stride) but the kernel takes 4x the floor: headroom, not "near bound"
    assert r.headroom > 3 and r.bound == "memory"


def test_bound_classification_thresholds():
    base = {
        "gpu__time_duration.sum": 100_000.0,
        "launch__grid_size": 1000,
        "device__attribute_multiprocessor_count": 132,
    }
    mem = dict(base, **{roofline.SOL_METRICS["memory_pct"]: 85.0, roofline.SOL_METRICS["compute_pct"]: 20.0})
    comp = dict(base, **{roofline.SOL_METRICS["memory_pct"]: 20.0, roofline.SOL_METRICS["compute_pct"]: 85.0})
    lat = dict(base, **{roofline.SOL_METRICS["memory_pct"]: 20.0, roofline.SOL_METRICS["compute_pct"]: 30.0})
    assert roofline.compute(mem).bound == "memory"
    assert roofline.compute(comp).bound == "compute"
    assert roofline.compute(lat).bound == "latency"
    assert roofline.compute(dict(mem, **{"gpu__time_duration.sum": 2_000.0})).bound == "launch"
    assert roofline.compute(dict(mem, launch__grid_size=16)).bound == "launch"


def test_a_library_kernel_reading_no_memory_has_its_instructions_as_floor():
    """A library kernel whose global loads touch no sector (the memory tables; here without Speed Of Light's L1
    breakdown) computes what it writes from its index alone: its issue time is a floor, at 77% of the issue slots
    1.29x it. The same counters with loads, or as user code, keep the FMA pipe's busy time (2.37x)."""
    row = {
        "gpu__time_duration.sum": 775680.0,
        "gpc__cycles_elapsed.avg.per_second": 1.526e9,
        "sm__issue_active.avg.pct_of_peak_sustained_elapsed": 77.24,
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed": 42.16,
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed": 56.68,
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 33.53,
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 33.53,
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": 77.24,
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 0.0,
    }
    r = roofline.compute(row, 132, library_code=True)
    assert r.floors["issue"] == pytest.approx(775680.0 * 0.7724)
    assert r.headroom == pytest.approx(1 / 0.7724)
    assert r.floor_reason.startswith("the warp instructions it issues")
    for other in (
        roofline.compute({**row, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 1000.0}, 132, library_code=True),
        roofline.compute(row, 132),
    ):
        assert "issue" not in other.floors and other.headroom == pytest.approx(1 / 0.4216)
    assert (
        "issue"
        not in roofline.compute(
            {**row, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": None}, 132, library_code=True
        ).floors
    )
