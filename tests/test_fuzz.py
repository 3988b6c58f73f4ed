"""The fast, seeded part of the fuzz campaign (benchmarks/fuzz.py runs the long one): damaged copies of real reports
checked by the strict block walk (`reportfile.integrity`) in this process, against what the undamaged file says, and
a few of them run through the installed command line in a subprocess with a time limit. The regression test of
each defect the campaign found is in tests/test_fuzz_regressions.py."""

from __future__ import annotations

import json
import random
from pathlib import Path

import fuzz  # benchmarks/ is on sys.path (tests/conftest.py)
import pytest

from ncuadvisor.reportfile.blocks import iter_blocks
from ncuadvisor.reportfile.integrity import check_report, write_whole_copy

ROOT = Path(__file__).resolve().parent.parent

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
        assert (found.cut_at is None) == (cut in ends), cut  # a boundary cut walks to the end: see the next test
        if found.cut_at is not None:
            assert found.state == "truncated" and found.cut_at <= cut


def _kind(data: bytes, block) -> str:
    """What a block holds, read from its header's fields (the test's own reading, not the walk's)."""
    from ncuadvisor.reportfile.blocks import _fields

    h = block.header
    if (h.get(2) or [0])[0]:
        return "results"
    if (h.get(1) or [0])[0]:
        return "sources"
    for s, e in h.get(3) or []:
        if _fields(data, s, e).get(11):
            return "command line"
    return "session"


@pytest.mark.parametrize("name", ["pipeline_v1", "multiproc", "probe"])
def test_a_cut_at_a_block_boundary_is_said_wherever_the_file_shows_it(name, tmp_path):
    """Cut a real report at every block boundary. The file records no count of results (no total in the file
    header, no sequence number, no closing block: see reportfile.integrity), so a cut between two results, or right
    after the session data that follows the first result, reads as a shorter whole report: the known limit. Every
    other boundary cut is said (state "truncated", a warning): a file ending before the command-line block that
    ncu writes after its first result, or ending with a block of sources whose result is missing."""
    data = fuzz.plain(name)
    blocks = list(iter_blocks(data))
    kinds = [_kind(data, b) for b in blocks]
    assert kinds.count("command line") == 1 and kinds[-1] == "results"
    said = unseen = 0
    for k, b in enumerate(blocks):
        found = _check(data[: b.payload_end], tmp_path)
        assert found.whole == _results_before(data, b.payload_end) and found.cut_at is None, k
        assert not found.needs_copy, k  # every byte of a boundary cut is whole: the file is read as it is
        if k == len(blocks) - 1 or not found.whole:
            assert found.boundary is None, k  # the whole file; or no result at all (refused, tested elsewhere)
        elif "command line" not in kinds[: k + 1] or kinds[k] == "sources":
            assert found.boundary is not None and found.state == "truncated", (k, kinds[k])
            assert "block boundary" in found.summary() and "does not record how many" in found.summary()
            said += 1
        else:
            assert kinds[k] in ("results", "command line") and found.boundary is None, (k, kinds[k])
            unseen += 1
    assert said >= 7 and unseen >= 1, (said, unseen)
    # the order of the session blocks is known for format version 7 only (the file header: field 1 = 7)
    first = next(b for b in blocks if (b.header.get(2) or [0])[0])
    assert data[8:10] == b"\x08\x07" and _check(data[: first.payload_end], tmp_path).boundary is not None
    assert _check(data[:9] + b"\x08" + data[10 : first.payload_end], tmp_path).boundary is None


def _without_header(data: bytes, k: int) -> tuple[bytes, int, int]:
    """The report with block k's header made unparseable (its first field key has wire type 7), and that block's
    (start, end)."""
    blocks = list(iter_blocks(data))
    start = blocks[k - 1].payload_end if k else 8 + int.from_bytes(data[4:8], "little")
    m = bytearray(data)
    m[start + 4] = 0x0F
    return bytes(m), start, blocks[k].payload_end


def test_the_walk_finds_the_next_block_after_an_unreadable_header(pipeline, tmp_path):
    """A block header that does not parse: the walk finds the next block (by its process field and length prefix),
    keeps every result after it and counts the skipped bytes; the copy the native library reads is the report
    without that block, byte for byte. Results number metric names by their place in a table that block headers
    append to, and the skipped bytes may have appended some: a result numbering a name past the table is not kept,
    and the walk stops at a later header that appends names."""
    blocks = list(iter_blocks(pipeline))
    total = _results_before(pipeline, len(pipeline))
    kinds = [_kind(pipeline, b) for b in blocks]
    names = [k for k, b in enumerate(blocks) if b.header.get(4) and b.header[4][0][1] > b.header[4][0][0]]
    assert len(names) == 1
    for k in range(1, len(blocks) - 1):
        mutant, start, end = _without_header(pipeline, k)
        found = _check(mutant, tmp_path)
        assert found.skipped == [(start, end)] and found.state == "damaged", k
        lost = int((blocks[k].header.get(2) or [0])[0])
        if k <= names[0]:  # the names were skipped (k), or come after the skipped bytes: nothing after is numbered
            assert found.whole == 0, k
            assert found.cut_at == (blocks[k].payload_end if k < names[0] else None), k
            continue
        assert found.cut_at is None and found.whole == total - lost and found.lost == 0, (k, kinds[k])
        assert "unreadable header skipped" in found.summary()
        copy = tmp_path / "whole.ncu-rep"
        write_whole_copy(tmp_path / "m.ncu-rep", found, copy)
        assert copy.read_bytes() == pipeline[:start] + pipeline[end:], k
        again = check_report(copy)
        assert again.whole == found.whole and not again.needs_copy, k


def test_the_stream_check_passes_an_unreadable_header_and_refuses_zeros(pipeline):
    """The check of a decompressed stream finds the next block after an unreadable header as the file walk does; a
    stream of zeros behind a report's first blocks is still refused, within the resync distance."""
    from ncuadvisor.reportfile.integrity import RESYNC_STREAM_BYTES, StreamCheck

    def feed(data: bytes, chunk: int) -> None:
        check = StreamCheck()
        for i in range(0, len(data), chunk):
            check.feed(data[i : i + chunk])

    for k in (1, 3, len(list(iter_blocks(pipeline))) - 2):
        mutant, _s, _e = _without_header(pipeline, k)
        for chunk in (1 << 20, 65536):
            feed(mutant, chunk)
    head = next(b.payload_end for b in iter_blocks(pipeline) if (b.header.get(2) or [0])[0])
    zeros = bytes(RESYNC_STREAM_BYTES + (4 << 20))
    with pytest.raises(ValueError, match="no block header after it"):
        feed(pipeline[:head] + zeros, 1 << 20)
    with pytest.raises(ValueError, match="implausible block header length 0"):  # no header read yet: at once
        feed(pipeline[: 8 + int.from_bytes(pipeline[4:8], "little")] + bytes(1 << 20), 1 << 20)


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
    from ncuadvisor.saved.validate import load_saved

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


def test_non_utf8_and_control_characters_in_names_render_everywhere(pipeline, tmp_path):
    """The text mutants keep the layout whole (only the name changes), and a name with a byte that is not UTF-8 (as
    ncu_report hands it over: a surrogate escape), terminal escapes and rich markup renders in every format: valid
    UTF-8, and no escape sequence on the terminal."""
    from rich.console import Console

    from ncuadvisor.render.html import render_html
    from ncuadvisor.render.markdown import render_markdown
    from ncuadvisor.render.sarif import render_sarif
    from ncuadvisor.render.terminal import render_terminal
    from ncuadvisor.result.helpers import no_surrogates
    from ncuadvisor.result.types import Result

    for _cls, label, mutant in fuzz.mutants(pipeline, random.Random(SEED), {"text"}, 0):
        found = _check(mutant, tmp_path)
        assert not found.damaged and found.whole == _results_before(pipeline, len(pipeline)), label
    saved = json.loads((ROOT / "tests" / "golden" / "pipeline_v1.json").read_text())
    hostile = "k\udce9rnel_\udcff\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://x\x07[link=http://x]k[/link]"
    for k in saved["kernels"]:
        k["name"] = k["demangled"] = hostile
    result = Result.from_dict(no_surrogates(saved))
    assert "\ufffd" in result.kernels[0].name and "\udce9" not in result.kernels[0].name
    for text in (render_markdown(result), render_html(result), render_sarif(result, str(tmp_path), {})):
        text.encode("utf-8")
    console = Console(record=True, width=200, force_terminal=True)
    render_terminal(result, console=console)
    shown = console.export_text(styles=False)
    assert "\x1b]" not in shown and "\x07" not in shown and "\x1b[2J" not in shown
