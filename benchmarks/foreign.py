"""ncuadvisor on other people's ncu reports: the top kernel's first finding scored against an expert's label.

The reports are `.ncu-rep` files committed to public GitHub repositories by their authors, on their own GPUs, with
the ncu version and section set they chose (`fixtures/foreign/SOURCES.md` lists each one: repository, commit, path,
GPU, ncu version, set, code, licence). `benchmarks/foreign_labels.toml` holds, for each, the expected first finding
of its top kernel (by total GPU time), written from the profiled code and the report's own counters before
ncuadvisor was run on any of them (see that file's git history).

Each report is read from `benchmarks/foreign-cache/<file>` (or `$NCUADVISOR_FOREIGN_CACHE/<file>`; ignored by git;
SOURCES.md says how to fill it), or,
for the few whose licence lets them be committed, from `fixtures/foreign/<file>.xz`. Each is analysed by this
checkout's `python -m ncuadvisor report <file> --format json`, in a subprocess, as a user would run it. Recorded per
report: the exit code; a "partial" warning (every report here is whole, as its author committed it, so any is false);
kernels with headroom below 1 (faster than their modelled floor); ROOF001 "leave it" verdicts whose floor does not rest
on counted work (the floor's reason is a unit's busy time or the launch); results ncu recorded nothing for; the first
finding of the labelled kernel (the goal: "the first finding of each report's top kernel") scored right / wrong /
missing against the label: the kernel's own first finding (a program finding is about the program, not the kernel: a
kernel without a finding of its own has none, right only where the label allows "NONE"), and for a kernel the report's
first warning names as a debug build (`nvcc -G`) that warning, right whatever the label (the goal for a debug build:
"detect it and say 'this is a debug build: profile a release build with -lineinfo' first"). Two other scorings are
printed beside it: the kernel's own first finding with no debug-build exception, and the scoring used until 2026-12-06
(the kernel's own first finding, else the first program finding that names it). Where the label names the author's own
before/after (another kernel of the same report, or another report), the estimate of the finding that names the author's
fix is set beside the change measured by ncu.

    python benchmarks/foreign.py [--markdown] [--jobs N] [--only SUBSTRING] [--json OUT] [--cache DIR]
                                 [--fetch [--url TEMPLATE]]

`--fetch` first copies every report missing from the cache out of its repository at the labelled commit (one clone
per repository, from GitHub unless `--url` names another place, e.g. a local mirror: `--url
/work/.mirror/{owner}+{name}/repo`).

Missing reports are listed and skipped, not failed: the table says how many were scored.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import FOREIGN_CACHE as CACHE  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "benchmarks" / "foreign_labels.toml"
COMMITTED = ROOT / "fixtures" / "foreign"

# GPU family by compute capability: the architecture decides pipe widths, FP64 rate, tensor rates, memory kind.
FAMILY = {
    "7.0": "Volta",
    "7.5": "Turing",
    "8.0": "Ampere GA100",
    "8.6": "Ampere GA10x",
    "8.7": "Ampere Orin",
    "8.9": "Ada",
    "9.0": "Hopper",
    "10.0": "Blackwell DC",
    "12.0": "Blackwell GB20x",
}


@dataclass
class Outcome:
    """What ncuadvisor said about one labelled report, and the score."""

    label: dict
    path: Path | None
    rc: int | None = None
    error: str = ""
    partial: str = ""
    below_one: list[tuple[str, float]] = field(default_factory=list)
    uncounted_leave_it: list[tuple[str, str]] = field(default_factory=list)
    empty_results: list[str] = field(default_factory=list)
    tool_top: str = ""
    first: str = ""
    first_title: str = ""
    first_category: str = ""  # "at-roofline": a verdict (`judge`)
    debug_build: bool = False  # the report's first warning names the kernel as a debug build
    verdict_kernel: str = "unscored"  # the kernel's own first finding, no debug-build exception
    program_first: str = ""  # the first program finding that names a kernel without its own finding
    verdict_old: str = "unscored"  # the scoring used until 2026-12-06: own first finding, else program_first
    headroom: float | None = None
    floor_basis: str = ""
    verdict: str = "unscored"
    estimate: float | None = None
    measured: float | None = None


def report_path(label: dict, cache: Path = CACHE) -> Path | None:
    """The cached report, else the committed compressed copy, else None."""
    for p in (cache / label["file"], COMMITTED / (label["file"] + ".xz")):
        if p.is_file():
            return p
    return None


def run_tool(path: Path) -> tuple[int, dict | None, str]:
    """`python -m ncuadvisor report PATH --format json` with this checkout first on the path."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        run = subprocess.run(
            [sys.executable, "-m", "ncuadvisor", "report", str(path), "--format", "json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 124, None, "timed out after 600 s"
    try:
        return run.returncode, json.loads(run.stdout), run.stderr.strip()
    except json.JSONDecodeError:
        return run.returncode, None, (run.stderr.strip().splitlines() or ["no JSON on stdout"])[-1]


# the floors that rest on counted work: bytes, FLOPs or lane operations, and the instructions a library kernel that
# reads no global memory issues (each counted by `sm__inst_executed`; its algorithm's own work: 2026-12-06)
COUNTED_FLOORS = ("bytes", "work", "instructions")


def floor_basis(roofline: dict | None) -> str:
    """What the kernel's floor rests on, from the floor's own wording: counted bytes or FLOPs, counted instructions (a
    library kernel that reads no memory: its instructions issued are its algorithm's work), a busy time, the launch,
    or nothing."""
    why = (roofline or {}).get("floor_reason") or ""
    if why.startswith("the warp instructions it issues"):
        return "instructions"
    if "busy time" in why:
        return "busy:" + why.split(" busy time")[0].removeprefix("the ").strip()
    if why.startswith("moving "):
        return "bytes"
    if "lane operations" in why or "FLOP" in why or "tensor" in why.lower():
        return "work"
    if "empty kernel" in why or "launch" in why:
        return "launch"
    return "none" if not why else "other"


def kernel_named(kernels: list[dict], name: str) -> dict | None:
    """The longest of the tool's kernels whose name (or demangled name) is the label's kernel."""
    hits = [k for k in kernels if name in (k.get("name"), k.get("demangled"), (k.get("demangled") or "").split("(")[0])]
    hits = hits or [k for k in kernels if (k.get("demangled") or k.get("name") or "").startswith(name)]
    return max(hits, key=lambda k: k.get("duration_ns") or 0) if hits else None


def per_launch(kernel: dict | None) -> float | None:
    return (kernel or {}).get("per_launch_ns") or None


def fetch(labels: list[dict], cache: Path, url: str) -> list[str]:
    """Copy each missing report out of its repository at the labelled commit into `cache`: one clone per repository
    (`url` with {repo} for owner/name, e.g. the GitHub default, or a local mirror), `git show COMMIT:PATH`. Returns
    one line per report that could not be fetched."""
    missing: dict[str, list[dict]] = defaultdict(list)
    for label in labels:
        if report_path(label, cache) is None:
            missing[label["repo"]].append(label)
    cache.mkdir(parents=True, exist_ok=True)
    failed = []
    for repo, wanted in missing.items():
        with tempfile.TemporaryDirectory() as tmp:
            src = url.format(repo=repo, owner=repo.split("/")[0], name=repo.split("/")[1])
            clone = [["git", "clone", "-q", "--bare", "--filter=blob:none", src, tmp + "/r"]]
            clone.append(["git", "clone", "-q", "--bare", src, tmp + "/r"])  # a local path refuses the filter
            if not any(subprocess.run(c, capture_output=True, check=False).returncode == 0 for c in clone):
                failed.extend(f"{lab['file']}: cannot clone {src}" for lab in wanted)
                continue
            for lab in wanted:
                show = subprocess.run(
                    ["git", "--git-dir", tmp + "/r", "show", f"{lab['commit']}:{lab['path']}"],
                    capture_output=True,
                    check=False,
                )
                if show.returncode or not show.stdout:
                    failed.append(f"{lab['file']}: {lab['commit'][:12]}:{lab['path']} not in {src}")
                    continue
                part = cache / (lab["file"] + ".part")
                part.write_bytes(show.stdout)
                part.replace(cache / lab["file"])
    return failed


def score(label: dict, results: dict[str, dict], cache: Path = CACHE) -> Outcome:
    """Run-independent scoring of one report's JSON (already in `results`)."""
    out = Outcome(label=label, path=report_path(label, cache))
    doc = results.get(label["file"])
    if out.path is None:
        out.verdict = "no report"
        return out
    out.rc = doc["_rc"] if doc else None
    if not doc or "kernels" not in doc:
        out.error = (doc or {}).get("_stderr", "")
        out.verdict = "no result"
        return out
    kernels = doc["kernels"]
    out.partial = next((w for w in doc["report"].get("warnings", []) if str(w).startswith("partial")), "")
    for k in kernels:
        h = k.get("headroom")
        if h is not None and h < 1:
            out.below_one.append((k["name"], h))
        if not k.get("duration_ns"):
            out.empty_results.append(k["name"])
        basis = floor_basis(k.get("roofline"))
        if any(f["rule"] == "ROOF001" for f in k.get("findings", [])) and basis not in COUNTED_FLOORS:
            out.uncounted_leave_it.append((k["name"], basis))
    top = max(kernels, key=lambda k: k.get("duration_ns") or 0) if kernels else None
    out.tool_top = (top or {}).get("name", "")
    k = kernel_named(kernels, label["kernel"])
    if k is None:
        out.verdict = "kernel not found"
        return out
    out.headroom = k.get("headroom")
    out.floor_basis = floor_basis(k.get("roofline"))
    findings = k.get("findings", [])
    expected = label["expected"]
    if findings:
        out.first, out.first_title = findings[0]["rule"], findings[0].get("title", "")
        out.first_category = findings[0].get("category", "")
    else:
        prog = [p for p in doc.get("program_findings", []) if k["name"] in p.get("kernels", [])]
        if prog:
            out.program_first = prog[0]["rule"]
    out.verdict_kernel = judge(out.first, expected, out.first_category == VERDICT_CATEGORY)
    out.verdict_old = judge(out.first or out.program_first, expected, out.first_category == VERDICT_CATEGORY)
    out.debug_build = debug_named(doc["report"].get("warnings", []), k["name"])
    out.verdict = "right" if out.debug_build else out.verdict_kernel
    pair = label.get("pair")
    if pair:
        after = None
        if "after_kernel" in pair:
            after = kernel_named(kernels, pair["after_kernel"])
        elif pair.get("after") in results and results[pair["after"]] and "kernels" in results[pair["after"]]:
            other = results[pair["after"]]["kernels"]
            after = max(other, key=lambda x: x.get("duration_ns") or 0) if other else None
        before_ns, after_ns = per_launch(k), per_launch(after)
        if before_ns and after_ns:
            out.measured = after_ns / before_ns - 1
        named = next((f for f in findings if f["rule"] in expected), None)
        if named is not None:
            out.estimate = -float(named.get("estimated_speedup") or 0.0)
    return out


# A verdict: a finding of category "at-roofline" (ROOF001's "leave it", ATM002's "keep it", LIB002's "library code
# at this shape") claims no saving and leaves the kernel as it is.
VERDICT_CATEGORY = "at-roofline"


def judge(first: str, expected: list[str], verdict: bool = False) -> str:
    """right / wrong / missing: a first finding against the label's rules, no finding against "NONE". A verdict
    (`VERDICT_CATEGORY`) says what "NONE" says, leave the kernel: right where the label names its rule or allows
    "NONE" (the reading `benchmarks/accuracy.py` gives the planted kernels, whose "leave it" is that category, and
    `benchmarks/exam.py` gives its labels; defined 2026-12-06)."""
    if first:
        return "right" if first in expected or (verdict and "NONE" in expected) else "wrong"
    return "right" if "NONE" in expected else "missing"


DEBUG_WARNING = "this is a debug build"


def debug_named(warnings: list, kernel: str) -> bool:
    """Whether the report's first warning is the debug-build one (`pipeline.analyze`: "this is a debug build (nvcc
    -G ...): N kernels (a, b, c, ...) ran unoptimised ...") and names the kernel among those it lists (at most three:
    a kernel past them is not counted)."""
    if not warnings or not str(warnings[0]).startswith(DEBUG_WARNING):
        return False
    listed = re.search(r"kernels? \(([^)]*)\) ran", str(warnings[0]))
    return bool(listed) and kernel in [n.strip() for n in listed.group(1).split(",")]


def family(label: dict) -> str:
    return FAMILY.get(label.get("cc") or "", label.get("cc") or "?")


def tally(outcomes: list[Outcome], key) -> list[tuple[str, dict[str, int]]]:
    groups: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for o in outcomes:
        g = groups[key(o)]
        g[o.verdict] += 1
        g["n"] += 1
        g["partial"] += bool(o.partial)
        g["below1"] += bool(o.below_one)
        g["uncounted"] += bool(o.uncounted_leave_it)
    return sorted(groups.items())


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def table_lines(head: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    """A table as markdown or as aligned text columns, then an empty line."""
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        out = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return [*out, ""]


def render(outcomes: list[Outcome], markdown: bool) -> str:
    scored = [o for o in outcomes if o.verdict in ("right", "wrong", "missing")]
    lines: list[str] = []

    def table(head: list[str], rows: list[list[str]]) -> None:
        lines.extend(table_lines(head, rows, markdown))

    rows = []
    for o in outcomes:
        lab = o.label
        notes = []
        if o.partial:
            notes.append("false partial")
        if o.below_one:
            notes.append("headroom<1: " + ", ".join(f"{n} {h:.2f}" for n, h in o.below_one[:3]))
        if o.uncounted_leave_it:
            notes.append("leave-it on " + ", ".join(f"{b} ({n})" for n, b in o.uncounted_leave_it[:2]))
        if o.empty_results:
            notes.append(f"{len(o.empty_results)} empty result(s)")
        if o.tool_top and o.tool_top != lab["kernel"] and o.verdict not in ("no report",):
            notes.append(f"tool's longest: {o.tool_top}")
        if o.debug_build:
            notes.append(f"debug build said first (own first finding: {o.first or '-'}, {o.verdict_kernel})")
        if o.program_first:
            notes.append(f"program finding {o.program_first} (scored {o.verdict_old} until 2026-12-06)")
        if o.error:
            notes.append(o.error[:80])
        rows.append(
            [
                lab["file"].replace("+", "/", 1),
                lab["gpu"].removeprefix("NVIDIA ").removeprefix("GeForce "),
                lab["ncu"],
                lab["set"],
                lab["kernel"][:32],
                "/".join(lab["expected"]),
                "debug build" if o.debug_build else o.first or "-",
                o.verdict,
                "" if o.rc is None else str(o.rc),
                "" if o.headroom is None else f"{o.headroom:.2f}",
                o.floor_basis,
                "; ".join(notes),
            ]
        )
    table(
        ["report", "GPU", "ncu", "set", "kernel", "expected", "first", "score", "rc", "headroom", "floor", "notes"],
        rows,
    )

    for title, key in (
        ("GPU family", lambda o: family(o.label)),
        ("ncu version", lambda o: o.label["ncu"]),
        ("section set", lambda o: o.label["set"]),
        ("language", lambda o: o.label["language"]),
    ):
        grp = []
        for name, g in tally(scored, key):
            grp.append(
                [
                    name,
                    str(g["n"]),
                    str(g["right"]),
                    str(g["wrong"]),
                    str(g["missing"]),
                    pct(g["right"], g["n"]),
                    str(g["partial"]),
                    str(g["below1"]),
                    str(g["uncounted"]),
                ]
            )
        table(
            [title, "n", "right", "wrong", "missing", "right %", "false partial", "headroom<1", "leave-it uncounted"],
            grp,
        )

    srow = []
    sets = sorted({o.label["set"] for o in scored})
    for name, group in [*((s_, [o for o in scored if o.label["set"] == s_]) for s_ in sets), ("all", scored)]:
        srow.append(
            [
                name,
                str(len(group)),
                str(sum(o.verdict == "right" for o in group)),
                str(sum(o.verdict_kernel == "right" for o in group)),
                str(sum(o.verdict_old == "right" for o in group)),
            ]
        )
    table(
        [
            "section set",
            "n",
            "right (own first finding; a debug build's warning first)",
            "right (own first finding only)",
            "right (else the first program finding: until 2026-12-06)",
        ],
        srow,
    )

    pairs = [o for o in outcomes if o.label.get("pair") and o.measured is not None]
    if pairs:
        prow = []
        for o in pairs:
            est = "-" if o.estimate is None else f"{100 * o.estimate:+.0f}%"
            prow.append([o.label["file"].replace("+", "/", 1), o.label["kernel"], f"{100 * o.measured:+.0f}%", est])
        table(["before/after pair", "kernel", "measured (ncu, per launch)", "estimate of the fix's finding"], prow)

    n = len(scored)
    right = sum(o.verdict == "right" for o in scored)
    ok_rc = sum(o.rc == 0 for o in outcomes if o.rc is not None)
    ran = sum(o.rc is not None for o in outcomes)
    kernel_only = sum(o.verdict_kernel == "right" for o in scored)
    old = sum(o.verdict_old == "right" for o in scored)
    lines.append(
        f"scored {n} of {len(outcomes)} labelled reports: first finding right on {right} ({pct(right, n)}; "
        f"own first finding only: {kernel_only}, {pct(kernel_only, n)}; with the program finding: {old}, "
        f"{pct(old, n)}), "
        f"wrong on {sum(o.verdict == 'wrong' for o in scored)}, missing on {sum(o.verdict == 'missing' for o in scored)}; "
        f"exit 0 on {ok_rc} of {ran}; false partial on {sum(bool(o.partial) for o in outcomes)}; "
        f"headroom below 1 in {sum(bool(o.below_one) for o in outcomes)} reports "
        f"({sum(len(o.below_one) for o in outcomes)} kernels); "
        f"leave-it on an uncounted floor in {sum(bool(o.uncounted_leave_it) for o in outcomes)} reports"
    )
    missing = [o.label["file"] for o in outcomes if o.verdict == "no report"]
    if missing:
        lines.append(f"not in the cache ({len(missing)}; see fixtures/foreign/SOURCES.md): " + ", ".join(missing))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="markdown tables")
    ap.add_argument("--jobs", type=int, default=2, help="reports analysed at once (default 2)")
    ap.add_argument("--only", default="", help="only labels whose file name contains this")
    ap.add_argument("--json", type=Path, help="also write every report's JSON result and score here")
    ap.add_argument("--cache", type=Path, default=CACHE, help="folder of the downloaded reports (default %(default)s)")
    ap.add_argument("--fetch", action="store_true", help="first copy the missing reports out of their repositories")
    ap.add_argument(
        "--url",
        default="https://github.com/{repo}.git",
        help="where --fetch clones from: {repo} is owner/name, {owner} and {name} its parts (default %(default)s)",
    )
    args = ap.parse_args(argv)

    labels = [r for r in tomllib.loads(LABELS.read_text())["report"] if args.only in r["file"]]
    results: dict[str, dict] = {}

    if args.fetch:
        for line in fetch(labels, args.cache, args.url):
            print("not fetched:", line, file=sys.stderr)

    def one(label: dict) -> None:
        path = report_path(label, args.cache)
        if path is None:
            return
        rc, doc, err = run_tool(path)
        results[label["file"]] = dict(doc or {}, _rc=rc, _stderr=err)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, labels))
    outcomes = [score(label, results, args.cache) for label in labels]
    print(render(outcomes, args.markdown))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    o.label["file"]: {
                        "verdict": o.verdict,
                        "first": o.first,
                        "first_title": o.first_title,
                        "debug_build": o.debug_build,
                        "verdict_kernel": o.verdict_kernel,
                        "program_first": o.program_first,
                        "verdict_old": o.verdict_old,
                        "rc": o.rc,
                        "partial": o.partial,
                        "below_one": o.below_one,
                        "uncounted_leave_it": o.uncounted_leave_it,
                        "empty_results": o.empty_results,
                        "headroom": o.headroom,
                        "floor_basis": o.floor_basis,
                        "estimate": o.estimate,
                        "measured": o.measured,
                    }
                    for o in outcomes
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
