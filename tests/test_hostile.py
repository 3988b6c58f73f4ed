"""Hostile input: untrusted names and source lines never execute or break the page; odd results never crash."""

import copy
import json
import re
import shutil
import subprocess

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.render import html as html_renderer
from ncuadvisor.render import markdown as markdown_renderer
from ncuadvisor.render.html import FULL_CARDS
from tests.synthetic import PAGE_SCRIPT, many_kernels, page_scripts, typed_result


def render_html(result, *args, **kw):
    return html_renderer.render_html(typed_result(result), *args, **kw)


def render_markdown(result, *args, **kw):
    return markdown_renderer.render_markdown(typed_result(result), *args, **kw)


PAYLOADS = [
    "<script>document.title='PWNED-script'</script>",
    '"><img src=x onerror="document.title=\'PWNED-img\'">',
    "`backticks` | pipes | {{ 7*7 }} {% raw %} </details></summary></section>",
    "</script><script>document.title='PWNED-json'</script>",
    "ünïcødé " + "𝔘" * 300 + " \u202e reversed",
]


def hostile(result):
    r = copy.deepcopy(result)
    for i, k in enumerate(r["kernels"]):
        p = PAYLOADS[i % len(PAYLOADS)]
        k["name"] = k["demangled"] = f"kernel_{i}<{p}>"
        k["nvtx"] = p
        for f in k["findings"]:
            f["title"] = p
            f["message"] = p
            for s in f["source"]:
                s["file"] = f"/src/{p}.cu"
                s["code"] = p
    r["report"]["path"] = r["report"]["name"] = PAYLOADS[1]
    return r


@pytest.fixture(scope="module", params=[31, 1000], ids=["31 kernels", "1000 kernels"])
def evil(analyzed, request):
    """The flaws report with hostile text everywhere; as is (every kernel a card, the JSON embedded), and copied at
    the result-dict level to 1,000 distinct kernels (the long tail as rows, no JSON block: a renderer test)."""
    flaws = analyzed("flaws")
    return hostile(flaws if request.param == len(flaws["kernels"]) else many_kernels(flaws, request.param))


def test_html_escapes_every_payload(evil):
    html = render_html(evil)
    assert "<script>document" not in html and "<img" not in html
    assert html.count("<details") == html.count("</details>")
    block = re.search(r'<script type="application/json" id="ncuadvisor-result">(.*?)</script>', html, re.S)
    if len(evil["kernels"]) <= FULL_CARDS:
        assert json.loads(block.group(1))["kernels"][0]["name"] == evil["kernels"][0]["name"]
    else:  # too big to embed: no JSON block, so no <script> element but the page's own
        assert block is None and html.lower().count("<script") == 1
    assert page_scripts(html) == [PAGE_SCRIPT]  # the page's script holds nothing of the result
    assert "{{ 7*7 }}" in html  # template syntax in data is shown, not evaluated


def test_markdown_escapes_every_payload(evil):
    md = render_markdown(evil)
    assert "<script>" not in md and "<img" not in md
    assert md.count("<details>") == md.count("</details>")
    for line in md.splitlines():
        if line.startswith("| ") and "kernel_" in line:
            assert "| pipes |" not in line


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs a headless Chromium (.ci/run installs it)")
def test_no_script_runs_in_a_real_browser(evil, tmp_path):
    page = tmp_path / "evil.html"
    page.write_text(render_html(evil))
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=2000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert dom, "chromium printed no DOM"
    title = re.search(r"<title>(.*?)</title>", dom, re.S).group(1).strip()
    assert title.startswith("ncuadvisor"), title  # a payload that ran would have replaced the whole title
    from html.parser import HTMLParser

    class Elements(HTMLParser):
        def __init__(self):
            super().__init__()
            self.bad = []

        def handle_starttag(self, tag, attrs):
            names = [a for a, _ in attrs]
            if tag == "img" or any(a.startswith("on") for a in names):
                self.bad.append((tag, attrs))
            if tag == "script" and ("type", "application/json") not in attrs and attrs:
                self.bad.append((tag, attrs))

    parser = Elements()
    parser.feed(dom)
    assert parser.bad == []  # no element the payloads tried to inject exists in the live DOM
    assert page_scripts(dom) == [PAGE_SCRIPT]  # the one bare <script> is the page's own, the template's text
    # every kernel is still there: a full card for the first FULL_CARDS by time, one row each for the rest
    for i in range(len(evil["kernels"])):
        assert (f'<section class="card" id="k{i}">' if i < FULL_CARDS else f'<tr id="k{i}">') in dom


@pytest.mark.parametrize("duration", [0.0, None, float("nan")])
def test_zero_or_missing_duration_does_not_crash(duration):
    r = roofline.compute({"gpu__time_duration.sum": duration, roofline.SOL_METRICS["memory_pct"]: 50.0})
    assert r.headroom is None and r.bound in {"memory", "compute", "latency", "launch", "unknown"}


def test_result_without_any_metric_renders(analyzed):
    r = copy.deepcopy(analyzed("probe"))
    for k in r["kernels"]:  # no metric at all: every other field of the roofline reads as its default (None, 0, {})
        k["roofline"] = {"duration_ns": None}
        k["headroom"] = None
    assert "copy_vec4" in render_html(r) and "copy_vec4" in render_markdown(r)
