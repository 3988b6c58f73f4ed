"""The dependent-load chain detector (`rulekit.models.load_chain_of`) on real SASS: the cuobjdump listings of the
planted CUDA workloads (fixtures/flaws_sass.txt.xz, fixtures/planted/patterns_sass.txt.xz) and, end to end, the H200
report of workloads/cuda/patterns.cu, where LAT001 names the chain of `chase_serial` and stays silent on its
interleaved twin and on the random gather."""

import lzma
import re

import pytest

from ncuadvisor.rulekit.models import load_chain_of
from tests.conftest import FIXTURES, kernel

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRA = re.compile(r"BRA\s+(0x[0-9a-f]+)")


def listings(text: str) -> dict[str, list[tuple[int, float, str]]]:
    """Each function of a cuobjdump -sass listing as [(pc, weight, instruction)]. A listing has no execution counts:
    the instructions inside a loop (between a backward branch and its target) weigh 100 per loop around them, as a
    profile's `inst_executed` would."""
    funcs: dict[str, list[tuple[int, str]]] = {}
    name = None
    for line in text.splitlines():
        if "Function :" in line:
            name = line.split(":", 1)[1].strip()
            funcs[name] = []
        elif name and (m := _LINE.search(line)):
            funcs[name].append((int(m.group(1), 16), m.group(2)))
    out = {}
    for name, ins in funcs.items():
        weight = dict.fromkeys((pc for pc, _ in ins), 1.0)
        for pc, sass in ins:
            b = _BRA.search(sass)
            if b and int(b.group(1), 16) <= pc:
                for q in weight:
                    if int(b.group(1), 16) <= q <= pc:
                        weight[q] *= 100
        out[name] = [(pc, weight[pc], sass) for pc, sass in ins]
    return out


FLAWS = listings(lzma.decompress((FIXTURES / "flaws_sass.txt.xz").read_bytes()).decode())
PATTERNS = listings(lzma.decompress((FIXTURES / "planted" / "patterns_sass.txt.xz").read_bytes()).decode())


def by_short_name(funcs: dict, short: str) -> list:
    (match,) = [v for k, v in funcs.items() if re.search(rf"\d{short}[A-Z]|{short}E", k)]
    return match


def test_a_pointer_chase_is_one_chain():
    # each lane loads one field of a node; lane 0's field, shuffled to the warp, addresses the next node
    c = load_chain_of(FLAWS["_Z13chase_pointerPKjPji"])
    assert c.share == 1.0 and c.chains == 1


def test_four_interleaved_chains_are_four():
    c = load_chain_of(FLAWS["_Z17chase_pointer_ilpPKjPji"])
    assert c.share == 1.0 and c.chains == 4


@pytest.mark.parametrize(
    "name",
    [n for n in FLAWS if re.search(r"copy_|stream_|transpose|matmul|scale_u8|rowsum|hist_|diverge|local_array", n)],
)
def test_streaming_tiled_and_indexed_loads_are_no_chain(name):
    # the address of every load comes from the thread and loop indices, never from a loaded value
    assert load_chain_of(FLAWS[name]).chained == 0, name


def test_walks_one_after_another_are_one_chain_at_a_time():
    # chase_serial walks 4 lists in turn (4 loops, one chain each); chase_interleaved steps the 4 together
    serial = load_chain_of(by_short_name(PATTERNS, "chase_serial"))
    interleaved = load_chain_of(by_short_name(PATTERNS, "chase_interleaved"))
    assert serial.share > 0.2 and serial.chains == 1
    assert interleaved.share == 1.0 and interleaved.chains == 4


def test_a_gather_is_no_chain():
    # x[idx[i]]: the address comes from a load whose own address is the loop index
    assert load_chain_of(by_short_name(PATTERNS, "gather_random")).chained == 0


def test_no_loads_no_chain():
    c = load_chain_of([(0, 1.0, "FFMA R1, R2, R3, R1"), (16, 1.0, "EXIT")])
    assert (c.loads, c.chained, c.chains, c.share) == (0.0, 0.0, 0, 0.0)


def test_lat001_names_the_chain_in_the_report(analyzed):
    result = analyzed("patterns")
    serial = kernel(result, "chase_serial")["findings"]
    lat = [f for f in serial if f["rule"] == "LAT001"]
    assert lat and lat[0]["title"].startswith("Dependent-load chain")
    assert "1 chain per thread" in lat[0]["title"]
    assert "lists" in lat[0]["fix"] and "Coalescing does not help" in lat[0]["fix"]
    for twin in ("chase_interleaved", "gather_random"):
        assert not [f for f in kernel(result, twin)["findings"] if f["rule"] == "LAT001"], twin


def test_a_chain_stays_latency_bound_where_l2_is_a_little_over_half_busy(analyzed):
    """The same program captured on an H100 (fixtures/h100-planted-2026-12-06): `chase_serial`'s L2 is 55% busy at
    its peak there (48% on the H200), so its limiter reads L2; the chain the SASS shows still makes it LAT001's, the
    first finding, and the interleaved twin and the random gather stay silent."""
    result = analyzed("h100-planted-2026-12-06/patterns_h100")
    serial = kernel(result, "chase_serial")
    assert serial["roofline"]["limiter"] == "l2" and 0.5 < serial["roofline"]["limiter_share"] < 0.7
    assert serial["findings"][0]["rule"] == "LAT001"
    assert serial["findings"][0]["title"].startswith("Dependent-load chain")
    for twin in ("chase_interleaved", "gather_random"):
        assert not [f for f in kernel(result, twin)["findings"] if f["rule"] == "LAT001"], twin


@pytest.mark.parametrize("capture", ["patterns", "h100-planted-2026-12-06/patterns_h100"])
def test_a_chain_fix_meets_l2s_ceiling(analyzed, capture):
    """Four chains per thread overlap the chase's waits but keep its loads: L2, busier than DRAM on a chase (one
    sector per dependent load: 55% against 40% on the H100, 48% against 28% on the H200), is the ceiling the fixed
    kernel meets. LAT001's saving, duration × its estimated speedup, against the interleaved twin's in the same report
    (ncu durations): H100 32.2 µs against 29.9 µs, H200 37.8 against 38.4 (with Speed Of Light's memory share, DRAM's
    alone, as the unit that stays: 40.8 µs, +37%, and 46.5 µs, +21%)."""
    result = analyzed(capture)
    serial, twin = kernel(result, "chase_serial"), kernel(result, "chase_interleaved")
    (lat,) = [f for f in serial["findings"] if f["rule"] == "LAT001"]
    r = serial["roofline"]
    assert r["busy_pct"]["l2"] > r["sol"]["memory_pct"]
    fixed = serial["duration_ns"] * (1 - lat["estimated_speedup"])
    assert fixed >= serial["duration_ns"] * r["busy_pct"]["l2"] / 100 / 0.85 - 1  # L2 at 85% of its peak, at most
    measured = serial["duration_ns"] - twin["duration_ns"]
    assert abs(serial["duration_ns"] - fixed - measured) / measured < 0.15
    assert "L2 included" in lat["speedup_model"]
