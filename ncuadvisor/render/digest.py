"""The digest: a compact, stable, versioned summary of a result for a program that reads it (a coding agent in a
write-profile-change loop), as text (`--format digest`) or JSON (`--format digest-json`), both made from one dict.

It holds the program's "where to start" (each entry: kernel, its share of the GPU time, the mechanism, the concrete
change in the kernel's language, the estimated saving, the source line) and per kernel the bound, the limiter, the
headroom and the top findings with their evidence in numbers. Budget: at most KERNEL_BUDGET characters per kernel
(one kernel's digest, or its part of a report's) and REPORT_BUDGET for a whole report at the default `--top`; what
does not fit is left out and the digest says what and how to get it. The text and the compact JSON each fit.

Format, version DIGEST_VERSION (a change of its keys or lines is a new version):
    line 1: `ncuadvisor digest 1 | <report> | <kernels> kernels, <GPU time> | <device>`
    `where to start:` then `N. <kernel> [<id>, <share> of GPU time] <rule> <category>: <title> | saves <time>
        (<fraction> of the program) | change: <fix> | at <file:line>`, a program finding's entry followed by
        `| must move: <counter> <now> -> <= <bound>` (the launches its fix removes)
    `kernels (<shown> of <all>, by GPU time):` then per kernel `[<id>] <name> (<language>) <share> <time> x<launches>
        | <bound>-bound, limiter <unit>, headroom <ratio>` and its findings `  - <rule> -<saving>% <title> |
        evidence: <label> <value> (threshold <t>); ... | change: <fix> | at <file:line>`, in one kernel's digest
        followed by `| must move: <counter> <now> -> <= or >= <bound>` (the counters the fix must move), then the
        program findings that name the kernel: `  program: <rule> <title> | saves <time> | change: <fix> | must
        move: ...`
    `left out: ...` when something was, with the command that shows it.

Version 2 (2026-12-06): program findings' predictions (where-to-start entries' `must_move`, one kernel's
`program_findings`), and a program finding's change in its where-to-start entry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ncuadvisor.render.formats import RenderOptions
from ncuadvisor.result.types import (
    EvidenceEntry,
    FindingEntry,
    KernelEntry,
    PredictionEntry,
    ProgramFindingEntry,
    Result,
    TopAction,
)
from ncuadvisor.units import basename, basename_loc, clip, counted, fmt_ns, fmt_pct, number, short_name

DIGEST_VERSION = 2
KERNEL_BUDGET = 1_500  # characters of one kernel's digest, and of a kernel's part of a report's
REPORT_BUDGET = 6_000  # characters of a whole report's digest at the default depth
DEFAULT_TOP = 10  # kernels of a report's digest (the command line's --top)
ACTIONS = 5  # "where to start" entries
FINDINGS_IN_REPORT = 2  # findings per kernel in a report's digest
FINDINGS_OF_KERNEL = 5  # findings in one kernel's digest
EVIDENCE = 3  # evidence values per finding
ACTION_FIX_CHARS = 240  # characters of a "where to start" entry's change
FIX_CHARS = 120  # characters of a finding's change in a report's digest (its "where to start" entry has more)
KERNEL_FIX_CHARS = 280  # characters of a finding's change in one kernel's digest
NAME_CHARS = 70  # characters of a kernel name


@dataclass(frozen=True)
class Depth:
    """How much the digest holds; `fit` lowers it step by step until the budget holds."""

    kernels: int
    findings: int
    actions: int = ACTIONS
    fix_chars: int = FIX_CHARS
    action_fix_chars: int = ACTION_FIX_CHARS
    predicts: bool = False  # the counters each fix must move (one kernel's digest)
    program: bool = True  # one kernel's digest: the program findings that name the kernel
    evidence: int = EVIDENCE


def _num(v: Any) -> str | float | None:
    """A measured value, short: 2097152 -> '2.1M', 0.25 -> 0.25; text as it is."""
    if isinstance(v, str) or v is None:
        return v
    f = number(v)
    if f is None:
        return None
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(f) >= scale:
            return f"{f / scale:.3g}{suffix}"
    return round(f, 3) if not f.is_integer() else int(f)


def _evidence(e: EvidenceEntry) -> str:
    """'excessive sectors 58.7M', 'wasted share 0.778 (threshold 0.3)'."""
    text = f"{e.label or e.metric} {_num(e.value)}"
    return text + (f" (threshold {_num(e.threshold)})" if e.threshold is not None else "")


def _change(fix: str, limit: int) -> str:
    """The fix on one line, cut at `limit` characters."""
    return clip(" ".join(fix.split()), limit)


def _where(f: FindingEntry) -> str | None:
    return basename_loc(f.location) or None


def _finding(f: FindingEntry, depth: Depth) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "title": f.title,
        "saving": round(f.estimated_speedup, 3),  # the fraction of the kernel's time the fix saves
        "evidence": [_evidence(e) for e in f.evidence[: depth.evidence]],
        "change": _change(f.fix, depth.fix_chars),
        "at": _where(f),
        **({"must_move": [_must_move(p) for p in f.predicts or []]} if depth.predicts else {}),
    }


def _must_move(p: PredictionEntry) -> str:
    """'global sectors moved per sector needed 4.5 -> <= 1.43'."""
    unit = "%" if p.unit == "%" else ""
    return f"{p.label} {_num(p.current)}{unit} -> {p.expect} {_num(p.bound)}{unit}"


def _kernel(
    k: KernelEntry, depth: Depth, in_actions: frozenset[tuple[str | None, str]] = frozenset()
) -> dict[str, Any]:
    """A kernel's part; a finding whose change a "where to start" entry shown already gives says so (`change`: null,
    `in_where_to_start`: true) rather than repeating it."""
    r = k.roofline
    findings = [_finding(f, depth) for f in k.findings[: depth.findings]]
    for f in findings:
        if (k.id, f["rule"]) in in_actions:
            f["change"] = None
            f["in_where_to_start"] = True
    return {
        "id": k.id,
        "name": short_name(k.name, NAME_CHARS),
        "language": k.language,
        "share": round(k.time_share, 4),
        "duration_ns": round(k.duration_ns),
        "launches": k.launches,
        "bound": k.bound,
        "limiter": r.limiter,
        "headroom": round(k.headroom, 2) if k.headroom is not None else None,
        "findings": findings,
        "more_findings": max(0, len(k.findings) - depth.findings),
    }


def _finding_of(result: Result, a: TopAction) -> tuple[KernelEntry | None, FindingEntry | ProgramFindingEntry | None]:
    """The kernel of a "where to start" entry and the finding (kernel's or program's) whose fix it names: a program
    entry that is no finding of its kernel's is the program finding of its rule naming the most of its kernels."""
    k = result.kernel(a.kernel_id)
    if k is not None:
        for findings, _, _ in k.findings_with_time():
            for f in findings:
                if f.rule == a.rule:
                    return k, f
    named = set(a.kernel_ids or []) | ({a.kernel_id} if a.kernel_id else set())
    same_rule = [p for p in result.program_findings if p.rule == a.rule]
    best = max(same_rule, key=lambda p: len(named & set(p.kernel_ids)), default=None)
    return k, best


def _actions(result: Result, depth: Depth) -> list[dict[str, Any]]:
    out = []
    for a in result.top_actions[: depth.actions]:
        k, f = _finding_of(result, a)
        entry: dict[str, Any] = {
            "kernel": short_name(a.kernel, NAME_CHARS),
            "kernel_id": a.kernel_id,
            "share": round(k.time_share, 4) if k is not None else None,
            "rule": a.rule,
            "mechanism": f"{a.category}: {a.title}",
            "change": _change(f.fix, depth.action_fix_chars) if f is not None else None,
            "saving_ns": round(a.estimated_saving_ns),
            "program_fraction": round(a.program_fraction, 4),
            "at": _where(f) if isinstance(f, FindingEntry) else None,
        }
        if isinstance(f, ProgramFindingEntry) and f.predicts:
            entry["must_move"] = [_must_move(p) for p in f.predicts]
        out.append(entry)
    return out


def _head(result: Result) -> dict[str, Any]:
    rep = result.report
    return {
        "report": rep.name,
        "kernels": max(len(result.kernels), rep.kernels or 0),  # a big saved result holds fewer than it counts
        "gpu_time_ns": round(rep.total_duration_ns),
        "device": rep.device.name,
    }


def digest_data(result: Result, kernel: KernelEntry | None = None, top: int = DEFAULT_TOP) -> dict[str, Any]:
    """The digest of a result (every kernel up to `top`), or of one of its kernels, fitted to its budget."""
    if kernel is not None:
        return _fit_kernel(result, kernel)
    return _fit_report(result, top)


def _report_data(result: Result, depth: Depth) -> dict[str, Any]:
    kernels = result.kernels[: depth.kernels]
    left = result.kernels[depth.kernels :]
    data: dict[str, Any] = {"digest_version": DIGEST_VERSION, **_head(result)}
    data["where_to_start"] = _actions(result, depth)
    shown = frozenset((a["kernel_id"], a["rule"]) for a in data["where_to_start"])
    data["kernel_digests"] = [_kernel(k, depth, shown) for k in kernels]
    unread = max(0, (result.report.kernels or 0) - len(result.kernels))  # a big saved result's kernels not held
    shown_share = sum(k.time_share for k in kernels)
    data["left_out"] = {
        "kernels": len(left) + unread,
        "kernels_share": round(max(0.0, 1.0 - shown_share) if unread else sum(k.time_share for k in left), 4),
        "where_to_start": max(0, len(result.top_actions) - depth.actions),
        "findings": sum(d["more_findings"] for d in data["kernel_digests"]),
        "get_it": f"ncuadvisor report {_report_arg(result)} --kernel NAME --format digest",
    }
    return data


def _program_findings_of(result: Result, k: KernelEntry, depth: Depth) -> list[dict[str, Any]]:
    """The program findings that name a kernel (one kernel's digest), with the counters their fixes must move."""
    return [
        {
            "rule": p.rule,
            "title": p.title,
            "saving_ns": round(p.estimated_saving_ns),
            "change": _change(p.fix, depth.fix_chars),
            "must_move": [_must_move(x) for x in p.predicts or []],
        }
        for p in result.program_findings
        if k.id in p.kernel_ids
    ]


def _kernel_data(result: Result, k: KernelEntry, depth: Depth) -> dict[str, Any]:
    data: dict[str, Any] = {"digest_version": DIGEST_VERSION, **_head(result)}
    data["kernel_digests"] = [_kernel(k, depth)]
    if depth.program:
        data["kernel_digests"][0]["program_findings"] = _program_findings_of(result, k, depth)
    data["left_out"] = {
        "findings": data["kernel_digests"][0]["more_findings"],
        "get_it": f"ncuadvisor report {_report_arg(result)} --kernel {k.id} --format json",
    }
    return data


def _report_arg(result: Result) -> str:
    path = result.report.path or result.report.name
    return basename(path) if path.startswith(("/", "\\")) else path  # a temporary copy's folder says nothing


def _size(data: dict[str, Any]) -> int:
    return max(len(digest_text(data)), len(digest_json(data)))


def _fit_report(result: Result, top: int) -> dict[str, Any]:
    """The deepest digest within REPORT_BUDGET (each kernel's part within KERNEL_BUDGET): fewer findings per kernel
    first, then shorter fixes, then fewer kernels (the smallest first), then fewer "where to start" entries."""
    n = min(top, len(result.kernels))
    short: dict[str, Any] = {"fix_chars": 80, "action_fix_chars": 160, "evidence": 2}
    shorter: dict[str, Any] = {"fix_chars": 60, "action_fix_chars": 120, "evidence": 1}
    steps = [Depth(n, FINDINGS_IN_REPORT), Depth(n, 1), Depth(n, 1, **short), Depth(n, 1, **shorter)]
    steps += [Depth(m, 1, **shorter) for m in range(n - 1, -1, -1)]
    steps += [Depth(0, 0, actions=a, **shorter) for a in (3, 1, 0)]
    data: dict[str, Any] = {}
    for depth in steps:
        data = _report_data(result, depth)
        kernels_fit = all(_size(_kernel_only(data, d)) <= KERNEL_BUDGET for d in data["kernel_digests"])
        if kernels_fit and _size(data) <= REPORT_BUDGET:
            return data
    return data


def _fit_kernel(result: Result, k: KernelEntry) -> dict[str, Any]:
    shapes = (
        (FINDINGS_OF_KERNEL, KERNEL_FIX_CHARS, 3),
        (3, KERNEL_FIX_CHARS, 3),
        (3, 200, 3),
        (2, 160, 3),
        (1, 120, 2),
        (1, 60, 1),
    )
    steps = [Depth(1, n, fix_chars=c, evidence=e, predicts=True) for n, c, e in shapes]
    steps += [Depth(1, 1, fix_chars=60, evidence=1, predicts=True, program=False)]  # the program findings left out
    data: dict[str, Any] = {}
    for depth in steps:
        data = _kernel_data(result, k, depth)
        if _size(data) <= KERNEL_BUDGET:
            return data
    return data


def _kernel_only(data: dict[str, Any], kd: dict[str, Any]) -> dict[str, Any]:
    """A kernel's part of a report's digest as a digest of its own (header, the kernel), for the per-kernel budget."""
    return {
        **{k: v for k, v in data.items() if k not in ("where_to_start", "kernel_digests", "left_out")},
        "kernel_digests": [kd],
    }


# -- the two forms -----------------------------------------------------------------------------------------------


def digest_json(data: dict[str, Any]) -> str:
    """The digest as compact JSON (one line)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _kernel_lines(kd: dict[str, Any]) -> list[str]:
    head = f"[{kd['id']}] {kd['name']} ({kd['language']}) {fmt_pct(kd['share'])} {fmt_ns(kd['duration_ns'])} x{kd['launches']}"
    head += f" | {kd['bound']}-bound, limiter {kd['limiter'] or '-'}, headroom "
    head += f"{kd['headroom']:.1f}x" if kd["headroom"] is not None else "-"
    lines = [head]
    for f in kd["findings"]:
        line = f"  - {f['rule']} -{fmt_pct(f['saving'])} {f['title']}"
        if f["evidence"]:
            line += " | evidence: " + "; ".join(f["evidence"])
        line += f" | change: {f['change']}" if f["change"] else " | change: see where to start"
        if f["at"]:
            line += f" | at {f['at']}"
        if f.get("must_move"):
            line += " | must move: " + "; ".join(f["must_move"])
        lines.append(line)
    if not kd["findings"]:
        lines.append("  (no finding)")
    if kd["more_findings"]:
        lines.append(f"  (+{counted(kd['more_findings'], 'more finding')})")
    for p in kd.get("program_findings", []):
        line = f"  program: {p['rule']} {p['title']} | saves {fmt_ns(p['saving_ns'])} | change: {p['change']}"
        if p["must_move"]:
            line += " | must move: " + "; ".join(p["must_move"])
        lines.append(line)
    return lines


def digest_text(data: dict[str, Any]) -> str:
    """The digest as lines of text (the module's docstring has the format)."""
    lines = [
        f"ncuadvisor digest {data['digest_version']} | {data['report']} | {data['kernels']} kernels, "
        f"{fmt_ns(data['gpu_time_ns'])} GPU | {data['device'] or 'unknown GPU'}"
    ]
    if "where_to_start" in data:
        lines.append("where to start:" if data["where_to_start"] else "where to start: nothing to fix found")
        for n, a in enumerate(data["where_to_start"], 1):
            share = f", {fmt_pct(a['share'])} of GPU time" if a["share"] is not None else ""
            line = f"{n}. {a['kernel']} [{a['kernel_id'] or 'program'}{share}] {a['rule']} {a['mechanism']}"
            line += f" | saves {fmt_ns(a['saving_ns'])} ({fmt_pct(a['program_fraction'])} of the program)"
            if a["change"]:
                line += f" | change: {a['change']}"
            if a["at"]:
                line += f" | at {a['at']}"
            if a.get("must_move"):
                line += " | must move: " + "; ".join(a["must_move"])
            lines.append(line)
        lines.append(f"kernels ({len(data['kernel_digests'])} of {data['kernels']}, by GPU time):")
    for kd in data["kernel_digests"]:
        lines += _kernel_lines(kd)
    left = data.get("left_out", {})
    said = []
    if left.get("kernels"):
        said.append(f"{left['kernels']} kernels ({fmt_pct(left['kernels_share'])} of GPU time)")
    if left.get("where_to_start"):
        n = left["where_to_start"]
        said.append(f"{n} where-to-start entr{'y' if n == 1 else 'ies'}")
    if left.get("findings"):
        said.append(counted(left["findings"], "finding"))
    if said:
        lines.append(f"left out: {', '.join(said)}; get them: {left['get_it']}")
    return "\n".join(lines) + "\n"


def render(result: Result, options: RenderOptions) -> str:
    """The `digest` format (`render.formats`): a report's digest, or with `options.kernel` one kernel's."""
    return render_digest(result, kernel=options.kernel, top=options.top)


def render_json(result: Result, options: RenderOptions) -> str:
    """The `digest-json` format."""
    return render_digest_json(result, kernel=options.kernel, top=options.top)


def render_digest(result: Result, kernel: KernelEntry | None = None, top: int = DEFAULT_TOP) -> str:
    """`--format digest`: the text of a result's digest, or of one kernel's."""
    return digest_text(digest_data(result, kernel, top))


def render_digest_json(result: Result, kernel: KernelEntry | None = None, top: int = DEFAULT_TOP) -> str:
    """`--format digest-json`: the digest as one line of JSON."""
    return digest_json(digest_data(result, kernel, top)) + "\n"
