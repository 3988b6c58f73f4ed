"""A fuzz campaign against the installed command line: damaged reports (truncation at every block boundary and at
random offsets, byte flips in block headers and in result payloads, unparseable block headers, crafted result counts,
zero-filled bombs behind the magic, non-UTF-8 and control characters in kernel names) and malformed saved JSON for
`render`. Each mutant is run through `python -m ncuadvisor` in a subprocess with a time limit, and its outcome
classified:

- ok: exit 0 and the output names only real kernels (a name, a duration > 0);
- refused: exit 2 with one `ncuadvisor: error:` line;
- partial: exit 0 or 4 with a `partial:` warning in the output;
- bad: a traceback, an internal error (exit 3), a native abort (a signal), a hang (killed after 60 s), over 10 s
  of CPU, over 1 GB, exit 0 with garbage (a kernel without a name or with 0 ns), the native library's log lines on
  stderr, or a file left in the private temp folder or beside the output.

The `faults` class (`fault_attacks`, `signal_at_exit`) is the campaign of hostile plug-ins and unlucky runs: user
rules that exit, print, loop, return garbage or are FIFOs and /dev/zero; stdout on a full disk and /dev/full; a report
replaced after its check; the diff gate across GPUs; configurations with nan, huge numbers and unrelated broken
pyproject.toml files; newlines, markup and RLO in names; link loops; `profile` options past their bounds, a hanging
program (`--timeout`) and a child left holding ncu's output (the fake ncu of tests/fake_ncu); `--force` over a
private file; host-trace bombs; SIGINT and SIGTERM the moment the output appears. Each is "ok" when the run does
what it must (its exit code, one line, the failure said, nothing lost), else counted as a traceback, a hang, exit 0
on garbage or data lost; the last line of the output sums the campaign up.

    python3 benchmarks/fuzz.py --count 200 --seed 1          # counts per class and outcome, as a markdown table
    python3 benchmarks/fuzz.py --count 20 --classes trunc     # one class
    python3 benchmarks/fuzz.py --classes faults               # the fault campaign alone (97 attacks, ~8 min)

`tests/test_fuzz.py` runs a small seeded part of the same mutations by default.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncuadvisor.reportfile.blocks import iter_blocks, u32  # noqa: E402

SMALL_FIXTURES = ("probe", "pipeline_v1", "tiny_sections")
TIME_LIMIT_S = 10.0  # CPU seconds of one run (user + system): what the run costs, whatever else the machine runs
HANG_S = 60.0  # wall seconds after which a run is killed and counted as a hang
MEMORY_LIMIT = 1 << 30


def plain(name: str) -> bytes:
    with lzma.open(ROOT / "fixtures" / f"{name}.ncu-rep.xz") as fh:
        return fh.read()


def mutants(data: bytes, rng: random.Random, classes: set[str], count: int) -> Iterator[tuple[str, str, bytes]]:
    """(class, label, bytes) of each mutant of one report."""
    blocks = list(iter_blocks(data))
    bounds = [8 + u32(data, 4)] + [b.payload_end for b in blocks]
    headers = []  # (start, end) of each block header
    i = 8 + u32(data, 4)
    for b in blocks:
        headers.append((i + 4, b.payload_start))
        i = b.payload_end
    payloads = [(b.payload_start, b.payload_end) for b in blocks if (b.header.get(2) or [0])[0]]
    if "trunc" in classes:
        for at in bounds[:-1]:
            yield "trunc-boundary", f"cut at block boundary {at}", data[:at]
        for _ in range(count):
            at = rng.randrange(1, len(data))
            yield "trunc-random", f"cut at {at}", data[:at]
    if "flip-header" in classes:
        for _ in range(count):
            s, e = rng.choice(headers)
            at = rng.randrange(s - 4, e)
            yield "flip-header", f"flip byte {at}", _flip(data, at, rng)
    if "flip-payload" in classes:
        for _ in range(count):
            s, e = rng.choice(payloads)
            at = rng.randrange(s, min(e, s + 4096)) if rng.random() < 0.5 else rng.randrange(s, e)
            yield "flip-payload", f"flip byte {at}", _flip(data, at, rng)
    if "unreadable-header" in classes:  # the walk must find the next block (or stop) and say what it skipped
        for _ in range(count):
            k = rng.randrange(len(headers))
            m = bytearray(data)
            m[headers[k][0]] = 0x0F  # the header's first field key: wire type 7, which no parser accepts
            yield "unreadable-header", f"block {k}'s header unparseable", bytes(m)
    if "count" in classes:
        for n in (2, 1 << 16, (1 << 32) + 1):
            yield "count", f"result count {n}", _crafted_count(data, headers, blocks, n)
    if "bomb" in classes:
        yield "bomb", "64 MB of zeros behind the magic", data[:8] + b"\0" * (64 << 20)
        yield "bomb", "1 KB of zeros behind the magic", data[:4] + b"\0" * 1024
        zeros = lzma.compress(bytes(16 << 20), preset=0)
        yield "bomb-xz", "1 GB of zeros behind a whole report head (.xz)", lzma.compress(data[: bounds[2]]) + zeros * 64
        yield "bomb-xz", "the report cut in half (.xz)", lzma.compress(data[: len(data) // 2])
    if "text" in classes:
        for label, name in (
            ("latin-1 byte", b"k\xe9rnel_\xff"),
            ("terminal escapes", b"\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://x\x07k\x1b]8;;\x07"),
            ("rich markup", b"[link=http://x]k[/link][bold red]"),
        ):
            yield "text", label, _rename(data, name)


def _flip(data: bytes, at: int, rng: random.Random) -> bytes:
    b = bytearray(data)
    b[at] ^= 1 << rng.randrange(8)
    return bytes(b)


def _crafted_count(data: bytes, headers: list[tuple[int, int]], blocks: list, n: int) -> bytes:
    """The first result block's header with its result count (field 2) set to n, the header's length adjusted."""
    k = next(k for k, b in enumerate(blocks) if (b.header.get(2) or [0])[0])
    s, e = headers[k]
    h = data[s:e]
    old = b"\x10\x01"
    at = h.find(old)
    if at < 0:
        return data
    v, out = n, bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        out.append(c | (0x80 if v else 0))
        if not v:
            break
    nh = h[:at] + b"\x10" + bytes(out) + h[at + 2 :]
    return data[: s - 4] + len(nh).to_bytes(4, "little") + nh + data[e:]


def _rename(data: bytes, name: bytes) -> bytes:
    """Every occurrence of the first result's function name replaced by `name` where the protobuf length allows
    (same length: padded or cut), so the layout stays valid and only the text is hostile."""
    from ncuadvisor.reportfile.fastread import _classes

    classes = _classes()
    assert classes is not None
    blocks = list(iter_blocks(data))
    b = next(b for b in blocks if (b.header.get(2) or [0])[0])
    n = u32(data, b.payload_start)
    r = classes[1].FromString(data[b.payload_start + 4 : b.payload_start + 4 + n])
    old = r.function
    new = (name * (len(old) // len(name) + 1))[: len(old)]
    return data.replace(old, new)


def json_mutants(saved: dict, rng: random.Random) -> Iterator[tuple[str, str, bytes]]:
    """(class, label, bytes) of malformed saved results for `render`."""
    import copy

    def with_(label: str, edit) -> tuple[str, str, bytes]:
        d = copy.deepcopy(saved)
        edit(d)
        return "json", label, json.dumps(d).encode()

    yield with_("kernels as numbers", lambda d: d.__setitem__("kernels", [1, 2, 3]))
    yield with_("a string speedup", lambda d: d["kernels"][0].__setitem__("duration_ns", "fast"))
    yield with_(
        "markup and escapes in a bound", lambda d: d["kernels"][0].__setitem__("bound", "[link=x]m\x1b]0;t\x07")
    )
    yield with_("escapes in a name", lambda d: d["kernels"][0].__setitem__("name", "\x1b[2J\x1b]8;;http://x\x07k"))
    yield with_("no kernels", lambda d: d.__setitem__("kernels", []))
    yield with_("schema version 99", lambda d: d.__setitem__("schema_version", 99))
    text = json.dumps(saved)
    yield "json", "lone surrogate", text.replace('"name": "', '"name": "\\udc80', 1).encode()
    yield "json", "NaN", text.replace('"duration_ns": ', '"duration_ns": NaN, "x": ', 1).encode()
    yield "json", "100k-deep nesting", b"[" * 100_000 + b"]" * 100_000
    yield (
        "json",
        "5000-digit number",
        text.replace('"duration_ns": ', '"duration_ns": ' + "9" * 5000 + ', "x": ', 1).encode(),
    )
    yield "json", "not UTF-8", text.encode()[:200] + b"\xff\xfe" + text.encode()[200:]
    for _ in range(4):
        b = bytearray(text.encode())
        at = rng.randrange(len(b))
        yield "json", f"cut at {at}", bytes(b[:at])


def run_render(data: bytes, work: Path, fmt: str) -> tuple[str, float, int]:
    """Write one saved-result mutant, render it to `fmt` on stdout, classify: exit 0 or one line and exit 2."""
    import shutil

    for p in work.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    src = work / "saved.json"
    src.write_bytes(data)
    rc, out, err, seconds, rss = run_cli(["render", str(src), "-f", fmt], work)
    left = [str(p) for p in (work / "tmp").rglob("*")] + [p.name for p in work.iterdir() if p.name.startswith(".")]
    if rc is None:
        return "bad: hang", seconds, rss
    if "Traceback" in err or rc == 3 or rc < 0:
        return f"bad: exit {rc}", seconds, rss
    if left:
        return "bad: left files", seconds, rss
    if rc == 2:
        lines = [x for x in err.splitlines() if x.startswith("ncuadvisor: error:")]
        return ("refused" if len(lines) == 1 else "bad: refusal without one line"), seconds, rss
    if rc == 0 and fmt == "terminal" and any(c in out for c in ("\x1b]", "\x07", "\x1b[2J")):
        return "bad: escape sequence on the terminal", seconds, rss
    return ("ok" if rc == 0 else f"bad: exit {rc}"), seconds, rss


# The command line run by a small driver that writes its own peak RSS (and its workers') at exit. Linux keeps a
# process's RSS high-water mark across exec, so the peak that getrusage reports for a child of a big process (a test
# run) starts at its parent's size: the driver reads its own image's high-water mark (VmHWM) instead.
_DRIVER = (
    "import atexit, resource, runpy, sys\n"
    "f = sys.argv.pop(1)\n"
    "def peak():\n"
    "    own = 0\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            own = int(line.split()[1])\n"
    "    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "    open(f, 'w').write(str(max(own, workers) * 1024))\n"
    "atexit.register(peak)\n"
    "sys.argv[0] = 'ncuadvisor'\n"
    "runpy.run_module('ncuadvisor', run_name='__main__')\n"
)


def run_cli(args: list[str], cwd: Path, timeout: float = HANG_S) -> tuple[int | None, str, str, float, int]:
    """(exit code or None on a hang, stdout, stderr, CPU seconds, peak RSS bytes of the run)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(cwd / "tmp"), COLUMNS="120")
    (cwd / "tmp").mkdir(exist_ok=True)
    peak_file = cwd / "tmp" / "peak_rss"
    peak_file.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run(
            [sys.executable, "-c", _DRIVER, str(peak_file), *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            timeout=timeout,
        )
        rc: int | None = p.returncode
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", ""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        rss = int(peak_file.read_text())
        peak_file.unlink()
    except (OSError, ValueError):
        rss = 0
    return rc, out, err, cpu, rss


def classify(rc: int | None, out: str, err: str, seconds: float, left: list[str]) -> str:
    """The outcome of one run (see the module docstring)."""
    if rc is None:
        return "bad: hang"
    if "Traceback" in err or "Traceback" in out:
        return "bad: traceback"
    if rc < 0 or rc in (134, 139):
        return "bad: abort"
    if rc == 3:
        return "bad: internal error"
    if seconds > TIME_LIMIT_S:
        return "bad: slow"
    if left:
        return "bad: left files"
    if rc == 2:
        lines = [x for x in err.splitlines() if x.startswith("ncuadvisor: error:")]
        return "refused" if len(lines) == 1 else "bad: refusal without one line"
    if rc in (0, 4):
        if any(m in err for m in ("absl::", "Can't parse", "libprotobuf", "WARNING: All log messages")):
            return "bad: native log on stderr"
        try:
            d = json.loads(out)
        except ValueError:
            return "bad: exit 0 with no JSON"
        kernels = d.get("kernels") or []
        if not kernels or any(not k.get("name") or not (k.get("duration_ns") or 0) > 0 for k in kernels):
            return "bad: exit 0 with garbage"
        partial = any(str(w).startswith("partial") for w in d["report"].get("warnings") or [])
        return "partial" if partial else "ok"
    return f"bad: exit {rc}"


def run_report(data: bytes, work: Path, suffix: str = ".ncu-rep") -> tuple[str, float, int]:
    """Write one mutant, run `report -f json` on it, classify; everything under `work` is removed after."""
    import shutil

    for p in work.iterdir():  # a hang was killed (SIGKILL): what it left is counted there, not here
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    src = work / f"mutant{suffix}"
    src.write_bytes(data)
    rc, out, err, seconds, rss = run_cli(["report", str(src), "-f", "json"], work)
    left = [str(p) for p in (work / "tmp").rglob("*")] + [p.name for p in work.iterdir() if p.name.startswith(".")]
    outcome = classify(rc, out, err, seconds, left)
    if rss > MEMORY_LIMIT and not outcome.startswith("bad"):
        outcome = "bad: over 1 GB"
    return outcome, seconds, rss


def campaign(count: int, seed: int, classes: set[str], fixtures: tuple[str, ...], budget_s: float) -> dict:
    rng = random.Random(seed)
    counts: Counter[tuple[str, str]] = Counter()
    worst_s, worst_rss, bad = 0.0, 0, []  # CPU seconds, bytes
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ncuadvisor-fuzz-") as d:
        work = Path(d)
        if "json" in classes:
            src = work / "base.ncu-rep"
            src.write_bytes(plain(fixtures[0]))
            rc, out, _err, _s, _r = run_cli(["report", str(src), "-f", "json"], work)
            for cls, label, mutant in json_mutants(json.loads(out), rng):
                for fmt in ("terminal", "md", "json"):
                    outcome, seconds, rss = run_render(mutant, work, fmt)
                    counts[(f"{cls}-{fmt}", outcome)] += 1
                    worst_s, worst_rss = max(worst_s, seconds), max(worst_rss, rss)
                    if outcome.startswith("bad"):
                        bad.append(f"{cls} {label} -f {fmt}: {outcome}")
        for name in fixtures:
            data = plain(name)
            for cls, label, mutant in mutants(data, rng, classes, count):
                if time.monotonic() - t0 > budget_s:
                    break
                outcome, seconds, rss = run_report(mutant, work, ".ncu-rep.xz" if cls == "bomb-xz" else ".ncu-rep")
                counts[(cls, outcome)] += 1
                worst_s, worst_rss = max(worst_s, seconds), max(worst_rss, rss)
                if outcome.startswith("bad"):
                    bad.append(f"{name} {cls} {label}: {outcome}")
    return {"counts": counts, "worst_s": worst_s, "worst_rss": worst_rss, "bad": bad}


# -- faults: hostile plug-ins, failing outputs, files changing while read, options and names that fool a check -------
# Each attack is (label, build) where build(work) sets files up under `work` and returns an Attack: the command line,
# the exit codes that are right, and a check of what it printed and left (None: right; else what went wrong, as one
# of the campaign's counted kinds: "exit 0 on garbage", "data lost", ...).

RULE_HEAD = (
    "import math, os, sys, time\n"
    "from ncuadvisor.rulekit import ProgramRule, Rule\n"
    "{top}\n"
    "class Hostile({base}):\n"
    '    """A user rule gone wrong."""\n'
    '    code = "USR900"\n'
    '    slug = "hostile"\n'
    '    category = "latency"\n'
    '    title = "hostile"\n'
    '    requires = ("gpu__time_duration.sum",)\n'
    '    languages = ("cuda", "triton", "pytorch", "library")\n'
    "    {decl}\n"
    "    def {method}(self, k):\n"
)
FAKE_NCU = ROOT / "tests" / "fake_ncu"


class Attack:
    def __init__(self, args: list[str], codes: tuple[int, ...], check=None, stdout=None, limit=None, env=None):
        self.args, self.codes, self.check = args, codes, check
        self.stdout, self.limit, self.env = stdout, limit, env or {}


def _rules(work: Path, body: str, program: bool = False, top: str = "", decl: str = "") -> Path:
    folder = work / "rules"
    folder.mkdir(exist_ok=True)
    head = RULE_HEAD.format(
        top=top, decl=decl, base="ProgramRule" if program else "Rule", method="check_program" if program else "check"
    )
    (folder / "USR900_hostile.py").write_text(head + "".join(f"        {ln}\n" for ln in body.splitlines()))
    return folder


def _json_with(needle: str | None = None):
    """A check: stdout is a result whose warnings hold `needle` (a rule's failure said, not swallowed)."""

    def check(out: str, err: str, work: Path) -> str | None:
        try:
            d = json.loads(out)
        except ValueError:
            return "exit 0 on garbage"
        if needle and not any(needle in str(w) for w in d.get("report", {}).get("warnings", [])):
            return "failure not said"
        return None

    return check


def _file_json(name: str, needle: str | None = None):
    def check(out: str, err: str, work: Path) -> str | None:
        f = work / name
        return _json_with(needle)(f.read_text(), err, work) if f.exists() else "data lost"

    return check


def _one_line(out: str, err: str, work: Path) -> str | None:
    lines = [x for x in err.splitlines() if x.strip()]
    return None if len(lines) == 1 and lines[0].startswith("ncuadvisor: ") else "not one line"


def fault_attacks(work: Path) -> Iterator[tuple[str, str, Any]]:
    """(group, label, build) of every fault attack; build(work) -> Attack."""
    rep = str(work / "r.ncu-rep")
    other = str(work / "other.ncu-rep")
    kernel_bodies = {
        "sys.exit(0)": ("sys.exit(0)", "called sys.exit(0)"),
        "SystemExit('x')": ("raise SystemExit('x')", "called sys.exit"),
        "print()": ("print('{not json')\nreturn None", None),
        "os.write(1)": ("os.write(1, b'{raw')\nreturn None", None),
        "os.system(echo)": ("os.system('echo {shell')\nreturn None", None),
        "returns str": ("return 'x'", "returned str"),
        "returns dict": ("return {'rule': 'X'}", "returned dict"),
        "returns [1]": ("return [1]", "returned int"),
        "returns inf": ("return self.finding(message='m', fix='f', estimated_speedup=math.inf)", "invalid finding"),
        "returns nan": ("return self.finding(message='m', fix='f', estimated_speedup=math.nan)", "invalid finding"),
        "returns bytes": ("return self.finding(message=b'm', fix='f', estimated_speedup=0.5)", "invalid finding"),
        "raises GeneratorExit": ("raise GeneratorExit", "GeneratorExit"),
        "raises with a broken __str__": (
            "class E(Exception):\n    def __str__(self):\n        raise ValueError\nraise E()",
            "cannot be shown",
        ),
        "loops": ("while True:\n    pass", "time limit"),
        "sleeps": ("time.sleep(3600)", "time limit"),
    }
    fast = "import ncuadvisor.rulekit.sandbox as _s\n_s.RULE_TIME_LIMIT_S = 0.5\n_s.RULE_TIME_GRACE_S = 1.0\n"
    for program in (False, True):
        kind = "program rule" if program else "kernel rule"
        for label, (body, needle) in kernel_bodies.items():
            if program:  # a program finding's number is its saving
                body = body.replace("estimated_speedup", "estimated_saving_ns")
            yield (
                "rules",
                f"{kind} {label} (report -f json)",
                lambda w, b=body, n=needle, p=program: Attack(
                    ["report", rep, "-f", "json", "--rules-dir", str(_rules(w, b, p, top=fast))], (0,), _json_with(n)
                ),
            )
        yield (
            "rules",
            f"{kind} sys.exit(0) (report -o)",
            lambda w, p=program: Attack(
                ["report", rep, "-o", str(w / "o.json"), "--rules-dir", str(_rules(w, "sys.exit(0)", p))],
                (0,),
                _file_json("o.json", "called sys.exit(0)"),
            ),
        )
        yield (
            "rules",
            f"{kind} sys.exit(0) (diff --fail-on regression: a regression)",
            lambda w, p=program: Attack(
                ["diff", rep, other, "--fail-on", "regression", "-f", "json"]
                + ["--rules-dir", str(_rules(w, "sys.exit(0)", p))],
                (1,),
                _json_with_diff,
            ),
        )

    def rule_file(w: Path, how: str) -> Attack:
        folder = w / "rules"
        folder.mkdir(exist_ok=True)
        target = folder / "USR900_hostile.py"
        if how == "fifo":
            os.mkfifo(target)
        elif how == "dev-zero":
            target.symlink_to("/dev/zero")
        elif how == "2 MiB":
            target.write_text("#" * (2 << 20))
        elif how == "directory":
            target.mkdir()
        elif how == "link loop":
            target.symlink_to(target)
        else:
            _rules(
                w, "return None", top=how if how != "requires = 5" else "", decl=how if how == "requires = 5" else ""
            )
        return Attack(["report", rep, "-f", "json", "--rules-dir", str(folder)], (2,), _one_line)

    for how in (
        "fifo",
        "dev-zero",
        "2 MiB",
        "directory",
        "link loop",
        "sys.exit(0)",
        "requires = 5",
        "while True: pass",
        "x = (",
        "import _no_such_module_",
    ):
        top = how if how not in ("while True: pass",) else "import ncuadvisor.rulekit.sandbox as _s\nwhile True: pass"
        yield "rules", f"rule file: {how}", lambda w, h=top: rule_file(w, h)

    def full(fmt_args: list[str], fill: int) -> Any:
        return lambda w: Attack(fmt_args, (2,), _one_line, stdout="full", limit=fill)

    saved = str(work / "saved.json")
    for label, argv in {
        "report -f json": ["report", rep, "-f", "json"],
        "report -f html": ["report", rep, "-f", "html"],
        "report -f md": ["report", rep, "-f", "md"],
        "report -f sarif": ["report", rep, "-f", "sarif"],
        "report (terminal)": ["report", rep],
        "render -f html": ["render", saved, "-f", "html"],
        "render -f md": ["render", saved, "-f", "md"],
        "diff -f md": ["diff", other, rep, "-f", "md"],
    }.items():
        yield "stdout", f"{label} > a full disk (file size limit)", full(argv, 512)
        yield "stdout", f"{label} > /dev/full", lambda w, a=argv: Attack(a, (2,), _one_line, stdout="/dev/full")

    for what in ("another report", "garbage"):
        yield "replaced", f"report replaced by {what} after its check", lambda w, x=what: _replaced(w, rep, other, x)

    def cross(w: Path, allow: bool) -> Attack:
        d = json.loads(Path(saved).read_text())
        d["report"]["device"]["name"] = "NVIDIA A100-SXM4-80GB"
        (w / "a100.json").write_text(json.dumps(d))
        extra = ["--allow-cross-device"] if allow else []
        return Attack(["diff", saved, str(w / "a100.json"), "--fail-on", "regression", *extra], (0,) if allow else (2,))

    yield "gate", "diff --fail-on across GPUs", lambda w: cross(w, False)
    yield "gate", "diff --fail-on across GPUs --allow-cross-device", lambda w: cross(w, True)

    def config(w: Path, text: str, where: str, codes: tuple[int, ...]) -> Attack:
        sub = w / "a" / "b"
        sub.mkdir(parents=True, exist_ok=True)
        (w / where).write_bytes(text.encode("utf-8", "surrogateescape"))
        return Attack(
            ["report", rep, "-f", "json"], codes, _one_line if codes == (2,) else _json_with(), env={"CWD": str(sub)}
        )

    for value in ("nan", "-inf", "inf", "1" * 400):
        text = f"[thresholds.MEM001]\nmin_excess_fraction = {value}\n"
        yield "config", f"threshold {value[:12]}", lambda w, t=text: config(w, t, "a/ncuadvisor.toml", (2,))
    for label, text in {
        "invalid TOML": "this is [not toml",
        "5,000 nested arrays": "x = " + "[" * 5000 + "]" * 5000 + "\n",
        "not UTF-8": "\udcff\n",
    }.items():
        yield (
            "config",
            f"unrelated pyproject.toml above: {label}",
            lambda w, t=text: config(w, t, "pyproject.toml", (0,)),
        )
        yield (
            "config",
            f"ncuadvisor's pyproject.toml above: {label}",
            lambda w, t=text: config(w, "[tool.ncuadvisor]\n" + t, "pyproject.toml", (2,)),
        )

    def names(w: Path, fmt: list[str]) -> Attack:
        d = json.loads(Path(saved).read_text())
        bad = "evil\n[/]kernel[bold]\u202e\u200b"
        for k in d["kernels"]:
            k["name"] = k["demangled"] = bad + k["name"]
        for a in d.get("top_actions", []):
            a["kernel"] = bad + a["kernel"]
        (w / "evil.json").write_text(json.dumps(d))

        def check(out: str, err: str, work: Path) -> str | None:
            hidden = any(c in out for c in "\u202e\u200b") or any(x.startswith("[/]kernel") for x in out.splitlines())
            return "exit 0 on garbage" if hidden else None

        return Attack(["render", str(w / "evil.json"), *fmt], (0,), check)

    yield "names", "newline, markup, RLO in a name (terminal, piped)", lambda w: names(w, [])
    yield "names", "newline, markup, RLO in a name (markdown)", lambda w: names(w, ["-f", "md"])

    def loop(w: Path) -> Attack:
        (w / "loop.ncu-rep").symlink_to(w / "loop.ncu-rep")
        return Attack(["report", str(w / "loop.ncu-rep")], (2,), _one_line)

    yield "paths", "a report that is a link loop", loop
    for opt in (["--top", "99999999999999999999999"], ["--launch-skip", "99999999999999999999999"]):
        yield (
            "options",
            f"profile {' '.join(opt)}",
            lambda w, o=opt: Attack(
                ["profile", *o, "-o", str(w / "p.json"), "--", sys.executable, "-c", "open('ran', 'w')"],
                (2,),
                lambda out, err, work: "data lost" if (work / "ran").exists() else _one_line(out, err, work),
                env={"PATH": f"{FAKE_NCU}{os.pathsep}{os.environ.get('PATH', '')}"},
            ),
        )

    fake = {"PATH": f"{FAKE_NCU}{os.pathsep}{os.environ.get('PATH', '')}"}
    yield (
        "profile",
        "a hanging program, --timeout 2",
        lambda w: Attack(
            ["profile", "--timeout", "2", "-o", str(w / "p.json"), str(FAKE_NCU / "target.py")],
            (4,),
            _file_json("p.json", "stopped at --timeout"),
            env={**fake, "FAKE_NCU_SCENARIO": "phase1:hang"},
        ),
    )

    def forks(w: Path) -> Attack:
        (w / "forks.py").write_text(
            "import subprocess, sys\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
            "open('child.pid', 'w').write(str(c.pid))\n"
        )

        def check(out: str, err: str, work: Path) -> str | None:
            pid = int((work / "child.pid").read_text())
            if _running(pid):
                return "child left running"
            return _file_json("p.json")(out, err, work)

        return Attack(
            ["profile", "-o", str(w / "p.json"), str(w / "forks.py")],
            (0,),
            check,
            env={**fake, "FAKE_NCU_SCENARIO": "passthrough"},
        )

    yield "profile", "a child the program left holding the output pipe", forks

    def imitates(w: Path, printed: str) -> Attack:
        (w / "imitates.py").write_text(f"print({printed!r})\n")
        return Attack(
            ["profile", "-o", str(w / "p.json"), str(w / "imitates.py")], (0,), _file_json("p.json"), env=fake
        )

    for label, printed in {
        "ERR_NVGPUCTRPERM": "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission",
        "fifty progress lines": "\n".join(
            f'==PROF== Profiling "tiny_add" - {i}: 0%....100% - 1 pass' for i in range(50)
        ),
        "an error code": "==ERROR== The application returned an error code (3).",
    }.items():
        yield "profile", f"the program prints ncu's {label}", lambda w, t=printed: imitates(w, t)

    def private(w: Path) -> Attack:
        (w / "o.json").write_text("old")
        (w / "o.json").chmod(0o600)

        def check(out: str, err: str, work: Path) -> str | None:
            return None if (work / "o.json").stat().st_mode & 0o777 == 0o600 else "data lost"

        return Attack(["report", rep, "-o", str(w / "o.json"), "--force"], (0,), check)

    yield "outputs", "--force over a 0600 output", private

    def trace_bomb(w: Path, kind: str) -> Attack:
        import gzip

        t = w / "trace.json"
        if kind == "gzip":
            with gzip.open(t, "wb", compresslevel=1) as f:
                for _ in range(600):
                    f.write(b" " * (1 << 20))
        else:
            t.write_bytes(b"[" * 100_000 + b"]" * 100_000)
        return Attack(["report", rep, "--host-trace", str(t)], (2,), _one_line)

    yield "host-trace", "gzip of 600 MB of spaces", lambda w: trace_bomb(w, "gzip")
    yield "host-trace", "100,000 nested [", lambda w: trace_bomb(w, "nested")

    def capped(w: Path, cap: str) -> Attack:
        (w / "r.ncu-rep.xz").write_bytes(lzma.compress((w / "r.ncu-rep").read_bytes(), preset=0))
        return Attack(["report", str(w / "r.ncu-rep.xz")], (2,), _one_line, env={"NCUADVISOR_MAX_DECOMPRESSED": cap})

    yield "huge", "a .xz past NCUADVISOR_MAX_DECOMPRESSED=1M", lambda w: capped(w, "1M")
    yield "huge", "NCUADVISOR_MAX_DECOMPRESSED=lots", lambda w: capped(w, "lots")

    def big_saved(w: Path) -> Attack:
        """A saved result past the size read a kernel at a time (its kernels copied), cut in half (rendering a whole
        one takes minutes of a shared machine's wall time: tests/test_saved_stream.py renders one)."""
        sys.path.insert(0, str(ROOT))
        from ncuadvisor.saved.stream import STREAM_FROM
        from tests.synthetic import write_many_kernels

        saved = json.loads((w / "saved.json").read_text())
        each = max(1, len(json.dumps(saved["kernels"])) // max(1, len(saved["kernels"])))
        big = w / "big.json"
        write_many_kernels(saved, STREAM_FROM // each + 100, big)
        data = big.read_bytes()
        big.write_bytes(data[: len(data) // 2])
        return Attack(["render", str(big), "-f", "md"], (2,), _one_line)

    yield "huge", "a 32 MiB saved result cut in half, render -f md", big_saved


def _running(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    for _ in range(20):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.05)
    return True


def _json_with_diff(out: str, err: str, work: Path) -> str | None:
    try:
        json.loads(out)
    except ValueError:
        return "exit 0 on garbage"
    return None


_REPLACE_DRIVER = """
import os, sys
from ncuadvisor.load import reader
from ncuadvisor.cli.app import run
path, other = sys.argv[1], sys.argv[2]
checked = reader.ReportReader._checked
def checked_then_replaced(self, local, metrics):
    found = checked(self, local, metrics)
    os.replace(other, path)
    return found
reader.ReportReader._checked = checked_then_replaced
sys.argv = ["ncuadvisor", "report", path, "-f", "json"]
run()
"""


def _replaced(work: Path, rep: str, other: str, what: str) -> Attack:
    swap = work / "swap"
    data = Path(rep).read_bytes()
    swap.write_bytes(Path(other).read_bytes() if what == "another report" else data[: len(data) // 3] + bytes(999))
    expected = [k["name"] for k in json.loads(Path(work / "saved.json").read_text())["kernels"]]

    def check(out: str, err: str, w: Path) -> str | None:
        try:
            got = [k["name"] for k in json.loads(out)["kernels"]]
        except (ValueError, KeyError):
            return "exit 0 on garbage"
        return None if got == expected else "exit 0 on garbage"

    a = Attack(["-c", _REPLACE_DRIVER, rep, str(swap)], (0,), check)
    a.raw = True  # type: ignore[attr-defined]
    return a


def run_attack(attack: Attack, work: Path) -> tuple[str, float, int]:
    """Run one fault attack in `work` and classify it: "ok", or "bad: <kind>" (traceback, hang, exit 0 on garbage,
    data lost, wrong exit, not one line)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(work / "tmp"), COLUMNS="120", **attack.env)
    cwd = Path(env.pop("CWD", str(work)))
    (work / "tmp").mkdir(exist_ok=True)
    peak_file = work / "tmp" / "peak_rss"
    peak_file.unlink(missing_ok=True)
    raw = getattr(attack, "raw", False)
    argv = [sys.executable, *attack.args] if raw else [sys.executable, "-c", _DRIVER, str(peak_file), *attack.args]
    before_inputs = {p: p.read_bytes() for p in (work / "r.ncu-rep", work / "other.ncu-rep") if p.is_file()}

    def limits() -> None:
        if attack.limit:
            import signal

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (attack.limit, attack.limit))

    out_target = work / "stdout.txt" if attack.stdout == "full" else attack.stdout
    t0 = time.monotonic()
    try:
        with open(out_target, "wb") if out_target else open(os.devnull, "rb") as sink:
            p = subprocess.run(
                argv,
                cwd=cwd,
                env=env,
                stdout=sink if out_target else subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                timeout=HANG_S,
                preexec_fn=limits,
            )
        rc: int | None = p.returncode
        out = (p.stdout or b"").decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", ""
    seconds = time.monotonic() - t0
    try:
        rss = int(peak_file.read_text())
    except (OSError, ValueError):
        rss = 0
    if rc is None:
        return "bad: hang", seconds, rss
    if "Traceback" in err or "Exception ignored" in err or rc == 3 or rc < 0 or rc in (134, 139):
        return "bad: traceback", seconds, rss
    if any(p.read_bytes() != data for p, data in before_inputs.items()) and not raw:
        return "bad: data lost", seconds, rss
    if rc not in attack.codes:
        return ("bad: exit 0 on garbage" if rc == 0 else f"bad: exit {rc}"), seconds, rss
    why = attack.check(out, err, work) if attack.check else None
    return ("bad: " + why if why else "ok"), seconds, rss


def signal_at_exit(work: Path, sig: int, delay: float) -> str:
    """`report` of a compressed report (a private decompressed copy), sent `sig` `delay` s after its output
    appears: "ok" when it ends with exit 0 or one line and 130, no traceback and nothing left in TMPDIR."""
    import select
    import signal

    src = work / "r.ncu-rep.xz"
    if not src.exists():
        src.write_bytes(lzma.compress(plain("probe"), preset=0))
    tmp = work / "tmp"
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp))
    p = subprocess.Popen(
        [sys.executable, "-m", "ncuadvisor", "report", str(src), "-f", "json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    select.select([p.stdout], [], [], HANG_S)
    time.sleep(delay)
    p.send_signal(sig)
    try:
        _out, err = p.communicate(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return "bad: hang"
    if b"Traceback" in err or b"Exception ignored" in err or p.returncode not in (0, signal.SIGINT + 128, 130):
        return "bad: traceback"
    if p.returncode == 130 and len(err.decode().strip().splitlines()) != 1:
        return "bad: not one line"
    return "bad: data lost" if any(tmp.iterdir()) else "ok"


def fault_campaign(fixture: str = "pipeline_v1", other: str = "pipeline_v0") -> dict:
    """Every fault attack once, each in a fresh folder holding the report, another report and the report's saved
    result."""
    import shutil

    counts: Counter[tuple[str, str]] = Counter()
    worst_rss, bad = 0, []
    with tempfile.TemporaryDirectory(prefix="ncuadvisor-faults-") as d:
        base = Path(d) / "base"
        base.mkdir()
        (base / "r.ncu-rep").write_bytes(plain(fixture))
        (base / "other.ncu-rep").write_bytes(plain(other))
        rc, out, _err, _s, _r = run_cli(["report", str(base / "r.ncu-rep"), "-f", "json"], base)
        (base / "saved.json").write_text(out)
        shutil.rmtree(base / "tmp", ignore_errors=True)
        for group, label, build in list(fault_attacks(Path(d) / "w")):
            work = Path(d) / "w"
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work, symlinks=True)
            outcome, _seconds, rss = run_attack(build(work), work)
            counts[(f"faults-{group}", outcome)] += 1
            worst_rss = max(worst_rss, rss)
            if outcome.startswith("bad"):
                bad.append(f"{group} {label}: {outcome}")
        import signal

        for sig in (signal.SIGINT, signal.SIGTERM):
            for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
                work = Path(d) / "w"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
                outcome = signal_at_exit(work, sig, delay)
                counts[("faults-signals", outcome)] += 1
                if outcome.startswith("bad"):
                    bad.append(f"signals {signal.Signals(sig).name} {delay * 1000:g} ms after the output: {outcome}")
    return {"counts": counts, "worst_s": 0.0, "worst_rss": worst_rss, "bad": bad}


_NATIVE_CHILD = r"""
import sys, ncu_report
for p in sys.argv[1:]:
    print(p, flush=True)
    c = ncu_report.load_report(p)
    for r in range(c.num_ranges() if c else 0):
        rg = c.range_by_idx(r)
        for a in range(rg.num_actions()):
            rg.action_by_idx(a).name()
"""


def native_sweep(name: str, n: int, seed: int) -> None:
    """One-bit flips in the small block headers of a report, each loaded by ncu_report itself (no ncuadvisor in
    between): which abort the native library, and what the strict walk says of those (and of the copy of their
    whole blocks, which ncuadvisor hands the library instead)."""
    from ncuadvisor.reportfile.integrity import check_report, write_whole_copy

    data = plain(name)
    spans, i = [], 8 + u32(data, 4)
    for b in iter_blocks(data):
        if b.payload_start - i < 400:  # the headers without the metric-name table
            spans.append((i, b.payload_start))
        i = b.payload_end
    rng = random.Random(seed)
    cases = [(at, rng.randrange(8)) for s, e in spans for at in range(s, e)]
    rng.shuffle(cases)
    with tempfile.TemporaryDirectory(prefix="ncuadvisor-fuzz-") as d:
        paths = []
        for k, (at, bit) in enumerate(cases[:n]):
            m = bytearray(data)
            m[at] ^= 1 << bit
            paths.append(Path(d) / f"m{k}.ncu-rep")
            paths[-1].write_bytes(bytes(m))

        def aborts(todo: list[Path]) -> list[tuple[Path, int]]:
            out = []
            while todo:
                p = subprocess.run(
                    [sys.executable, "-c", _NATIVE_CHILD, *map(str, todo)], capture_output=True, text=True
                )
                if p.returncode == 0:
                    break
                done = p.stdout.split()
                last = Path(done[-1]) if done else todo[0]
                out.append((last, p.returncode))
                todo = todo[todo.index(last) + 1 :]
            return out

        bad = aborts(paths)
        print(f"{name}: {len(paths)} one-bit header flips; ncu_report aborts on {len(bad)}")
        copies = []
        for path, rc in bad:
            found = check_report(path)
            verdict = "refused" if found.whole == 0 else "damaged" if found.damaged else "PASSED AS WHOLE"
            print(f"  {path.name}: exit {rc}; strict walk: {verdict} ({found.summary()})")
            if found.damaged and found.whole:
                copies.append(path.with_suffix(".whole"))
                write_whole_copy(path, found, copies[-1])
        print(f"  copies of their whole blocks that ncu_report aborts on: {len(aborts(copies))} of {len(copies)}")


def summary(got: dict) -> str:
    """The campaign's counts in one line: attacks, tracebacks, hangs, exit 0 on garbage, data lost, peak memory."""
    outcomes: Counter[str] = Counter()
    for (_cls, outcome), n in got["counts"].items():
        outcomes[outcome] += n
    tracebacks = sum(n for o, n in outcomes.items() if o in ("bad: traceback", "bad: internal error", "bad: abort"))
    garbage = sum(n for o, n in outcomes.items() if "garbage" in o or "no JSON" in o or "failure not said" in o)
    lost = sum(n for o, n in outcomes.items() if o in ("bad: data lost", "bad: left files"))
    other = sum(n for o, n in outcomes.items() if o.startswith("bad")) - tracebacks - garbage - lost
    other -= outcomes["bad: hang"]
    return (
        f"attacks {sum(outcomes.values())}; tracebacks {tracebacks}; hangs {outcomes['bad: hang']}; "
        f"exit-0-on-garbage {garbage}; data lost {lost}; other bad {other}; peak memory {got['worst_rss'] >> 20} MiB"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20, help="random mutants per class and fixture")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--classes", default="json,trunc,flip-header,unreadable-header,flip-payload,count,bomb,text,faults")
    ap.add_argument("--fixtures", default=",".join(SMALL_FIXTURES))
    ap.add_argument("--budget-s", type=float, default=600.0, help="stop starting runs after this many seconds")
    ap.add_argument("--native-sweep", type=int, default=0, help="only: N header flips loaded by ncu_report itself")
    a = ap.parse_args()
    if a.native_sweep:
        for name in a.fixtures.split(","):
            native_sweep(name, a.native_sweep, a.seed)
        return
    classes = set(a.classes.split(","))
    got = campaign(a.count, a.seed, classes - {"faults"}, tuple(a.fixtures.split(",")), a.budget_s)
    if "faults" in classes:
        faults = fault_campaign()
        got["counts"].update(faults["counts"])
        got["worst_rss"] = max(got["worst_rss"], faults["worst_rss"])
        got["bad"] += faults["bad"]
    outcomes = sorted({o for _, o in got["counts"]})
    classes = sorted({c for c, _ in got["counts"]})
    print("| class | " + " | ".join(outcomes) + " |")
    print("|---|" + "---|" * len(outcomes))
    for c in classes:
        print(f"| {c} | " + " | ".join(str(got["counts"][(c, o)]) for o in outcomes) + " |")
    print(
        f"\nruns: {sum(got['counts'].values())}; most CPU in one run {got['worst_s']:.1f} s; "
        f"peak RSS {got['worst_rss'] >> 20} MiB"
    )
    print(summary(got))
    for b in got["bad"]:
        print("BAD", b)


if __name__ == "__main__":
    main()
