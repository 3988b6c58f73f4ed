"""Which kernels with room end without a named mechanism? Every report we have, each kernel's outcome.

The bar: no kernel holding at least 5% of its report's GPU time at a headroom of at least 1.6× its floor ends
without a finding that names a mechanism. For every report given (the fixtures, `fixtures/**/*.ncu-rep*`, without the
830 MB `model_step_1010` unless `--big`; the foreign cache; the exam reports) the real analysis runs once, and each
kernel group (and each analysed variant) of at least `--min-share` of the time is put in one of these classes:

- `finding`: headroom ≥ 1.6 and a kernel finding names a mechanism (any rule but ROOF001, whose "leave it" names
  none; GEN001, the fallback, counts: it names the mechanism from the counters);
- `program`: headroom ≥ 1.6, no kernel finding, and a program finding covers the kernel (its no-rule verdict says so);
- `verdict`: headroom ≥ 1.6, no finding names a mechanism, and a verdict gives the reason the kernel will not go faster
  by the user's edits (LIB002: a library kernel whose headroom the library's occupancy and the launch's idle SMs
  account for; the lever is the call);
- `gap`: headroom ≥ 1.6 and nothing names a mechanism: a gap in the rule set;
- `unknown-said`: no headroom (the report lacks the counters for a floor) and the kernel says which sections or
  metrics would settle it (its roofline's `headroom_unknown`, or a finding that says so);
- `unknown-silent`: no headroom and nothing says what would settle it;
- `model-wrong`: the kernel ran faster than its modelled floor (the roofline says the model is wrong there);
- `below`: headroom under 1.6 (out of scope).

A kernel whose entry has a headroom but whose no-rule verdict holds none (the floor counts DRAM's bytes alone, an
upper bound: `pipeline.entries.headroom_unknown_words`) is judged without a headroom.

    python benchmarks/gaps.py [--big] [--jobs N] [--corpus fixtures|foreign|exam] [--only SUBSTRING]
                              [--min-share 0.05] [--json OUT] [PATH ...]

Prints every gap and every silent unknown, then a count per corpus. Reports are read, never written. Exit status 1
when a gap or a silent unknown remains.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import add_corpus_args, over_corpora  # noqa: E402
from corpora import label as report_label  # noqa: E402

MIN_SHARE = 0.05  # the bar: a kernel holding this share of the time
MIN_HEADROOM = 1.6  # ... this far above its floor has room (ROOF001's bar, result.types.GAP_MIN_HEADROOM)
CLASSES = ("finding", "program", "verdict", "gap", "unknown-said", "unknown-silent", "model-wrong", "below")
# verdicts that name no mechanism: ROOF001's "leave it" gives no reason for a kernel with room (ATM002's "keep it"
# names one); LIB002's "library code at this shape" gives its reason (the `verdict` class)
REASONED_VERDICTS = frozenset({"LIB002"})
NOT_A_MECHANISM = frozenset({"ROOF001"}) | REASONED_VERDICTS
# words that say what would settle a kernel without a floor (a section, a metric, a re-profile)
SETTLES = ("re-profile", "section", "--set", "--metrics", "--section")


@dataclass
class Row:
    report: str
    kernel: str
    share: float
    headroom: float | None
    cls: str
    why: str  # the rules that named a mechanism, the covering program finding, or what the kernel says

    def line(self) -> str:
        room = f"{self.headroom:.2f}×" if self.headroom is not None else "?×"
        return f"[{self.cls}] {self.report} · {self.kernel} ({self.share:.0%}, {room}): {self.why}"


@dataclass
class Outcome:
    report: str
    error: str | None = None
    rows: list[Row] = field(default_factory=list)


def _name(k: Mapping[str, Any]) -> str:
    name = str(k.get("display_name") or k.get("name") or k.get("id"))
    return name if len(name) <= 70 else name[:69] + "…"


def _mechanism_rules(findings: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(f.get("rule")) for f in findings if f.get("rule") not in NOT_A_MECHANISM]


def _settled_by(k: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> str | None:
    """What the kernel says would settle its unknown headroom, if anything: its roofline, its no-rule verdict (a
    floor of DRAM's bytes alone is an upper bound: `pipeline.entries.headroom_unknown_words`) or a finding."""
    rl = k.get("roofline") or {}
    if rl.get("headroom_unknown"):
        return str(rl["headroom_unknown"])
    verdict = str((k.get("no_rule") or {}).get("message") or "")
    if "headroom unknown" in verdict.lower() and "would settle it" in verdict:
        return verdict[verdict.lower().index("headroom unknown") :]
    for f in findings:
        text = f"{f.get('title', '')} {f.get('message', '')}"
        if "headroom unknown" in text.lower() and any(w in text for w in SETTLES):
            return f"{f.get('rule')}: {f.get('title')}"
    return None


def classify(
    report: str, name: str, share: float, headroom: float | None, findings: Sequence[Mapping[str, Any]], k: Mapping
) -> Row:
    rules = _mechanism_rules(findings)
    no_rule = k.get("no_rule") or {}
    if headroom is None and (wrong := (k.get("roofline") or {}).get("model_wrong")):
        return Row(report, name, share, headroom, "model-wrong", str(wrong)[:160])
    if headroom is not None and not rules and no_rule.get("program_rule"):
        return Row(report, name, share, headroom, "program", str(no_rule["program_rule"]))
    if headroom is not None and not rules and no_rule and no_rule.get("headroom") is None:
        headroom = None  # the verdict holds no headroom: the entry's is an upper bound (a floor of DRAM alone)
    if headroom is None:
        said = _settled_by(k, findings)
        if said:
            return Row(report, name, share, headroom, "unknown-said", said[:160])
        if rules:  # a finding names a mechanism without a floor to measure it against
            return Row(report, name, share, headroom, "unknown-said", "named by " + ", ".join(rules))
        return Row(report, name, share, headroom, "unknown-silent", str(no_rule.get("message") or "no finding")[:160])
    if headroom < MIN_HEADROOM:
        return Row(report, name, share, headroom, "below", ", ".join(rules))
    if rules:
        return Row(report, name, share, headroom, "finding", ", ".join(dict.fromkeys(rules)))
    if no_rule.get("program_rule"):
        return Row(report, name, share, headroom, "program", str(no_rule["program_rule"]))
    reasoned = next((f for f in findings if f.get("rule") in REASONED_VERDICTS), None)
    if reasoned is not None:
        return Row(report, name, share, headroom, "verdict", f"{reasoned.get('rule')}: {reasoned.get('title')}")
    return Row(report, name, share, headroom, "gap", str(no_rule.get("message") or "no finding")[:200])


def rows_of(data: Mapping[str, Any], report: str, min_share: float) -> list[Row]:
    """Each kernel group and each analysed variant of at least `min_share` of the report's time, classified."""
    out: list[Row] = []
    for k in data.get("kernels") or []:
        name = _name(k)
        share = float(k.get("time_share") or 0.0)
        # the group's share (every launch of the kernel at this shape), judged by its representative's analysis
        if share >= min_share:
            out.append(classify(report, name, share, k.get("headroom"), k.get("findings") or [], k))
        for v in k.get("variants") or []:
            vshare = float(v.get("time_share") or 0.0)
            if v.get("profiled") and vshare >= min_share:
                per = float(v.get("per_launch_ns") or 0.0)
                out.append(
                    classify(
                        report,
                        f"{name} [variant {per / 1e3:.1f} µs]",
                        vshare,
                        v.get("headroom"),
                        v.get("findings") or [],
                        {**k, "no_rule": k.get("no_rule")},
                    )
                )
    return out


def analyse(path: Path, min_share: float = MIN_SHARE) -> Outcome:
    """The report analysed once, its kernels classified."""
    from ncuadvisor.api import result_record

    label = report_label(path)
    outcome = Outcome(label)
    try:
        result = result_record(path)
        data = json.loads(json.dumps(result.to_dict(), default=str))
    except Exception as e:  # noqa: BLE001 - a report the tool refuses is recorded, not fatal
        outcome.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
        return outcome
    outcome.rows = rows_of(data, label, min_share)
    return outcome


def table(corpora: Mapping[str, Sequence[Outcome]]) -> str:
    head = ["corpus", "reports", "refused", "≥share", *CLASSES]
    rows = []
    for name, outcomes in corpora.items():
        counts = {c: sum(1 for o in outcomes for r in o.rows if r.cls == c) for c in CLASSES}
        rows.append(
            [
                name,
                str(len(outcomes)),
                str(sum(1 for o in outcomes if o.error)),
                str(sum(len(o.rows) for o in outcomes)),
            ]
            + [str(counts[c]) for c in CLASSES]
        )
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in [head, *rows])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_corpus_args(ap)
    ap.add_argument("--min-share", type=float, default=MIN_SHARE, help="the share of a report's time (default 0.05)")
    ap.add_argument("--all", action="store_true", help="print every kernel's row, not only the gaps")
    ap.add_argument("--json", type=Path, help="write every row here")
    args = ap.parse_args(argv)
    results = over_corpora(args, functools.partial(analyse, min_share=args.min_share))
    shown = CLASSES if args.all else ("gap", "unknown-silent")
    for outcomes in results.values():
        for o in outcomes:
            if o.error:
                print(f"[refused] {o.report}: {o.error}")
            for r in o.rows:
                if r.cls in shown:
                    print(r.line())
    print()
    print(table(results))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    n: [{"report": o.report, "error": o.error, "rows": [r.__dict__ for r in o.rows]} for o in outs]
                    for n, outs in results.items()
                },
                indent=1,
            )
        )
    return (
        1 if any(r.cls in ("gap", "unknown-silent") for outs in results.values() for o in outs for r in o.rows) else 0
    )


if __name__ == "__main__":
    sys.exit(main())
