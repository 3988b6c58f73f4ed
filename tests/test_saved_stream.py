"""A saved result too big to hold whole is read a kernel at a time (`ncuadvisor.saved.stream`): the same result as
the whole-file read, every kernel again in `render -f json`, the first kernels by time (and those "where to start"
names) in the other formats with a line that says how many were left out, and one clear line for a damaged file.
The saved results are real fixtures' analyses, copied under distinct names for size (tests/synthetic.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncuadvisor.cli.common import render_report
from ncuadvisor.cli.render import json_chunks
from ncuadvisor.errors import InputError
from ncuadvisor.render import formats
from ncuadvisor.saved import stream, validate
from ncuadvisor.saved.stream import StreamedResult
from ncuadvisor.saved.validate import load_saved
from tests.golden import run_cli, scrub_result
from tests.synthetic import write_many_kernels


@pytest.fixture(scope="module")
def flaws(analyzed) -> dict:
    return scrub_result(analyzed("flaws"))


@pytest.fixture
def small(flaws, tmp_path) -> Path:
    """The flaws fixture's saved result, as `report -o x.json` writes it."""
    path = tmp_path / "flaws.json"
    path.write_text(json.dumps(flaws, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def streamed(monkeypatch, path: Path) -> StreamedResult:
    monkeypatch.setattr(validate, "STREAM_FROM", 0)
    result = load_saved(path, stream=True)
    assert isinstance(result, StreamedResult)
    return result


def test_read_a_kernel_at_a_time_is_the_whole_files_result(monkeypatch, small):
    whole = load_saved(small)
    assert not isinstance(whole, StreamedResult)
    assert streamed(monkeypatch, small).to_dict() == whole.to_dict()


@pytest.mark.parametrize("name", ["json", "md", "html", "sarif", "digest"])
def test_every_format_is_the_same_as_from_the_whole_file(monkeypatch, small, name):
    whole = load_saved(small)
    result = streamed(monkeypatch, small)
    fmt = formats.get(name)
    text = "".join(json_chunks(result)) if name == "json" else render_report(result, fmt)
    assert text == render_report(whole, fmt)


def test_past_the_kept_kernels_the_pages_say_so_and_json_has_every_kernel(monkeypatch, flaws, tmp_path):
    path = tmp_path / "many.json"
    write_many_kernels(flaws, 60, path)
    original = json.loads(path.read_text(encoding="utf-8"))
    monkeypatch.setattr(stream, "KEEP_KERNELS", 8)
    result = streamed(monkeypatch, path)
    wanted = {a["kernel_id"] for a in original["top_actions"] if a.get("kernel_id")}
    assert [k.id for k in result.kernels][:8] == [f"k{i}" for i in range(8)]
    assert {k.id for k in result.kernels} == {f"k{i}" for i in range(8)} | wanted
    assert result.left_out is not None and result.left_out.startswith("this result holds 60 kernels")
    md = render_report(result, formats.get("md"))
    assert "in **60 kernels**" in md and "this result holds 60 kernels: shown are the first 8 by time" in md
    assert "52 more (" in render_report(result, formats.get("html"))
    digest = json.loads(render_report(result, formats.get("digest-json")))
    assert digest["kernels"] == 60 and digest["left_out"]["kernels"] == 60 - len(digest["kernel_digests"])
    assert result.kernel("k59") is not None and result.kernel("k59").name == original["kernels"][59]["name"]
    assert result.kernel("k60") is None and result.kernel(original["kernels"][59]["name"]) is None
    again = json.loads("".join(json_chunks(result)))
    assert again == original  # every kernel, and no word of the ones left out of the pages
    whole = load_saved(path)  # diff and the API: every kernel, held
    assert not isinstance(whole, StreamedResult) and len(whole.kernels) == 60


def test_a_file_changed_after_it_was_read_is_refused(monkeypatch, small):
    result = streamed(monkeypatch, small)
    data = bytearray(small.read_bytes())
    at = data.index(b'"launches": ') + len(b'"launches": ')
    data[at : at + 1] = b"7" if data[at : at + 1] != b"7" else b"8"
    small.write_bytes(bytes(data))  # in place: the same file, other bytes
    with pytest.raises(InputError, match="changed while it was read"):
        "".join(json_chunks(result))


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda t: t[: len(t) // 2], "not valid JSON ("),
        (lambda t: t.replace('"duration_ns": ', '"duration_ns": NaN, "x": ', 1), "NaN is not a number JSON knows"),
        (lambda t: t.replace('"duration_ns": ', '"duration_ns": "slow", "x": ', 1), "kernels[0].duration_ns"),
        (lambda t: t.replace('"kernels": [', '"kernels": [' + "[" * 100_000, 1), "nested too deeply"),
        (lambda t: t + "{}", "Extra data"),
        (lambda t: "[" + t + "]", "not an ncuadvisor result"),
    ],
)
def test_damage_is_one_line(monkeypatch, small, damage, said):
    small.write_text(damage(small.read_text(encoding="utf-8")), encoding="utf-8")
    monkeypatch.setattr(validate, "STREAM_FROM", 0)
    with pytest.raises(InputError) as caught:
        load_saved(small, stream=True)
    assert said in str(caught.value) and str(small) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow  # two commands in a subprocess over a 35 MB file: 17 s
def test_a_big_file_through_the_command(flaws, tmp_path):
    """Past STREAM_FROM bytes (3,200 kernels: 35 MB), as a user runs it: JSON holds every kernel, markdown renders."""
    path = tmp_path / "big.json"
    assert write_many_kernels(flaws, 3200, path) > stream.STREAM_FROM
    p = run_cli("render", str(path), "-o", str(tmp_path / "again.json"), "-q", timeout=600)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert json.loads((tmp_path / "again.json").read_text(encoding="utf-8")) == json.loads(path.read_text("utf-8"))
    p = run_cli("render", str(path), "-f", "md", timeout=600)
    assert p.returncode == 0 and "in **3,200 kernels**" in p.stdout, p.stderr


def test_damage_early_in_a_big_file_is_said_without_reading_the_rest(monkeypatch, flaws, tmp_path):
    """A broken kernel entry near the start: refused after reading at most MAX_VALUE more characters, not the file."""
    path = tmp_path / "many.json"
    write_many_kernels(flaws, 200, path)
    text = path.read_text(encoding="utf-8")
    at = text.index('"duration_ns": ', text.index('"kernels": [')) + len('"duration_ns": ')
    path.write_text(text[:at] + "?" + text[at + 1 :], encoding="utf-8")
    monkeypatch.setattr(stream, "MAX_VALUE", 1 << 16)
    monkeypatch.setattr(stream, "_CHUNK", 1 << 12)
    read: list[int] = []
    original = stream._Reader.more

    def more(self, at_least: int = 1 << 12) -> bool:
        read.append(len(self.buf))
        return original(self, at_least)

    monkeypatch.setattr(stream._Reader, "more", more)
    with pytest.raises(InputError, match=r"not valid JSON \(Expecting value at line \d+, column \d+\)"):
        streamed(monkeypatch, path)
    assert max(read) < 4 * (1 << 16) < path.stat().st_size // 4


def test_damage_reads_as_the_whole_file_says_it(monkeypatch, small):
    """One character changed at 30 seeded places: the same line (message, line and column) as the whole-file read,
    through a window of 1 KiB (so that the window moves before most of them)."""
    import random

    text = small.read_text(encoding="utf-8")
    rng = random.Random(20261206)
    monkeypatch.setattr(stream, "_CHUNK", 1 << 10)
    for _ in range(30):
        at = rng.randrange(len(text))
        small.write_text(text[:at] + rng.choice('?]}",:x') + text[at + 1 :], encoding="utf-8")
        said = []
        for limit in (1 << 62, 0):
            monkeypatch.setattr(validate, "STREAM_FROM", limit)
            try:
                load_saved(small, stream=True)
                said.append("read")
            except InputError as exc:
                said.append(str(exc))
        assert said[0] == said[1]
