"""Every rule file follows the contract: code, category, documented sections, named thresholds."""

import re

import pytest

from ncuadvisor.errors import RuleError
from ncuadvisor.rulekit.contract import CATEGORIES, DOC_SECTIONS
from ncuadvisor.rulekit.engine import builtin_rules_dir, discover

RULES = discover()


def test_one_rule_per_file_named_by_code_and_slug():
    files = sorted(p.stem for p in builtin_rules_dir().glob("*.py") if not p.name.startswith("_"))
    assert len(files) == len(RULES)
    for rule in RULES:
        assert f"{rule.code}_{rule.slug.replace('-', '_')}" in files


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_is_documented(rule):
    docs = rule.doc_sections()
    for section in DOC_SECTIONS:
        assert docs.get(section), f"{rule.code} lacks the docstring section {section!r}"
    assert rule.category in CATEGORIES
    assert rule.requires, "a rule declares the metrics it needs"
    for name in rule.thresholds:
        assert re.match(r"^[a-z0-9_]+$", name)


def test_codes_are_unique():
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes))


def test_user_rule_folder(tmp_path):
    (tmp_path / "USR001_always.py").write_text(
        '''
from ncuadvisor.rulekit.contract import Rule

class Always(Rule):
    """Says hello."""
    code = "USR001"
    slug = "always"
    category = "latency"
    title = "hello"
    requires = ("gpu__time_duration.sum",)

    def check(self, k):
        return self.finding(message="m", fix="f", estimated_speedup=0.5)
'''
    )
    rules = discover([tmp_path])
    assert [r.code for r in rules if r.origin != "builtin"] == ["USR001"]
    (tmp_path / "USR002_dup.py").write_text((tmp_path / "USR001_always.py").read_text())
    with pytest.raises(RuleError, match="already used"):
        discover([tmp_path])


def test_broken_user_rule_is_a_clear_error(tmp_path):
    (tmp_path / "BAD001_x.py").write_text("this is not python(")
    with pytest.raises(RuleError, match="failed to load"):
        discover([tmp_path])
