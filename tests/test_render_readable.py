"""The report as people read it: the roofline's labels never overlap and its points sit at the ceilings' clock, the
badges are readable (WCAG AA), names break between words, small shares read '<1%', the terminal fits 80 and 120
columns under a pty and never wraps when piped, and a resolved finding's predicted saving meets the measured one.

The browser checks (label boxes in a real layout, no horizontal scroll at 390 px) run Chromium and are `slow`."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from ncuadvisor.render import break_points, templates_dir
from ncuadvisor.render import html as html_renderer
from ncuadvisor.render import view as view_module
from ncuadvisor.render.chart import _clock_scale, _roof_at, roofline_chart
from ncuadvisor.render.chart_place import Rect, label_box
from ncuadvisor.units import fit_name, fmt_pct, fmt_x, number
from tests.synthetic import typed_diff, typed_result


def render_html(result, *args, **kw):
    return html_renderer.render_html(typed_result(result), *args, **kw)


def report_view(result, *args, **kw):
    return view_module.report_view(typed_result(result), *args, **kw)


ROOT = Path(__file__).resolve().parent.parent
CHART_FIXTURES = ["flaws", "patterns", "ceilings", "torch_gemm_conv", "torch_scatter"]


# -- the chart ---------------------------------------------------------------------------------------------------


def _boxes(chart):
    labels = [label_box(float(p.lx), float(p.ly), p.label) for p in chart.points if p.label]
    labels += [label_box(float(a.tx), float(a.ty), a.text) for a in chart.arrows if a.text]
    circles = [
        (
            p.label,
            Rect(
                float(p.cx) - float(p.r), float(p.cy) - float(p.r), float(p.cx) + float(p.r), float(p.cy) + float(p.r)
            ),
        )
        for p in chart.points
    ]
    return labels, circles


@pytest.mark.parametrize("name", CHART_FIXTURES)
def test_chart_labels_overlap_neither_labels_nor_points(analyzed, name):
    chart = roofline_chart(report_view(analyzed(name)), 60)
    labels, circles = _boxes(chart)
    assert labels, "the chart labels its points"
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[:i] if a.hits(b)]
    assert not [(lb, c) for lb in labels for _, c in circles if lb.hits(c)]
    # every point is labelled, or listed under the chart
    unlabelled = {f"#{k.index}" for k in chart.unlabelled}
    assert len([p for p in chart.points if p.label]) + len(unlabelled) == len(chart.points)


def test_crowded_points_get_leader_lines_or_a_list():
    """Forty kernels at nearly one spot: labels spread out with leader lines, and none overlaps."""
    kernels = [
        {
            "id": f"k{n}",
            "name": f"k_{n}",
            "duration_ns": 1000.0,
            "time_share": 1 / 40,
            "bound": "memory",
            "roofline": {"intensity": 1.0 + n * 0.001, "achieved_flops_per_s": 1e12 * (1 + n * 0.001)},
        }
        for n in range(40)
    ]
    result = {
        "report": {"device": {"peak_dram_bytes_per_s": 4.8e12, "peak_flops_per_s": {"fp32": 6.7e13}}},
        "kernels": kernels,
    }
    chart = roofline_chart(report_view(result), None)
    labels, _ = _boxes(chart)
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[:i] if a.hits(b)]
    assert any(p.leader for p in chart.points)
    assert len(labels) + len(chart.unlabelled) == 40


@pytest.mark.parametrize("name", ["flaws", "ceilings", "patterns"])
def test_points_sit_at_the_ceilings_clock_so_the_gap_is_the_cards_headroom(analyzed, name):
    """A point moved to the chart's clock is as far under the drawn roof as its card's headroom says, wherever the
    kernel's floor is that roof (DRAM or its precision's FLOP peak; an issue or lane floor has no line on the chart);
    and every headroom arrow drawn is such a kernel's, labelled with its card's headroom."""
    view = report_view(analyzed(name))
    dev = view.report.device
    bw = number(dev.peak_dram_bytes_per_s)
    checked = 0
    for k in view.kernels:
        rl = k.roofline
        inten, perf, head = number(rl.intensity), number(rl.achieved_flops_per_s), number(k.headroom)
        prec = rl.limiting_precision
        if not (inten and perf and head and isinstance(prec, str) and rl.limiting_peak_flops_per_s):
            continue
        own_floor = max(number(rl.memory_floor_ns) or 0.0, rl.flops / rl.limiting_peak_flops_per_s * 1e9)
        if abs(own_floor - number(rl.theoretical_ns)) > 0.01 * own_floor:
            continue  # the floor is a unit the chart draws no roof for
        plotted = perf * _clock_scale(k, dev, inten, bw)
        roof = _roof_at(inten, bw, number(dev.peak_flops_per_s.get(prec)))
        assert roof is not None
        assert roof / plotted == pytest.approx(head, rel=0.03), k.name
        checked += 1
    assert checked >= 2
    chart = roofline_chart(view, 60)
    for a in chart.arrows:  # labelled, or drawn alone where no spot beside it was free
        k = next(k for k in view.kernels if a.of == f"#{k.index}")
        assert not a.text or fmt_x(k.headroom) in a.text
    assert not chart.arrows or any(a.text for a in chart.arrows)
    page = render_html(analyzed(name))
    assert "at one SM clock" in page and "GHz" in page


# -- the pages ---------------------------------------------------------------------------------------------------


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    chans = [int(h[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in chans]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def test_contrast_formula_matches_wcag_examples():
    assert contrast("#000", "#fff") == pytest.approx(21.0)
    assert contrast("#777", "#fff") == pytest.approx(4.48, abs=0.01)  # the classic "just fails AA" grey


def test_badges_with_white_text_pass_wcag_aa():
    css = (templates_dir() / "_base.html.j2").read_text()
    root = css[css.index(":root {") : css.index("}", css.index(":root {"))]
    colours = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{3,6})", root))
    for bound in ("mem", "comp", "lat", "launch", "unk", "good"):
        assert contrast(colours[bound], "#ffffff") >= 4.5, (bound, colours[bound])
    for badge, colour in re.findall(r"\.badge\.([\w-]+) \{ background: (#[0-9a-fA-F]{6})", css):
        assert contrast(colour, "#ffffff") >= 4.5, badge


def test_dark_mode_and_print_rules_are_there():
    css = (templates_dir() / "_base.html.j2").read_text()
    assert "@media (prefers-color-scheme: dark)" in css and "@media print" in css and "@media (max-width: 640px)" in css
    # print: only a card with a finding to act on is forced open; NCU's guidance and the zoom stay as they are
    page = (templates_dir() / "report.html.j2").read_text()
    assert "details:has(> summary[data-act])::details-content" in page
    assert "details::details-content" not in css + page


def test_names_break_between_words_never_inside_one():
    out = str(break_points("at::native::vectorized_elementwise_kernel<4, float>"))
    assert out == "at::<wbr>native::<wbr>vectorized_<wbr>elementwise_<wbr>kernel&lt;<wbr>4,<wbr> float&gt;"
    assert str(break_points("<script>")) == "&lt;<wbr>script&gt;"  # escaped first, then broken


def test_small_shares_read_less_than_one_percent():
    assert fmt_pct(0.004) == "<1%" and fmt_pct(0.006) == "1%" and fmt_pct(0.0) == "0%"
    assert fmt_pct(0.00004, 2) == "<0.01%"


def test_fit_name_keeps_what_identifies_the_kernel():
    name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1>>"
    assert fit_name(name, 40) == "…::vectorized_elementwise_kernel<…>"
    cut = fit_name("triton_per_fused_add_native_layer_norm_gelu_backward_17", 30)
    assert len(cut) == 30 and cut.startswith("triton_per_fus") and cut.endswith("backward_17")


def test_pages_number_kernels_from_one_and_drop_empty_expanders(analyzed):
    result = analyzed("pipeline_v1")
    page = render_html(result)
    assert '<td class="num idx">1</td>' in page and '<td class="num idx">0</td>' not in page
    assert "Suppressed (0) and skipped (0)" not in page
    assert not re.search(r"ncu command line: <code[^>]*>[^<]*\"</code>", page)  # no lone quote at its end


# -- the terminal ------------------------------------------------------------------------------------------------


def _run_under_pty(cols: int, args: list[str]) -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = dict(os.environ, COLUMNS=str(cols), LINES="50", TERM="xterm-256color", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=120)
    os.close(master)
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", out.decode()).replace("\r", "")


@pytest.fixture(scope="module")
def saved_result(analyzed, tmp_path_factory):
    path = tmp_path_factory.mktemp("term") / "torch_gemm_conv.json"
    path.write_text(json.dumps(analyzed("torch_gemm_conv")))
    return path


@pytest.fixture(scope="module")
def saved_flaws(analyzed, tmp_path_factory):
    path = tmp_path_factory.mktemp("term") / "flaws.json"
    path.write_text(json.dumps(analyzed("flaws")))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("cols", [80, 120])
def test_terminal_fits_its_width_under_a_pty(saved_flaws, saved_result, cols):
    for path in (saved_flaws, saved_result):
        text = _run_under_pty(cols, [sys.executable, "-m", "ncuadvisor", "render", str(path), "-f", "terminal"])
        lines = text.splitlines()
        assert "Where to start" in text or path is saved_result
        assert max(len(line) for line in lines) <= cols, max(lines, key=len)
        # the kernel table: its header, then its rows (a frame when it fits; at 80 columns a rule under the header)
        at = next(n for n, line in enumerate(lines) if " kernel " in line and "headroom" in line)
        table = lines[at:]
        if path is saved_result:  # cuBLAS/cuDNN names: shortened between their words, the kernel's ends kept
            assert any(re.search(r"sm\d+_xmma_\w*…_cublas", line) for line in table)
        else:
            start = lines.index("Where to start")
            items = lines[start + 1 : start + 30]
            # continuation lines are indented under their item, never at column 0
            body = [line for line in items[: next((i for i, x in enumerate(items) if not x.strip()), len(items))]]
            assert body and all(line.startswith("  ") for line in body)
            assert sum("→ flaws.cu:" in line for line in body) >= 3  # file:line and the fix under each item
        if cols == 80:  # the table's launches column dropped when narrow ("where to start" may still say launches)
            assert "launches" not in lines[at]


def test_terminal_never_wraps_when_piped(saved_flaws):
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80")
    out = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "render", str(saved_flaws), "-f", "terminal"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    lines = out.splitlines()
    start = lines.index("Where to start")
    items = lines[start + 1 : start + 11]
    # five items, each its headline on one line and its file:line and fix on the next
    assert [bool(re.match(r"\s+\d\. ", line)) for line in items] == [True, False] * 5
    assert all(line.lstrip().startswith("→ ") for line in items[1::2])
    assert "\x1b[" not in out and not any(line != line.rstrip() for line in lines)


# -- the diff ----------------------------------------------------------------------------------------------------


def test_a_resolved_finding_shows_its_prediction_beside_the_measured_saving(analyzed):
    from ncuadvisor.comparison import diff_results
    from ncuadvisor.render.diff_render import render_diff_html, render_diff_markdown

    diff = diff_results(analyzed("pipeline_v0"), analyzed("pipeline_v1"))
    resolved = [(k, f) for k in diff["kernels"] for f in k["findings"]["resolved"]]
    assert resolved
    k, f = resolved[0]
    before, after = k["before"]["duration_ns"], k["after"]["duration_ns"]
    assert f["measured_saving_ns"] == pytest.approx(before - after)
    assert f["measured_fraction"] == pytest.approx((before - after) / f["estimated_saving_ns"])
    assert 0.5 < f["measured_fraction"] < 1.5  # the fix landed near the estimate on this pair
    pct = f"{f['measured_fraction'] * 100:.0f}% of the prediction"
    text = render_diff_markdown(typed_diff(diff))
    assert re.search(
        rf"\*\*{f['rule']}\*\* in <code>[^<]+</code>: predicted −[\d.]+ µs; measured −[\d.]+ µs, {pct}", text
    )
    assert pct in render_diff_html(typed_diff(diff))


def test_markdown_of_the_planted_flaws_stays_under_the_comment_limit(analyzed):
    """The comment fills GitHub's limit with the cards worth most (tests/test_render_markdown_budget.py), no more."""
    from ncuadvisor.render.markdown import render_markdown

    text = render_markdown(typed_result(analyzed("flaws")))
    assert len(text) <= 65000 < 65536
    assert text.index("### Where to start") < text.index("### Where the time goes") < text.index("<details>")
    assert "report.html" in text[-1200:]  # the cut says where the rest is


# -- in a browser ------------------------------------------------------------------------------------------------

PROBE = """<script>
addEventListener("load", () => {
  document.querySelectorAll("details").forEach(d => d.open = true);  // the zoomed chart too
  const over = document.documentElement.scrollWidth - innerWidth;
  const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  // whether the segment (x1, y1)-(x2, y2) crosses the box b (SVG user units): Liang-Barsky clipping
  const crosses = (l, b) => {
    const [x1, y1, x2, y2] = ["x1", "y1", "x2", "y2"].map(a => parseFloat(l.getAttribute(a)));
    let t0 = 0, t1 = 1;
    const dx = x2 - x1, dy = y2 - y1;
    for (const [p, q] of [[-dx, x1 - b.x], [dx, b.x + b.width - x1], [-dy, y1 - b.y], [dy, b.y + b.height - y1]]) {
      if (p === 0) { if (q < 0) return false; continue; }
      const t = q / p;
      if (p < 0) { if (t > t1) return false; if (t > t0) t0 = t; } else { if (t < t0) return false; if (t < t1) t1 = t; }
    }
    return true;
  };
  let labels = 0, hits = 0, zoomed = 0, struck = 0;
  for (const svg of document.querySelectorAll("svg")) {
    const roofs = [...svg.querySelectorAll("line.ceil-mem, line.ceil-flop, line.ceil-l2, line.ceil-l1")];
    for (const t of svg.querySelectorAll("text.pt-label, text.headroom-label")) {
      const b = t.getBBox();
      if (roofs.some(l => crosses(l, b))) struck++;
    }
    const boxes = [...svg.querySelectorAll("text.pt-label, text.headroom-label")].map(t => t.getBoundingClientRect());
    const lines = [...svg.querySelectorAll("line.headroom")].map(l => l.getBoundingClientRect());
    labels += boxes.length;
    if (svg.id.endsWith("-zoom")) zoomed += boxes.length;
    for (let i = 0; i < boxes.length; i++) {
      for (let j = 0; j < i; j++) if (hit(boxes[i], boxes[j])) hits++;
      for (const l of lines) if (hit(boxes[i], l)) hits++;
    }
  }
  document.body.setAttribute("data-probe", JSON.stringify({labels, zoomed, hits, over, struck}));
});
</script>"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _probe(page: str, tmp_path: Path, width: int) -> dict:
    browser = _chromium()
    if browser is None:
        pytest.skip("Chromium is not installed")
    path = tmp_path / f"page{width}.html"
    path.write_text(page.replace("</body>", PROBE + "</body>"))
    dom = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},900",
            "--virtual-time-budget=3000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    m = re.search(r'data-probe="([^"]*)"', dom)
    assert m, "the probe did not run"
    return json.loads(m.group(1).replace("&quot;", '"'))


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["flaws", "patterns", "torch_gemm_conv", "torch_eager", "torch_compile", "torch_train"]
)
def test_in_chromium_no_two_labels_overlap_and_390px_never_scrolls_sideways(analyzed, name, tmp_path):
    """Label boxes as laid out in the browser: no point or headroom label on another, nor on a headroom arrow's
    line, nor struck through by a roof line, in the chart and its zoomed view; no sideways scroll at 390 px."""
    page = render_html(analyzed(name))
    wide = _probe(page, tmp_path, 1400)
    assert wide["labels"] > 0 and wide["hits"] == 0 and wide["over"] <= 0
    assert wide["struck"] == 0, wide  # no label struck through by a roof line
    if name == "patterns":  # its crowded points are zoomed in, and the zoomed labels measured too
        assert wide["zoomed"] > 0
    narrow = _probe(page, tmp_path, 390)
    assert narrow["over"] <= 0, narrow


def test_a_fusion_chain_is_written_with_its_repeats_counted_and_each_kernel_once():
    from ncuadvisor.units import compress_chain

    chain = " → ".join(["vectorized_elementwise_kernel"] * 100 + ["elementwise_kernel"])
    assert compress_chain(f"{chain} run back to back.") == (
        "vectorized_elementwise_kernel ×100 → elementwise_kernel run back to back."
    )
    assert compress_chain("a → b → b → c.") == "a → b ×2 → c." and compress_chain("ab → a") == "ab → a"
    names = ["vectorized_elementwise_kernel"] * 100 + ["elementwise_kernel"]
    result = {
        "program_findings": [
            {"rule": "PRG002", "title": "chain", "message": chain, "kernels": names, "kernel_ids": ["k0"] * 101}
        ]
    }
    p = report_view(result).program_findings[0]
    assert p.kernels == ["vectorized_elementwise_kernel ×100", "elementwise_kernel"] and len(p.message) < 80


def _hier_kernel(n: int, limiter: str) -> dict:
    inten = 0.1 * (n + 1)
    return {
        "id": f"k{n}",
        "name": f"kernel_{n}",
        "duration_ns": 1e5,
        "time_share": 0.2,
        "bound": "memory",
        "headroom": 3.0,
        "roofline": {
            "intensity": inten,
            "achieved_flops_per_s": 1e11 * (n + 1),
            "limiter": limiter,
            "hierarchy": [
                {"level": "l1", "bytes": 1e9, "intensity": inten * 8, "peak_bytes_per_s": 3.3e13},
                {"level": "l2", "bytes": 1e9, "intensity": inten * 3, "peak_bytes_per_s": 1.0e13},
                {"level": "dram", "bytes": 1e9, "intensity": inten, "peak_bytes_per_s": 4.8e12},
            ],
        },
    }


def test_the_memory_hierarchy_is_drawn_when_the_result_holds_it():
    limiters = ["dram", "issue", "fma", "l2", "sfu"]
    result = {
        "report": {"device": {"peak_dram_bytes_per_s": 4.8e12, "peak_flops_per_s": {"fp32": 6.7e13}}},
        "kernels": [_hier_kernel(n, lim) for n, lim in enumerate(limiters)],
    }
    chart = roofline_chart(report_view(result), None)
    assert [r.level for r in chart.level_roofs] == ["l2", "l1"]
    assert {m.level for m in chart.level_marks} == {"l1", "l2"} and len(chart.level_marks) == 10
    # the limiters that are not FLOP pipes nor memory levels are ringed: issue and SFU
    assert sorted(k.roofline.limiter for k in chart.off_pipe) == ["issue", "sfu"]
    labels, _ = _boxes(chart)
    assert not [(a, b) for i, a in enumerate(labels) for b in labels[:i] if a.hits(b)]
    page = render_html(result)
    assert 'class="ceil-l2"' in page and 'class="level l1"' in page and "not a FLOP pipe" in page
    # a result without the hierarchy draws none of it
    for k in result["kernels"]:
        del k["roofline"]["hierarchy"], k["roofline"]["limiter"]
    bare = roofline_chart(report_view(result), None)
    assert not bare.level_roofs and not bare.level_marks and not bare.off_pipe


def test_a_line_inside_cudas_headers_names_the_kernels_own_line(analyzed):
    """ATM001 on the planted histogram: the row is the user's line that calls atomicAdd, with the header's line
    beside it; a line left in CUDA's headers (a report without the module's line tables) says so and names the
    kernel's own line."""
    result = analyzed("flaws")
    page = render_html(result)
    assert re.search(
        r"flaws\.cu:\d+<br><span class=\"muted\">calls atomicAdd \(device_atomic_functions\.hpp:\d+\)", page
    )
    k = next(k for k in result["kernels"] if k["name"] == "hist_global_atomic")
    src = k["findings"][0]["source"][0]
    inl = src.pop("inlined")
    src.update(file=inl["file"], line=inl["line"], code=inl["code"])
    assert re.search(
        r"device_atomic_functions\.hpp:\d+<br><span class=\"muted\">in CUDA's headers; the kernel: flaws\.cu:\d+",
        render_html(result),
    )
