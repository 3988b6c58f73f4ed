"""What `ncuadvisor report` does to take less time, held to giving the same answers: the built-in rules' code taken
from their compiled bytecode, and the SASS of the launches the gated rules admit read by the worker of the deferred
check, whose disassembler started while the analysis went on (`workers.Helper`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from functools import partial
from pathlib import Path

import pytest

import ncuadvisor.load.reader as reader_module
from ncuadvisor.errors import InputError
from ncuadvisor.load.workers import Helper
from ncuadvisor.pipeline import analyze as pipeline
from ncuadvisor.rulekit import sandbox
from ncuadvisor.rulekit.engine import builtin_rules_dir

ROOT = Path(__file__).resolve().parent.parent


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


def _double(x):
    return 2 * x


def _sleep(_task):
    time.sleep(60)


def _fail(_task):
    raise ValueError("no such result")


def _die(_task):
    os._exit(3)


def test_helper_answers_first_then_the_request():
    helper = Helper(_double, 21, _double, _double, "reading failed")
    assert helper.first() == 42
    assert helper.ask(5) == 10
    assert helper._proc.exitcode is not None  # ended once it answered


def _fail_always():
    raise RuntimeError("preload failed")


@pytest.mark.parametrize("preload", [partial(time.sleep, 0.2), _fail_always])
def test_a_helper_told_its_task_later_answers_it(preload):
    """A helper started with `preload` (the deferred check's worker loads the report while this process reads the
    rows) runs it, then answers the task `begin` sends; a preload that fails is a head start lost, not a failure; one
    closed before its task ends at once."""
    helper = Helper(_double, None, _double, _double, "reading failed", preload=preload)
    helper.begin(21)
    assert helper.first() == 42
    assert helper.ask(5) == 10
    unused = Helper(_double, None, _double, _double, "reading failed", preload=partial(time.sleep, 60))
    t0 = time.monotonic()
    unused.close()
    assert time.monotonic() - t0 < 10 and unused._proc.exitcode is not None


def test_helper_is_ended_at_once_while_it_prepares():
    helper = Helper(_double, 1, _sleep, _double, "reading failed")
    assert helper.first() == 2
    t0 = time.monotonic()
    helper.close()
    assert time.monotonic() - t0 < 10 and helper._proc.exitcode is not None
    helper.close()  # twice: nothing more


@pytest.mark.parametrize(
    "first, serve, where",
    [(_fail, _double, "first"), (_die, _double, "first"), (_double, _fail, "ask"), (_double, _die, "ask")],
)
def test_helper_failures_are_one_line(first, serve, where):
    helper = Helper(first, 1, _double, serve, "reading failed")
    with pytest.raises(InputError) as err:
        helper.first()
        helper.ask(1)
    assert str(err.value).startswith("reading failed (") and "\n" not in str(err.value)
    assert helper._proc.exitcode is not None
    if where == "ask":
        assert "no such result" in str(err.value) or "exit code 3" in str(err.value)


_IN_A_FRESH_PROCESS = textwrap.dedent(
    """
    import json, sys
    from ncuadvisor.load import reader, workers
    from ncuadvisor.pipeline import analyze
    reader.spare_cores = lambda: int(sys.argv[2])
    asked = []
    ask = workers.Helper.ask
    def spy(self, request, failure=None):
        asked.append([item[0] for item in request[1]])
        return ask(self, request, failure)
    workers.Helper.ask = spy
    result = analyze.analyze(sys.argv[1]).to_dict()
    result.pop("created")
    print(json.dumps({"asked": asked, "disassembled_here": workers.disassembled(), "result": result}, default=str))
    """
)


@pytest.mark.parametrize("spare", [0, 1])
def test_the_sass_read_by_the_helper_is_the_sass_read_here(report_path, monkeypatch, spare):
    """torch_scatter: two launches admitted by ATM002's gate; in a fresh process (which has not disassembled) their
    SASS is read by the helper, this process never disassembling; the result is the one of the SASS read here. With
    no core to spare the helper is the worker of the deferred check; with one, a worker of its own started with the
    reader."""
    path = report_path("torch_scatter")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", _IN_A_FRESH_PROCESS, str(path), str(spare)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    fresh = json.loads(proc.stdout)
    assert [len(ids) for ids in fresh["asked"]] == [2] and fresh["disassembled_here"] is False

    original = reader_module.ReportReader.__init__

    def no_helper(self, *args, **kwargs):
        original(self, *args, **dict(kwargs, sass_later=False))

    monkeypatch.setattr(reader_module.ReportReader, "__init__", no_helper)
    here = pipeline.analyze(path).to_dict()
    here.pop("created")
    assert json.loads(json.dumps(here, default=str)) == fresh["result"]
    assert any(f["rule"] == "ATM002" for k in here["kernels"] for f in k["findings"])


@pytest.mark.parametrize("fixture, debug", [("flaws", False), ("torch_scatter", False), ("pipeline_v1", True)])
def test_one_walk_gives_the_modules_lines_and_debug_builds(report_path, tmp_path, fixture, debug):
    """`modules.module_facts` (what the reader reads of the modules, in one walk of the file) is `result_modules`
    and `debug_modules`, each walking the file on its own; `debug`: pipeline_v1 made a debug build's, as
    tests/test_debug_build.py makes it (a section renamed .debug_info, the ELF whole)."""
    from ncuadvisor.reportfile import modules

    path = Path(report_path(fixture))
    if debug:
        data = path.read_bytes()
        path = tmp_path / "debug.ncu-rep"
        path.write_bytes(data.replace(b".debug_frame\x00", b".debug_info\x00\x00"))
    facts = modules.module_facts(path)
    assert facts is not None and facts[:3] == modules.result_modules(path) and facts[3] == modules.debug_modules(path)
    assert set(facts[3].values()) == {debug}


_HELPER_FAILS = textwrap.dedent(
    """
    import json, sys
    from ncuadvisor.load import deep, workers
    from ncuadvisor.pipeline import analyze
    def broken(task):
        raise RuntimeError("the native library cannot read this")
    deep.read_sass_task = broken
    result = analyze.analyze(sys.argv[1]).to_dict()
    result.pop("created")
    print(json.dumps({"disassembled_here": workers.disassembled(), "result": result}, default=str))
    """
)


def test_a_helper_that_fails_leaves_the_sass_to_be_read_here(report_path):
    """The helper's reading of the SASS raises: this process reads it as it did before the helper, the same result
    (and no line of the failure reaches the user)."""
    path = report_path("torch_scatter")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs = [
        subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, cwd=ROOT)
        for code in (_HELPER_FAILS, _IN_A_FRESH_PROCESS.replace("int(sys.argv[2])", "0"))
    ]
    assert [p.returncode for p in runs] == [0, 0], runs[0].stderr[-2000:] + runs[1].stderr[-2000:]
    failed, helped = (json.loads(p.stdout) for p in runs)
    assert failed["disassembled_here"] is True and helped["disassembled_here"] is False
    assert failed["result"] == helped["result"] and runs[0].stderr == ""
