"""A rule's documentation, built from the rule itself: its docstring sections, its fixes per kernel language, its
thresholds and metrics. One text serves `ncuadvisor rules CODE` (`rule_help`), the SARIF rule help and the pages
under docs/rules/ (`rule_markdown`).

`python3 -m ncuadvisor.rulekit.docs docs/rules` writes one page per built-in rule and the index, docs/rules/README.md;
tests/test_ruledoc.py checks that the committed pages are current.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ncuadvisor.rulekit.contract import Fix, ProgramRule, Rule

# display names of the kernel languages (engine.kernel_language), in the order the docs list them
LANGUAGE_NAMES = {"cuda": "CUDA", "triton": "Triton", "pytorch": "PyTorch (ATen)", "library": "library"}
KERNEL_LANGUAGES = tuple(LANGUAGE_NAMES)  # what a rule without its own `languages` (a program rule) speaks to
# and the languages a CUDA-language kernel may be written in (`contract.WRITTEN_IN`), listed after them
LANGUAGE_NAMES |= {"julia": "Julia (CUDA.jl)", "numba": "Python (Numba)", "cupy": "Python (CuPy)"}
# the docstring sections shown as written (code, or prose whose lines carry code); the others are reflowed
_VERBATIM = ("Example", "Use instead")
_FIX_HEADING = "Fix, per kernel language"


def rule_help(rule: Rule | ProgramRule) -> str:
    """The plain-text help of a rule, as `ncuadvisor rules CODE` prints it."""
    docs = _sections(rule)
    out = [f"{rule.code} {rule.slug}  category: {rule.category}", docs.get("summary", rule.title)]
    for section, text in docs.items():
        if section == "summary":
            continue
        out += ["", section, text if section in _VERBATIM else _reflow(text)]
        if section == "Use instead":
            out += _fix_text(rule)
    if "Use instead" not in docs:
        out += _fix_text(rule)
    if rule.thresholds:
        out += ["", "Thresholds"] + [f"  {k} = {v}" for k, v in rule.thresholds.items()]
    if rule.requires:
        out += ["", "Metrics"] + [f"  {m}" for m in (*rule.requires, *rule.optional)]
    weak = getattr(rule, "weak_evidence", ())
    if weak:
        out += ["", "Weaker evidence (when a required metric is missing)"] + [f"  {m}" for m in weak]
    if rule.per_instruction:
        out += ["", "Per-instruction metrics (source lines)"] + [f"  {m}" for m in rule.per_instruction]
    return "\n".join(out) + "\n"


def rule_markdown(rule: Rule | ProgramRule) -> str:
    """The markdown page of a rule: docs/rules/CODE.md, and the SARIF rule help."""
    docs = _sections(rule)
    languages = getattr(rule, "languages", None)
    scope = "kernels: " + ", ".join(_names(languages)) if languages is not None else "the whole program"
    out = [
        f"# {rule.code} · {rule.slug}",
        "",
        f"**{rule.title}** · category `{rule.category}` · {scope}",
        "",
        _reflow(docs.get("summary", rule.title)),
    ]
    if rule.aliases:
        out += ["", "Formerly " + ", ".join(rule.aliases) + "."]
    for section, text in docs.items():
        if section == "summary":
            continue
        out += ["", f"## {section}", ""]
        out.append(
            _fence(text)
            if section == "Example" or (section == "Use instead" and _looks_like_code(text))
            else _reflow(text)
        )
        if section == "Use instead":
            out += _fix_markdown(rule)
    if "Use instead" not in docs:
        out += _fix_markdown(rule)
    if rule.thresholds:
        out += ["", "## Thresholds", "", "| name | value |", "|---|---|"]
        out += [f"| `{k}` | {v} |" for k, v in rule.thresholds.items()]
    metrics = [(m, "required") for m in rule.requires] + [(m, "when present") for m in rule.optional]
    metrics += [(m, "weaker evidence, when a required metric is missing") for m in getattr(rule, "weak_evidence", ())]
    metrics += [(m, "per instruction") for m in rule.per_instruction]
    if metrics:
        out += ["", "## Metrics", ""] + [f"- `{m}` ({how})" for m, how in metrics]
    return "\n".join(out) + "\n"


def fix_groups(rule: Rule | ProgramRule) -> list[tuple[str, list[tuple[list[str], Fix]]]]:
    """The rule's fixes as the docs list them: (situation, [(languages, fix)]), the rule's `fixes` first (situation
    ""), then each of `fixes_when`; languages that share one Fix are one entry."""
    out = []
    for situation, table in [("", rule.fixes), *rule.fixes_when.items()]:
        entries: list[tuple[list[str], Fix]] = []
        for language, template in _ordered(table):
            fix = template.plain()
            same = next((e for e in entries if e[1] == fix), None)
            if same is not None:
                same[0].append(language)
            else:
                entries.append(([language], fix))
        if entries:
            out.append((situation, entries))
    return out


def _labelled(rule: Rule | ProgramRule) -> bool:
    """Whether the docs name a language per fix: not when the rule speaks one language, or declares only the CUDA
    fix (then every language gets it)."""
    declared = {lang for _, table in [("", rule.fixes), *rule.fixes_when.items()] for lang in table}
    languages = getattr(rule, "languages", KERNEL_LANGUAGES)
    return len(languages) > 1 and declared != {"cuda"}


def _fallback_note(rule: Rule | ProgramRule) -> str:
    """Which of the rule's languages get the CUDA fix for want of their own, or ""."""
    declared = {lang for _, table in [("", rule.fixes), *rule.fixes_when.items()] for lang in table}
    languages = getattr(rule, "languages", KERNEL_LANGUAGES)
    rest = [lang for lang in LANGUAGE_NAMES if lang in languages and lang not in declared]
    if not rest or not _labelled(rule):
        return ""
    names = _join(_names(rest))
    return f"{names[:1].upper()}{names[1:]} kernels get the CUDA fix."


def _fields_note(groups: list[tuple[str, list[tuple[list[str], Fix]]]]) -> str:
    fields = [name for _, entries in groups for _, fix in entries for name in fix.fields()]
    if not fields:
        return ""
    return f"Words in braces, like {{{fields[0]}}}, are filled in for each finding."


def _fix_text(rule: Rule | ProgramRule) -> list[str]:
    groups = fix_groups(rule)
    if not groups:
        return []
    labelled = _labelled(rule)
    out = ["", _FIX_HEADING if labelled else "Fix"]
    for situation, entries in groups:
        indent = ""
        if situation:
            out.append(f"When {situation}:")
            indent = "  "
        for languages, fix in entries:
            if labelled:
                out.append(f"{indent}{_join(_names(languages))}:")
            body = indent + ("  " if labelled else "")
            out.append(body + _reflow(fix.text))
            out += [body + "  " + line for line in fix.code.splitlines()]
    note = _fallback_note(rule)
    if note:
        out.append(note)
    note = _fields_note(groups)
    if note:
        out.append(note)
    return out


def _fix_markdown(rule: Rule | ProgramRule) -> list[str]:
    groups = fix_groups(rule)
    if not groups:
        return []
    labelled = _labelled(rule)
    out = ["", f"## {_FIX_HEADING}" if labelled else "## Fix"]
    for situation, entries in groups:
        if situation:
            out += ["", f"### When {situation}"]
        for languages, fix in entries:
            out.append("")
            text = _reflow(fix.text)
            out.append(f"**{_join(_names(languages))}:** {text}" if labelled else text)
            if fix.code:
                out += ["", _fence(fix.code)]
    note = _fallback_note(rule)
    if note:
        out += ["", note]
    note = _fields_note(groups)
    if note:
        out += ["", note]
    return out


def index_markdown(rules: Iterable[Rule | ProgramRule]) -> str:
    """docs/rules/README.md: every rule with its category, title and the languages its fixes are written for."""
    out = [
        "# Rules",
        "",
        "One page per rule, generated from the rule files in `rules/` (their docstrings, fixes, thresholds and",
        "metrics) by `python3 -m ncuadvisor.rulekit.docs docs/rules`; `ncuadvisor rules CODE` prints the same text.",
        "",
        "| code | category | title | fix for |",
        "|---|---|---|---|",
    ]
    for rule in sorted(rules, key=lambda r: r.code):
        if _labelled(rule):
            declared = [lang for _, entries in fix_groups(rule) for langs, _ in entries for lang in langs]
            langs = _join(_names(dict.fromkeys(declared)))
        else:
            langs = _join(_names(getattr(rule, "languages", ()))) if hasattr(rule, "languages") else "any"
        out.append(f"| [{rule.code}]({rule.code}.md) | {rule.category} | {_escape_cell(rule.title)} | {langs} |")
    return "\n".join(out) + "\n"


def write_docs(folder: Path, rules: Iterable[Rule | ProgramRule]) -> list[Path]:
    """Write one page per rule and the index into `folder`; pages of rules that no longer exist are removed."""
    rules = list(rules)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "README.md"]
    written[0].write_text(index_markdown(rules))
    for rule in rules:
        path = folder / f"{rule.code}.md"
        path.write_text(rule_markdown(rule))
        written.append(path)
    for stale in set(folder.glob("*.md")) - set(written):
        if re.fullmatch(r"[A-Z]{2,5}\d{3}\.md", stale.name):  # a page of a rule that is gone, nothing else
            stale.unlink()
    return written


def _sections(rule: Rule | ProgramRule) -> dict[str, str]:
    return dict(rule.doc_sections())


def _ordered(table: Mapping[str, Fix]) -> list[tuple[str, Fix]]:
    order = list(LANGUAGE_NAMES)
    return sorted(table.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order))


def _names(languages: Iterable[str]) -> list[str]:
    return [LANGUAGE_NAMES.get(lang, lang) for lang in languages]


def _join(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names) or "–"
    return ", ".join(names[:-1]) + " and " + names[-1]


def _reflow(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def _looks_like_code(text: str) -> bool:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return any(ln.endswith((";", "{", "}")) or ln.startswith(("//", "#", "@")) for ln in lines)


def _fence(code: str) -> str:
    fence = "```"
    while fence in code:
        fence += "`"
    return f"{fence}\n{code}\n{fence}"


def _escape_cell(text: str) -> str:
    return text.replace("|", "\\|")


def main(argv: list[str]) -> int:
    from ncuadvisor.rulekit.engine import discover

    if len(argv) != 1:
        print("usage: python3 -m ncuadvisor.rulekit.docs FOLDER   (docs/rules)", file=sys.stderr)
        return 2
    written = write_docs(Path(argv[0]), discover())
    print(f"wrote {len(written)} pages under {argv[0]}")
    return 0


def rule_docs(rules: Iterable[Any]) -> list[dict[str, Any]]:
    """The rules' documentation as plain data, for renderers that show it without the rule objects (the SARIF's
    rule help): one dict per rule, {"code", "aliases", "slug", "title", "category", "sections", "help"}."""
    out = []
    for r in rules:
        if not getattr(r, "code", None):
            continue
        try:
            sections = dict(r.doc_sections())
        except Exception:  # a user rule with an odd docstring must not break the output
            sections = {}
        out.append(
            {
                "code": str(r.code),
                "aliases": [str(a) for a in getattr(r, "aliases", ()) or ()],
                "slug": getattr(r, "slug", "") or "",
                "title": getattr(r, "title", "") or "",
                "category": getattr(r, "category", "") or "",
                "sections": sections,
                "help": _help(r),
            }
        )
    return out


def _help(rule: Any) -> dict[str, str]:
    """{"text", "markdown"}: the rule's whole documentation, its fix in every kernel language; {} for a user rule that
    strays from the contract (the renderer then builds the help from the docstring's sections)."""
    try:
        return {"text": rule_help(rule), "markdown": rule_markdown(rule)}
    except Exception:
        return {}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
