"""The bound word a kernel's entry shows (its badge) is its limiter's side, the word the rules decide by
(`analysis.roofline.shown_bound`), in the real H200 report of workloads/cuda/patterns.cu."""

from ncuadvisor.analysis.roofline import limiter_side
from tests.conftest import kernel


def test_every_entry_shows_its_limiters_side(typed):
    result = typed("patterns")
    for k in result.kernels:
        assert k.roofline is not None
        assert k.bound == limiter_side(k.roofline) or k.roofline.bound == "launch", (k.name, k.bound)
        for v in k.variants:
            assert v.bound in ("memory", "compute", "latency", "launch", "unknown")


def test_speed_of_light_compute_limited_by_l1_shows_memory(analyzed):
    # reduce_shfl: SM throughput (a maximum over sub-units) is the larger share, but L1 is the busiest unit
    k = kernel(analyzed("patterns"), "reduce_shfl")
    assert k["roofline"]["bound"] == "compute" and k["roofline"]["limiter"] == "l1"
    assert k["bound"] == "memory"
    assert "Speed Of Light alone says compute" in k["bound_reason"]


def test_agreeing_words_keep_their_reason(analyzed):
    k = kernel(analyzed("patterns"), "aos_field_x")
    assert k["bound"] == k["roofline"]["bound"]
    assert "Speed Of Light alone" not in k["bound_reason"]


def test_launch_names_the_launch_overhead_not_an_under_filled_grid(analyzed):
    # small_update: 2.1 µs per launch, the launch overhead's order; stream_small_grid: 6.8 ms on 16 blocks for 132 SMs
    short = kernel(analyzed("patterns"), "small_update")
    assert short["bound"] == "launch"
    grid = kernel(analyzed("flaws"), "stream_small_grid")
    assert grid["roofline"]["bound"] == "launch" and grid["bound"] == "latency"
    assert "16 blocks for 132 SMs" in grid["bound_reason"]
