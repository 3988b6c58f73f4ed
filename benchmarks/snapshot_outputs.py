"""Every fixture's outputs (JSON, markdown, HTML, SARIF) rendered into one folder, scrubbed of what changes from run to
run (creation time, versions, temporary paths), so that two trees of the code can be compared file by file:

    python3 benchmarks/snapshot_outputs.py OUT_DIR [--tree PATH] [--jobs 2]
    diff -r OUT_BEFORE OUT_AFTER

`--tree` runs the ncuadvisor of another checkout (a `git worktree` of an older commit) on this checkout's fixtures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("json", "md", "html", "sarif")
_SCRUB = [
    (re.compile(r'"created": "[^"]*"'), '"created": "X"'),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d\\?:\d\d\\?:\d\dZ"), "TIME"),  # markdown escapes the colons
    (re.compile(r"/tmp/[^\s\"'<>)]*?/([^/\s\"'<>)]+\.ncu-rep)"), r"TMP/\1"),
    (re.compile(r'("version": )"[^"]*"'), r'\1"V"'),
    (re.compile(r"ncuadvisor \d+\.\d+\.\d+"), "ncuadvisor V"),
]


def fixtures() -> list[Path]:
    found = sorted((ROOT / "fixtures").rglob("*.ncu-rep.xz")) + sorted((ROOT / "fixtures").rglob("*.ncu-repz"))
    return [p for p in found if "model_step_1010" not in p.name]


def run(tree: Path, report: Path, fmt: str, out: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    target = out / f"{report.relative_to(ROOT / 'fixtures').as_posix().replace('/', '__')}.{fmt}"
    proc = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(report), "--format", fmt, "-o", str(target), "--force"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,
    )
    if proc.returncode not in (0,):
        target.write_text(f"exit {proc.returncode}\n{proc.stderr[-2000:]}")
    text = target.read_text(errors="replace").replace(f"{ROOT}/fixtures/", "FIXTURES/")
    for pattern, repl in _SCRUB:
        text = pattern.sub(repl, text)
    if fmt == "json":
        try:
            data = json.loads(text)
            text = json.dumps(data, indent=1, sort_keys=True)
        except ValueError:
            pass
    target.write_text(text)
    return f"{target.name}: exit {proc.returncode}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tree", type=Path, default=ROOT)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(r, f) for r in fixtures() for f in FORMATS]
    with ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(lambda j: run(args.tree.resolve(), j[0], j[1], args.out), jobs):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
