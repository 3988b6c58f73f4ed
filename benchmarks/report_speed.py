"""Reading a report as users run it: `ncuadvisor report` installed from the wheel against the read-all floor.

Builds the wheel (`pip wheel . --no-deps`), installs it into a fresh virtual environment that sees this Python's
packages (`--system-site-packages`, the wheel `--no-deps`: the dependencies are those already installed), checks that
the environment imports ncuadvisor from the wheel (not this checkout, not an editable install), then alternates, in
this one run: the floor (every metric of every result read once through `ncu_report`, in a fresh interpreter of the
environment: `benchmarks/scale.py --read-all`, its own seconds from loading the report to the last value) and
`ncuadvisor report REPORT -o R.json -q --force` (the installed command, wall seconds of the process). The goal
(profiling cost, item 3): report → JSON in at most half the floor.

    python benchmarks/report_speed.py [REPORT ...] [--pairs 3] [--venv /tmp/ncuadvisor-wheel] [--first N]

REPORT defaults to fixtures/torch_train.ncu-rep.xz (52 results of a training step with the 13 analysis sections,
`--launch-count 80`); fixtures/profile-cost-2026-11-30/train_naive_full.ncu-rep.xz is the training step's full set on
all 229 launches. `--first 60` measures each report's first 60 results as well: the report file cut after the block
of its 60th result (each result is a block of its own, the modules in blocks before the results that use them), what
`ncu --set full -c 60` on the same program writes but for the counters' own values. On the GPU machine (no package
registry): `--no-build-isolation` (the build backend, hatchling, already installed) and `--wheel .whl/ncu_report-*.whl`
(installed into the environment, which does not see the PYTHONPATH the device scripts give ncu_report by).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import site
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPORT = ROOT / "fixtures" / "torch_train.ncu-rep.xz"


def clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH: the installed wheel, not a checkout, is what runs."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), **kw)
    if p.returncode != 0:
        raise SystemExit(f"report_speed: `{' '.join(cmd)}` failed (exit {p.returncode}): {p.stderr.strip()[-300:]}")
    return p


def install(
    venv: Path, wheels: Path, isolation: bool = True, extra: list[Path] | None = None, built: Path | None = None
) -> tuple[Path, str, str]:
    """Build the wheel (or take `built`, one built elsewhere from this tree), install it into a fresh `venv` (with
    the `extra` wheels, no dependencies, no index); (its python, the wheel's name, where ncuadvisor imports from)."""
    shutil.rmtree(wheels, ignore_errors=True)
    if built is None:
        build = [sys.executable, "-m", "pip", "wheel", str(ROOT), "-w", str(wheels), "--no-deps", "-q"]
        run(build + ([] if isolation else ["--no-build-isolation"]), cwd=ROOT)
    wheel = built or next(wheels.glob("ncuadvisor-*.whl"), None)
    if wheel is None:
        raise SystemExit(f"report_speed: no ncuadvisor wheel in {wheels}")
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    python = venv / "bin" / "python"
    # a venv does not see the user site where some machines keep the dependencies (`pip install --user`): a .pth
    # file adds it, as the interpreter that runs this script sees it
    user_site = site.getusersitepackages()
    if site.ENABLE_USER_SITE and Path(user_site).is_dir():
        purelib = subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
        (Path(purelib.decode().strip()) / "user-site.pth").write_text(user_site + "\n")
    run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)])
    for w in extra or []:
        run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(w)])
    where = run([str(python), "-c", "import ncuadvisor; print(ncuadvisor.__file__)"], cwd="/").stdout.strip()
    if not Path(where).resolve().is_relative_to(venv.resolve()):
        raise SystemExit(f"report_speed: the environment imports ncuadvisor from {where}, not from the wheel")
    return python, wheel.name, where


def floor(python: Path, report: Path) -> tuple[float, float, int, int]:
    """(seconds reading every metric, wall seconds of the process, results, metric values)."""
    t0 = time.perf_counter()
    out = run([str(python), str(ROOT / "benchmarks" / "scale.py"), "--read-all", str(report)], cwd="/").stdout
    wall = time.perf_counter() - t0
    seconds, results, values = out.split()
    return float(seconds), wall, int(results), int(values)


def report_json(python: Path, report: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user and system, its workers included) of the installed `ncuadvisor report REPORT
    -o OUT.json -q --force`."""
    ncuadvisor = python.parent / "ncuadvisor"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run([str(ncuadvisor), "report", str(report), "-o", str(out), "-q", "--force"], cwd="/")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def first_results(report: Path, n: int, folder: Path) -> Path | None:
    """The report file cut after the block of its `n`th result (`reportfile.blocks`: each result a block), as
    `NAME.first{n}.ncu-rep` in `folder`; None when it holds `n` results or fewer, or is not in that layout."""
    sys.path.insert(0, str(ROOT))
    from ncuadvisor.reportfile.blocks import FileView, iter_blocks

    results, end = 0, None
    with report.open("rb") as fh:
        for block in iter_blocks(FileView(fh)):
            results += int((block.header.get(2) or [0])[0])
            if results >= n:
                end = block.payload_end if results == n else None
                break
    if end is None:
        return None
    out = folder / report.name.replace(".ncu-rep", f".first{n}.ncu-rep")
    with report.open("rb") as src, out.open("wb") as dst:
        left = end
        while left:
            chunk = src.read(min(left, 1 << 24))
            if not chunk:
                return None
            dst.write(chunk)
            left -= len(chunk)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="*", type=Path, default=[DEFAULT_REPORT])
    ap.add_argument("--pairs", type=int, default=3, help="floor / report pairs, alternating (default 3)")
    ap.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "ncuadvisor-wheel")
    ap.add_argument("--first", type=int, default=None, help="also each report's first N results (the file cut)")
    ap.add_argument("--no-build-isolation", action="store_true", help="build the wheel with the installed backend")
    ap.add_argument("--wheel", type=Path, action="append", default=[], help="another wheel to install (ncu_report)")
    ap.add_argument("--built", type=Path, default=None, help="the ncuadvisor wheel, built elsewhere from this tree")
    args = ap.parse_args()
    for r in args.reports:
        if not r.is_file():
            raise SystemExit(f"report_speed: no report at {r}")
    wheels = Path(tempfile.gettempdir()) / "ncuadvisor-wheels"
    python, wheel, where = install(args.venv, wheels, not args.no_build_isolation, args.wheel, args.built)
    version = run([str(python), "-c", "import ncu_report, sys; print(sys.version.split()[0])"]).stdout.strip()
    print(f"wheel {wheel} in {args.venv} (ncuadvisor imported from {where}); Python {version}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.1f}")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from scale import decompressed

    print(
        "\n| report | results | metric values | pair | read all (s) | read all, process (s) | report→JSON (s) "
        "| report CPU (s) | JSON ÷ read all |\n|---|---|---|---|---|---|---|---|---|"
    )
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        for report in args.reports:
            local = decompressed(report, Path(tmp))
            cut = first_results(local, args.first, Path(tmp)) if args.first else None
            for path, name in [(local, report.name)] + ([(cut, f"{report.name} (first {args.first})")] if cut else []):
                ratios, floors, reports = [], [], []
                for i in range(args.pairs):
                    seconds, wall, results, values = floor(python, path)
                    t, cpu = report_json(python, path, Path(tmp) / "r.json")
                    floors.append(seconds)
                    reports.append(t)
                    ratios.append(t / seconds)
                    print(
                        f"| {name} | {results} | {values} | {i + 1} | {seconds:.2f} | {wall:.2f} | {t:.2f} | {cpu:.2f} "
                        f"| {t / seconds:.2f} |",
                        flush=True,
                    )
                summary.append((name, statistics.median(floors), statistics.median(reports), ratios))
            cut.unlink() if cut else None
            local.unlink() if local != report else None
    print(f"\nload average after {os.getloadavg()[0]:.1f}; medians:")
    for name, f, t, ratios in summary:
        print(
            f"- {name}: read all {f:.2f} s, report→JSON {t:.2f} s, JSON ÷ read all {statistics.median(ratios):.2f}× "
            f"(per pair {', '.join(f'{r:.2f}' for r in ratios)}; goal ≤ 0.5×)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
