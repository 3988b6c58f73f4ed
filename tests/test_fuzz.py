"""The fast, seeded part of the fuzz campaign (benchmarks/fuzz.py runs the long one): damaged copies of real reports
checked by the strict block walk (`reportfile.integrity`) in this process, against what the undamaged file says, and
a few of them run through the installed command line in a subprocess with a time limit. The regression test of
each defect the campaign found is in tests/test_fuzz_regressions.py."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from ncuadvisor.reportfile.blocks import iter_blocks
from ncuadvisor.reportfile.integrity import check_report, write_whole_copy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz  # noqa: E402

SEED = 20261201


@pytest.fixture(scope="module")
def pipeline() -> bytes:
    return fuzz.plain("pipeline_v1")


def _results_before(data: bytes, cut: int) -> int:
    return sum(int((b.header.get(2) or [0])[0]) for b in iter_blocks(data) if b.payload_end <= cut)


def _check(data: bytes, tmp_path: Path):
    path = tmp_path / "m.ncu-rep"
    path.write_bytes(data)
    return check_report(path)


def test_truncation_at_every_block_boundary_and_random_offsets(pipeline, tmp_path):
    """Every whole result before the cut is counted whole, none after it; a cut inside a block is said, with where."""
    rng = random.Random(SEED)
    blocks = list(iter_blocks(pipeline))
    cuts = [b.payload_end for b in blocks[:-1]] + [rng.randrange(9, len(pipeline)) for _ in range(40)]
    ends = {b.payload_end for b in blocks}
    for cut in cuts:
        found = _check(pipeline[:cut], tmp_path)
        assert found.whole == _results_before(pipeline, cut), cut
        assert (found.cut_at is None) == (cut in ends), cut  # a cut at a boundary cannot be seen (no end marker)
        if found.cut_at is not None:
            assert found.state == "truncated" and found.cut_at <= cut


def test_byte_flips_in_headers_and_payloads_never_pass_a_damaged_result(pipeline, tmp_path):
    """A flipped byte either leaves every result parsing (a value changed: no format can see that) or the block it
    hit is left out and counted, or the walk stops there; the copy the native library reads then walks clean."""
    rng = random.Random(SEED)
    total = _results_before(pipeline, len(pipeline))
    seen = {"clean": 0, "dropped": 0, "cut": 0}
    for cls, _label, mutant in fuzz.mutants(pipeline, rng, {"flip-header", "flip-payload"}, 30):
        found = _check(mutant, tmp_path)
        assert found.whole + found.lost <= total or found.dropped_blocks, cls
        if found.cut_at is not None:
            seen["cut"] += 1
        elif found.dropped_blocks:
            seen["dropped"] += 1
        else:
            seen["clean"] += 1
            assert found.whole == total
        if found.damaged and found.whole:
            copy = tmp_path / "whole.ncu-rep"
            write_whole_copy(tmp_path / "m.ncu-rep", found, copy)
            again = check_report(copy)
            assert not again.damaged and again.whole == found.whole
    assert seen["dropped"] and seen["cut"], seen  # the seed reaches both kinds of damage


def test_crafted_result_counts_are_refused_without_allocating(pipeline, tmp_path):
    for _cls, label, mutant in fuzz.mutants(pipeline, random.Random(SEED), {"count"}, 0):
        found = _check(mutant, tmp_path)
        assert found.whole < _results_before(pipeline, len(pipeline)), label
        assert found.damaged, label


def test_zeros_behind_the_magic_are_refused_at_once(tmp_path):
    found = _check(b"NVR\0" + bytes(8 << 20), tmp_path)
    assert found.whole == 0 and found.cut_at == 4


@pytest.mark.slow
@pytest.mark.parametrize(
    "cls, label, outcome",
    [
        ("trunc-random", "inside the first result", "refused"),
        ("count", "result count 2", "partial"),
        ("text", "terminal escapes", "ok"),
    ],
)
def test_damaged_reports_through_the_command_line(cls, label, outcome, pipeline, tmp_path):
    """The installed command line on a few mutants: the expected outcome, no traceback, nothing left behind."""
    if cls == "trunc-random":
        first = next(b for b in iter_blocks(pipeline) if (b.header.get(2) or [0])[0])
        mutant = pipeline[: (first.payload_start + first.payload_end) // 2]
    else:
        mutant = next(m for c, lab, m in fuzz.mutants(pipeline, random.Random(SEED), {cls}, 0) if lab == label)
    got, seconds, _rss = fuzz.run_report(mutant, tmp_path)
    assert got == outcome
    assert seconds < fuzz.TIME_LIMIT_S


@pytest.mark.slow
def test_hostile_kernel_names_reach_no_output_as_control_characters(pipeline, tmp_path):
    mutant = fuzz._rename(pipeline, b"\x1b]0;pwned\x07\x1b[2J")
    src = tmp_path / "m.ncu-rep"
    src.write_bytes(mutant)
    rc, out, err, _s, _r = fuzz.run_cli(["report", str(src)], tmp_path)
    assert rc == 0, err
    assert "\x1b]" not in out and "\x07" not in out and "\x1b[2J" not in out
    rc, out, err, _s, _r = fuzz.run_cli(["report", str(src), "-f", "json"], tmp_path)
    names = [k["name"] for k in json.loads(out)["kernels"]]
    assert any("\x1b" in n for n in names)  # the JSON keeps the name as the report has it, escaped by JSON


def test_malformed_saved_results_are_read_or_refused_in_one_line(tmp_path):
    """Every malformed saved result (fuzz.json_mutants, on the golden result of pipeline_v1) is read, or refused
    with one InputError line naming the file: never another exception. What is read renders to the terminal,
    markdown and SARIF without an escape sequence or an error."""
    from rich.console import Console

    from ncuadvisor.errors import InputError
    from ncuadvisor.render.markdown import render_markdown
    from ncuadvisor.render.terminal import render_terminal
    from ncuadvisor.result.validate import load_saved

    saved = json.loads((ROOT / "tests" / "golden" / "pipeline_v1.json").read_text())
    read = refused = 0
    for _cls, label, data in fuzz.json_mutants(saved, random.Random(SEED)):
        path = tmp_path / "saved.json"
        path.write_bytes(data)
        try:
            result = load_saved(path)
        except InputError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc), label
            refused += 1
            continue
        read += 1
        console = Console(record=True, width=120, force_terminal=False)
        render_terminal(result, console=console)
        shown = console.export_text()
        assert "\x1b" not in shown and "\x07" not in shown, label
        render_markdown(result).encode("utf-8")
    assert read and refused
