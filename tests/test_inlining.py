"""Findings whose instructions are a library's code inlined into the user's kernel (CUDA's atomicAdd, wmma, shuffles;
Triton's reductions) are placed on the user's line that calls it, read from the line tables of the modules the report
embeds; the library's function and line go with it."""

from __future__ import annotations

from collections import Counter

from conftest import kernel

from ncuadvisor.load.reader import ReportReader
from ncuadvisor.model.sources import in_library, in_toolkit, short_name
from ncuadvisor.pipeline import locate
from ncuadvisor.render.markdown import render_markdown
from ncuadvisor.reportfile.modules import embedded_cubins

FLAWS_CU = "/workloads/cuda/flaws.cu"


def _embedded(path, kernel_name: str, suffix: str) -> list[str]:
    """The lines of a source file the report embeds for a kernel (ncu --import-source yes)."""
    reader = ReportReader(path)
    rows = reader.results(["gpu__time_duration.sum"])
    rid = int(next(r for r, n in zip(rows["result_id"], rows["name"]) if n == kernel_name))
    entry = reader.details([rid], ["inst_executed"])[rid].entry
    assert entry and entry[0].endswith(suffix)
    text = reader.locations({rid: ([], [entry[0]])})[rid][1][entry[0]]
    assert text
    return text.splitlines()


def test_cubin_line_table_records_the_inlined_call_site(report_path):
    """flaws.cu's module: atomicAdd's instructions (device_atomic_functions.hpp) name the row of the call in
    hist_global_atomic, and that row is the kernel's line that calls atomicAdd."""
    cubins = embedded_cubins(report_path("flaws"))
    assert len(cubins) == 1
    table = cubins[0].tables()["_Z18hist_global_atomicPKjPjm"][0]
    inlined = [i for i, r in enumerate(table.rows) if r.context]
    assert inlined, "the module records no inlining"
    lines = _embedded(report_path("flaws"), "hist_global_atomic", FLAWS_CU)
    for i in inlined:
        frames = table.chain(i)
        assert in_toolkit(frames[0].file) and frames[0].file.endswith("device_atomic_functions.hpp")
        assert short_name(frames[0].function) == "atomicAdd"
        assert frames[-1].file.endswith(FLAWS_CU) and frames[-1].function is None
        assert "atomicAdd(" in lines[frames[-1].line - 1]


def test_atomic_finding_points_at_the_callers_line(analyzed):
    """ATM001 on hist_global_atomic: the user's line (flaws.cu, the atomicAdd call), not CUDA's header; the header's
    line and the function stay beside it."""
    f = next(f for f in kernel(analyzed("flaws"), "hist_global_atomic")["findings"] if f["rule"] == "ATM001")
    top = f["source"][0]
    assert top["file"].endswith(FLAWS_CU)
    assert "atomicAdd(" in top["code"]
    assert top["sass"].startswith(("RED", "ATOM"))
    inl = top["inlined"]
    assert inl["function"] == "atomicAdd" and not inl["nearest"]
    assert inl["file"].endswith("device_atomic_functions.hpp") and "AtomicAdd" in inl["code"]


def test_no_finding_of_flaws_is_left_in_a_header(analyzed):
    """Every located line of every finding on flaws.cu is the user's; each one that was a header's says which
    function it calls (atomicAdd, load_matrix_sync, __shfl_sync), from the module's record, not a guess."""
    called = Counter()
    for k in analyzed("flaws")["kernels"]:
        for f in k["findings"]:
            for s in f["source"]:
                if s["file"]:
                    assert not in_library(s["file"]), (k["name"], f["rule"], s)
                if "inlined" in s:
                    assert s["inlined"]["nearest"] is False
                    called[s["inlined"]["function"]] += 1
    assert {"atomicAdd", "load_matrix_sync", "__shfl_sync"} <= set(called)


def test_markdown_names_the_library_call(typed):
    text = render_markdown(typed("flaws"))
    assert "calls atomicAdd (device\\_atomic\\_functions.hpp" in text


def test_triton_library_lines_go_to_the_kernels_call(report_path):
    """torch_norm_chain's Inductor kernel: Triton records no inlining, so the instructions of triton_helpers'
    welford_combine are placed on the generated kernel's line that calls it (through `welford`), found by name in
    the embedded files; the lines reached are the kernel's own and call the helper."""
    reader = ReportReader(report_path("torch_norm_chain"))
    rows = reader.results(["gpu__time_duration.sum"])
    rid, mangled = next(
        (r, m) for r, n, m in zip(rows["result_id"], rows["name"], rows["mangled"]) if n.startswith("triton")
    )
    rid = int(rid)
    ins = reader.details([rid], ["inst_executed"])[rid].per_instruction["inst_executed"]
    where, texts = reader.locations({rid: ([e.pc for e in ins], [])})[rid]
    library = [e.pc for e in ins if in_library(where[e.pc][0])]
    assert library, "no instruction of the kernel is in Triton's or Inductor's library files"
    chains = reader.call_chains({rid: (mangled, [e.pc for e in ins], where)})[rid]
    assert set(chains) == set(library)
    kernel_file = next(f for f, _ in where.values() if f and not in_library(f))
    body = texts[kernel_file].splitlines()
    for pc in library:
        file, line, inlined = locate.user_line(*where[pc], chains[pc], texts)
        assert file == kernel_file and inlined is not None
        assert inlined.function and inlined.file == where[pc][0]
        if not inlined.nearest:
            assert "triton_helpers." in body[line - 1] or "tl." in body[line - 1]
    assert any(not locate.user_line(*where[pc], chains[pc], texts)[2].nearest for pc in library)
