"""Every output of every fixture, read as a user reads it: terminal, markdown, JSON, HTML (its text) and SARIF, scanned
for text no user should meet: a developer's path (the repository's `fixtures/...`), raw markdown backticks in the
page's text or the markdown (escaped: GitHub shows them as they are), a number in exponent notation, a ratio too small to read ("Waves per SM 0.000473"), doubled
parentheses, and a card saying "No findings" for a kernel whose table row sends the reader to a program finding."""

from __future__ import annotations

import html
import io
import json
import re
from html.parser import HTMLParser

import pytest
from rich.console import Console

from ncuadvisor.render import to_json
from ncuadvisor.render.html import render_html
from ncuadvisor.render.markdown import render_markdown
from ncuadvisor.render.sarif import build_sarif, repository_paths, source_files
from ncuadvisor.render.terminal import render_terminal
from tests.conftest import FIXTURES

# the 1,010-result capture with the slow tests (pyproject's `slow` marker): its analysis alone is seconds
EVERY = [
    pytest.param(n, marks=pytest.mark.slow) if n == "model_step_1010" else n
    for n in sorted(p.name.removesuffix(".ncu-rep.xz") for p in FIXTURES.glob("*.ncu-rep.xz"))
]

DEVELOPER_PATH = re.compile(r"(?<![\w/.])(?:fixtures|tests|benchmarks|workloads/planted)/[\w./-]+")
EXPONENT = re.compile(r"\b\d(?:\.\d+)?e[+-]?\d+\b", re.IGNORECASE)
TINY = re.compile(r"(?<![\w.])0\.000\d+")  # a number that reads as nothing at the precision shown
DOUBLED = re.compile(r"\(\(|\)\)")


class _Text(HTMLParser):
    """The text a browser shows (not script, style or attribute values), each element's text on its own; the code
    it shows as code (`<code>`, `<pre>`: the user's source lines and SASS) left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.chart: list[str] = []  # the roofline chart's labels and hover text (its <svg>)
        self._skip = 0
        self._svg = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "code", "pre"):
            self._skip += 1
        self._svg += tag == "svg"

    def handle_endtag(self, tag):
        if tag in ("script", "style", "code", "pre"):
            self._skip -= 1
        self._svg -= tag == "svg"

    def handle_data(self, data):
        if not self._skip:
            (self.chart if self._svg else self.parts).append(data)


def page_text(page: str) -> tuple[str, str]:
    """The page's text, and its chart's."""
    parser = _Text()
    parser.feed(page)
    return "\n".join(parser.parts), "\n".join(parser.chart)


def outputs(result) -> dict[str, str]:
    buf = io.StringIO()
    render_terminal(result, Console(file=buf, width=120, force_terminal=True, color_system=None, highlight=False))
    root = "/work/main"  # where the fixtures' sources were captured
    sarif = build_sarif(result, root, repository_paths(source_files(result), [root]))
    page, chart = page_text(render_html(result))
    return {
        "terminal": buf.getvalue(),
        "markdown": CODE_SPANS.sub(" ", render_markdown(result)),
        "json": "\n".join(_strings(json.loads(to_json(result.to_dict())))),
        "html": page,
        "chart": chart,
        "sarif": "\n".join(_strings(sarif)),
    }


# the user's own code and the machine's (source lines, SASS, a fix's code) is theirs: not scanned
CODE_KEYS = {"code", "sass", "fix_code", "snippet", "relatedLocations", "path", "uri", "command_line", "file"}
CODE_SPANS = re.compile(r"<code>.*?</code>|```.*?```", re.S)


def _strings(value) -> list[str]:
    """Every string value of a JSON document (its keys and the embedded paths are the user's data, not text)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in CODE_KEYS for s in _strings(v)]
    return []


def hits(pattern: re.Pattern, text: str) -> list[str]:
    return sorted({text[max(0, m.start() - 40) : m.end() + 20].replace("\n", " ") for m in pattern.finditer(text)})


@pytest.mark.parametrize("name", EVERY)
def test_no_output_holds_text_a_user_should_not_meet(typed, name):
    result = typed(name)
    found: dict[str, list[str]] = {}
    for fmt, text in outputs(result).items():
        for label, pattern in (
            ("developer path", DEVELOPER_PATH),
            ("exponent", EXPONENT),
            ("tiny number", TINY),
            ("doubled parentheses", DOUBLED),
        ):
            if h := hits(pattern, text):
                found[f"{fmt}: {label}"] = h[:3]
        if fmt == "html" and (h := hits(re.compile(r"`[^`\n]+`"), text)):
            found["html: raw backticks"] = h[:3]
        if fmt == "markdown" and (h := hits(re.compile(r"\\`[^`\n]+\\`"), text)):  # GitHub shows \` as a backtick
            found["markdown: raw backticks"] = h[:3]
    assert not found, f"{name}: " + json.dumps(found, indent=1, ensure_ascii=False)


@pytest.mark.parametrize("name", EVERY)
def test_a_card_agrees_with_its_row(typed, name):
    """A kernel whose row says "see PRG004 (program)" does not say "No findings" in its card."""
    page = render_html(typed(name))
    for card in re.findall(r'<section[^>]*class="[^"]*card[^"]*"[^>]*>.*?</section>', page, re.S):
        assert "No findings for this kernel." not in card or "see PRG" not in card, html.unescape(card)[:400]
    rows = {m.group(1): m.group(2) for m in re.finditer(r'<tr id="([^"]+)">(.*?)</tr>', page, re.S)}
    for anchor, row in rows.items():
        if "see PRG" in row:
            card = page.split(f'id="{anchor}"', 2)[-1][:4000]
            assert "No findings for this kernel." not in card.split("</section>", 1)[0]


def test_the_terminal_says_when_nothing_is_first_as_the_markdown_does(report_path):
    """pipeline_v1 (every kernel near its bound or without a finding: no action): the terminal says so in the
    markdown's words, where it used to print the table alone; a report with actions keeps its "Where to start"."""
    from tests.conftest import report_output

    term = report_output(report_path("pipeline_v1"), "terminal")
    md = report_output(report_path("pipeline_v1"), "md")
    line = "Nothing to fix first: every kernel is near its roofline bound"
    assert line in md and line in term and "Where to start" not in term
    other = report_output(report_path("pipeline_v0"), "terminal")
    assert "Where to start" in other and line not in other
