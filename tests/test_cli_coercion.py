"""The command line's quick conversion (`cli/coercion.py`) gives typer's own value, or typer's own error, on every
option of every command, and parsing a command line of plain values does not import pydantic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

pytest.importorskip("typer._coercion")

from typer._coercion import build_runtime_param  # noqa: E402

from ncuadvisor.cli.app import app  # noqa: E402
from ncuadvisor.cli.coercion import _DEFER, QuickParam, quick_value  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _values(tmp: Path) -> list[Any]:
    folder = tmp / "folder"
    folder.mkdir(exist_ok=True)
    (tmp / "file.json").write_text("{}")
    texts = ["a.json", "./a.json", "a//b", "dir/", "", "-", "\udcff", "x\0y", " x ", "é.json", "MEM", "LCH001"]
    texts += [str(folder), str(tmp / "file.json"), str(tmp / "missing" / "x"), str(folder) + "/", str(folder) + "/."]
    numbers = ["0", "1", "10", "-1", "+3", "007", " 5", "1_0", "\u0663", "99999999999999999999", "1.5", "x", 0, 10, -2]
    choices = ["json", "JSON", "html", "md", "sarif", "terminal", "markdown", "all", "none", "bogus", "error", "warn"]
    return texts + numbers + choices + [None, True, False, 1.5]


def _params() -> list[tuple[str, Any, Any]]:
    group = typer.main.get_command(app)
    out = []
    for name, command in [("", group), *group.commands.items()]:  # type: ignore[attr-defined]
        ctx = command.make_context(name or "ncuadvisor", [], resilient_parsing=True)
        for p in command.get_params(ctx):
            if hasattr(p, "type_descriptor"):
                out.append((f"{name or 'ncuadvisor'} {p.name}", p, ctx))
    return out


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "value", fn(*args, **kwargs)
    except Exception as exc:  # the same type and message, whichever conversion raised it
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return type(exc).__name__, message


def test_every_parameter_has_the_quick_conversion():
    params = _params()
    assert len(params) > 40
    for label, p, _ in params:
        assert isinstance(p._runtime_param, QuickParam), label


def test_quick_values_equal_typers_own(tmp_path):
    values = _values(tmp_path)
    taken = 0
    for label, p, ctx in _params():
        full = build_runtime_param(p.type_descriptor)
        annotation, info = p.type_descriptor.annotation, p.type_descriptor.parameter_info
        is_list = getattr(annotation, "__origin__", None) is list
        for value in values:
            for v in [value] if not is_list else [(value,), (value, "b.json")]:
                if v is None:
                    continue
                quick = _outcome(quick_value, annotation, info, v, p, ctx)
                if quick == ("value", _DEFER):
                    continue  # deferred to typer's own conversion
                own = _outcome(full._coerce_value, v, param=p, ctx=ctx)
                assert quick == own, (label, v)
                assert quick[0] != "value" or type(quick[1]) is type(own[1]), (label, v)
                taken += 1
        # and through the whole runtime conversion (None, the deferred values), as typer calls it
        for value in values:
            v = (value,) if is_list and value is not None else value
            quick_param = QuickParam(parameter_info=info, annotation=annotation, descriptor=p.type_descriptor)
            assert _outcome(quick_param.coerce, v, p, ctx) == _outcome(full.coerce, v, param=p, ctx=ctx), (label, v)
    assert taken > 200  # the quick path answered most plain values


def test_a_plain_command_line_does_not_import_pydantic(tmp_path):
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"")
    code = (
        "import sys, typer.main\n"
        "from ncuadvisor.cli.app import app\n"
        "g = typer.main.get_command(app)\n"
        f"args = ['report', {str(report)!r}, '-o', 'x.json', '-q', '--force', '--top', '3', '-f', 'json', "
        "'--select', 'MEM', '--ignore', 'LCH', '--rules-dir', 'rules']\n"
        "ctx = g.make_context('ncuadvisor', list(args))\n"
        "sub = g.commands['report'].make_context('report', args[1:], parent=ctx)\n"
        "assert sub.params['top'] == 3 and sub.params['select'] == ['MEM'], sub.params\n"
        "print('pydantic' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", out.stderr
