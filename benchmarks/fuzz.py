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

    python3 benchmarks/fuzz.py --count 200 --seed 1          # counts per class and outcome, as a markdown table
    python3 benchmarks/fuzz.py --count 20 --classes trunc     # one class

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20, help="random mutants per class and fixture")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--classes", default="json,trunc,flip-header,unreadable-header,flip-payload,count,bomb,text")
    ap.add_argument("--fixtures", default=",".join(SMALL_FIXTURES))
    ap.add_argument("--budget-s", type=float, default=600.0, help="stop starting runs after this many seconds")
    ap.add_argument("--native-sweep", type=int, default=0, help="only: N header flips loaded by ncu_report itself")
    a = ap.parse_args()
    if a.native_sweep:
        for name in a.fixtures.split(","):
            native_sweep(name, a.native_sweep, a.seed)
        return
    got = campaign(a.count, a.seed, set(a.classes.split(",")), tuple(a.fixtures.split(",")), a.budget_s)
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
    for b in got["bad"]:
        print("BAD", b)


if __name__ == "__main__":
    main()
