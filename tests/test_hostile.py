"""Hostile input: untrusted names and source lines never execute or break the page; odd results never crash."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

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
        assert (f'<section class="card" id="k{i}">' if i < FULL_CARDS else f'<tr id="k{i}" data-index="{i + 1}"') in dom


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


# -- hostile or broken user rules (--rules-dir): nothing they do reaches the result, the gate or stdout ------------

RULE_HEAD = '''
import math, os, sys, time
from ncuadvisor.rulekit import ProgramRule, Rule

class Hostile({base}):
    """A user rule gone wrong."""
    code = "{code}"
    slug = "hostile"
    category = "latency"
    title = "hostile"
    requires = ("gpu__time_duration.sum",)
    languages = ("cuda", "triton", "pytorch", "library")

    def {method}(self, k):
'''


def user_rule(folder, body: str, program: bool = False, top: str = "", code: str = "USR900"):
    folder.mkdir(exist_ok=True)
    base, method = ("ProgramRule", "check_program") if program else ("Rule", "check")
    head = RULE_HEAD.format(base=base, method=method, code=code)
    (folder / f"{code}_hostile.py").write_text(top + head + "".join(f"        {ln}\n" for ln in body.splitlines()))
    return folder


def cli(*args, cwd, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *map(str, args)], cwd=cwd, env=env, capture_output=True, timeout=timeout
    )


ROOT = Path(__file__).resolve().parent.parent


EXITING = {False: "USR901", True: "USR902"}  # program rule? -> its code


@pytest.fixture(scope="module")
def exiting_rules(report_path, tmp_path_factory):
    """One folder with a kernel rule and a program rule that call sys.exit(0); the report of probe and the diff gate
    run with both (each command once, in a subprocess), and the gate without them."""
    tmp = tmp_path_factory.mktemp("exiting")
    rules = tmp / "rules"
    for program, code in EXITING.items():
        user_rule(rules, "sys.exit(0)", program, code=code)
    out = tmp / "out.json"
    report = cli("report", report_path("probe"), "--rules-dir", rules, "-o", out, cwd=tmp)
    before, after = report_path("pipeline_v1"), report_path("pipeline_v0")
    plain = cli("diff", before, after, "--fail-on", "regression", "-f", "json", cwd=tmp)
    gated = cli("diff", before, after, "--fail-on", "regression", "-f", "json", "--rules-dir", rules, cwd=tmp)
    return report, out.read_text() if out.exists() else "", plain, gated


@pytest.mark.parametrize("program", [False, True], ids=["kernel rule", "program rule"])
def test_a_rule_calling_sys_exit_fools_neither_the_gate_nor_the_output(exiting_rules, program):
    p, out, plain, gated = exiting_rules
    assert p.returncode == 0, p.stderr
    warnings = json.loads(out)["report"]["warnings"]
    assert any(EXITING[program] in w and "called sys.exit(0)" in w for w in warnings), warnings
    assert plain.returncode == 1, plain.stderr  # the gate without the rule: a regression
    assert gated.returncode == 1 and json.loads(gated.stdout), gated.stderr


PRINTING = {False: "USR903", True: "USR904"}  # program rule? -> its code, which its every print carries


@pytest.fixture(scope="module")
def printing_report(report_path, tmp_path_factory):
    """`ncuadvisor report probe -f json` (a subprocess) with a kernel rule and a program rule that print, write to
    file descriptor 1 and run a shell that echoes, each marked with its code."""
    tmp = tmp_path_factory.mktemp("printing")
    for program, code in PRINTING.items():
        body = f"print('{{not json {code}')\nos.write(1, b'raw fd write {code}')\nos.system('echo from a shell {code}')"
        user_rule(tmp / "r", body + "\nreturn None", program, code=code)
    return cli("report", report_path("probe"), "--rules-dir", tmp / "r", "-f", "json", cwd=tmp)


@pytest.mark.parametrize("program", [False, True], ids=["kernel rule", "program rule"])
def test_a_rule_printing_never_reaches_stdout(printing_report, program):
    p, code = printing_report, PRINTING[program].encode()
    assert p.returncode == 0, p.stderr
    json.loads(p.stdout)  # intact
    assert all(b"%s %s" % (text, code) in p.stderr for text in (b"{not json", b"raw fd write", b"from a shell"))


# code -> (body, the reason its warning gives); one folder of them, run once: each failure is its rule's alone
GARBAGE = {
    "USR910": ("return 'a finding'", "returned str, not a Finding"),
    "USR911": ("return [self.finding(message='m', fix='f', estimated_speedup=math.inf)]", "invalid finding"),
    "USR912": ("return self.finding(message='m', fix='f', estimated_speedup=float('nan'))", "invalid finding"),
    "USR913": ("return self.finding(message=b'bytes', fix='f', estimated_speedup=0.5)", "invalid finding"),
    "USR914": ("raise SystemExit('bye')", "called sys.exit('bye')"),
    "USR915": ("raise GeneratorExit", "GeneratorExit"),
}
PROGRAM_GARBAGE = "USR919"


@pytest.fixture(scope="module")
def garbage_report(report_path, tmp_path_factory):
    """`ncuadvisor report probe -f json` (a subprocess) with every rule of GARBAGE and a program rule returning
    garbage in one folder: the exit code and the report's warnings."""
    tmp = tmp_path_factory.mktemp("garbage")
    for code, (body, _) in GARBAGE.items():
        user_rule(tmp / "r", body, code=code)
    body = "return [self.finding(message='m', fix='f', estimated_saving_ns=-math.inf), 3]"
    user_rule(tmp / "r", body, True, code=PROGRAM_GARBAGE)
    p = cli("report", report_path("probe"), "--rules-dir", tmp / "r", "-f", "json", cwd=tmp)
    return p.returncode, p.stderr, json.loads(p.stdout)["report"]["warnings"] if p.returncode == 0 else []


@pytest.mark.parametrize("code", GARBAGE)
def test_a_rule_returning_garbage_is_skipped_with_its_reason(garbage_report, code):
    returncode, stderr, warnings = garbage_report
    assert returncode == 0, stderr
    reason = GARBAGE[code][1]
    assert any(f"rule {code} failed" in w and reason in w for w in warnings), warnings


def test_a_program_rule_returning_garbage_is_skipped_with_its_reason(garbage_report):
    returncode, stderr, warnings = garbage_report
    assert returncode == 0, stderr
    assert any(f"program rule {PROGRAM_GARBAGE} failed" in w and "invalid finding" in w for w in warnings), warnings
    # the other rules' failures are theirs: no warning names a rule but its own
    assert all(any(code in w for code in [*GARBAGE, PROGRAM_GARBAGE]) for w in warnings if "failed" in w), warnings


@pytest.mark.parametrize(
    "kind", ["fifo", "dev-zero", "huge", "exit-on-load", "print-on-load", "bad-requires", "link-loop", "directory"]
)
def test_a_rule_file_that_cannot_be_a_rule_is_one_line_and_exit_2(report_path, tmp_path, kind):
    rules = tmp_path / "r"
    rules.mkdir()
    target = rules / "USR900_hostile.py"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "huge":
        target.write_text("#" * (2 << 20))
    elif kind == "link-loop":
        target.symlink_to(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "exit-on-load":
        user_rule(rules, "return None", top="import sys\nsys.exit(0)\n")
    elif kind == "print-on-load":
        user_rule(rules, "return None", top="print('{not json')\n")
    else:
        user_rule(rules, "return None")
        target.write_text(target.read_text().replace('requires = ("gpu__time_duration.sum",)', "requires = 5"))
    p = cli("report", report_path("probe"), "--rules-dir", rules, "-f", "json", cwd=tmp_path, timeout=60)
    if kind == "print-on-load":  # a print is contained, not an error
        assert p.returncode == 0 and json.loads(p.stdout) and b"{not json" in p.stderr, p.stderr
        return
    lines = p.stderr.decode().strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("ncuadvisor: error:"), p.stderr
    assert "USR900_hostile.py" in lines[0] and p.stdout == b""


def test_a_looping_rule_is_stopped_at_its_time_limit(report_path, tmp_path, monkeypatch):
    from ncuadvisor.pipeline.analyze import analyze
    from ncuadvisor.rulekit import sandbox as rule_sandbox
    from ncuadvisor.rulekit.engine import discover

    monkeypatch.setattr(rule_sandbox, "RULE_TIME_LIMIT_S", 0.3)
    rules = discover([user_rule(tmp_path / "r", "while True:\n    pass")])
    res = analyze(report_path("probe"), rules=rules)
    assert any("USR900" in w and "time limit of 0.3 s" in w for w in res.report.warnings), res.report.warnings
    assert res.kernels


def test_a_rule_swallowing_its_time_limit_ends_the_command_with_one_line(report_path, tmp_path):
    body = "while True:\n    try:\n        time.sleep(1)\n    except BaseException:\n        pass"
    rules = user_rule(
        tmp_path / "r",
        body,
        top="import ncuadvisor.rulekit.sandbox as s\ns.RULE_TIME_LIMIT_S = 0.2\ns.RULE_TIME_GRACE_S = 0.5\n",
    )
    p = cli("report", report_path("probe"), "--rules-dir", rules, "-f", "json", cwd=tmp_path, timeout=60)
    assert p.returncode == 2 and p.stdout == b"", p.stderr
    assert p.stderr.decode().strip() == "ncuadvisor: error: a rule ran past its time limit of 0.2 s and did not stop"


def test_a_rule_timeout_outside_the_main_thread(tmp_path):
    import threading

    from ncuadvisor.rulekit.sandbox import call_rule

    def spin():
        while True:
            pass

    got = []
    t = threading.Thread(target=lambda: got.append(call_rule(spin, limit_s=0.2)))
    t.start()
    t.join(10)
    assert got == [(None, "ran past its time limit of 0.2 s")]


def test_line_breaks_and_invisible_characters_never_reach_the_terminal_or_markdown(analyzed, tmp_path):
    """A kernel name holding a newline, rich markup, an RLO override and a zero-width space: rendered for a pipe
    (exit 0, never a MarkupError), each on its own line, with no invisible character in the terminal or markdown."""
    r = copy.deepcopy(analyzed("probe"))
    bad = "evil\n[/]kernel[bold]\u202e\u200b"
    for k in r["kernels"]:
        k["name"] = k["demangled"] = bad + k["name"]
        for f in k["findings"]:
            f["title"] = bad + f["title"]
    for a in r.get("top_actions", []):
        a["kernel"] = bad + a["kernel"]
        a["title"] = bad + a["title"]
    saved = tmp_path / "evil.json"
    saved.write_text(json.dumps(r))
    term = cli("render", saved, cwd=tmp_path)
    assert term.returncode == 0, term.stderr
    md = cli("render", saved, "-f", "md", cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    for out in (term.stdout.decode(), md.stdout.decode()):
        assert "evil" in out and not any(ch in out for ch in "\u202e\u200b")
        assert not any(line.startswith("[/]kernel") for line in out.splitlines())
