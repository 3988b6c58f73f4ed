"""Print a rule case drawn from a real report: one kernel's metrics that a rule and the roofline read, its device
attributes and its hottest per-instruction entries, in the TOML of tests/rule_cases/, to copy values from.

    python3 tests/rule_cases/from_fixture.py fixtures/flaws.ncu-rep.xz transpose_naive MEM001 [--top 8]

Metrics equal to the H200 defaults of tests/rule_cases/h200.toml, and zeros the rule does not require, are left out; values are rounded to 4
significant digits and program counters counted from the kernel's first instruction.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from ncuadvisor.analysis import roofline  # noqa: E402
from ncuadvisor.load import ReportReader, read_results  # noqa: E402
from ncuadvisor.model import group_kernels, num  # noqa: E402
from ncuadvisor.rulekit import engine  # noqa: E402


def number(v: float) -> str:
    """A metric value, shortened to 4 significant digits (integers stay whole)."""
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.4g}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("kernel", help="the kernel's function name")
    ap.add_argument("rule", help="the rule code whose metrics to print")
    ap.add_argument("--top", type=int, default=8, help="per-instruction entries per metric (largest values)")
    ap.add_argument("--nth", type=int, default=0, help="which of the kernel groups of that name (0: the first)")
    args = ap.parse_args()
    rule = next((r for r in engine.discover() if r.code == args.rule), None)
    if rule is None:
        print(f"no rule {args.rule!r} (run `ncuadvisor rules` for the list)", file=sys.stderr)
        return 2
    defaults = tomllib.loads((Path(__file__).parent / "h200.toml").read_text())
    metrics = list(dict.fromkeys(roofline.METRICS + list(rule.requires) + list(rule.optional)))
    reader = ReportReader(args.report, metrics)
    profile = read_results(reader, metrics)
    kernels = [k for k in group_kernels(profile.results) if k.name == args.kernel]
    if not kernels:
        print(f"no kernel {args.kernel!r} in {args.report}", file=sys.stderr)
        return 2
    k = kernels[min(args.nth, len(kernels) - 1)]
    row = profile.results.row(k.representative)
    total = sum(x.duration_ns for x in group_kernels(profile.results))
    print(f'[[case]]\nname = "{k.name}"\nkernel = "{k.name}"\ntime_share = {k.duration_ns / total:.3f}\n')
    print("[case.metrics]")
    for m in metrics:
        v = num(row.get(m))
        if (v or (v == 0 and m in rule.requires)) and defaults["metrics"].get(m) != v:
            print(f'"{m}" = {number(v)}')
    detail = reader.details([k.representative], rule.per_instruction, lambda rid, f: True).get(k.representative)
    per_instruction = detail.per_instruction if detail else {}
    pcs = [e.pc for entries in per_instruction.values() for e in entries]
    if pcs:
        print("\n[case.per_instruction]")
        first = min(pcs)
        for m, entries in per_instruction.items():
            top = sorted(sorted(entries, key=lambda e: -e.value)[: args.top], key=lambda e: e.pc)
            print(f'"{m}" = [')
            for e in top:
                print(f"    [{e.pc - first:#x}, {number(e.value)}, {json.dumps(e.sass or '')}],")
            print("]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
