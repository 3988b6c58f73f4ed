"""Make a larger report out of a real one by appending copies of its result blocks: an engineering check of how
`ncuadvisor report` scales past the reports at hand, NOT the benchmark's whole-model capture (which must be a real
report of >= 1,000 results; see benchmarks/RESULTS.md).

A report file is a sequence of blocks (ncuadvisor/reportfile/blocks.py); each result of a kernel-replay capture sits in a
block of its own, after the blocks that carry the metric-name table and the session's strings. Appending copies of
the result blocks that carry no name table of their own gives a file that `ncu_report` reads as a report with that
many more results (verified: 314 + 3 x 313 = 1,253 results from fixtures/model_step_315.ncu-rep.xz).

    python benchmarks/duplicate_blocks.py fixtures/model_step_315.ncu-rep.xz /tmp/ms1253.ncu-rep --copies 3
"""

from __future__ import annotations

import argparse
import lzma
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ncuadvisor.reportfile.blocks import FileView, iter_blocks, u32  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path, help="a real .ncu-rep (or .ncu-rep.xz)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--copies", type=int, default=3)
    args = ap.parse_args()
    if args.out.exists():
        print(f"{args.out}: already exists", file=sys.stderr)
        return 2
    data = lzma.open(args.report).read() if args.report.suffix == ".xz" else args.report.read_bytes()
    starts, blocks = [], []
    i = 8 + u32(data, 4)
    for b in iter_blocks(data):
        starts.append(i)
        blocks.append(b)
        i = b.payload_end
    spans = [
        data[s : b.payload_end]
        for s, b in zip(starts, blocks)
        if (b.header.get(2) or [0])[0] == 1 and not any(e > s0 for s0, e in b.header.get(4) or [])
    ]
    with args.out.open("wb") as fh:
        fh.write(data)
        for _ in range(args.copies):
            for span in spans:
                fh.write(span)
    with args.out.open("rb") as fh:
        n = sum(int((b.header.get(2) or [0])[0]) for b in iter_blocks(FileView(fh)))
    print(f"{args.out}: {n} results ({len(spans)} result blocks copied {args.copies} times)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
