"""The machine model per architecture (`analysis.archfacts`): the table, and each number taken from the report where
it has it, from the table otherwise, with its source. The repository's reports are all of one H200; a device of
another architecture is the H200's real rows and attributes with the attributes ncu stores for that board (an A40's,
a T4's, as other people's reports hold them), run through the real roofline."""

from __future__ import annotations

import pytest

from ncuadvisor.analysis import archfacts, roofline, roofline_words
from ncuadvisor.analysis.ceilings import launch_floor
from ncuadvisor.load import ReportReader
from tests.conftest import in_child

# the attributes ncu stored for these boards (device__attribute_*: compute capability, SMs, memory clock in kHz,
# bus width in bits), as read from reports captured on them
A40 = {"name": "NVIDIA A40", "cc_major": 8, "cc_minor": 6, "sm_count": 84, "max_mem_frequency_khz": 7251000,
       "memory_bus_width": 384}  # fmt: skip
T4 = {"name": "Tesla T4", "cc_major": 7, "cc_minor": 5, "sm_count": 40, "max_mem_frequency_khz": 5001000,
      "memory_bus_width": 256}  # fmt: skip
H200 = {"name": "NVIDIA H200", "cc_major": 9, "cc_minor": 0, "sm_count": 132, "max_mem_frequency_khz": 3201000,
        "memory_bus_width": 6144}  # fmt: skip


def test_every_architecture_has_a_row_with_its_source():
    assert sorted(archfacts.ARCHS) == [70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 110, 120]
    for sm, a in archfacts.ARCHS.items():
        assert a.sm == sm and a.source and a.fp32_lanes and a.fp64_lanes and a.sfu_lanes and a.tensor
        assert a.memory in ("HBM", "GDDR", "LPDDR")
    # the FP64 rate of datacenter and consumer chips: A100 and H100 1/2, GA10x and Turing 1/64 and 1/32
    assert archfacts.ARCHS[80].fp64_ratio == 0.5 and archfacts.ARCHS[90].fp64_ratio == 0.5
    assert archfacts.ARCHS[86].fp64_ratio == 1 / 64 and archfacts.ARCHS[75].fp64_ratio == 1 / 32
    assert archfacts.arch_of({"compute_capability": "8.8"}) is archfacts.ARCHS[87]  # the closest older of its major
    assert archfacts.arch_of({}) is None
    # Jetson Thor (11.0) has its own row: before it, no row of major 11 existed and its reports had no table facts
    thor = archfacts.arch_of({"cc_major": 11, "cc_minor": 0})
    assert thor is archfacts.ARCHS[110] and thor.memory == "LPDDR" and "Thor" in thor.source


def test_geforce_boards_halve_the_fp32_accumulator():
    ada = archfacts.ARCHS[89]
    pro = archfacts.tensor_rates({"name": "NVIDIA L40S"}, ada)
    consumer = archfacts.tensor_rates({"name": "NVIDIA GeForce RTX 4090"}, ada)
    assert consumer["fp16.fp32"] == pro["fp16.fp32"] / 2 and consumer["fp16.fp16"] == pro["fp16.fp16"]


def test_gddr_dram_peak_from_the_device_attributes():
    """memory clock × bus width × 2: an A40 696 GB/s, a T4 320 GB/s (their datasheets' bandwidths)."""
    assert archfacts.dram_peak_from_attributes(A40) == pytest.approx(696.1e9, rel=1e-3)
    assert archfacts.dram_peak_from_attributes(T4) == pytest.approx(320.1e9, rel=1e-3)
    assert archfacts.memory_kind(A40, archfacts.arch_of(A40))[0] == "GDDR"
    assert archfacts.memory_kind(H200, archfacts.arch_of(H200))[0] == "HBM"


@pytest.fixture(scope="module")
def rows(report_path):
    path = report_path("flaws")  # read in a forked child: the test process opens no report
    return in_child(lambda: {r["name"]: r for r in ReportReader(path).results(roofline.METRICS).rows()})


def test_the_report_wins_over_the_table(rows):
    """The H200 report's FP peaks give its lanes per SM ("report"); a peak it lacks comes from the table."""
    m = archfacts.machine(H200, rows.values())
    assert m.lanes["fp32"] == 128 and m.sources["fp32_lanes"] == "report"
    assert m.lanes["fp64"] == 64 and m.sources["fp64_lanes"] == "report"
    assert m.fp64_ratio == 0.5
    no_peaks = [{k: v for k, v in r.items() if "peak_sustained" not in k} for r in rows.values()]
    m = archfacts.machine(T4, no_peaks)
    assert m.lanes["fp32"] == 64 and m.lanes["fp64"] == 2 and m.sources["fp32_lanes"] == "table: sm_75"


def test_a_gddr_board_takes_its_attributes_peak_not_the_clock_measured(rows):
    """On an H200 row read as an A40's: the DRAM floor is at the A40's 696 GB/s from its attributes, said in the
    JSON's sources and in the floor's words; on the H200 itself the report's own peak × DRAM clock, as before."""
    row = rows["copy_scalar"]
    h200 = roofline.compute(row, 132, model=archfacts.machine(H200, [row]))
    assert h200.sources["dram_peak"].startswith("report: dram__bytes.sum.peak_sustained")
    assert h200.peak_dram_bytes_per_s == pytest.approx(
        row["dram__bytes.sum.peak_sustained"] * row["dram__cycles_elapsed.avg.per_second"]
    )
    a40 = roofline.compute(row, 84, model=archfacts.machine(A40, [row]))
    assert a40.peak_dram_bytes_per_s == pytest.approx(696.1e9, rel=1e-3)
    assert a40.sources["dram_peak"] == "report: device attributes (memory clock × bus width × 2)"
    assert "the device's memory clock × bus width" in a40.floor_reason


def test_fp_peaks_a_report_lacks_come_from_the_table_and_say_so(rows):
    """A row without its FLOP peaks (the default set): the FP32 peak is the table's lanes × SMs × the SM clock, and
    the floor's words say where the rate and the clock come from."""
    row = {k: v for k, v in rows["matmul_naive"].items() if "peak_sustained" not in k}
    r = roofline.compute(row, 132, model=archfacts.machine(H200, [row]))
    assert r.sources["fp32_peak"] == "table: sm_90"
    assert r.peak_flops_per_s["fp32"] == pytest.approx(128 * 132 * 2 * row["sm__cycles_elapsed.avg.per_second"])
    assert r.floors["fma"] > 0  # the FP32 work has a floor now (none without a peak)
    assert "; from the table, not this report: FP32 peak (sm_90)" in r.limiter_reason  # the card's "Limiter" line
    r.floors = {"fma": r.floors["fma"]}  # the FP32 floor's words, whichever floor is the largest
    words = roofline_words.floor_words(r, {"fp32": r.flops_by_precision["fp32"] / 2})
    assert "(table: sm_90)" in words and "GHz SM clock" in words and "--clock-control none" in words


def test_launch_floor_of_another_architecture_is_its_own_estimate(rows):
    """Without an empty kernel, a Turing board gets its architecture's estimate (said as one), not the H200's
    1.54 µs; a report holding a launch shorter than the estimate lowers it to that launch."""
    busy = [r for r in rows.values() if (r.get("gpu__time_duration.sum") or 0) > 2_000]
    ns, source = launch_floor("Tesla T4", busy, T4)
    assert (
        ns == archfacts.LAUNCH_ESTIMATE_NS and source == "table: sm_75: an estimate, not measured on this architecture"
    )
    short = dict(busy[0], **{"gpu__time_duration.sum": 900.0})
    ns, source = launch_floor("Tesla T4", [*busy, short], T4)
    assert ns == 900.0 and source.startswith("the shortest launch of this report")
    ns, source = launch_floor("NVIDIA H100 PCIe", busy, {"cc_major": 9, "cc_minor": 0, "name": "NVIDIA H100 PCIe"})
    assert ns == archfacts.H200_LAUNCH_NS and "not on NVIDIA H100 PCIe" in source


def test_faster_than_its_floor_is_a_model_defect_not_a_verdict(rows):
    """An H200 copy read with an A40's memory (696 GB/s): its bytes at that peak take longer than it ran. The
    kernel is flagged ("faster than its modelled floor: the model is wrong here"), its floor and headroom become
    unknown, and no rule says "leave it" (before: headroom below 1 and ROOF001 "near its roofline bound")."""
    from ncuadvisor.model import Kernel
    from ncuadvisor.rulekit import KernelContext, engine

    row = rows["copy_vec4"]
    r = roofline.compute(row, 84, model=archfacts.machine(A40, [row]))
    assert r.model_wrong and r.model_wrong.startswith("faster than its modelled floor: the model is wrong here")
    assert r.headroom is None and r.theoretical_ns is None and r.floors["dram"] > r.duration_ns
    assert r.limiter_reason.startswith("faster than its modelled floor")
    kernel = Kernel("k", "copy_vec4", "copy_vec4", "copy_vec4", "", "", [0], 0, 1, r.duration_ns or 0.0)
    verdict = engine.run_rules(engine.discover(), KernelContext(kernel, row, r, dict(A40), {}, "cuda", 1.0))
    assert not any(f.rule == "ROOF001" for f in verdict.findings)
    assert r.to_dict()["model_wrong"] == r.model_wrong
    # the same row on its own device: a floor below the duration, no defect
    fine = roofline.compute(row, 132, model=archfacts.machine(H200, [row]))
    assert fine.model_wrong is None and fine.headroom and fine.headroom >= 1


def test_a_result_ncu_recorded_nothing_for_says_so(rows):
    """A result whose every measurement is missing (ncu's NaN results: a failed replay) is not "unknown" for lack of
    sections: ncu recorded nothing for it."""
    row = {k: v for k, v in rows["copy_vec4"].items() if k.startswith(("launch__", "device__")) or k == "name"}
    r = roofline.compute(row, 132)
    assert r.bound == "unknown" and r.bound_reason.startswith("ncu recorded nothing for this result")
    assert r.theoretical_ns is None and r.headroom is None


def test_clock_control_is_read_from_the_report(report_path, tmp_path):
    """ncu's clock control for the capture, from the first result's clock status: the fixtures were captured with
    `--clock-control none` (unlocked); the same file with the status ncu's default writes (1: locked at base) reads
    as locked, and the FP floors say at which clock their peak is."""
    from pathlib import Path

    from ncuadvisor.pipeline.analyze import analyze
    from ncuadvisor.reportfile.blocks import _fields, iter_blocks
    from ncuadvisor.reportfile.sniff import clocks_locked

    src = Path(report_path("pipeline_v1"))
    assert clocks_locked(src) is False
    data = bytearray(src.read_bytes())
    first = next(b for b in iter_blocks(bytes(data)) if (b.header.get(2) or [0])[0])
    assert not (first.header.get(1) or [0])[0]  # a block of results only: its first message is the first result
    j = first.payload_start
    n = int.from_bytes(data[j : j + 4], "little")
    (s, e) = _fields(bytes(data), j + 4, j + 4 + n)[25][0]
    assert bytes(data[s:e]) == b"\x08\x00\x10\x00"
    data[s:e] = b"\x08\x01\x10\x01"
    locked = tmp_path / "locked.ncu-rep"
    locked.write_bytes(bytes(data))
    assert clocks_locked(locked) is True
    res = analyze(locked).to_dict()
    sources = res["kernels"][0]["roofline"]["sources"]
    assert sources["clock_control"] == "report: base (ncu locked the clocks)"
    assert analyze(src).to_dict()["kernels"][0]["roofline"]["sources"]["clock_control"] == "report: none"


def test_ideal_sectors_without_dram_bytes_are_no_floor(rows):
    """The ideal sectors count every access, cache hits included: without DRAM's own bytes they are no floor of what
    DRAM must move (a self-join re-reading its points got "leave it" at 1.35×); the headroom is unknown."""
    row = {k: v for k, v in rows["copy_vec4"].items() if not k.startswith("dram__bytes")}
    assert row.get("memory_l2_theoretical_sectors_global_ideal")
    r = roofline.compute(row, 132, model=archfacts.machine(H200, [row]))
    assert "dram" not in r.floors and r.headroom is None and r.headroom_unknown
    full = roofline.compute(rows["copy_vec4"], 132, model=archfacts.machine(H200, [rows["copy_vec4"]]))
    assert "dram" in full.floors and full.headroom and full.headroom < 1.6


def test_a_few_percent_under_the_floor_is_at_the_floor(rows):
    """The same copy on its own device, its duration set 3% and 10% under its modelled floor: 3% is within what the
    floor's peak and measured clock carry (and what inputs left in L2 by a producer save), so the kernel is at its
    floor (headroom 1, the floor at most the measured time, said in `sources["floor"]`) and ROOF001 says leave it;
    10% under is a defect of the model, as above."""
    from ncuadvisor.model import Kernel
    from ncuadvisor.rulekit import KernelContext, engine

    row = rows["copy_vec4"]
    floor = roofline.compute(row, 132, model=archfacts.machine(H200, [row])).theoretical_ns
    assert floor
    near = dict(row, **{"gpu__time_duration.sum": 0.97 * floor})
    r = roofline.compute(near, 132, model=archfacts.machine(H200, [near]))
    assert r.model_wrong is None and r.headroom == 1.0 and r.theoretical_ns == r.duration_ns
    assert r.sources["floor"].startswith("measured 3.0% under the modelled floor")
    kernel = Kernel("k", "copy_vec4", "copy_vec4", "copy_vec4", "", "", [0], 0, 1, r.duration_ns or 0.0)
    verdict = engine.run_rules(engine.discover(), KernelContext(kernel, near, r, dict(H200), {}, "cuda", 1.0))
    assert [f.rule for f in verdict.findings][:1] == ["ROOF001"]
    far = dict(row, **{"gpu__time_duration.sum": 0.90 * floor})
    wrong = roofline.compute(far, 132, model=archfacts.machine(H200, [far]))
    assert wrong.model_wrong and wrong.headroom is None
