"""ncuadvisor on the exam corpus: the first finding of every labelled kernel scored against a label written first.

The exam corpus is public code nobody in this project wrote (workloads/exam/: karpathy/llm.c dev/cuda programs, the
Triton tutorials), captured on the GPU machine by `benchmarks/device/exam.sh`, one report per program run.
`benchmarks/exam_labels.toml` holds, for each kernel, the expected first finding written from the code before any
report existed. Unlike `foreign.py`, which scores the top kernel of each report, every labelled kernel is scored.

Each report `<FOLDER>/<report>.ncu-rep` (or `.ncu-rep.xz`, `.ncu-repz`) is analysed by this checkout's `python -m
ncuadvisor report <file> --format json` in a subprocess, as a user would run it. A kernel's first finding is its
own first finding, else the first program finding that names it; it is right when its rule is in the label's
`expected`, right with no finding only when `expected` holds "NONE", "missing" when there is none, "wrong"
otherwise; a verdict (a kernel finding of category "at-roofline": ROOF001's "leave it", ATM002's "keep it", LIB002's
"library code at this shape") says what "NONE" says, leave the kernel, and is right where `expected` holds "NONE"
(as in `foreign.py`'s `judge`, defined 2026-12-06); "not found" when the report has no kernel of that name; "no report" when the file is absent.

    python benchmarks/exam.py [FOLDER] [--labels FILE] [--markdown] [--jobs N] [--only SUBSTRING] [--json OUT]
        [--twins TIMES.jsonl ...]

Without FOLDER, the reports of the committed archive (`fixtures/exam-h100-2026-12-06/exam_reports.tar.xz`), extracted
once into `benchmarks/exam-cache/` (`$NCUADVISOR_EXAM_DIR`; `corpora.exam_dir()`).

Prints a table per corpus (llm.c, Triton, ...) and the misses with the tool's finding beside the label; with --twins,
then the estimates against the measured twins (benchmarks/exam_twins.py, the same analyses).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpora import exam_dir  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)
from foreign import VERDICT_CATEGORY, floor_basis, judge, pct, run_tool, table_lines  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "benchmarks" / "exam_labels.toml"
SUFFIXES = (".ncu-rep", ".ncu-rep.xz", ".ncu-repz")
SCORED = ("right", "wrong", "missing", "not found")


@dataclass
class Outcome:
    """What ncuadvisor said about one labelled kernel, and the score."""

    label: dict
    verdict: str = "unscored"
    first: str = ""
    first_title: str = ""
    headroom: float | None = None
    floor_basis: str = ""
    kernel_name: str = ""
    rc: int | None = None
    error: str = ""


def load_labels(path: Path = LABELS) -> list[dict]:
    return tomllib.loads(path.read_text())["kernel"]


def report_file(folder: Path, report: str) -> Path | None:
    for suffix in SUFFIXES:
        p = folder / (report + suffix)
        if p.is_file():
            return p
    return None


def base_name(demangled: str) -> str:
    """`void ns::f<float, true>(const float *, int)` -> `ns::f`: no return type, template arguments or parameters."""
    s = demangled.split("(")[0].strip()
    while s.endswith(">"):  # drop the trailing template argument list, nested brackets included
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {">": 1, "<": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i].rstrip()
                break
        else:
            break
    return s.split()[-1] if s.split() else s


def kernel_for(kernels: list[dict], label: dict) -> dict | None:
    """The longest of the tool's kernels that the label names (exactly, or with match = "regex" by a regex searched in
    its name, its base name and its demangled name)."""
    want = label["kernel"]
    if label.get("match") == "regex":
        rx = re.compile(want)
        names = lambda k: (k.get("name") or "", base_name(k.get("demangled") or ""), k.get("demangled") or "")  # noqa: E731
        hits = [k for k in kernels if any(rx.search(n) for n in names(k))]
    else:
        hits = [k for k in kernels if want in (k.get("name"), base_name(k.get("demangled") or ""))]
    return max(hits, key=lambda k: k.get("duration_ns") or 0) if hits else None


def score(label: dict, doc: dict | None) -> Outcome:
    """Score one label against the JSON result of its report (None: no report)."""
    out = Outcome(label=label)
    if doc is None:
        out.verdict = "no report"
        return out
    out.rc = doc.get("_rc")
    if "kernels" not in doc:
        out.verdict, out.error = "no result", doc.get("_stderr", "")
        return out
    k = kernel_for(doc["kernels"], label)
    if k is None:
        out.verdict = "not found"
        return out
    out.kernel_name = k.get("name", "")
    out.headroom = k.get("headroom")
    out.floor_basis = floor_basis(k.get("roofline"))
    findings = k.get("findings", [])
    if findings:
        out.first, out.first_title = findings[0]["rule"], findings[0].get("title", "")
    else:
        prog = [p for p in doc.get("program_findings", []) if k.get("name") in p.get("kernels", [])]
        if prog:
            out.first, out.first_title = prog[0]["rule"], prog[0].get("title", "")
    verdict = bool(findings) and findings[0].get("category") == VERDICT_CATEGORY  # leave the kernel, as "NONE"
    out.verdict = judge(out.first, label["expected"], verdict)
    return out


def analyse(folder: Path, labels: list[dict], jobs: int = 2) -> dict[str, dict | None]:
    """The tool's JSON for every report the labels name (None where the file is absent)."""
    reports = sorted({lab["report"] for lab in labels})
    results: dict[str, dict | None] = {}

    def one(report: str) -> None:
        path = report_file(folder, report)
        if path is None:
            results[report] = None
            return
        rc, doc, err = run_tool(path)
        results[report] = dict(doc or {}, _rc=rc, _stderr=err)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, reports))
    return results


def render(outcomes: list[Outcome], markdown: bool = False) -> str:
    lines: list[str] = []

    def table(head: list[str], rows: list[list[str]]) -> None:
        lines.extend(table_lines(head, rows, markdown))

    groups: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for o in outcomes:
        g = groups[o.label["corpus"]]
        g["labelled"] += 1
        g[o.verdict] += 1
    rows = []
    for corpus, g in sorted(groups.items()):
        n = sum(g[v] for v in SCORED)
        rows.append(
            [
                corpus,
                str(g["labelled"]),
                str(n),
                str(g["right"]),
                str(g["wrong"]),
                str(g["missing"]),
                str(g["not found"]),
                str(g["no report"] + g["no result"]),
                pct(g["right"], n),
            ]
        )
    table(["corpus", "labelled", "scored", "right", "wrong", "missing", "not found", "no report", "right %"], rows)

    misses = [o for o in outcomes if o.verdict in ("wrong", "missing", "not found", "no result")]
    if misses:
        mrows = []
        for o in misses:
            lab = o.label
            tool = f"{o.first}: {o.first_title}" if o.first else ("no finding" if o.verdict == "missing" else o.verdict)
            mrows.append(
                [
                    lab["report"],
                    lab["kernel"][:40],
                    "/".join(lab["expected"]),
                    tool[:90],
                    "" if o.headroom is None else f"{o.headroom:.2f}",
                    lab["mechanism"][:90],
                ]
            )
        table(["report", "kernel", "label", "tool's first finding", "headroom", "label's mechanism"], mrows)

    scored = [o for o in outcomes if o.verdict in SCORED]
    right = sum(o.verdict == "right" for o in scored)
    lines.append(
        f"scored {len(scored)} of {len(outcomes)} labelled kernels: first finding right on {right} "
        f"({pct(right, len(scored))})"
    )
    absent = sorted({o.label["report"] for o in outcomes if o.verdict == "no report"})
    if absent:
        lines.append(f"reports not in the folder ({len(absent)}): " + ", ".join(absent))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "folder",
        type=Path,
        nargs="?",
        help="folder of the captured reports (<report>.ncu-rep; default: the committed archive's, corpora.exam_dir())",
    )
    ap.add_argument("--labels", type=Path, default=LABELS, help="labels file (default %(default)s)")
    ap.add_argument("--markdown", action="store_true", help="markdown tables")
    ap.add_argument("--jobs", type=int, default=2, help="reports analysed at once (default 2)")
    ap.add_argument("--only", default="", help="only labels whose report name contains this")
    ap.add_argument("--json", type=Path, help="also write each label's score here")
    ap.add_argument("--twins", type=Path, nargs="+", help="exam_times.jsonl: also score the estimates against twins")
    args = ap.parse_args(argv)
    if args.folder is None:
        args.folder = exam_dir()
    if not args.folder.is_dir():
        print(f"exam.py: {args.folder} is not a folder", file=sys.stderr)
        return 2
    try:
        labels = [lab for lab in load_labels(args.labels) if args.only in lab["report"]]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        print(f"exam.py: cannot read the labels {args.labels}: {e}", file=sys.stderr)
        return 2
    twins = None
    if args.twins:
        import exam_twins  # here: it imports this module

        try:
            twins = (*exam_twins.load_twins(), exam_twins.load_times(args.twins))
        except (OSError, ValueError, tomllib.TOMLDecodeError, KeyError) as e:
            print(f"exam.py: cannot read the pairs or the times: {e}", file=sys.stderr)
            return 2
    results = analyse(args.folder, labels, args.jobs)
    outcomes = [score(lab, results.get(lab["report"])) for lab in labels]
    print(render(outcomes, args.markdown))
    if twins:
        pairs, sizes, times = twins
        print()
        print(
            exam_twins.render(exam_twins.score_all(pairs, sizes, times, args.folder, results, args.jobs), args.markdown)
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "report": o.label["report"],
                        "kernel": o.label["kernel"],
                        "expected": o.label["expected"],
                        "verdict": o.verdict,
                        "first": o.first,
                        "first_title": o.first_title,
                        "headroom": o.headroom,
                        "floor_basis": o.floor_basis,
                        "rc": o.rc,
                    }
                    for o in outcomes
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
