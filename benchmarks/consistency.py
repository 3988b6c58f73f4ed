"""Does any output contradict itself? Every report we have, analysed once, its JSON, markdown and HTML checked.

For every report given (the fixtures, `fixtures/**/*.ncu-rep*`, without the 830 MB `model_step_1010` unless `--big`;
the foreign cache; the exam reports), the real analysis runs once in this process (the result the JSON dumps; the
markdown and HTML renderers for the checks that need the words), and per kernel and per program:

1. `time`: a kernel's time is spent once. No kernel finding saves more than its kernel; a kernel's entry among the top
   actions saves what its finding's card says (over the same launches); the top actions, each with its
   follow-ups, never claim more than the time of the kernels they name, counted together (two entries on one kernel
   share it); a program finding printed "across the program" and the kernel entries on the kernels it names never
   claim more than those kernels take (a saving outside the kernels' GPU time, launch gaps and recompilation, is not
   counted against them).
2. `lines`: evidence without a source line never shows one instruction as a share of the kernel at line `?` (the
   JSON's source entries without a line; the markdown's `:?` rows).
3. `bytes`: the compulsory, moved and ideal bytes are the same number in the JSON roofline, the markdown card, the
   HTML card and every finding's words that name them; "ideal" ten times below the compulsory bytes comes with the
   reason (loads through TMA, which the ideal sectors do not count).
4. `bound`: the badge (JSON `bound`, the markdown table and card, the HTML card) is the limiter's side (`roofline.
   limiter`: dram/l2/l1/shared/lsu memory, fma/fp64/fp16/tensor/issue/alu/sfu compute, latency, launch; the Speed Of
   Light word where no limiter is named), and "launch" is never shown for a launch longer than the launch overhead;
   a finding's title, message or speedup model says "issue-bound" only where instruction issue is the limiter (or
   none is named).
5. `other`: a "leave it" verdict beside a finding that promises more than 15%; headroom below 1 without the "model is
   wrong here" flag; an estimate above 100%; a finding whose fixed kernel would run below the kernel's floor without
   saying it changes the floor.

    python benchmarks/consistency.py [--big] [--jobs N] [--corpus fixtures|foreign|exam] [--only SUBSTRING]
                                     [--markdown] [--json OUT] [PATH ...]

Paths given on the command line form their own corpus. Reports are read, never written. Prints a table per corpus
(reports, kernels, violations per check) and every violation.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import add_corpus_args, over_corpora  # noqa: E402
from corpora import label as report_label  # noqa: E402

CHECKS = ("time", "lines", "bytes", "bound", "other")
# program findings whose saving lies outside the kernels' GPU time (launch gaps, host time, recompilation)
OUTSIDE_KERNEL_TIME = frozenset({"launch-overhead", "dynamic-shapes"})
MEMORY_UNITS = frozenset({"dram", "l2", "l1", "shared", "lsu"})
COMPUTE_UNITS = frozenset({"fma", "fp64", "fp16", "tensor", "issue", "alu", "sfu"})
LAUNCH_BOUND_NS = 5_000.0  # a launch shorter than this is the launch overhead's order
LEAVE_IT_MAX_SPEEDUP = 0.15  # a finding promising more than this beside a "leave it" contradicts it
TOLERANCE = 1e-6  # relative slack for sums of floats
TIME_SLACK = 1.001  # a claim may exceed the time by rounding only
BYTES_OFF = 10.0  # "ideal" this many times below the compulsory bytes needs its reason
BYTE_UNITS = {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_BYTES_RE = r"(\d+(?:\.\d+)?) (B|KB|MB|GB|TB)"


@dataclass
class Violation:
    check: str
    report: str
    kernel: str
    what: str

    def line(self) -> str:
        return f"[{self.check}] {self.report} · {self.kernel}: {self.what}"


@dataclass
class ReportOutcome:
    report: str
    kernels: int = 0
    error: str | None = None
    violations: list[Violation] = field(default_factory=list)


def _bytes(number: str, unit: str) -> float:
    return float(number) * BYTE_UNITS[unit]


def _same_bytes(printed: float, value: float) -> bool:
    """Whether a byte count printed with one decimal (`units.fmt_bytes`) is `value`."""
    from ncuadvisor.units import fmt_bytes

    return fmt_bytes(printed) == fmt_bytes(value) or abs(printed - value) <= 0.051 * max(printed, 1.0)


def _name(k: Mapping[str, Any]) -> str:
    name = str(k.get("display_name") or k.get("name") or k.get("id"))
    return name if len(name) <= 60 else name[:59] + "…"


# -- 1. time spent once ----------------------------------------------------------------------------------------------


def _finding_saving_ns(f: Mapping[str, Any], duration_ns: float) -> float:
    return float(f.get("estimated_speedup") or 0.0) * duration_ns


def check_time(r: Mapping[str, Any], report: str) -> list[Violation]:
    out: list[Violation] = []
    kernels = {str(k["id"]): k for k in r.get("kernels") or []}
    dur = {i: float(k.get("duration_ns") or 0.0) for i, k in kernels.items()}
    for k in kernels.values():
        parts = [(k.get("findings") or [], float(k.get("analysed_duration_ns") or k.get("duration_ns") or 0.0), "")]
        parts += [
            (v.get("findings") or [], float(v.get("duration_ns") or 0.0), " (variant)") for v in k.get("variants") or []
        ]
        for findings, ns, where in parts:
            for f in findings:
                if f.get("category") == "at-roofline":
                    continue
                if _finding_saving_ns(f, ns) > ns * TIME_SLACK:
                    out.append(
                        Violation(
                            "time", report, _name(k), f"{f['rule']}{where} saves {f['estimated_speedup']:.0%} of it"
                        )
                    )
    # the top actions: each claim (entry + follow-ups) on its kernels, all claims on a kernel set together
    claims: list[tuple[set[str], float, str]] = []
    for a in r.get("top_actions") or []:
        ids = {str(i) for i in (a.get("kernel_ids") or ([a["kernel_id"]] if a.get("kernel_id") is not None else []))}
        ids &= set(dur)
        if not ids or (a.get("scope") == "program" and a.get("category") in OUTSIDE_KERNEL_TIME):
            continue
        claim = float(a.get("estimated_saving_ns") or 0.0) + sum(
            float(u.get("estimated_saving_ns") or 0.0) for u in a.get("follow_ups") or []
        )
        claims.append((ids, claim, f"{a.get('rule')} ({a.get('scope')})"))
    out += _over_claimed(claims, dur, kernels, report, "top actions")
    seen: dict[str, str] = {}
    for a in r.get("top_actions") or []:
        if a.get("scope") == "kernel" and a.get("kernel_id") is not None:
            kid = str(a["kernel_id"])
            if kid in seen:
                out.append(
                    Violation(
                        "time",
                        report,
                        _name(kernels.get(kid, {"id": kid})),
                        f"two top actions: {seen[kid]} and {a.get('rule')}",
                    )
                )
            seen[kid] = str(a.get("rule"))
    # a kernel entry saves what its first finding's card says, over the same launches
    for a in r.get("top_actions") or []:
        if a.get("scope") != "kernel" or str(a.get("kernel_id")) not in kernels:
            continue
        k = kernels[str(a["kernel_id"])]
        parts = [(k.get("findings") or [], float(k.get("analysed_duration_ns") or k.get("duration_ns") or 0.0))]
        parts += [(v.get("findings") or [], float(v.get("duration_ns") or 0.0)) for v in k.get("variants") or []]
        card = sum(_finding_saving_ns(f, ns) for fs, ns in parts for f in fs if f.get("rule") == a.get("rule"))
        saving = float(a.get("estimated_saving_ns") or 0.0)
        if abs(card - saving) > 0.01 * max(card, saving, 1.0):
            out.append(
                Violation(
                    "time",
                    report,
                    _name(k),
                    f"top action {a.get('rule')} saves {saving / 1e3:.1f} µs, its finding on the card "
                    f"{card / 1e3:.1f} µs",
                )
            )
    # the program findings as printed, beside the kernels' own entries (their first fix and its follow-ups)
    own: dict[str, tuple[float, str]] = {}
    for a in r.get("top_actions") or []:
        if a.get("scope") == "kernel" and a.get("kernel_id") is not None:
            claim = float(a.get("estimated_saving_ns") or 0.0) + sum(
                float(u.get("estimated_saving_ns") or 0.0) for u in a.get("follow_ups") or []
            )
            own[str(a["kernel_id"])] = (claim, str(a.get("rule")))
    printed: list[tuple[set[str], float, str]] = []
    for p in r.get("program_findings") or []:
        if p.get("category") in OUTSIDE_KERNEL_TIME:
            continue
        named = [str(i) for i in p.get("kernel_ids") or [] if str(i) in dur]
        if not named:
            continue
        printed.append((set(named), float(p.get("estimated_saving_ns") or 0.0), str(p.get("rule"))))
        time_ns = sum(dur[i] for i in set(named))
        taken = sum(own[i][0] for i in set(named) if i in own)
        saving = float(p.get("estimated_saving_ns") or 0.0)
        if saving + taken > time_ns * TIME_SLACK and saving > 0:
            by = ", ".join(f"{own[i][1]} {own[i][0] / 1e3:.1f} µs" for i in dict.fromkeys(named) if i in own)
            out.append(
                Violation(
                    "time",
                    report,
                    ", ".join(_name(kernels[i]) for i in dict.fromkeys(named))[:120],
                    f"{p.get('rule')} saves {saving / 1e3:.1f} µs across the program while the kernel entries claim "
                    f"{taken / 1e3:.1f} µs ({by}) of their {time_ns / 1e3:.1f} µs",
                )
            )
    # several program findings on overlapping kernels, with the kernels' own entries, counted together
    if len(printed) > 1:
        out += _over_claimed(
            printed + [({i}, c, rule) for i, (c, rule) in own.items()], dur, kernels, report, "entries"
        )
    return out


def _over_claimed(
    claims: Sequence[tuple[set[str], float, str]],
    dur: Mapping[str, float],
    kernels: Mapping[str, Mapping[str, Any]],
    report: str,
    what: str,
) -> list[Violation]:
    """Claims whose kernel sets overlap, grouped; each group's claims summed against its kernels' time."""
    groups: list[tuple[set[str], float, list[str]]] = []
    for ids, claim, label in claims:
        merged_ids, total, labels = set(ids), claim, [label]
        rest = []
        for g in groups:
            if g[0] & merged_ids:
                merged_ids |= g[0]
                total += g[1]
                labels += g[2]
            else:
                rest.append(g)
        groups = rest + [(merged_ids, total, labels)]
    out = []
    for ids, total, labels in groups:
        time_ns = sum(dur[i] for i in ids)
        if total > time_ns * TIME_SLACK:
            names = ", ".join(_name(kernels[i]) for i in sorted(ids))[:120]
            out.append(
                Violation(
                    "time",
                    report,
                    names,
                    f"{what} {' + '.join(labels)} claim {total / 1e3:.1f} µs of {time_ns / 1e3:.1f} µs",
                )
            )
    return out


# -- 2. lines ----------------------------------------------------------------------------------------------------------


def _all_findings(k: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    yield from k.get("findings") or []
    for v in k.get("variants") or []:
        yield from v.get("findings") or []


def check_lines(r: Mapping[str, Any], md: str, report: str) -> list[Violation]:
    out = []
    for k in r.get("kernels") or []:
        for f in _all_findings(k):
            for s in f.get("source") or []:
                if s.get("line") is None and s.get("share") is not None:
                    out.append(
                        Violation(
                            "lines",
                            report,
                            _name(k),
                            f"{f['rule']} shows `{s.get('sass') or s.get('code')}` as {float(s['share']):.0%} of "
                            f"{s.get('metric')} at no source line",
                        )
                    )
    for m in re.finditer(r"^\| <code>[^|]*:\?</code>[^\n]*", md, re.M):
        out.append(Violation("lines", report, "(markdown)", f"a source row at line ?: {m.group(0)[:140]}"))
    return out


# -- 3. bytes ----------------------------------------------------------------------------------------------------------


def _md_cards(md: str) -> dict[int, str]:
    """The markdown's kernel cards by their index (`#N` in the summary)."""
    cards = {}
    parts = re.split(r"<details><summary><b>#(\d+) ", md)
    for i in range(1, len(parts) - 1, 2):
        cards[int(parts[i])] = parts[i + 1].split("</details>")[0]
    return cards


def _html_cards(page: str) -> list[str]:
    start = page.find('<h2 id="kernels">')
    if start < 0:
        return []
    return [c for c in re.split(r"<details(?=[ >])", page[start:])[1:] if 'data-label="Work"' in c]


def _printed_bytes(text: str, word: str) -> list[float]:
    return [_bytes(n, u) for n, u in re.findall(_BYTES_RE + " " + word, text)]


def check_bytes(r: Mapping[str, Any], md: str, page: str, report: str) -> list[Violation]:
    out = []
    kernels = r.get("kernels") or []
    cards = _md_cards(md)
    html_work = []
    for c in _html_cards(page):
        m = re.search(r'data-label="Work">(.*?)</td>', c, re.S)
        if m:
            html_work.append(re.sub(r"<[^>]+>", "", m.group(1)))
    for index, k in enumerate(kernels, 1):
        rl = k.get("roofline") or {}
        name = _name(k)
        values = {
            "compulsory": rl.get("compulsory_bytes"),
            "moved": rl.get("dram_bytes"),
            "ideal": rl.get("ideal_bytes"),
        }
        card = cards.get(index)
        texts = []
        if card is not None:
            texts.append(("markdown card", card))
        for label, text in texts:
            for word in ("compulsory", "moved", "ideal"):
                v = values[word]
                for printed in _printed_bytes(text, word):
                    if v is None or not _same_bytes(printed, float(v)):
                        out.append(
                            Violation("bytes", report, name, f"{label} prints {printed:.4g} B {word}, the JSON {v}")
                        )
        # every finding's words that name compulsory or ideal bytes
        for f in _all_findings(k):
            for word in ("compulsory", "ideal"):
                v = values[word]
                for printed in _printed_bytes(f"{f.get('message', '')} {f.get('speedup_model', '')}", word):
                    if v is None or not _same_bytes(printed, float(v)):
                        out.append(
                            Violation(
                                "bytes", report, name, f"{f['rule']} prints {printed:.4g} B {word}, the roofline {v}"
                            )
                        )
        comp, ideal = values["compulsory"], values["ideal"]
        if comp and ideal is not None and float(ideal) * BYTES_OFF < float(comp):
            if not rl.get("tma_bytes"):  # the reason in the data; the HTML row that prints "ideal" must say it
                out.append(
                    Violation(
                        "bytes",
                        report,
                        name,
                        f"ideal {float(ideal):.4g} B is {float(comp) / max(float(ideal), 1.0):.0f}× below the compulsory "
                        f"{float(comp):.4g} B with no reason printed (TMA bytes {rl.get('tma_bytes')})",
                    )
                )
    # the HTML's Work rows against the JSON: every row is some kernel's three numbers
    from ncuadvisor.units import fmt_bytes

    expected = set()
    for k in kernels:
        rl = k.get("roofline") or {}
        expected.add(
            (
                fmt_bytes(rl.get("dram_bytes")),
                fmt_bytes(rl.get("compulsory_bytes")),
                fmt_bytes(rl.get("ideal_bytes")) if rl.get("ideal_bytes") is not None else None,
            )
        )
    for w in html_work:
        moved = re.search(_BYTES_RE + " moved", w)
        comp = re.search(_BYTES_RE + " compulsory", w)
        ideal = re.search(_BYTES_RE + " ideal", w)
        got = (
            " ".join(moved.groups()) if moved else "–",
            " ".join(comp.groups()) if comp else "–",
            " ".join(ideal.groups()) if ideal else None,
        )
        if got not in expected:
            out.append(
                Violation(
                    "bytes", report, "(HTML card)", f"Work row {w.strip()[:140]!r} matches no kernel's JSON roofline"
                )
            )
        if comp and ideal and _bytes(*ideal.groups()) * BYTES_OFF < _bytes(*comp.groups()) and "TMA" not in w:
            out.append(
                Violation(
                    "bytes",
                    report,
                    "(HTML card)",
                    f"Work row {w.strip()[:140]!r}: ideal far below compulsory, no reason",
                )
            )
    return out


# -- 4. bound ----------------------------------------------------------------------------------------------------------


def limiter_side(rl: Mapping[str, Any]) -> str | None:
    """The limiter's side, written here apart from the analysis: the word the badge must show."""
    unit = rl.get("limiter")
    if unit in MEMORY_UNITS:
        return "memory"
    if unit in COMPUTE_UNITS:
        return "compute"
    if unit in ("latency", "launch"):
        return str(unit)
    return None


def check_bound(r: Mapping[str, Any], md: str, page: str, report: str) -> list[Violation]:
    out = []
    cards = _md_cards(md)
    rows = {
        int(m.group(1)): m.group(2).strip()
        for m in re.finditer(r"^\| (\d+) \| <code>.*?\| .*?\| ([a-z]+) \|", md, re.M)
    }
    html_bounds = re.findall(r'data-bound="([^"]*)"', page)
    for index, k in enumerate(r.get("kernels") or [], 1):
        rl = k.get("roofline") or {}
        badge, name = k.get("bound"), _name(k)
        side = limiter_side(rl)
        per_launch = rl.get("duration_ns")
        if badge == "launch":
            if per_launch is not None and per_launch >= LAUNCH_BOUND_NS:
                out.append(
                    Violation(
                        "bound",
                        report,
                        name,
                        f"'launch' shown for a launch of {per_launch / 1e3:.1f} µs ({k.get('bound_reason')})",
                    )
                )
        elif side is not None and badge != side:
            out.append(Violation("bound", report, name, f"badge {badge!r}, limiter {rl.get('limiter')!r} ({side})"))
        elif side is None and badge not in (rl.get("bound"), "unknown"):
            out.append(
                Violation("bound", report, name, f"badge {badge!r} with no limiter, Speed Of Light {rl.get('bound')!r}")
            )
        if index in rows and rows[index] != (badge or "unknown"):
            out.append(Violation("bound", report, name, f"markdown table says {rows[index]!r}, JSON {badge!r}"))
        card = cards.get(index)
        if card is not None and f"· {badge or 'unknown'}-bound ·" not in card.split("\n", 1)[0]:
            out.append(Violation("bound", report, name, f"markdown card's summary is not '{badge}-bound'"))
        out += _bound_words(k, report, name)
    if html_bounds and not set(html_bounds) <= {str(k.get("bound") or "unknown") for k in r.get("kernels") or []} | {
        ""
    }:
        extra = set(html_bounds) - {str(k.get("bound") or "unknown") for k in r.get("kernels") or []}
        out.append(Violation("bound", report, "(HTML)", f"HTML cards show bound(s) {sorted(extra)} no kernel has"))
    return out


def _bound_words(k: Mapping[str, Any], report: str, name: str) -> list[Violation]:
    """A finding that calls the kernel issue-bound where the limiter (the badge's unit) is another."""
    unit = (k.get("roofline") or {}).get("limiter")
    if unit in (None, "issue"):
        return []
    return [
        Violation("bound", report, name, f"{f.get('rule')} says 'issue-bound', the limiter is {unit!r}")
        for f in k.get("findings") or []
        if "issue-bound" in f"{f.get('title') or ''} {f.get('message') or ''} {f.get('speedup_model') or ''}".lower()
    ]


# -- 5. other ----------------------------------------------------------------------------------------------------------


def check_other(r: Mapping[str, Any], report: str) -> list[Violation]:
    out = []
    for k in r.get("kernels") or []:
        rl, name = k.get("roofline") or {}, _name(k)
        parts = [(k, rl)] + [(v, v.get("roofline") or {}) for v in k.get("variants") or []]
        for part, prl in parts:
            where = "" if part is k else " (variant)"
            findings = part.get("findings") or []
            leave = [f for f in findings if f.get("category") == "at-roofline"]
            big = [
                f
                for f in findings
                if f.get("category") != "at-roofline" and (f.get("estimated_speedup") or 0) > LEAVE_IT_MAX_SPEEDUP
            ]
            if leave and big:
                out.append(
                    Violation(
                        "other",
                        report,
                        name,
                        f"'leave it' ({leave[0]['rule']}){where} beside {big[0]['rule']} promising "
                        f"{big[0]['estimated_speedup']:.0%}",
                    )
                )
            for h in (part.get("headroom"), prl.get("headroom")):
                if h is not None and h < 1.0 - 1e-9 and not prl.get("model_wrong"):
                    out.append(
                        Violation("other", report, name, f"headroom {h:.2f}{where} without the 'model is wrong' flag")
                    )
                    break
            per_launch, floor = prl.get("duration_ns"), prl.get("theoretical_ns")
            for f in findings:
                s = f.get("estimated_speedup") or 0.0
                if f.get("category") == "at-roofline":
                    continue
                if s > 1.0 + 1e-9:
                    out.append(Violation("other", report, name, f"{f['rule']}{where} estimates {s:.0%} of the kernel"))
                if per_launch and floor and not f.get("changes_floor") and s > 0:
                    after = per_launch * (1.0 - s)
                    if after < floor * (1 - 1e-6) and s < 1.0 - 1e-9:
                        out.append(
                            Violation(
                                "other",
                                report,
                                name,
                                f"{f['rule']}{where}: after the fix {after / 1e3:.2f} µs, below the floor of "
                                f"{floor / 1e3:.2f} µs",
                            )
                        )
    return out


def check_words(r: Mapping[str, Any], md: str, report: str) -> list[Violation]:
    """The numbers the markdown repeats from the JSON: each "where to start" entry's saving, each program finding's,
    each kernel's headroom against its roofline; the kernels' time shares adding up to at most the program."""
    from ncuadvisor.units import fmt_ns

    out = []
    start = md.split("### Where to start", 1)[-1].split("**Across the program**")[0].split("### Where the time goes")[0]
    printed = re.findall(r"^\d+\. .*? · saves ~([^ (]+ [^ (]+)", start, re.M)
    actions = r.get("top_actions") or []
    if "### Where to start" in md and len(printed) != len(actions):
        out.append(
            Violation("other", report, "(markdown)", f"{len(printed)} entries to start with, the JSON {len(actions)}")
        )
    for got, a in zip(printed, actions):
        if got != fmt_ns(a.get("estimated_saving_ns")):
            out.append(
                Violation(
                    "other",
                    report,
                    str(a.get("kernel"))[:60],
                    f"markdown saves ~{got}, JSON {a.get('estimated_saving_ns')}",
                )
            )
    across = md.split("**Across the program**", 1)[1].split("###")[0] if "**Across the program**" in md else ""
    for (rule, got), p in zip(
        re.findall(r"^- \*\*(\w+)\*\* .*? · (?:saves ~([^ :]+ [^ :]+)|no saving claimed)", across, re.M),
        r.get("program_findings") or [],
    ):
        want = p.get("estimated_saving_ns") or 0.0
        if rule != p.get("rule") or (got and got != fmt_ns(want)) or (not got and want > 0):
            out.append(
                Violation(
                    "other",
                    report,
                    rule,
                    f"markdown across the program: {got or 'no saving'}, JSON {p.get('rule')} {want}",
                )
            )
    share = sum(float(k.get("time_share") or 0.0) for k in r.get("kernels") or [])
    if share > 1.0 + 1e-6:
        out.append(Violation("other", report, "(program)", f"the kernels' time shares add up to {share:.1%}"))
    for k in r.get("kernels") or []:
        rl = k.get("roofline") or {}
        h, d, t = k.get("headroom"), rl.get("duration_ns"), rl.get("theoretical_ns")
        if h is not None and d and t and abs(h - d / t) > 1e-6 * h:
            out.append(
                Violation("other", report, _name(k), f"headroom {h:.3g}, the roofline's time ÷ floor {d / t:.3g}")
            )
    return out


# -- running -----------------------------------------------------------------------------------------------------------


def analyse(path: Path) -> ReportOutcome:
    """The report analysed once, its outputs checked."""
    from ncuadvisor.api import result_record
    from ncuadvisor.render.formats import RenderOptions, render_html, render_markdown

    label = report_label(path)
    outcome = ReportOutcome(label)
    try:
        result = result_record(path)
        data = json.loads(json.dumps(result.to_dict(), default=str))
        md = render_markdown(result, RenderOptions())
        page = render_html(result, RenderOptions())
    except Exception as e:  # noqa: BLE001 - a report the tool refuses is recorded, not fatal
        outcome.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
        return outcome
    outcome.kernels = len(data.get("kernels") or [])
    outcome.violations = run_checks(data, md, page, label)
    return outcome


def run_checks(data: Mapping[str, Any], md: str, page: str, label: str) -> list[Violation]:
    return (
        check_time(data, label)
        + check_lines(data, md, label)
        + check_bytes(data, md, page, label)
        + check_bound(data, md, page, label)
        + check_other(data, label)
        + check_words(data, md, label)
    )


def table(corpora: Mapping[str, Sequence[ReportOutcome]], markdown: bool) -> str:
    head = ["corpus", "reports", "refused", "kernels", *CHECKS]
    rows = []
    for name, outcomes in corpora.items():
        counts = {c: sum(1 for o in outcomes for v in o.violations if v.check == c) for c in CHECKS}
        rows.append(
            [name, str(len(outcomes)), str(sum(1 for o in outcomes if o.error)), str(sum(o.kernels for o in outcomes))]
            + [str(counts[c]) for c in CHECKS]
        )
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] + ["--:"] * (len(head) - 1)) + "|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in [head, *rows])


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_corpus_args(ap)
    ap.add_argument("--markdown", action="store_true", help="the table in markdown")
    ap.add_argument("--json", type=Path, help="write every outcome here")
    args = ap.parse_args(argv)
    results = over_corpora(args, analyse)
    print(table(results, args.markdown))
    print()
    for outcomes in results.values():
        for o in outcomes:
            if o.error:
                print(f"[refused] {o.report}: {o.error}")
            for v in o.violations:
                print(v.line())
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    n: [
                        {
                            "report": o.report,
                            "kernels": o.kernels,
                            "error": o.error,
                            "violations": [v.__dict__ for v in o.violations],
                        }
                        for o in outs
                    ]
                    for n, outs in results.items()
                },
                indent=1,
            )
        )
    return 1 if any(o.violations for outs in results.values() for o in outs) else 0


if __name__ == "__main__":
    sys.exit(main())
