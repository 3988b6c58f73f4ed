"""The terminal summary at 80 columns (and 120): no line wider than the terminal, no word cut where a line wraps,
no two kernels under one name, and one name per kernel in the table and in "where to start"."""

from __future__ import annotations

import io
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

from ncuadvisor.render.terminal import ACTIONS_SHOWN, render_terminal
from ncuadvisor.render.view import report_view

# a CUDA program, a PyTorch training step (cuBLAS and cutlass names), dynamic shapes (ATen copies of two templates
# under one op), a compiled program (Triton), several processes
FIXTURES = ["flaws", "torch_train", "torch_dynshapes", "torch_compile", "multiproc", "model_step_315"]
SPLIT = re.compile(r"[\s│┃┏┓┗┛┡┩└┘┌┐─━┳┻╇╈┼┬┴├┤]+")


def render(result, width: int) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=True, color_system=None, highlight=False)
    render_terminal(result, console)
    return buf.getvalue()


def words(text: str) -> set[str]:
    return {w for w in SPLIT.split(text) if w}


@pytest.mark.parametrize("name", FIXTURES)
def test_the_summary_fits_80_and_120_columns_and_wraps_between_words(typed, name):
    result = typed(name)
    whole = words(render(result, 2000))  # nothing wraps
    for width in (80, 120):
        out = render(result, width)
        wide = [line for line in out.splitlines() if cell_len(line) > width]
        assert not wide, f"{name} at {width} columns: lines wider than the terminal: {wide[:3]}"
        cut = sorted(words(out) - whole)
        assert not cut, f"{name} at {width} columns: words cut where a line wraps: {cut[:10]}"
        assert "…\n" not in out and not re.search(r"\w…(\s|$)", out.replace("_…_", "")), "a text cut short"


@pytest.mark.parametrize("name", FIXTURES)
def test_no_two_kernels_share_a_name_and_actions_use_the_tables_names(typed, name):
    result = typed(name)
    view = report_view(result)
    shown: dict[tuple, str] = {}
    for k in view.kernels:
        key = (k.label, k.shape_tag, k.process_label, k.device_id)
        assert key not in shown or shown[key] == str(k.full_name), f"{k.full_name} and {shown[key]} both read {key}"
        shown[key] = str(k.full_name)
    by_id = {k.id: k for k in view.kernels}
    out = " ".join(render(result, 2000).split())  # unwrapped: a name's words side by side
    for k in view.kernels[:10]:
        assert " ".join(k.label.split()) in out, f"{k.label} is not in the table"
    for a in view.top_actions[:ACTIONS_SHOWN]:
        if a.scope == "kernel" and a.kernel_id in by_id:
            assert a.kernel_label == by_id[a.kernel_id].label
        assert " ".join(a.kernel_label.split()) in out


def test_two_templates_of_one_op_read_apart(typed):
    """ATen's `elementwise_kernel` and `unrolled_elementwise_kernel` of the same copy, at the same launch shape."""
    view = report_view(typed("torch_dynshapes"))
    copies = {k.label for k in view.kernels if str(k.shown_name) == "direct_copy"}
    assert "direct_copy · elementwise_kernel" in copies
    assert "direct_copy · unrolled_elementwise_kernel" in copies


def test_the_first_finding_and_a_fix_are_whole_at_80_columns(typed):
    result = typed("torch_train")
    out = " ".join(render(result, 80).split())
    view = report_view(result)
    first = view.kernels[0].first_finding
    assert first is not None and f"→ {first.rule} {first.category}" in out
    # the first action's fix, its whole first sentence (it used to be cut at 160 characters)
    assert "or run the region under torch.autocast('cuda', dtype=torch.bfloat16)." in out


@pytest.mark.parametrize(
    "before, after",
    [("pipeline_v0", "pipeline_v1"), pytest.param("model_step_315", "model_step_1010", marks=pytest.mark.slow)],
)  # the 1,010-result capture with the slow tests (pyproject's `slow` marker): its analysis alone is seconds
def test_the_diff_table_fits_80_columns_without_breaking_words(typed, before, after):
    """The diff's kernel table once broke its header at 80 columns ('headroo|m') and its cells inside words."""
    from ncuadvisor.comparison import compare
    from ncuadvisor.render.diff_render import render_diff_terminal

    diff = compare(typed(before), typed(after))

    def render_diff(width: int) -> str:
        buf = io.StringIO()
        console = Console(file=buf, width=width, force_terminal=True, color_system=None, highlight=False)
        render_diff_terminal(diff, console)
        return buf.getvalue()

    whole = words(render_diff(2000))
    for width in (80, 120):
        out = render_diff(width)
        assert max(cell_len(line) for line in out.splitlines()) <= width
        cut = sorted(words(out) - whole)
        assert not cut, f"words cut at {width} columns: {cut[:10]}"
        assert "headroom" in out and "change" in out


@pytest.mark.parametrize("before, after", [("pipeline_v0", "pipeline_v1"), ("torch_eager", "torch_train")])
def test_the_diffs_markdown_names_kernels_as_the_terminal_does(typed, before, after):
    """The diff's markdown (a PR comment) once cut long names at a fixed length ('void cutlass::Kernel2<…>' beside
    the terminal's whole words: 'sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_sta…'); both now show
    each kernel under its one short name (`units.compact_name`)."""
    from ncuadvisor.comparison import compare
    from ncuadvisor.render.diff_render import render_diff_markdown, render_diff_terminal
    from ncuadvisor.units import compact_name

    diff = compare(typed(before), typed(after))
    buf = io.StringIO()
    console = Console(file=buf, width=2000, force_terminal=True, color_system=None, highlight=False)
    render_diff_terminal(diff, console, top=len(diff.kernels))
    terminal = buf.getvalue()
    md = render_diff_markdown(diff)
    rows = [line for line in md.splitlines() if line.startswith("| <code>")]
    assert rows
    names = [re.match(r"\| <code>(.*?)</code>", line).group(1) for line in rows]  # type: ignore[union-attr]
    compacts = {compact_name(k.name or k.demangled) for k in diff.kernels}
    for name in names:
        plain = name.replace("\\", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        assert any(short_of(plain, c) for c in compacts), f"{plain!r} is no kernel's short name"
        assert plain in terminal, f"{plain!r} is not the terminal's name"
    ff = diff.first_fix
    if ff is not None:
        assert f"<code>{compact_name(ff.kernel)}" in md.replace("\\", "")


@pytest.mark.parametrize("before, after", [("torch_eager", "torch_train"), ("torch_train", "torch_train")])
def test_the_diffs_html_names_kernels_as_the_markdown_does(typed, before, after):
    """The diff's HTML page once cut long names its own way ('void at::native::…' at 80 characters, the full name in
    a tooltip) while the markdown and the terminal show `units.compact_name`; now every row, the first fix and each
    kernel's section read the markdown's short name, with the full name in `title=`."""
    from html import unescape

    from ncuadvisor.comparison import compare
    from ncuadvisor.render.diff_render import render_diff_html, render_diff_markdown
    from ncuadvisor.units import compact_name

    diff = compare(typed(before), typed(after))
    md = render_diff_markdown(diff, max_chars=10**6)
    page = render_diff_html(diff)
    md_names = [
        m.group(1).replace("\\", "").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        for m in re.finditer(r"^\| <code>(.*?)</code>", md, re.M)
    ]
    rows = re.findall(r'<td class="name row-head"><code title="([^"]*)">(.*?)</code>', page)
    html_names = [unescape(shown.replace("<wbr>", "")) for _, shown in rows]
    assert md_names and sorted(html_names) == sorted(md_names)
    compacts = {compact_name(k.name or k.demangled): set() for k in diff.kernels}  # type: dict[str, set[str]]
    for k in diff.kernels:
        compacts[compact_name(k.name or k.demangled)].add(k.demangled or k.name)
    named: dict[str, set[str]] = {}  # each name shown: the full names it stands for
    for title, shown in rows:
        title, shown = unescape(title), unescape(shown.replace("<wbr>", ""))
        named.setdefault(shown, set()).add(title)
        base = next(c for c in sorted(compacts, key=len, reverse=True) if short_of(shown, c))
        assert title in compacts[base]  # the kernel's short name (told apart from another's), its whole name on hover
    assert not [n for n, fulls in named.items() if len(fulls) > 1], "two kernels under one name"
    assert any(len(n) < len(next(iter(f))) for n, f in named.items()), "the pair has kernels whose names are long"
    for title, text in re.findall(r'<summary title="([^"]*)">(.*?)</summary>', page):  # each kernel's section
        shown = max((n for n in named if unescape(text).startswith(n)), key=len)
        assert unescape(title) in named[shown]
    ff = diff.first_fix
    if ff is not None:
        assert f">{escape_html(compact_name(ff.kernel))}</code>" in page


def short_of(shown: str, compact: str) -> bool:
    """Whether a name shown is a kernel's `compact_name`, or that told apart from another kernel's by its template
    arguments ('gemm_tiled<0>') or a word of its full name ('… · tilesize128x128x8')."""
    return shown == compact or shown.startswith((compact + " · ", compact + "<"))


def escape_html(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))
