"""How ncuadvisor scales with the size of a report.

Measures, on one report: the time to read every metric of every result through `ncu_report` (the naive floor:
what a tool that reads everything pays), and `ncuadvisor report` end to end to JSON and to HTML (wall time, peak
memory of the process, output size). Goal (the big-report benchmark): the whole analysis in less time than reading every metric
once, under 5 s per 1,000 full-set results on a 2-core machine, peak memory under 1 GB, HTML under 5 MB.

    python benchmarks/scale.py fixtures/flaws.ncu-rep.xz [more reports...]

The HTML size for many distinct kernels is measured on a synthetic result (no report that big exists yet): a real
report is analyzed, then its kernels are copied at the result-dict level under distinct names and ids until there
are N of them, each with L launches (so N x L results), and the page is rendered in this process:

    python benchmarks/scale.py --html-kernels 1000 [--html-launches 5] [fixtures/flaws.ncu-rep.xz]
    python benchmarks/scale.py fixtures/flaws.ncu-rep.xz [more reports...] [--workers] [--repeat N]

`ncuadvisor render` of a saved result of N kernels (the synthetic result above, written one kernel at a time to a
JSON file), in every format, each in its own process: peak RSS (the process's own high-water mark), wall and
CPU seconds (user + system) and the output's size, into files under a temporary folder (the terminal's text into a
file too):

    python benchmarks/scale.py --render-kernels 20000,100000 [--formats terminal,json] [fixtures/flaws.ncu-rep.xz]

Peak memory is given for the largest process (exact) and summed over the process and its worker processes (RSS and
PSS, sampled every 50 ms, so a shorter peak can be missed). `--workers` reads results and deep data in worker
processes whatever the report's size: the path of a report with hundreds of distinct kernels, on the small fixtures.
"""

from __future__ import annotations

import argparse
import lzma
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def decompressed(path: Path, folder: Path) -> Path:
    if path.suffix != ".xz":
        return path
    out = folder / path.with_suffix("").name
    with lzma.open(path) as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out


def read_everything(path: Path) -> tuple[float, int, int]:
    """Seconds to read every metric value of every result; (seconds, results, metric values)."""
    import ncu_report

    t0 = time.perf_counter()
    ctx = ncu_report.load_report(str(path))
    results = values = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            results += 1
            for name in action.metric_names():
                m = action.metric_by_name(name)
                try:
                    m.as_double() if m.kind() != m.ValueKind_STRING else m.as_string()
                except Exception:
                    pass
                values += 1
    return time.perf_counter() - t0, results, values


def read_everything_in_child(path: Path) -> tuple[float, int, int]:
    """read_everything() in a fresh interpreter, so that this process stays small: a child forked from a process
    holding a loaded report would inherit its resident size in the peak-memory measurement."""
    out = subprocess.run(
        [sys.executable, __file__, "--read-all", str(path)], capture_output=True, text=True, check=True
    )
    seconds, results, values = out.stdout.split()
    return float(seconds), int(results), int(values)


# `ncuadvisor report` with every threshold at 0: results and deep data read in worker processes, as on a report with
# hundreds of distinct kernels (the fixtures at hand are small).
FORCE_WORKERS = (
    "import ncuadvisor.load.reader as load; load.IN_PROCESS_MAX = load.DETAIL_IN_PROCESS_MAX = 0; "
    "from ncuadvisor.cli import main; main()"
)


def tree_memory(root: int) -> tuple[float, float]:
    """RSS and PSS (MB) summed over `root` and all its descendants, now (Linux). PSS counts a page shared by n
    processes (a forked worker's inherited pages) as 1/n in each, so its sum is the memory the tree really holds."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    rss = pss = 0
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024.0, pss / 1024.0


def run_cli(report: Path, out: Path, workers: bool = False) -> tuple[float, float, float, float]:
    """`ncuadvisor report REPORT -o OUT` in a child process: wall seconds, peak RSS of its largest process (MB,
    exact), and the peak RSS and PSS summed over the process and its workers (MB, sampled every 50 ms)."""
    cmd = [sys.executable, "-m", "ncuadvisor"] if not workers else [sys.executable, "-c", FORCE_WORKERS]
    cmd += ["report", str(report), "-o", str(out), "-q", "--force"]
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # child: exec, so that its rusage is its own
        os.execv(sys.executable, cmd)
    tree_rss = tree_pss = 0.0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        rss, pss = tree_memory(pid)
        tree_rss, tree_pss = max(tree_rss, rss), max(tree_pss, pss)
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ncuadvisor failed on {report}")
    return wall, usage.ru_maxrss / 1024.0, tree_rss, tree_pss


def html_size(report: Path, kernels: int, launches: int) -> None:
    """Render the synthetic result of `kernels` x `launches` and print the page's size and where its bytes go."""
    import re

    from ncuadvisor.pipeline.analyze import analyze
    from ncuadvisor.render.html import render_html
    from ncuadvisor.result import Result

    with tempfile.TemporaryDirectory() as tmp:
        result = analyze(decompressed(report, Path(tmp))).to_dict()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.synthetic import many_kernels

    big = many_kernels(result, kernels, launches)
    t0 = time.perf_counter()
    page = render_html(Result.from_dict(big))  # read as `ncuadvisor render` reads a saved result
    seconds = time.perf_counter() - t0

    def part(start: str, end: str) -> float:
        i = page.find(start)
        j = page.find(end, i) if i >= 0 else -1
        return len(page[i:j].encode()) / 1e6 if j >= 0 else 0.0

    embedded = part('<script type="application/json"', "</script>")
    cards = sum(len(m.encode()) for m in re.findall(r'<section class="card".*?</section>', page, re.S)) / 1e6
    header = (
        "kernels",
        "results",
        "HTML (MB)",
        "embedded JSON (MB)",
        "chart (MB)",
        "full cards",
        "cards (MB)",
        "tail rows",
        "render (s)",
    )
    row = (
        kernels,
        kernels * launches,
        f"{len(page.encode()) / 1e6:.2f}",
        f"{embedded:.2f}",
        f"{part('<svg', '</svg>'):.2f}",
        page.count('<section class="card"'),
        f"{cards:.2f}",
        page.count('<tr id="'),
        f"{seconds:.2f}",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    print("| " + " | ".join(str(c) for c in row) + " |")


RENDER_FORMATS = ("terminal", "md", "html", "json", "sarif", "digest")


def render_saved(report: Path, counts: list[int], formats: list[str]) -> None:
    """`ncuadvisor render` of a written synthetic result of each size in each format: a table of peak RSS (MiB, the
    process's own maximum, exact) and wall seconds."""
    from ncuadvisor.pipeline.analyze import analyze

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.synthetic import write_many_kernels

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print("| kernels | JSON (MB) | format | peak RSS (MiB) | wall (s) | CPU (s) | output (MB) | exit |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        base = analyze(decompressed(report, folder)).to_dict()
        for count in counts:
            saved = folder / f"many_{count}.json"
            size = write_many_kernels(base, count, saved)
            for name in formats:
                out = folder / f"out_{count}.{name}"
                cmd = [sys.executable, "-m", "ncuadvisor", "render", str(saved), "-f", name, "-q"]
                t0 = time.perf_counter()
                with out.open("wb") as sink:
                    proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE)
                    _, status, usage = os.wait4(proc.pid, 0)
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    proc.returncode = os.waitstatus_to_exitcode(status)
                wall = time.perf_counter() - t0
                row = (
                    count,
                    f"{size / 1e6:.0f}",
                    name,
                    f"{usage.ru_maxrss / 1024:.0f}",
                    f"{wall:.1f}",
                    f"{usage.ru_utime + usage.ru_stime:.1f}",  # a shared machine's wall time is mostly others' load
                    f"{out.stat().st_size / 1e6:.1f}",
                    proc.returncode if not err.strip() else f"{proc.returncode}: {err.strip().splitlines()[-1]}",
                )
                print("| " + " | ".join(str(c) for c in row) + " |", flush=True)
                out.unlink()
            saved.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--read-all", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument(
        "--html-kernels",
        type=int,
        metavar="N",
        help="measure the HTML page of a synthetic result with N distinct kernels (from the first report, "
        "default fixtures/flaws.ncu-rep.xz)",
    )
    ap.add_argument(
        "--html-launches", type=int, default=1, metavar="L", help="launches per synthetic kernel (default 1)"
    )
    ap.add_argument(
        "--workers",
        action="store_true",
        help="read results and deep data in worker processes whatever the report's size",
    )
    ap.add_argument("--repeat", type=int, default=1, help="run each `ncuadvisor report` N times, keep the median time")
    ap.add_argument(
        "--render-kernels",
        metavar="N[,N...]",
        help="measure `ncuadvisor render` of a saved synthetic result of N kernels in every format (from the first "
        "report, default fixtures/flaws.ncu-rep.xz)",
    )
    ap.add_argument(
        "--formats", default=",".join(RENDER_FORMATS), help="with --render-kernels: the formats (default: all six)"
    )
    args = ap.parse_args()
    if args.render_kernels:
        default = Path(__file__).resolve().parent.parent / "fixtures" / "flaws.ncu-rep.xz"
        report = args.reports[0] if args.reports else default
        counts = [int(n) for n in args.render_kernels.split(",")]
        render_saved(report, counts, args.formats.split(","))
        return 0
    if args.html_kernels:
        default = Path(__file__).resolve().parent.parent / "fixtures" / "flaws.ncu-rep.xz"
        report = args.reports[0] if args.reports else default
        html_size(report, args.html_kernels, args.html_launches)
        return 0
    if not args.reports:
        ap.error("give at least one report (or --html-kernels N)")
    if args.read_all:
        print(*read_everything(args.reports[0]))
        return 0
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    mode = "results and deep data in worker processes (--workers)" if args.workers else "default thresholds"
    print(f"mode: {mode}")
    header = (
        "report",
        "results",
        "metric values",
        "read all (s)",
        "report→JSON (s)",
        "report→HTML (s)",
        "JSON ÷ read all",
        "HTML − JSON (s)",
        "peak RSS (MB)",
        "peak RSS, all processes (MB)",
        "peak PSS, all processes (MB)",
        "HTML (MB)",
        "s per 1k results",
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for report in args.reports:
            local = decompressed(report, folder)
            # each repeat reads everything, then runs JSON and HTML: on a shared, noisy machine the ratio of one
            # repeat's times is steadier than any time alone
            floors, runs = [], []
            for _ in range(args.repeat):
                naive, results, values = read_everything_in_child(local)
                floors.append(naive)
                runs += [run_cli(local, folder / f"r.{ext}", args.workers) for ext in ("json", "html")]
            naive = statistics.median(floors)
            t_json = statistics.median(r[0] for r in runs[0::2])
            t_html = statistics.median(r[0] for r in runs[1::2])
            ratio = statistics.median(j[0] / f for j, f in zip(runs[0::2], floors))
            html_extra = statistics.median(h[0] - j[0] for j, h in zip(runs[0::2], runs[1::2]))
            html_mb = (folder / "r.html").stat().st_size / 1e6
            rows.append(
                (
                    report.name,
                    results,
                    values,
                    f"{naive:.2f}",
                    f"{t_json:.2f}",
                    f"{t_html:.2f}",
                    f"{ratio:.2f}",
                    f"{html_extra:+.2f}",
                    f"{max(r[1] for r in runs):.0f}",
                    f"{max(r[2] for r in runs):.0f}",
                    f"{max(r[3] for r in runs):.0f}",
                    f"{html_mb:.2f}",
                    f"{t_html / results * 1000:.2f}",
                )
            )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
