"""Shared test helpers: the real reports in fixtures/ (kept xz-compressed), read through the real ncu_report.

NVIDIA's ncu_report never gives back the memory of a report it loaded (about 200 MB for a PyTorch fixture, freed only
when its process ends), so the test process itself opens no report and runs no test: every test runs in a forked
child of it (`pytest_pyfunc_call`), each fixture is analysed once (`typed`) and its result kept pickled on disk for
every later test, and a module fixture that reads a report does so in a forked child (`in_child`). The test process
stays small and single-threaded, so that every fork starts from a clean state, and the default run's memory stays
that of the test process plus one test's. `NCUADVISOR_TEST_FORK=0` runs the tests in place (a debugger, a profile).
"""

from __future__ import annotations

import fcntl
import gc
import json
import lzma
import os
import pickle
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from multiprocessing import forkserver  # here, not in each forked child: importing it there costs ~13 ms a test
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Bytecode is written even where the environment turns it off (PYTHONDONTWRITEBYTECODE, as some containers set it):
# the run starts a few hundred commands in subprocesses, each of which would otherwise compile the package from source
# again. Where the folders are read-only Python writes nothing and says nothing, as before.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
FIXTURES = ROOT / "fixtures"
sys.path.insert(0, str(ROOT / "benchmarks"))
# other people's reports without a licence to commit (benchmarks/foreign.py fills it): the one definition, corpora's
from corpora import FOREIGN_CACHE as FOREIGN_CACHE  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)


def report_output(path: Path, fmt: str) -> str:
    """`ncuadvisor report PATH --format FMT` run as a user runs it (a subprocess: ncu_report never loads here)."""
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(path), "--format", fmt],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=True,
    )
    return p.stdout


def report_json(path: Path) -> dict:
    """`ncuadvisor report PATH --format json` run as a user runs it (a subprocess: ncu_report never loads here)."""
    return json.loads(report_output(path, "json"))


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and shutil.which("ncu") is not None


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: known only where it is installed
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core, at most 4 (each holds its own imports and caches, ~0.9 GB at its peak); one
    where the GPU tests are selected (`-m gpu`: they share one GPU and ncu profiles one process at a time)."""
    marks = str(config.getoption("markexpr", "") or "")
    if "gpu" in marks.replace("not gpu", ""):
        return 1
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and ncu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _threads() -> int:
    """How many threads this process runs (0 where /proc does not say)."""
    try:
        return len(os.listdir(f"/proc/{os.getpid()}/task"))
    except OSError:
        return 0


# A worker of a parallel run (pytest-xdist) starts with one more thread, execnet's, which reads the worker's pipe and
# holds none of the locks a test takes: it counts as the process's own, as the main thread does.
_OWN_THREADS = max(1, _threads())


_IMPORT_THREADS: list[str] = []


def pytest_collection_finish(session):
    """A test module that starts a thread when it is imported (numpy's BLAS pool, imported at a module's top) leaves
    the test process multi-threaded: every fixture that reads a report then runs here instead of in a fork. Noted here,
    said by the first test (an error here would only stop a parallel run's worker, without the words)."""
    if _threads() > _OWN_THREADS:
        _IMPORT_THREADS.append(
            f"the test process runs {_threads()} threads after collection, {_OWN_THREADS} before: a test module "
            "started one when imported (import numpy and the like inside the test, which runs in a fork)"
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if _IMPORT_THREADS:
        pytest.fail(_IMPORT_THREADS.pop(), pytrace=False)


def _single_threaded() -> bool:
    """Whether this process runs no thread beyond those it started with: a fork copies only the forking thread, and a
    lock another thread held (ncu_report's own, once a report was opened here) would stay locked in the child for
    ever. No /proc: no fork either."""
    return 0 < _threads() <= _OWN_THREADS


def _own_fork_server() -> None:
    """In a forked child: forget the fork server the test process may have started (multiprocessing asks after it
    with waitpid, which only its parent may do), so that the analysis' workers start one of the child's own."""
    server: Any = forkserver._forkserver  # type: ignore[attr-defined]
    server._forkserver_pid = server._forkserver_address = server._forkserver_alive_fd = None


def in_child(fn: Callable[[], Any]) -> Any:
    """fn() run in a forked child, its value pickled back; an exception in the child is raised here with the child's
    traceback (pytest's skip and fail keep their kind). The child's memory, the reports it loaded with it, goes when
    it ends."""
    if not _single_threaded():  # a fork would inherit the locks the other threads hold: run it here
        return fn()
    r, w = os.pipe()
    # the test process's objects frozen for the fork: a full collection in the child then leaves them alone instead
    # of writing to every page they lie on (a copy of each, ~28 ms)
    gc.freeze()
    pid = os.fork()
    if pid != 0:
        gc.unfreeze()
    if pid == 0:  # the child: never returns into pytest
        os.close(r)
        _own_fork_server()
        try:
            try:
                out: tuple[str, Any] = ("ok", fn())
            except pytest.skip.Exception as e:
                out = ("skip", str(e.msg))
            except BaseException:  # noqa: BLE001 - every failure goes back to the parent as text
                out = ("error", traceback.format_exc())
            data = pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001 - a value that does not pickle
            data = pickle.dumps(("error", traceback.format_exc()))
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        pytest.fail(f"the forked child ended without an answer (wait status {status})", pytrace=False)
    kind, value = pickle.loads(data)
    if kind == "skip":
        pytest.skip(value)
    if kind == "error":
        pytest.fail(f"in a forked child:\n{value}", pytrace=False)
    return value


_TEST_PROCESS = os.getpid()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Every test runs in a forked child (its fixtures are made here first): what it loads goes when it ends. Where
    the test process is no longer single-threaded (a fixture opened a report here) the test runs here, as pytest
    would: more memory, never a hang."""
    if not _single_threaded() or os.environ.get("NCUADVISOR_TEST_FORK") == "0":
        return None
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    in_child(lambda: pyfuncitem.obj(**args))
    return True


_OPENED_HERE: list[str] = []


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    """The test process never imports ncu_report (a fixture that reads a report does so in a forked child): the first
    test after whose fixtures it is loaded here fails, naming why, so that the fixture is found."""
    if _OPENED_HERE or "ncu_report" not in sys.modules or os.environ.get("NCUADVISOR_TEST_FORK") == "0":
        return
    _OPENED_HERE.append(item.nodeid)
    pytest.fail(
        "ncu_report was loaded in the test process by this test's fixtures: read the report in a forked child "
        "(tests.conftest.in_child), or every later test inherits its memory"
        f" (threads here: {_thread_names()}; {_OWN_THREADS} at start)",
        pytrace=False,
    )


def _thread_names() -> str:
    """The names of this process's threads, as /proc shows them (what made a fork unsafe, where one did)."""
    try:
        tasks = os.listdir(f"/proc/{os.getpid()}/task")
    except OSError:
        return "unknown"
    names = []
    for t in tasks:
        try:
            names.append(Path(f"/proc/{os.getpid()}/task/{t}/comm").read_text().strip())
        except OSError:
            names.append("?")
    return ", ".join(names)


def _shared_folder(factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder under this run's base temp folder, the same in the test process and in its forked children, and in
    every worker of a parallel run (pytest-xdist gives each worker a folder of its own under the run's)."""
    base = factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write_once(dst: Path, write: Callable[[Path], None]) -> Path:
    """dst, written by write(tmp) and renamed into place unless it is there already (a forked child or another worker
    of a parallel run may have): one writer at a time, so two workers asking for one analysis make it once."""
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(dst.with_name(f".{dst.name}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, the other waiter then finds dst
            if not dst.exists():
                tmp = dst.with_name(f".{dst.name}.{os.getpid()}")
                write(tmp)
                tmp.replace(dst)
    return dst


@pytest.fixture(scope="session")
def report_path(tmp_path_factory):
    """report_path("probe") -> a decompressed copy of fixtures/probe.ncu-rep.xz (made once per test run); a name may
    hold a folder: report_path("tf32-twin-2026-12-01/torch_conv_fixes")."""
    folder = _shared_folder(tmp_path_factory, "reports")

    def decompress(src: Path, tmp: Path) -> None:
        with lzma.open(src, "rb") as fin, tmp.open("wb") as fout:
            shutil.copyfileobj(fin, fout)

    def get(name: str) -> Path:
        src = FIXTURES / f"{name}.ncu-rep.xz"
        if not src.exists():
            pytest.fail(f"fixture {src} is missing")
        # a name may hold a folder of fixtures/: "profile-cost-2026-11-30/x"
        return _write_once(folder / f"{name}.ncu-rep", lambda tmp: decompress(src, tmp))

    return get


@pytest.fixture(scope="session")
def typed(report_path, tmp_path_factory):
    """typed("probe") -> the result (`ncuadvisor.result.Result`) of that fixture, analyzed once per test run with the
    default rules: in a forked child when asked in the test process (ncu_report keeps what it loads until its process
    ends), in the test's own child otherwise (it ends with the test).

    Every call returns a copy of its own (unpickled from the one analysis: ~5x faster than copy.deepcopy), so a test
    may change what it gets without another test seeing the change."""
    folder = _shared_folder(tmp_path_factory, "analysed")
    cache: dict[str, bytes] = {}

    def analyse(name: str, tmp: Path) -> None:
        def run() -> None:
            from ncuadvisor.pipeline.analyze import analyze

            tmp.write_bytes(pickle.dumps(analyze(report_path(name)), protocol=pickle.HIGHEST_PROTOCOL))

        # a forked test forks no further: a fork of a process that ran a test may inherit a lock held by one of its
        # threads (the analysis' own), and hang
        in_child(run) if os.getpid() == _TEST_PROCESS and _single_threaded() else run()

    def get(name: str):
        if name not in cache:
            path = _write_once(folder / (name.replace("/", "__") + ".pickle"), lambda tmp: analyse(name, tmp))
            cache[name] = path.read_bytes()
        return pickle.loads(cache[name])

    return get


@pytest.fixture(scope="session")
def analyzed(typed):
    """analyzed("probe") -> the result of that fixture as its JSON dict (`Result.to_dict()`), a copy of its own."""
    return lambda name: typed(name).to_dict()


def kernel(result: dict, name: str) -> dict:
    matches = [k for k in result["kernels"] if k["name"] == name]
    assert matches, f"no kernel {name} in {[k['name'] for k in result['kernels']]}"
    return matches[0]
