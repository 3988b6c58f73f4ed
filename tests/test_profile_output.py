"""ncu's output read as it comes: the line splitter against the plain reading it stands for (cut at line ends, a
line's last non-empty carriage-return redraw, a new line at each ncu tag inside it), and linear on a long line."""

from __future__ import annotations

import random
import re
import time

from ncuadvisor.profile.output import LineSplitter

_TAG_INSIDE_RE = re.compile(r"(?<=.)(?===(?:PROF|ERROR|WARNING|INFO)==)")


def _split(line: str) -> list[str]:
    return _TAG_INSIDE_RE.split(line.rstrip("\r").rsplit("\r", 1)[-1])


class PlainSplitter:
    """The specification: everything fed so far kept in one string (quadratic on a long line, hence not used)."""

    def __init__(self) -> None:
        self.buf = ""

    def feed(self, data: str) -> list[str]:
        self.buf = (self.buf + data).replace("\r\n", "\n")
        *lines, self.buf = self.buf.split("\n")
        return [part for line in lines for part in _split(line)]

    @property
    def partial(self) -> str:
        return _split(self.buf)[-1]

    def flush(self) -> list[str]:
        rest, self.buf = self.buf, ""
        return [part for part in _split(rest) if part]


def test_same_lines_as_the_plain_reading_whatever_the_chunks():
    pieces = ["a", "b", " ", "=", "==", "\r", "\n", "\r\n", "PROF", "==PROF==", "==INFO==PROF==", "==WARNING=="]
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        plain, fast = PlainSplitter(), LineSplitter()
        got_plain, got_fast, i = [], [], 0
        while i < len(text):
            j = i + rng.randint(1, 6)
            got_plain += plain.feed(text[i:j])
            got_fast += fast.feed(text[i:j])
            assert fast.partial == plain.partial, repr(text)
            i = j
        assert got_fast + fast.flush() == got_plain + plain.flush(), repr(text)


def test_progress_is_read_from_an_unfinished_ncu_line_only():
    s = LineSplitter()
    s.feed('train 10%\r==PROF== Profiling "k" - 0: 0%....50')
    assert s.progress() == '==PROF== Profiling "k" - 0: 0%....50'
    s.feed("%....100% - 9 passes\nprogram output without an end")
    assert s.progress() is None


def test_a_long_line_without_an_end_is_read_in_linear_time():
    """16 MB in 1 KB reads: a splitter that rescans what it holds at each read would copy about 128 GB."""
    s, chunk = LineSplitter(), "x" * 1024
    t0 = time.perf_counter()
    for _ in range(16 * 1024):
        assert s.feed(chunk) == []
        assert s.progress() is None
    assert time.perf_counter() - t0 < 20.0
    assert s.feed("\n") == ["x" * (16 << 20)]
