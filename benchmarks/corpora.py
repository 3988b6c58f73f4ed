"""The corpora the scans read (`consistency.py`, `gaps.py`): the committed fixtures, the foreign reports' cache and the
extracted exam reports; their command-line options and one analysis function run over each, in parallel or not."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIG = "model_step_1010"
CORPORA = {
    "fixtures": (ROOT / "fixtures", "**/*.ncu-rep*"),
    "foreign": (Path("/tmp/weak-fc"), "*.ncu-rep*"),
    "exam": (Path("/tmp/exall"), "*.ncu-rep*"),
}


def label(path: Path) -> str:
    """A report's path as the scans print it: relative to the repository where it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def corpus_paths(name: str, big: bool) -> list[Path]:
    folder, pattern = CORPORA[name]
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
