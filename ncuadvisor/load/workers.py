"""Short-lived worker processes that read parts of a report through ncu_report, so that memory stays bounded (ncu_report
keeps every result it opened for as long as the process lives) and both cores work."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from ncuadvisor.errors import InputError

WORKERS = 2

# ncu_report starts a thread the first time it disassembles (sass_by_pc); a process forked after that hangs when it
# disassembles in turn. Workers are forked only while this process has not disassembled (see _start_method).
_disassembled_here = False


def note_disassembly() -> None:
    """Called before this process resolves an instruction in-process: from then on workers are not forked."""
    global _disassembled_here
    _disassembled_here = True


def spare_cores() -> int:
    """The cores this process may run on beyond its own and WORKERS workers' (0 on a 2-core machine)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(0, cores - 1 - WORKERS)


def disassembled() -> bool:
    """Whether this process has resolved an instruction in-process (its disassembler has started)."""
    return _disassembled_here


# The report this process loaded last through ncu_report: (path, (size, modification time), context). A worker
# forked from this process opens that report's results through the context it inherited instead of loading the report
# again (ncu_report reads the whole file to load it: ~0.1 s for 160 MB, ~0.2 s for 830 MB, in every worker). The
# context holds no open file: ncu_report opens the file for each result it reads. A worker started otherwise
# (forkserver, spawn) has none and loads the report itself.
_loaded: tuple[str, tuple[int, int], Any] | None = None


def _stamp(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def share_loaded(path: str, ctx: Any) -> None:
    """Called by the reader that loaded `path` through ncu_report: workers forked from now on use its context."""
    global _loaded
    try:
        _loaded = (path, _stamp(path), ctx)
    except OSError:
        _loaded = None


def worker_context(path: str) -> Any:
    """Worker side: ncu_report's context of the report, the one inherited from the process that loaded it where the
    file has not changed since, else loaded here and kept for the worker's next task (a `Helper` has three)."""
    from ncuadvisor.load.native import import_ncu_report

    if _loaded is not None and _loaded[0] == path and _loaded[1] == _stamp(path):
        return _loaded[2]
    ctx = import_ncu_report().load_report(path)
    share_loaded(path, ctx)
    return ctx


def worker_actions(path: str, items: list[tuple[Any, ...]]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Worker side: open the report (`worker_context`) and give each item (result id, range, action, ...) with its
    action."""
    ctx = worker_context(path)
    ranges: dict[int, Any] = {}
    for item in items:
        r, a = item[1], item[2]
        rng = ranges.get(r) or ranges.setdefault(r, ctx.range_by_idx(r))
        yield item, rng.action_by_idx(a)


def _quiet_stderr() -> None:
    """In a worker: the native library's log lines never reach the user's terminal (a failure comes back as one
    line)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass


def _reply(fn: Callable[[Any], Any], arg: Any) -> tuple[bool, Any]:
    """(True, fn(arg)), or (False, the exception in one line): sent to the parent, never a traceback."""
    try:
        return True, fn(arg)
    except BaseException as exc:
        return False, f"{type(exc).__name__}: {exc}"


def _worker_main(fn: Any, task: Any, conn: Any) -> None:
    _quiet_stderr()
    reply = _reply(fn, task)
    try:
        conn.send(reply)
    finally:
        conn.close()


def _start_method() -> str:
    """fork (no start-up cost) where available and safe; else forkserver (children forked from a fresh process that
    has only imported this module), else spawn."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and not _disassembled_here:
        return "fork"
    if "forkserver" in methods:
        multiprocessing.get_context("forkserver").set_forkserver_preload([__name__])
        return "forkserver"
    return "spawn"


def in_workers(
    fn: Callable[[Any], Any], tasks: list[Any], failure: str, meanwhile: Callable[[], None] | None = None
) -> list[Any]:
    """fn(task) for every task, each in its own short-lived process (fork where available), at most WORKERS at a
    time; the results in task order; `meanwhile()` is run here once the first workers are started, before waiting
    for them. A task that raises, or a worker that dies (killed for memory, a crash in the native library), is an
    InputError that starts with `failure`."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx: Any = multiprocessing.get_context(_start_method())
    results: list[Any] = [None] * len(tasks)
    todo = list(reversed(list(enumerate(tasks))))
    running: dict[Any, tuple[int, Any]] = {}
    try:
        while todo or running:
            while todo and len(running) < WORKERS:
                i, task = todo.pop()
                receive, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker_main, args=(fn, task, send), daemon=True)
                proc.start()
                send.close()
                running[receive] = (i, proc)
            if meanwhile is not None:
                meanwhile()
                meanwhile = None
            ready: list[Any] = wait(list(running))
            for conn in ready:
                i, proc = running.pop(conn)
                results[i] = _receive(conn, proc, failure)
    finally:
        for conn, (_, proc) in running.items():
            proc.terminate()
            proc.join()
            conn.close()
    return results


def _receive(conn: Any, proc: Any, failure: str) -> Any:
    """A worker's result from its end of the pipe (closed after), the worker joined; the InputError, starting with
    `failure`, of a task that raised or of a worker that died before it answered."""
    try:
        ok, payload = conn.recv()
    except (EOFError, OSError):
        proc.join()
        raise InputError(f"{failure} (a worker process died, exit code {proc.exitcode})") from None
    finally:
        conn.close()
    proc.join()
    if not ok:
        raise InputError(f"{failure} ({payload})")
    return payload


def start_worker(fn: Callable[[Any], Any], task: Any, failure: str) -> Callable[[], Any]:
    """fn(task) in a worker process started now (as `in_workers` starts them); the function returned waits for it and
    gives its result, or raises the InputError, starting with `failure`, of a task that raised or a worker that died."""
    import multiprocessing

    ctx: Any = multiprocessing.get_context(_start_method())
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker_main, args=(fn, task, send), daemon=True)
    proc.start()
    send.close()

    def result() -> Any:
        return _receive(receive, proc, failure)

    return result


def rows_in_parts(
    local: os.PathLike[str] | str,
    n: int,
    metrics: list[str],
    shape: list[str],
    meanwhile: Callable[[], None] | None = None,
) -> list[dict[str, Any]] | None:
    """`fastread.read_rows` of a big report (`n` results) in WORKERS processes, each parsing a range of its results
    (the metrics of every result are walked in Python: ~1 ms a result), `meanwhile()` run here while they do; None
    where a part cannot be read."""
    from ncuadvisor.reportfile.fastread import read_rows_task

    bounds = [(k * n // WORKERS, (k + 1) * n // WORKERS) for k in range(WORKERS)]
    try:
        parts = in_workers(read_rows_task, [(str(local), metrics, shape, b) for b in bounds], "", meanwhile)
    except InputError:
        return None
    if any(p is None for p in parts):
        return None
    return [row for p in parts for row in p]


def _helper_main(first: Any, task: Any, prepare: Any, serve: Any, conn: Any, preload: Any = None) -> None:
    """`Helper`'s worker: answers `first(task)` (unless `first` is None), runs `prepare(task)`, then answers one
    request with `serve(request)` (None: nothing is asked, the worker ends). With `preload`, it runs `preload()` first
    and then waits for its task (`Helper.begin`; None: the worker ends)."""
    import signal

    _quiet_stderr()
    try:  # ended at once by `Helper.close`, even inside the native library (a handler would wait for it to return)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    try:
        if preload is not None:
            try:
                preload()
            except BaseException:  # noqa: BLE001 - a head start only: the task then does it again
                pass
            task = conn.recv()
            if task is None:
                return
    except (EOFError, OSError):  # the parent went away or closed its end: nothing more is asked
        conn.close()
        return
    reply = _reply(first, task) if first is not None else (True, None)
    try:
        if first is not None:
            conn.send(reply)
        if not reply[0]:
            return
        try:
            prepare(task)
        except BaseException:  # noqa: BLE001 - a head start only: the request is served without it
            pass
        request = conn.recv()
        if request is None:
            return
        conn.send(_reply(serve, request))
    except (EOFError, OSError):  # the parent went away or closed its end: nothing more is asked
        pass
    finally:
        conn.close()


class Helper:
    """A worker process started now (as `in_workers` starts them) that answers `first(task)` (`first`; none when
    `first` is None), then gets ready for a request (`prepare(task)`) while this process goes on, and answers one
    request, `serve(request)`, if it is asked (`ask`); `close` ends it, ready or not (it is never waited for: what it
    prepared is a head start, not a result)."""

    def __init__(
        self,
        first: Callable[[Any], Any] | None,
        task: Any,
        prepare: Callable[[Any], Any],
        serve: Any,
        failure: str,
        preload: Callable[[], Any] | None = None,
    ):
        """With `preload`, the worker runs `preload()` (loading the report: `worker_context`) while this process
        finds out the task, which `begin` then sends (`task` is not used)."""
        import multiprocessing

        ctx: Any = multiprocessing.get_context(_start_method())
        self._conn, child = ctx.Pipe(duplex=True)
        args = (first, task, prepare, serve, child, preload)
        self._proc = ctx.Process(target=_helper_main, args=args, daemon=True)
        self._proc.start()
        child.close()
        self._failure = failure
        self._open = True

    def begin(self, task: Any) -> None:
        """The task of a helper started with `preload`; `first` then gives the answer to it."""
        try:
            self._conn.send(task)
        except (OSError, ValueError):
            pass  # a worker that died: `first` says so

    def first(self) -> Any:
        """The answer to the first task (waiting for it); the InputError, starting with `failure`, of a task that
        raised or of a worker that died (the worker is then ended)."""
        return self._answer()

    def ask(self, request: Any, failure: str | None = None) -> Any:
        """`serve(request)` in the worker (waiting for it to be ready), which then ends; the InputError, starting
        with `failure` (by default the one given at the start), of a request that raised or of a worker that died."""
        self._failure = failure or self._failure
        try:
            self._conn.send(request)
        except (OSError, ValueError):
            self.close()
            raise InputError(f"{self._failure} (a worker process died, exit code {self._proc.exitcode})") from None
        try:
            return self._answer()
        finally:
            self.close()

    def _answer(self) -> Any:
        try:
            ok, payload = self._conn.recv()
        except (EOFError, OSError):
            self.close()
            raise InputError(f"{self._failure} (a worker process died, exit code {self._proc.exitcode})") from None
        if not ok:
            self.close()
            raise InputError(f"{self._failure} ({payload})")
        return payload

    def close(self) -> None:
        """End the worker now, whatever it is doing, and wait for it to be gone."""
        if not self._open:
            return
        self._open = False
        if self._proc.exitcode is None:
            self._proc.kill()  # nothing of it is kept: no need to let it end its own way
        self._proc.join()
        self._conn.close()
