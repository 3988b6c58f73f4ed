"""The two floors on real reports: the floor of the work a kernel needs (headroom, ROOF001, estimate caps) and the
floor of its instruction stream and memory traffic as executed. Where the executed floor is well above the needed
one, every output says both; where they agree, nothing more is said; a kernel near its executed floor only is never
told to leave it."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ncuadvisor.analysis.roofline_words import EXECUTED_GAP
from ncuadvisor.render.html import render_html
from ncuadvisor.render.markdown import render_markdown
from ncuadvisor.render.terminal import render_terminal
from tests.conftest import kernel

# (report, kernel, the unit of its executed floor, what the words name): planted flaws whose instructions or traffic
# as executed sit at a unit's ceiling far above the work they need
FAR = [
    ("ceilings", "index_math", "l1", "L1/shared ceiling"),  # 558 MB of L1-hit table loads; FADD work 4.2 µs
    ("fp16", "bits_loop", "sfu", "POPC"),  # POPC, FLO, BREV on the 16-lane XU: no transcendental
    ("flaws", "matmul_naive", "l1", "L1/shared ceiling"),  # untiled: every operand from L1
    ("flaws", "rowsum_smem_tree", "l1", "L1/shared ceiling"),
    ("flaws", "diverge_lanes", "issue", "4 per clock per SM"),  # both branch paths issued
]
# kernels whose executed floor is the needed one, or close to it
NEAR = [
    ("ceilings", "ffma_loop"),
    ("ceilings", "sfu_loop"),
    ("ceilings", "dram_out"),
    ("fp16", "mufu_loop"),
    ("flaws", "copy_vec4"),
    ("flaws", "fma_peak"),
]


@pytest.mark.parametrize(("report", "name", "unit", "words"), FAR)
def test_a_kernel_far_above_its_needed_floor_is_told_both(analyzed, report, name, unit, words):
    rl = kernel(analyzed(report), name)["roofline"]
    assert rl["executed_floor_unit"] == unit
    assert rl["executed_floor_ns"] >= EXECUTED_GAP * rl["theoretical_ns"]
    text = rl["executed_reason"]
    assert words in text and "the floor of the work it needs" in text, text
    # both ratios, each against its own floor: the duration ÷ the executed floor, and the headroom
    assert f"{rl['duration_ns'] / rl['executed_floor_ns']:.3g}×" in text
    assert f"{rl['headroom']:.3g}×" in text
    assert "GHz" in text and "clock" in text  # the clock the ceiling is at
    assert "the room is in" in text  # each runs its executed unit near its ceiling: less work, not faster work


def test_the_executed_floor_is_the_limiters_time(analyzed):
    for name in ("index_math", "ffma_loop", "sfu_loop"):
        rl = kernel(analyzed("ceilings"), name)["roofline"]
        assert rl["executed_floor_unit"] == rl["limiter"]
        assert rl["executed_floor_ns"] == pytest.approx(rl["limiter_share"] * rl["duration_ns"], rel=1e-6)


@pytest.mark.parametrize(("report", "name"), NEAR)
def test_nothing_more_is_said_where_the_floors_agree(analyzed, report, name):
    rl = kernel(analyzed(report), name)["roofline"]
    assert rl["executed_floor_ns"] < EXECUTED_GAP * rl["theoretical_ns"]
    assert rl["executed_reason"] == ""


def test_a_latency_bound_kernel_is_told_what_is_waiting_and_what_is_extra_work(analyzed):
    rl = kernel(analyzed("flaws"), "scale_u8")["roofline"]  # byte loads: 1.6x the needed instructions, 3.6x idle
    text = rl["executed_reason"]
    assert rl["limiter"] == "latency"
    assert "is work executed beyond the need" in text and "sits idle" in text, text


@pytest.mark.parametrize(("report", "name"), [("ceilings", "index_math"), ("flaws", "matmul_naive")])
def test_near_its_executed_floor_only_is_not_near_its_bound(analyzed, report, name):
    k = kernel(analyzed(report), name)
    rl = k["roofline"]
    assert rl["duration_ns"] < 1.6 * rl["executed_floor_ns"]  # at the executed ceiling ...
    rules = [f["rule"] for f in k["findings"]]
    assert "ROOF001" not in rules  # ... but far from the needed one: never "leave it"
    assert rules  # and a finding that removes work speaks instead


def test_index_math_gets_the_finding_that_removes_instructions(analyzed):
    """index_math issues 92% bookkeeping, but its warps wait on the L1 queue (its table lookups' sectors hold L1 at
    its executed ceiling; 56% of their cycles LSU-throttled): halving the bookkeeping saves the issue stalls it
    removes, never below the L1 ceiling the kernel sits at."""
    k = kernel(analyzed("ceilings"), "index_math")
    (f,) = [f for f in k["findings"] if f["rule"] == "ISU001"]
    rl = k["roofline"]
    assert rl["executed_floor_unit"] == "l1"
    assert f["estimated_speedup"] <= 1 - rl["executed_floor_ns"] / rl["duration_ns"]
    assert "held at" in f["speedup_model"] and "issue stalls it removes" in f["speedup_model"]


def test_bits_loop_says_its_room_is_in_fewer_xu_instructions(analyzed):
    k = kernel(analyzed("fp16"), "bits_loop")
    text = k["roofline"]["executed_reason"]
    assert "none transcendental" in text and "16 lanes per clock per SM" in text
    assert "the room is in executing fewer XU instructions" in text
    # no specific rule removes bit operations: the fallback names the XU pipe's work, never "no rule applies"
    (f,) = k["findings"]
    assert f["rule"] == "GEN001" and "XU instructions that are not needed work" in f["title"]
    assert "Execute fewer XU instructions" in f["fix"] and "no_rule" not in k


def test_every_output_says_both_floors_only_where_they_differ(typed):
    result = typed("ceilings")
    md, page = render_markdown(result, max_chars=10**7), render_html(result)
    out = io.StringIO()
    render_terminal(result, console=Console(file=out, width=400, color_system=None))
    term = out.getvalue()
    far = next(k for k in result.kernels if k.name == "index_math").roofline.executed_reason
    assert far
    assert f"**As executed:** {far}" in md.replace("\\", "")
    assert "As executed: <span" in page and "1.25× its L1/shared ceiling" in page
    assert "index_math as executed: 1.25× its L1/shared ceiling" in term
    assert md.count("**As executed:**") == 1 and term.count(" as executed: ") == 1  # ffma_loop, dram_out, ...: none
