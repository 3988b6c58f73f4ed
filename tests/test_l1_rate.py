"""The share of L1's peak a stream of global loads that mostly hit L1 reaches (`L1_WARP_OVERHEAD_REQUESTS`,
`l1_stream_fraction`), which CAC001's fixed kernel uses: recomputed from the L1 microbenchmark's H100 capture
(fixtures/l1rate-2026-12-06/, workloads/cuda/l1rate.cu), and CAC001's estimate against the twin its card names first."""

import json
import statistics

from ncuadvisor.load import ReportReader
from ncuadvisor.rulekit import L1_WARP_OVERHEAD_REQUESTS, PRACTICAL_FRACTION, l1_stream_fraction
from tests.conftest import FIXTURES, kernel

FOLDER = FIXTURES / "l1rate-2026-12-06"
METRICS = (
    "l1tex__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "launch__grid_size",
    "launch__block_size",
)


def _streams(report_path) -> dict[str, tuple[float, float]]:
    """kernel -> (global load requests per warp, L1's % of its peak), in the order the bench names them."""
    names = [json.loads(line)["kernel"] for line in (FOLDER / "bench_l1rate.jsonl").read_text().splitlines()]
    rows = list(ReportReader(report_path("l1rate-2026-12-06/l1rate")).results(METRICS).rows())
    assert len(rows) == len(names) == 12
    out = {}
    for name, row in zip(names, rows):
        warps = row["launch__grid_size"] * -(-row["launch__block_size"] // 32)
        out[name] = (row["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"] / warps, row[METRICS[0]] / 100.0)
    return out


def test_the_overhead_per_warp_is_the_stencils_mean(report_path):
    """Each vertical stencil (9, 33, 65 loads a warp; blocks of 4, 8, 32 rows) solved for the slots a warp costs
    beyond its loads: the constant is their mean, and every one is within a third of it."""
    streams = {n: s for n, s in _streams(report_path).items() if n.startswith("vrows")}
    assert len(streams) == 9
    slots = {n: loads * (1.0 - share) / share for n, (loads, share) in streams.items()}
    assert abs(statistics.mean(slots.values()) - L1_WARP_OVERHEAD_REQUESTS) < 1.0
    assert all(abs(s - L1_WARP_OVERHEAD_REQUESTS) < L1_WARP_OVERHEAD_REQUESTS / 3 for s in slots.values()), slots
    for loads, share in streams.values():  # the model within 15% of every stencil's L1 rate, whatever its miss share
        assert abs(l1_stream_fraction(loads) / share - 1.0) < 0.15


def test_the_rate_follows_the_loads_per_warp():
    assert l1_stream_fraction(33) == 33 / (33 + L1_WARP_OVERHEAD_REQUESTS)
    assert l1_stream_fraction(9) < l1_stream_fraction(33) < l1_stream_fraction(65) < PRACTICAL_FRACTION
    assert l1_stream_fraction(4096) == PRACTICAL_FRACTION  # a loop of many loads per warp: the practical fraction


def test_cac001_estimates_the_twin_its_card_names_first(analyzed):
    """The planted 256×1 vertical stencil on the H100: CAC001's fixed kernel runs L1's work at the share 33 loads a
    warp reach; the twin in dim3(32, 8) blocks measured 682.2 -> 494.4 µs (1.38×, cudaEvent medians)."""
    f = next(f for f in kernel(analyzed("vstencil-2026-12-06/vstencil"), "vstencil_rows")["findings"])
    assert f["rule"] == "CAC001"
    bench = {
        json.loads(line)["kernel"]: json.loads(line)["median_us"]
        for line in (FIXTURES / "vstencil-2026-12-06" / "bench_vstencil.jsonl").read_text().splitlines()
    }
    measured = bench["vstencil_rows"] / bench["vstencil_tiles8"]
    estimated = 1.0 / (1.0 - f["estimated_speedup"])
    assert abs(estimated / measured - 1.0) < 0.15, (estimated, measured)
    assert "33 global loads a warp" in f["speedup_model"] and "L1 (47%" in f["speedup_model"]
