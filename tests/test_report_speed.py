"""What `ncuadvisor report` does to take less time, held to giving the same answers: the built-in rules' code taken
from their compiled bytecode."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ncuadvisor.rulekit import sandbox
from ncuadvisor.rulekit.engine import builtin_rules_dir


def _same_code(a, b) -> bool:
    """Two code objects with the same instructions, names and constants (nested code compared the same way)."""
    if (a.co_code, a.co_names, a.co_varnames, a.co_filename, a.co_name) != (
        b.co_code,
        b.co_names,
        b.co_varnames,
        b.co_filename,
        b.co_name,
    ):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if hasattr(x, "co_code") and hasattr(y, "co_code"):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def test_builtin_rules_run_the_code_of_their_source(tmp_path):
    """Each built-in rule's code, through Python's loader (its bytecode where current), is its source compiled; a
    rule whose bytecode is stale (the source changed after it was written) runs its source, not the bytecode."""
    rules = sorted(p for p in builtin_rules_dir().glob("*.py") if not p.name.startswith("_"))
    assert len(rules) > 30
    for path in rules:
        loaded = sandbox.builtin_code(path)
        assert loaded is not None and _same_code(
            loaded, compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        )
    import py_compile

    rule = tmp_path / "X.py"
    rule.write_text("VALUE = 1\n")
    py_compile.compile(str(rule))
    assert Path(tmp_path / "__pycache__").is_dir()
    rule.write_text("VALUE = 22\n")  # another size: the bytecode is stale
    os.utime(rule, (time.time() + 5, time.time() + 5))
    namespace: dict = {}
    exec(sandbox.builtin_code(rule), namespace)
    assert namespace["VALUE"] == 22
