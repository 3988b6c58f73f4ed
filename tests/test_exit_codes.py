"""One exit-code table: every error class lives in ncuadvisor/errors.py with its code, and the usage page's table
(docs/usage.md) is the one errors.py renders (`python -m ncuadvisor.errors` prints it)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import ncuadvisor
from ncuadvisor import errors
from tests.conftest import ROOT


def readme_table() -> str:
    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    section = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|")) + "\n"


def test_readme_table_is_the_generated_one():
    assert readme_table() == errors.exit_code_table(), (
        "docs/usage.md's exit codes differ from ncuadvisor/errors.py: paste the output of `python -m ncuadvisor.errors`"
    )


def test_every_error_class_is_in_errors_py():
    for mod in pkgutil.walk_packages(ncuadvisor.__path__, "ncuadvisor."):
        if mod.name != "ncuadvisor.__main__":
            importlib.import_module(mod.name)
    found, todo = [], [errors.AdvisorError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    outside = [f"{c.__module__}.{c.__name__}" for c in found if c.__module__ != "ncuadvisor.errors"]
    assert not outside, outside


def test_every_code_has_a_meaning_and_each_class_a_code():
    codes = errors.exit_codes()
    assert list(codes) == sorted(codes) and codes[0] == "success"
    for cls in errors.error_classes():
        assert cls.exit_code in codes and cls.__doc__, cls
    assert {2, 3, 4, 5, 6, 7, 130} <= set(codes)


def test_no_other_module_writes_an_exit_code_table():
    for path in (ROOT / "ncuadvisor").rglob("*.py"):
        if path.name != "errors.py":
            assert not re.search(r"^\| *code *\| *meaning", path.read_text(), re.M), path
