"""ncuadvisor's speedup estimates on the exam corpus against measured twins: each estimate next to the speedup the fix
gave when a later version of the same llm.c program applied it.

`benchmarks/exam_twins.toml` pairs each profiled llm.c kernel version whose labelled first finding names a fix with
the version that applies that fix and (nearly) nothing else, read from the code before any timing; the GPU machine
times every version plainly (`benchmarks/device/exam_times.sh`, no ncu, the program's own timing loop at the
profiled block size, 3 runs, the median kept). For each pair this prints the tool's first finding on the before
kernel and its estimated speedup (1 / (1 - estimated_speedup), the fraction of the kernel's time the fix removes, as
`benchmarks/accuracy.py` reads it), the measured speedup (time before / time of the twin, same block size) and the
error (estimate - measured) / measured. An estimate is compared with the twin only when it is for the pair's fix
(its rule is in the pair's `fix_rules`): the first finding's estimate ("first"), else, scored apart, that of a later
finding of the same kernel that names the fix ("later"); a first finding for another fix is a different fix and is
only listed. Where a kernel's fix has two twins, one that changes more (`also`) and one that applies the fix alone,
the fix alone is scored once timed and the other is listed as "changes more", its error shown; where two twins
apply the fix alone in different forms, the one marked `card = true` (its code is the card's: a warp per row where the
card's code writes one) is scored and the other listed as "another form". Beside the plain time
of the before version it shows the kernel's duration in its report ("ncu ms", profiled at the same clocks: a large
gap says the two timings differ, e.g. launch overhead in a few-µs kernel's events). Pairs without a twin are listed
with the tool's first finding, unscored.

    python benchmarks/exam_twins.py score FOLDER TIMES.jsonl [TIMES.jsonl ...] [--twins FILE] [--markdown]
        [--jobs N] [--json OUT]      FOLDER: the unpacked exam reports (<program>_v<N>.ncu-rep)
    python benchmarks/exam_twins.py score FOLDER --from-reports [...]
        a preview before the device run: each version's time is the sum of its kernels' durations in its own report
        (one profiled launch each), not the plain timing the exam asks for
    python benchmarks/exam_twins.py times RUNS_DIR > TIMES.jsonl
        the device script's parser: RUNS_DIR holds <program>_v<N>_r<round>.log (a program's output, then a line
        "# rc=N seconds=S"); one JSONL line per version
    python benchmarks/exam_twins.py versions
        the versions the pairs with a twin compare, as <program>_v<N> words (what the device script times first)
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exam import analyse, kernel_for  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)
from foreign import table_lines  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TWINS = ROOT / "benchmarks" / "exam_twins.toml"
WITHIN = 0.30  # the exam's bar: every estimate with a measured twin within ±30%
TIME_LINE = re.compile(r"^(?:sqrt_)?block_size\s+(\d+)\s*\|?\s*time\s+([0-9.]+)\s*ms")
RUN_LOG = re.compile(r"^(?P<program>.+)_v(?P<version>\d+)_r(?P<round>\d+)\.log$")
TRAILER = re.compile(r"^# rc=(-?\d+) seconds=(\d+)")


def load_twins(path: Path = TWINS) -> tuple[list[dict], dict[str, int]]:
    """The pairs, and the profiled block size of each program ("default" for the others)."""
    doc = tomllib.loads(path.read_text())
    return doc["pair"], doc.get("block_size", {"default": 256})


def block_size_of(program: str, sizes: dict[str, int]) -> int:
    return int(sizes.get(program, sizes.get("default", 256)))


def paired_versions(pairs: list[dict]) -> list[str]:
    """`<program>_v<N>` of every version a pair with a twin compares, before and twin, in the file's order."""
    out: list[str] = []
    for p in pairs:
        if "twin" in p:
            for v in (p["before"], p["twin"]):
                key = f"{p['program']}_v{v}"
                if key not in out:
                    out.append(key)
    return out


# ---------------------------------------------------------------- the device side: run logs -> JSONL


def parse_run(text: str) -> tuple[dict[int, float], list[str], int | None, int | None]:
    """One run's output: {block size: time ms}, the timing lines as printed, its rc and seconds (the trailer the
    device script appends; None when absent)."""
    times: dict[int, float] = {}
    lines: list[str] = []
    rc = secs = None
    for line in text.splitlines():
        m = TIME_LINE.match(line.strip())
        if m:
            times[int(m.group(1))] = float(m.group(2))
            lines.append(line.strip())
            continue
        t = TRAILER.match(line)
        if t:
            rc, secs = int(t.group(1)), int(t.group(2))
    return times, lines, rc, secs


def collect_times(runs_dir: Path, sizes: dict[str, int]) -> list[dict]:
    """One record per version from the run logs of a folder: each run's time at the profiled block size (a run that
    printed no such line, e.g. one that failed its check or was cut short, has none) and their median."""
    by_version: dict[tuple[str, int], list[tuple[int, Path]]] = defaultdict(list)
    for f in sorted(runs_dir.glob("*.log")):
        m = RUN_LOG.match(f.name)
        if m:
            by_version[(m["program"], int(m["version"]))].append((int(m["round"]), f))
    records = []
    for (program, version), runs in sorted(by_version.items()):
        bs = block_size_of(program, sizes)
        rec: dict = {"program": program, "version": version, "block_size": bs, "time_ms": None, "runs": []}
        rec.update(rc=[], seconds=[], lines=[])
        for _, f in sorted(runs):
            times, lines, rc, secs = parse_run(f.read_text(errors="replace"))
            if bs in times:
                rec["runs"].append(times[bs])
            rec["rc"].append(rc)
            rec["seconds"].append(secs)
            rec["lines"].append(lines)
        if rec["runs"]:
            rec["time_ms"] = statistics.median(rec["runs"])
        records.append(rec)
    return records


def load_times(paths: list[Path]) -> dict[tuple[str, int, int], dict]:
    """The JSONL of one or more device calls, keyed by (program, version, block size); the runs of a version found in
    several files are pooled and their median taken again."""
    pooled: dict[tuple[str, int, int], dict] = {}
    for path in paths:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                key = (str(rec["program"]), int(rec["version"]), int(rec["block_size"]))
                runs = [float(t) for t in rec.get("runs") or ([] if rec.get("time_ms") is None else [rec["time_ms"]])]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{path}:{n}: not a timing record ({e})") from e
            have = pooled.setdefault(key, {"runs": []})
            have["runs"].extend(runs)
    for rec in pooled.values():
        rec["time_ms"] = statistics.median(rec["runs"]) if rec["runs"] else None
    return pooled


# ---------------------------------------------------------------- scoring


@dataclass
class PairScore:
    """One pair: what the tool said about the before kernel, and the twin's measured speedup."""

    pair: dict
    # first, later, changes more, other fix, no fix named, no time, no report, not found, no result, no twin
    status: str = ""
    first: str = ""
    first_title: str = ""
    first_estimate: float | None = None  # the first finding's estimated speedup, as a ratio
    fix_finding: str = ""
    estimate: float | None = None  # the estimate of the pair's fix (first or later finding), as a ratio
    before_ms: float | None = None
    twin_ms: float | None = None
    duration_us: float | None = None  # the before kernel's duration in its report
    fix_alone: list[int] | None = (
        None  # "changes more": the twin versions that apply the same fix alone, scored instead
    )

    @property
    def measured(self) -> float | None:
        if self.before_ms and self.twin_ms:
            return self.before_ms / self.twin_ms
        return None

    @property
    def error(self) -> float | None:
        """(estimated - measured) / measured: negative for an under-estimate."""
        m = self.measured
        return None if m is None or self.estimate is None else (self.estimate - m) / m


def ratio(fraction: float) -> float:
    """The estimated speedup as a ratio from the fraction of the time the fix removes."""
    return 1.0 / max(1e-9, 1.0 - float(fraction))


def score_pair(
    pair: dict, doc: dict | None, times: dict[tuple[str, int, int], dict], sizes: dict[str, int]
) -> PairScore:
    out = PairScore(pair=pair)
    if doc is None:
        out.status = "no report"
        return out
    if "kernels" not in doc:
        out.status = "no result"
        return out
    k = kernel_for(doc["kernels"], {"kernel": pair["kernel"]})
    if k is None:
        out.status = "not found"
        return out
    if k.get("duration_ns"):
        out.duration_us = k["duration_ns"] / 1e3
    findings = k.get("findings") or []
    if not findings:  # as exam.py: else the first program finding that names the kernel
        findings = [p for p in doc.get("program_findings", []) if k.get("name") in p.get("kernels", [])]
    if findings:
        out.first, out.first_title = findings[0]["rule"], findings[0].get("title", "")
        if findings[0].get("estimated_speedup") is not None:
            out.first_estimate = ratio(findings[0]["estimated_speedup"])
    fix = next((f for f in findings if f["rule"] in pair["fix_rules"]), None)
    if fix is not None:
        out.fix_finding = fix["rule"]
        out.estimate = ratio(fix.get("estimated_speedup") or 0.0)
    if "twin" not in pair:
        out.status = "no twin"
        return out
    bs = block_size_of(pair["program"], sizes)
    before = times.get((pair["program"], int(pair["before"]), bs), {}).get("time_ms")
    twin = times.get((pair["program"], int(pair["twin"]), bs), {}).get("time_ms")
    out.before_ms, out.twin_ms = before, twin
    if fix is None:
        out.status = "other fix" if out.first else "no fix named"
    elif out.measured is None:
        out.status = "no time"
    else:
        out.status = "first" if fix is findings[0] else "later"
    return out


def prefer_fix_alone(scores: list[PairScore]) -> list[PairScore]:
    """A twin that changes more than the fix (`also` not empty) is not scored where another pair of the same kernel
    and the same fix rules has a twin that applies the fix alone (`also` empty) with a measured time: that one is
    scored, and the first is kept in the table as "changes more" (as benchmarks/accuracy.py keeps a planted pair
    whose twin applies another fix than its card's). Until the fix-alone twin is timed, the other is scored."""

    def key(p: dict) -> tuple:
        return p["program"], int(p["before"]), p["kernel"], frozenset(p["fix_rules"])

    scored = ("first", "later")
    alone: dict[tuple, list[int]] = defaultdict(list)
    card: dict[tuple, list[int]] = defaultdict(list)
    for s in scores:
        if s.status in scored and "twin" in s.pair and not s.pair.get("also"):
            alone[key(s.pair)].append(int(s.pair["twin"]))
            if s.pair.get("card"):
                card[key(s.pair)].append(int(s.pair["twin"]))
    for s in scores:
        if s.status in scored and s.pair.get("also") and alone.get(key(s.pair)):
            s.status, s.fix_alone = "changes more", card.get(key(s.pair)) or alone[key(s.pair)]
        elif s.status in scored and not s.pair.get("card") and card.get(key(s.pair)):
            # a fix alone in another form than the card's code (a block per row where the card writes a warp per
            # row): the twin written as the card's code is scored, this one shown
            s.status, s.fix_alone = "another form", card[key(s.pair)]
    return scores


def versions(twins: list[int]) -> str:
    """'v9', 'v9 and v10'."""
    names = [f"v{v}" for v in twins]
    return " and ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else names[0]


def summary(scores: list[PairScore]) -> str:
    errs = [abs(s.error) for s in scores if s.error is not None]
    if not errs:
        return "none"
    within = sum(e <= WITHIN for e in errs)
    under = sum((s.error or 0) < 0 for s in scores if s.error is not None)
    return (
        f"{within}/{len(errs)} within ±{WITHIN:.0%}, median error {statistics.median(errs):.0%}, "
        f"mean {statistics.mean(errs):.0%}, {under} under-estimates"
    )


def render(scores: list[PairScore], markdown: bool = False) -> str:
    def x(v: float | None) -> str:
        return "" if v is None else f"{v:.2f}×"

    def ms(v: float | None) -> str:
        return "" if v is None else f"{v:.4g}"

    lines: list[str] = []
    twins = [s for s in scores if "twin" in s.pair]
    rows = []
    for s in twins:
        p = s.pair
        tool = f"{s.first} {x(s.first_estimate)}".strip() if s.first else "no finding"
        rows.append(
            [
                f"{p['program']} v{p['before']}→v{p['twin']}",
                p["kernel"][:32],
                "/".join(p["fix_rules"]),
                p["source"],
                tool,
                x(s.estimate) if s.status in ("first", "later", "changes more", "another form") else "",
                ms(None if s.duration_us is None else s.duration_us / 1e3),
                ms(s.before_ms),
                ms(s.twin_ms),
                x(s.measured),
                ""
                if s.error is None or s.status not in ("first", "later", "changes more", "another form")
                else f"{s.error:+.0%}",
                s.status
                if not s.fix_alone
                else f"no: {versions(s.fix_alone)} {'are' if len(s.fix_alone) > 1 else 'is'} the card's fix alone",
                "yes" if p.get("also") else "-",
            ]
        )
    head = ["pair", "kernel", "fix", "from", "tool's first (est.)", "est. of the fix", "ncu ms", "before ms"]
    head += ["twin ms", "measured", "error", "compared", "twin changes more"]
    lines.extend(table_lines(head, rows, markdown))
    lines.append(
        "first finding is the pair's fix: " + summary([s for s in twins if s.status == "first"]) + " (the exam's score)"
    )
    lines.append("the pair's fix as a later finding: " + summary([s for s in twins if s.status == "later"]))
    for s in twins:
        if s.status in ("changes more", "another form"):
            p = s.pair
            why = (
                f"the twin also changes {p['also']}"
                if s.status == "changes more"
                else "the twin applies the fix in another form than the card's code"
            )
            lines.append(
                f"not scored: {p['program']} v{p['before']}→v{p['twin']} ({s.fix_finding} {x(s.estimate)}, measured "
                f"{x(s.measured)}, {s.error:+.0%}): {why}; scored instead against {versions(s.fix_alone)}, the "
                "card's fix alone"
            )
    label_first = [s for s in twins if s.status == "first" and s.pair["source"] == "label"]
    lines.append("first finding is the labelled fix (pairs from the labels only): " + summary(label_first))
    for status, say in (
        ("other fix", "first finding for another fix (not comparable)"),
        ("no fix named", "no finding"),
        ("no time", "a version not timed"),
        ("no report", "no report"),
        ("not found", "kernel not in its report"),
        ("no result", "the tool gave no result"),
    ):
        hit = [s for s in twins if s.status == status]
        if hit:
            names = ", ".join(f"{s.pair['program']} v{s.pair['before']} ({'/'.join(s.pair['fix_rules'])})" for s in hit)
            lines.append(f"{say}: {len(hit)}: {names}")
    lone = [s for s in scores if "twin" not in s.pair]
    if lone:
        lines.append("")
        rows = [
            [
                f"{s.pair['program']} v{s.pair['before']}",
                s.pair["kernel"][:32],
                "/".join(s.pair["fix_rules"]),
                f"{s.first} {x(s.first_estimate)}".strip()
                if s.first
                else "no finding"
                if s.status == "no twin"
                else s.status,
                s.pair["no_twin"][:100],
            ]
            for s in lone
        ]
        lines.extend(table_lines(["no twin", "kernel", "fix", "tool's first (est.)", "why no twin"], rows, markdown))
    return "\n".join(lines)


def times_from_reports(
    pairs: list[dict], sizes: dict[str, int], folder: Path, results: dict[str, dict | None], jobs: int = 2
) -> tuple[dict[tuple[str, int, int], dict], dict[str, dict | None]]:
    """A preview without the device run: each paired version's time as the summed durations of its kernels in its
    own report (one launch each under ncu, at the profiled block size, caches flushed, clocks as the machine had
    them), keyed as load_times keys the plain runs; and the results with the reports analysed for it."""
    versions = {(p["program"], int(v)) for p in pairs if "twin" in p for v in (p["before"], p["twin"])}
    todo = sorted({f"{prog}_v{v}" for prog, v in versions} - set(results))
    if todo:
        results = {**results, **analyse(folder, [{"report": r} for r in todo], jobs)}
    times: dict[tuple[str, int, int], dict] = {}
    for prog, v in versions:
        kernels = (results.get(f"{prog}_v{v}") or {}).get("kernels") or []
        ns = sum(k.get("duration_ns") or 0.0 for k in kernels)
        if ns:
            times[(prog, v, block_size_of(prog, sizes))] = {"runs": [ns / 1e6], "time_ms": ns / 1e6}
    return times, results


def score_all(
    pairs: list[dict],
    sizes: dict[str, int],
    times: dict[tuple[str, int, int], dict],
    folder: Path,
    results: dict[str, dict | None],
    jobs: int = 2,
) -> list[PairScore]:
    """Every pair scored; `results` holds the tool's JSON of reports already analysed (exam.py's), the others are
    analysed here."""
    reports = sorted({f"{p['program']}_v{p['before']}" for p in pairs} - set(results))
    results = {**results, **analyse(folder, [{"report": r} for r in reports], jobs)} if reports else results
    return prefer_fix_alone([score_pair(p, results.get(f"{p['program']}_v{p['before']}"), times, sizes) for p in pairs])


def score_main(args: argparse.Namespace) -> int:
    if not args.folder.is_dir():
        print(f"exam_twins.py: {args.folder} is not a folder", file=sys.stderr)
        return 2
    try:
        pairs, sizes = load_twins(args.twins)
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        print(f"exam_twins.py: cannot read the pairs {args.twins}: {e}", file=sys.stderr)
        return 2
    if bool(args.times) == args.from_reports:
        print("exam_twins.py: give the times (TIMES.jsonl) or --from-reports, one of the two", file=sys.stderr)
        return 2
    try:
        times = load_times(args.times)
    except (OSError, ValueError) as e:
        print(f"exam_twins.py: cannot read the times: {e}", file=sys.stderr)
        return 2
    results: dict[str, dict | None] = {}
    if args.from_reports:
        times, results = times_from_reports(pairs, sizes, args.folder, results, args.jobs)
        print("times: each version's kernel durations in its own report (a preview: not the plain timing)\n")
    scores = score_all(pairs, sizes, times, args.folder, results, args.jobs)
    print(render(scores, args.markdown))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "program": s.pair["program"],
                        "before": s.pair["before"],
                        "twin": s.pair.get("twin"),
                        "kernel": s.pair["kernel"],
                        "fix_rules": s.pair["fix_rules"],
                        "status": s.status,
                        "first": s.first,
                        "first_estimate": s.first_estimate,
                        "estimate": s.estimate,
                        "before_ms": s.before_ms,
                        "twin_ms": s.twin_ms,
                        "measured": s.measured,
                        "error": s.error,
                        "duration_us": s.duration_us,
                        "fix_alone": s.fix_alone,
                    }
                    for s in scores
                ],
                indent=1,
            )
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sc = sub.add_parser("score", help="the estimates against the measured twins")
    sc.add_argument("folder", type=Path, help="folder of the exam reports (<program>_v<N>.ncu-rep)")
    sc.add_argument("times", type=Path, nargs="*", help="exam_times.jsonl of one or more device calls")
    sc.add_argument(
        "--from-reports",
        action="store_true",
        help="instead of measured times, each version's kernel durations in its own report (a preview)",
    )
    sc.add_argument("--twins", type=Path, default=TWINS, help="pairs file (default %(default)s)")
    sc.add_argument("--markdown", action="store_true", help="markdown tables")
    sc.add_argument("--jobs", type=int, default=2, help="reports analysed at once (default 2)")
    sc.add_argument("--json", type=Path, help="also write each pair's score here")
    tm = sub.add_parser("times", help="the device script's run logs as JSONL, one line per version")
    tm.add_argument("runs_dir", type=Path)
    tm.add_argument("--twins", type=Path, default=TWINS)
    vs = sub.add_parser("versions", help="the <program>_v<N> the pairs with a twin compare")
    vs.add_argument("--twins", type=Path, default=TWINS)
    args = ap.parse_args(argv)
    if args.command == "score":
        return score_main(args)
    try:
        pairs, sizes = load_twins(args.twins)
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        print(f"exam_twins.py: cannot read the pairs {args.twins}: {e}", file=sys.stderr)
        return 2
    if args.command == "versions":
        print(" ".join(paired_versions(pairs)))
        return 0
    if not args.runs_dir.is_dir():
        print(f"exam_twins.py: {args.runs_dir} is not a folder", file=sys.stderr)
        return 2
    for rec in collect_times(args.runs_dir, sizes):
        print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
