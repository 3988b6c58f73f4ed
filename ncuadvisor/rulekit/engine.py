"""The rule engine: discovers rule files (ours and the user's folders), runs them per kernel, ranks the findings."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ncuadvisor.analysis.language import LIBRARY_LANGUAGES
from ncuadvisor.analysis.roofline import PRACTICAL_FRACTION
from ncuadvisor.errors import RuleError
from ncuadvisor.metrics import section_of
from ncuadvisor.result.types import ProgramFindingEntry, SkippedRule, SuppressedFinding
from ncuadvisor.rulekit import sandbox
from ncuadvisor.rulekit.contract import CATEGORIES, CODE_RE, Finding, KernelContext, ProgramContext, ProgramRule, Rule

AT_ROOFLINE_CATEGORY = "at-roofline"
# the kernel languages without source lines: ATen's and the libraries' binaries carry no line tables
LINELESS_LANGUAGES = LIBRARY_LANGUAGES
MIN_WORTH = 0.03  # findings estimated to save less than 3% of the kernel's time are not shown
NEAR_BOUND_KEEP = 0.10
WEAK_SILENT = "; its weaker evidence shows nothing"  # the end of the note of a rule silent on its weaker evidence  # near its bound, only floor-changing fixes worth >= 10% are kept beside at-roofline


def builtin_rules_dir() -> Path:
    """rules/ inside the installed package, or the repository's top-level rules/ in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "rules", package.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise RuleError("the built-in rules folder is missing from this installation (reinstall ncuadvisor)")


def discover(folders: Iterable[Path] = ()) -> list[Rule | ProgramRule]:
    """Load every rule file: the built-in folder first, then each user folder (like ncu --section-folder)."""
    rules: list[Rule | ProgramRule] = []
    seen: dict[str, str] = {}
    dirs = [(builtin_rules_dir(), "builtin")] + [(Path(f), str(f)) for f in folders]
    for folder, origin in dirs:
        if not folder.is_dir():
            raise RuleError(f"{folder}: rule folder not found")
        for path in sorted(folder.glob("*.py")):
            if path.name.startswith("_"):
                continue
            for rule in _load_rule_file(path, origin):
                for code in (rule.code, *rule.aliases):
                    if code in seen:
                        raise RuleError(f"{path}: rule code {code} is already used by {seen[code]}")
                    seen[code] = str(path)
                rules.append(rule)
    return rules


def _load_rule_file(path: Path, origin: str) -> list[Rule | ProgramRule]:
    mod_name = "ncuadvisor_rule_" + re.sub(r"\W", "_", os.path.abspath(path))  # a link loop must not raise here
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise RuleError(f"{path}: cannot load rule file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sandbox.load_rule_module(path, module, sandbox.limit_for(origin), builtin=origin == "builtin")
    classes = [
        c
        for _, c in inspect.getmembers(module, inspect.isclass)
        if issubclass(c, (Rule, ProgramRule)) and c not in (Rule, ProgramRule) and c.__module__ == mod_name
    ]
    if len(classes) != 1:
        raise RuleError(f"{path}: a rule file defines exactly one Rule or ProgramRule subclass (found {len(classes)})")
    cls = classes[0]
    if not isinstance(cls.code, str) or not CODE_RE.match(cls.code):
        raise RuleError(f"{path}: rule code {cls.code!r} is not of the form ABC123")
    if cls.category not in CATEGORIES:
        raise RuleError(f"{path}: unknown category {cls.category!r} (one of: {', '.join(CATEGORIES)})")
    sandbox.check_declarations(path, cls)
    rule, error = sandbox.call_rule(cls, limit_s=sandbox.limit_for(origin))
    if not isinstance(rule, (Rule, ProgramRule)):
        raise RuleError(f"{path}: rule failed to start: {error}")
    rule.origin = origin
    return [rule]


def required_metrics(rules: Iterable[Rule | ProgramRule], languages: set[str] | None = None) -> list[str]:
    """The metrics the rules read; with `languages` (those the profiled kernels may be written in), a rule's
    `optional` metrics only where its `optional_languages` (default: its languages) meet them."""
    out: list[str] = []
    for r in rules:
        out.extend(r.requires)
        wanted = getattr(r, "optional_languages", ()) or getattr(r, "languages", ())
        if languages is None or not wanted or set(wanted) & languages:
            out.extend(r.optional)
        out.extend(getattr(r, "weak_evidence", ()))
    return list(dict.fromkeys(out))


def runs(rule: Rule, ctx: KernelContext) -> bool:
    """Whether `run_rules` runs the rule on the kernel: its required metrics present, or one of its weaker
    evidence's (`Rule.weak_evidence`)."""
    if all(ctx.m(m) is not None for m in rule.requires):
        return True
    return any(ctx.m(m) is not None for m in rule.weak_evidence)


def lacks(missing: list[str], verb: str = "settle") -> str:
    """`report lacks M1, M2; section S would settle it`: the skip note of a rule whose required metrics are
    missing, with the ncu sections that collect them (`--section S`), where known; a finding on weaker evidence
    says what would `confirm` it."""
    sections = list(dict.fromkeys(s for s in (section_of(m) for m in missing) if s))
    # no parentheses: the page and the terminal put a skip note in parentheses of their own
    settle = f"; section {', '.join(sections)} would {verb} it" if sections else ""
    return "report lacks " + ", ".join(missing[:3]) + settle


def per_instruction_metrics(rules: Iterable[Rule | ProgramRule]) -> list[str]:
    out: list[str] = []
    for r in rules:
        out.extend(r.per_instruction)
    return list(dict.fromkeys(out))


def sass_languages(rules: Iterable[Rule | ProgramRule]) -> set[str]:
    """The kernel languages in which some rule reads per-instruction data (and so the instructions' SASS)."""
    return {lang for r in kernel_rules(rules) if r.per_instruction for lang in r.languages}


def gated(rule: Rule) -> bool:
    """Whether the rule declares when it reads instructions (`Rule.sass_when`)."""
    return type(rule).sass_when is not Rule.sass_when


def gated_sass_languages(rules: Iterable[Rule | ProgramRule]) -> set[str]:
    """Of `sass_languages`, those in which every rule that reads per-instruction data is gated (`gated`): a kernel
    in one of them is disassembled only when a gate admits it (`sass_admitted`)."""
    readers = [r for r in kernel_rules(rules) if r.per_instruction]
    return {lang for lang in sass_languages(rules) if all(gated(r) for r in readers if lang in r.languages)}


def sass_admitted(rules: Iterable[Rule | ProgramRule], ctx: KernelContext) -> bool:
    """Whether some rule that reads per-instruction data may fire on the kernel (`Rule.sass_when`, on its scalars and
    roofline): a rule of its language that would run (its required metrics present) and has no gate, whose gate
    says True, or whose gate fails (the rule's check then fails the same way, on the same data)."""
    for rule in kernel_rules(rules):
        if not rule.per_instruction or ctx.language not in rule.languages:
            continue
        if not runs(rule, ctx):
            continue  # skipped by run_rules
        admits, error = sandbox.call_rule(rule.sass_when, ctx, limit_s=sandbox.limit_for(rule.origin))
        if error is not None or admits is not False:
            return True  # a failing gate: the rule's check then fails the same way, on the same data
    return False


def deferred_instructions(rules: Iterable[Rule | ProgramRule], languages: set[str]) -> bool:
    """Whether the per-instruction data of kernels in `languages` can wait for a gate (`profile` leaves SourceCounters
    out of phase 2 then): every language is one without source lines (`LINELESS_LANGUAGES`: ATen's and the
    libraries' binaries carry no line tables) and every rule of theirs that reads instructions is gated (`gated`) or
    reads them for source lines alone (`Rule.lines_only`); `instructions_wanted` then says which kernels need them."""
    if not languages or not languages <= LINELESS_LANGUAGES:
        return False
    readers = [r for r in kernel_rules(rules) if r.per_instruction and set(r.languages) & languages]
    return all(gated(r) or r.lines_only for r in readers)


def instructions_wanted(rules: Iterable[Rule | ProgramRule], ctx: KernelContext, have: set[str]) -> bool:
    """Whether a rule that decides on per-instruction data (not `Rule.lines_only`) and lacks some of it (`have`: the
    per-instruction metrics the kernel's report holds) may fire on the kernel, judged by its gate on the scalars and
    roofline (`sass_admitted`'s judgement): the kernel then needs that data collected."""
    deciding = [r for r in kernel_rules(rules) if not r.lines_only and not set(r.per_instruction) <= have]
    return sass_admitted(deciding, ctx)


@dataclass
class KernelVerdict:
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[SuppressedFinding] = field(default_factory=list)
    skipped: list[SkippedRule] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)


def kernel_rules(rules: Iterable[Rule | ProgramRule]) -> list[Rule]:
    return [r for r in rules if isinstance(r, Rule)]


def program_rules(rules: Iterable[Rule | ProgramRule]) -> list[ProgramRule]:
    return [r for r in rules if isinstance(r, ProgramRule)]


def run_program_rules(
    rules: Iterable[Rule | ProgramRule], ctx: ProgramContext
) -> tuple[list[ProgramFindingEntry], list[dict[str, str]]]:
    """Program-level findings (largest saving first) and the errors of rules that failed."""
    findings: list[ProgramFindingEntry] = []
    errors: list[dict[str, str]] = []
    # the rules that own their kernels first (`ProgramRule.owns`), so that the others can leave those kernels out
    for rule in sorted(program_rules(rules), key=lambda r: not r.owns):
        # a broken rule must not break the report, nor reach it
        found, error = sandbox.findings_of(rule.check_program, ctx, ProgramFindingEntry, rule.origin)
        if error is not None:
            errors.append({"rule": rule.code, "error": error})
            continue
        findings.extend(found)
        if rule.owns:
            for f in found:
                for kid in f.kernel_ids:
                    ctx.owned.setdefault(str(kid), rule.code)
    findings.sort(key=lambda f: -f.estimated_saving_ns)
    return findings, errors


def run_rules(rules: list[Rule | ProgramRule], ctx: KernelContext) -> KernelVerdict:
    """Run every rule on one kernel; cap estimates at the roofline, rank by value, handle at-roofline. The fallback
    rules (`Rule.fallback`) run only when the others left the kernel without a finding or a verdict: first those that
    name a mechanism (GEN001), then, where they named none, the fallback verdicts (category at-roofline: LIB002)."""
    specific = [r for r in kernel_rules(rules) if not r.fallback]
    verdict = _judge(ctx, _run(specific, ctx, KernelVerdict()))
    fallbacks = [r for r in kernel_rules(rules) if r.fallback]
    naming = [r for r in fallbacks if r.category != AT_ROOFLINE_CATEGORY]
    for tier in (naming, [r for r in fallbacks if r not in naming]):
        if verdict.findings:
            break
        if tier:
            again = _judge(ctx, _run(tier, ctx, verdict))
            again.suppressed = verdict.suppressed + again.suppressed
            verdict = again
    return verdict


def _run(rules: list[Rule], ctx: KernelContext, verdict: KernelVerdict) -> tuple[KernelVerdict, list[Finding]]:
    """The raw findings of `rules` on the kernel; skipped rules and errors recorded in `verdict`."""
    raw: list[Finding] = []
    for rule in rules:
        if ctx.language not in rule.languages:
            continue
        missing = [m for m in rule.requires if ctx.m(m) is None]
        weak = bool(missing) and runs(rule, ctx)
        if missing and not weak:
            verdict.skipped.append(SkippedRule(rule=rule.code, reason=lacks(missing)))
            continue
        ctx.calibrations = set()
        ctx.weak = missing
        # a broken rule must not break the report, nor reach it
        found, error = sandbox.findings_of(rule.check, ctx, Finding, rule.origin)
        ctx.weak = []
        if error is not None:
            verdict.errors.append({"rule": rule.code, "error": error})
            continue
        if weak:
            if not found:  # silent on its weaker evidence: the main path could still see it
                verdict.skipped.append(SkippedRule(rule=rule.code, reason=lacks(missing) + WEAK_SILENT))
            for f in found:  # weaker evidence: said, with what would confirm it
                f.confidence = "low"
                f.message = (f.message or "") + f" Weaker evidence: the {lacks(missing, 'confirm')}."
        if ctx.calibrations:  # say the H200 calibrations the estimate rests on (another architecture)
            arch = str(ctx.device.get("compute_capability") or "").replace(".", "")
            note = f" It assumes {', '.join(sorted(ctx.calibrations))}, not on this sm_{arch} device."
            for f in found:
                f.speedup_model = (f.speedup_model or "") + note
        raw.extend(found)
    return verdict, raw


def counted_after(findings: list[Finding]) -> None:
    """Count each finding whose fixed kernel applies another's fix too (`Finding.counted_after`: a filter's tile read
    in coalesced rows applies MEM001's fix) on that other's fixed kernel, where that one fired: the contained fix comes
    first, and this one saves the fraction of the time left after it, 1 - (1 - its speedup) / (1 - the other's), so
    that the two in turn (`result.kernel_fixes.kernel_steps`) save what this one alone claimed. Nothing where the
    other's fixed kernel is as fast: the containing fix adds nothing to it."""
    by_rule = {f.rule: f for f in findings}
    for f in findings:
        first = next((by_rule[c] for c in f.counted_after if c in by_rule and by_rule[c] is not f), None)
        if first is None or first.estimated_speedup >= 1.0:
            continue
        alone = f.estimated_speedup
        f.estimated_speedup = max(0.0, 1.0 - (1.0 - alone) / (1.0 - first.estimated_speedup))
        f.speedup_model += (
            f" Counted after {first.rule}'s fix, which it applies too and which comes first: {f.estimated_speedup:.0%}"
            f" of the time {first.rule}'s fixed kernel leaves ({first.estimated_speedup:.0%} of today's), {alone:.0%}"
            " of today's with it."
        )


def _judge(ctx: KernelContext, run: tuple[KernelVerdict, list[Finding]]) -> KernelVerdict:
    """Cap the raw findings at the roofline floor, count a fix that applies another's after it (`counted_after`), drop
    those worth too little, and order them (at-roofline last)."""
    verdict, raw = run
    verdict = KernelVerdict(skipped=verdict.skipped, errors=verdict.errors)
    r = ctx.roofline
    cap = None
    if r.theoretical_ns and r.duration_ns:
        cap = max(0.0, 1.0 - r.theoretical_ns / PRACTICAL_FRACTION / r.duration_ns)
    at_roofline = [f for f in raw if f.category == AT_ROOFLINE_CATEGORY]
    others = [f for f in raw if f.category != AT_ROOFLINE_CATEGORY]
    for f in others:
        f.estimated_speedup = max(0.0, min(1.0, f.estimated_speedup))
        if cap is not None and not f.changes_floor and f.estimated_speedup > cap:
            f.estimated_speedup = cap
            f.speedup_model += (
                f" Capped at {cap:.0%}: no fix that keeps the algorithm runs faster than its roofline floor at "
                f"{PRACTICAL_FRACTION:.0%} of peak."
            )
    counted_after(others)
    kept: list[Finding] = []
    for f in others:
        if at_roofline and not (f.changes_floor and f.estimated_speedup >= NEAR_BOUND_KEEP):
            # the verdict says why: near its roofline (ROOF001), or a known rewrite that does not pay (ATM002)
            reason = f"{at_roofline[0].rule}'s verdict: {at_roofline[0].title}"
            verdict.suppressed.append(SuppressedFinding(rule=f.rule, title=f.title, reason=reason))
        elif f.estimated_speedup < MIN_WORTH:
            verdict.suppressed.append(
                SuppressedFinding(rule=f.rule, title=f.title, reason=f"estimated to save under {MIN_WORTH:.0%}")
            )
        else:
            kept.append(f)
    kept.sort(key=lambda f: -f.estimated_speedup)
    if at_roofline and any(f.changes_floor for f in kept):
        # "leave it" holds for the floor of today's algorithm; a kept fix that lowers the floor contradicts it
        verdict.suppressed.append(
            SuppressedFinding(
                rule=at_roofline[0].rule, title=at_roofline[0].title, reason="a kept fix lowers the floor"
            )
        )
        at_roofline = []
    verdict.findings = kept + at_roofline[:1] if at_roofline else kept
    return verdict
