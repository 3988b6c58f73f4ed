"""Rule documentation comes from the rules: every language's fix is shown, and docs/rules/ is current."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ncuadvisor.rulekit.docs import index_markdown, rule_help, rule_markdown
from ncuadvisor.rulekit.engine import discover

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "rules"
RULES = discover()
REGENERATE = "python3 -m ncuadvisor.rulekit.docs docs/rules"


def all_fixes(rule: Any) -> Iterator[Any]:
    yield from rule.fixes.values()
    for table in rule.fixes_when.values():
        yield from table.values()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_help_shows_every_fix(rule: Any) -> None:
    fixes = list(all_fixes(rule))
    assert fixes, f"{rule.code} declares no fix"
    text, markdown = rule_help(rule), rule_markdown(rule)
    for fix in fixes:
        shown = fix.plain()
        assert " ".join(shown.text.split()) in text and " ".join(shown.text.split()) in markdown
        for line in shown.code.splitlines():
            assert line in text and line in markdown


def test_fix_languages_are_kernel_languages() -> None:
    """A fix is for a kernel language, or for a language a CUDA-language kernel may be written in (Julia, Numba,
    CuPy): never for a name `fix_for` cannot pick."""
    for rule in RULES:
        for situation, table in [("", rule.fixes), *rule.fixes_when.items()]:
            assert set(table) <= {"cuda", "triton", "pytorch", "library", "julia", "numba", "cupy"}, (
                rule.code,
                situation,
            )


def test_rules_command_shows_the_triton_fix() -> None:
    rule = next(r for r in RULES if r.code == "MEM001")
    out = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "rules", "MEM001"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    assert "Triton:" in out and rule.fixes["triton"].plain().code in out


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_committed_page_is_current(rule: Any) -> None:
    page = DOCS / f"{rule.code}.md"
    assert page.exists(), f"{page} is missing: run `{REGENERATE}`"
    assert page.read_text() == rule_markdown(rule), f"{page} is stale: run `{REGENERATE}`"


def test_committed_index_is_current() -> None:
    assert (DOCS / "README.md").read_text() == index_markdown(RULES), (
        f"docs/rules/README.md is stale: run `{REGENERATE}`"
    )
    pages = {p.stem for p in DOCS.glob("*.md")} - {"README"}
    assert pages == {r.code for r in RULES}, f"pages of rules that are gone: run `{REGENERATE}`"
