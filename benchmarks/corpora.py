"""The corpora the scans read (`consistency.py`, `gaps.py`): the committed fixtures, the foreign reports' cache and the
extracted exam reports; their command-line options and one analysis function run over each, in parallel or not.

Where the two uncommitted corpora live, one definition for the scans, the scorers and the tests:
- the foreign reports without a licence to commit: `NCUADVISOR_FOREIGN_CACHE`, else `benchmarks/foreign-cache/`
  (ignored by git; `python benchmarks/foreign.py --fetch` fills it, fixtures/foreign/SOURCES.md);
- the exam reports: `NCUADVISOR_EXAM_DIR`, else `benchmarks/exam-cache/` (ignored by git), which `exam_dir()` fills
  from the committed archive `fixtures/exam-h100-2026-12-06/exam_reports.tar.xz` with every report it lacks."""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIG = "model_step_1010"
FOREIGN_CACHE = Path(os.environ.get("NCUADVISOR_FOREIGN_CACHE") or ROOT / "benchmarks" / "foreign-cache")
EXAM_DIR = Path(os.environ.get("NCUADVISOR_EXAM_DIR") or ROOT / "benchmarks" / "exam-cache")
EXAM_ARCHIVE = ROOT / "fixtures" / "exam-h100-2026-12-06" / "exam_reports.tar.xz"
CORPORA = {
    "fixtures": (ROOT / "fixtures", "**/*.ncu-rep*"),
    "foreign": (FOREIGN_CACHE, "*.ncu-rep*"),
    "exam": (EXAM_DIR, "*.ncu-rep*"),
}


def exam_dir() -> Path:
    """The exam reports' folder, filled from the committed archive with every report it lacks: all of them the first
    time, then only those deleted since (the archive's names are kept in `.archive-names`, so that a full folder costs
    no decompression). A file at a time, each renamed into place once whole: an interrupted extraction leaves no half
    report."""
    listing = EXAM_DIR / ".archive-names"
    if not EXAM_ARCHIVE.is_file():
        return EXAM_DIR
    if listing.is_file() and all((EXAM_DIR / n).is_file() for n in listing.read_text().split()):
        return EXAM_DIR
    EXAM_DIR.mkdir(parents=True, exist_ok=True)
    names = []
    with tarfile.open(EXAM_ARCHIVE, "r:xz") as tar:
        for member in tar:
            name = Path(member.name).name
            if not (member.isfile() and name.endswith(".ncu-rep")):
                continue
            names.append(name)
            source = tar.extractfile(member)
            if source is None or (EXAM_DIR / name).is_file():
                continue
            part = EXAM_DIR / (name + ".part")
            part.write_bytes(source.read())
            part.replace(EXAM_DIR / name)
    listing.write_text("\n".join(names) + "\n")
    return EXAM_DIR


def label(path: Path) -> str:
    """A report's path as the scans print it: relative to the repository where it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def corpus_paths(name: str, big: bool) -> list[Path]:
    folder, pattern = CORPORA[name]
    if name == "exam":
        folder = exam_dir()
    paths = sorted(p for p in folder.glob(pattern) if p.is_file() and not p.name.endswith(".json"))
    return [p for p in paths if big or BIG not in p.name]


def add_corpus_args(ap: argparse.ArgumentParser) -> None:
    """The options that choose the reports: paths of a corpus of their own, --corpus, --big, --jobs, --only."""
    ap.add_argument("paths", nargs="*", type=Path, help="reports of a corpus of their own")
    ap.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="only these corpora (default all)")
    ap.add_argument("--big", action="store_true", help=f"include {BIG} (830 MB unpacked)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--only", help="reports whose path contains this")


def over_corpora(args: argparse.Namespace, analyse: Callable[[Path], Any]) -> dict[str, list[Any]]:
    """`analyse` on every report the options chose, by corpus (in a pool of --jobs processes when above 1: then
    `analyse` must be picklable, a module-level function or a functools.partial of one)."""
    todo: dict[str, list[Path]] = {}
    if args.paths:
        todo["given"] = list(args.paths)
    else:
        for name in args.corpus or list(CORPORA):
            todo[name] = corpus_paths(name, args.big)
    if args.only:
        todo = {n: [p for p in ps if args.only in str(p)] for n, ps in todo.items()}
    results: dict[str, list[Any]] = {}
    for name, paths in todo.items():
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs) as pool:
                results[name] = list(pool.map(analyse, paths))
        else:
            results[name] = []
            for p in paths:
                results[name].append(analyse(p))
                print(f"  {name}: {label(p)}", file=sys.stderr, flush=True)
    return results
