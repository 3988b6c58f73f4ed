"""ncuadvisor.metrics names real metrics: each exists in a report captured with every section `profile` asks for."""

from collections.abc import Callable
from pathlib import Path

import pytest

from ncuadvisor import metrics
from ncuadvisor.rulekit.engine import discover
from tests.conftest import in_child

# Sections `ncuadvisor profile` does not ask for: their metrics are read when a report has them.
NOT_COLLECTED = {metrics.HalfRooflineChart, metrics.OlderMemoryTables}  # the latter: names of ncu before 2024


@pytest.fixture(scope="module")
def full_report(report_path: Callable[[str], Path]) -> dict[str, set[str]]:
    """The metric names and section identifiers of the first result of fixtures/flaws (captured with every section
    `profile` asks for), read by ncu_report in a forked child."""

    def read() -> dict[str, set[str]]:
        import ncu_report

        action = ncu_report.load_report(str(report_path("flaws"))).range_by_idx(0).action_by_idx(0)
        return {"metrics": set(action.metric_names()), "sections": {s.identifier() for s in action.sections()}}

    return in_child(read)


@pytest.fixture(scope="module")
def full_report_names(full_report: dict[str, set[str]]) -> set[str]:
    return full_report["metrics"]


@pytest.mark.parametrize("group", metrics.SECTIONS, ids=lambda g: g.__name__)
def test_every_constant_is_a_metric_of_a_full_report(group: type, full_report_names: set[str]) -> None:
    names = metrics.names(group)
    assert names, f"{group.__name__} declares no metric"
    if group in NOT_COLLECTED:
        return
    missing = [n for n in names if n not in full_report_names]
    assert not missing, f"{group.__name__}: not in a full-section report: {missing}"


def test_sections_are_ncu_section_identifiers(full_report: dict[str, set[str]]) -> None:
    collected = full_report["sections"]
    for group in metrics.SECTIONS:
        section = getattr(group, "SECTION", None)
        if group is metrics.Device:
            assert section is None  # device attributes come with every result
        elif group not in NOT_COLLECTED:
            assert section in collected, group.__name__


def test_rules_read_only_declared_metrics() -> None:
    """Every metric a built-in rule declares is one of ncuadvisor.metrics' names."""
    known = {n for group in metrics.SECTIONS for n in metrics.names(group)}
    for rule in discover():
        declared = (*rule.requires, *rule.optional, *rule.per_instruction)
        unknown = [n for n in declared if n not in known]
        assert not unknown, f"{rule.code} declares metrics missing from ncuadvisor.metrics: {unknown}"
