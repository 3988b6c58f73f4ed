"""User rules loaded and run so that nothing they do reaches the result: a broken rule is skipped with one reason.

A rule file is read only when it is a regular file of bounded size (a FIFO would block the open, /dev/zero would be
read forever), through one descriptor, and compiled from the bytes read. Loading it and each call into it (`check`,
`check_program`, `sass_when`) run contained (`call_rule`):

- `SystemExit` (a `sys.exit(0)` in a rule would end the command with its code, fooling `diff --fail-on`) and every
  other exception become the rule's error, never the command's;
- standard output, Python's and the descriptor's, goes to stderr meanwhile: a `print()` in a rule must not corrupt
  the JSON on stdout;
- a time limit per call (`RULE_TIME_LIMIT_S`, user rules only: the built-in ones are the project's tested code): a
  rule past it gets `RuleTimeout` raised in it; one that swallows it and runs on past the grace ends the command
  with one line and RuleError's exit code, never a hang;
- what a rule returns is checked against the result's own types (a finite number where a number goes, a finding
  where a finding goes) before it is used (`check_findings`).

User rules are code the user chose to run, not a security boundary: this guards against mistakes, not malice
(`os._exit` in a rule still ends the process).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from ncuadvisor.errors import InputError, RuleError

RULE_FILE_MAX_BYTES = 1 << 20  # a rule is one class: a megabyte of source is not one
RULE_TIME_LIMIT_S = 10.0  # per call of a user rule; the built-in ones take milliseconds per kernel
RULE_TIME_GRACE_S = 5.0  # a rule that swallows RuleTimeout gets this long to return before the command ends
MAX_REASON = 200

T = TypeVar("T")


class RuleTimeout(BaseException):
    """Raised inside a rule that ran past its time limit (a BaseException: `except Exception` in a rule lets it
    through)."""


def read_rule_source(path: Path) -> bytes:
    """The bytes of a rule file, read through one descriptor opened without blocking (a FIFO opens at once) and
    checked to be a regular file of at most RULE_FILE_MAX_BYTES before reading; anything else is a RuleError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RuleError(f"{path}: cannot read rule file ({exc.strerror or exc})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RuleError(f"{path}: a rule file must be a regular file (this is {_kind(st.st_mode)})")
        if st.st_size > RULE_FILE_MAX_BYTES:
            raise RuleError(f"{path}: rule file too large ({st.st_size:,} bytes; at most {RULE_FILE_MAX_BYTES:,})")
        chunks: list[bytes] = []
        size = 0
        while size <= RULE_FILE_MAX_BYTES:
            chunk = os.read(fd, RULE_FILE_MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > RULE_FILE_MAX_BYTES:  # grew while read
            raise RuleError(f"{path}: rule file too large (over {RULE_FILE_MAX_BYTES:,} bytes)")
        return b"".join(chunks)
    except OSError as exc:
        raise RuleError(f"{path}: cannot read rule file ({exc.strerror or exc})") from exc
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def load_rule_module(path: Path, module: Any, limit_s: float | None, builtin: bool = False) -> None:
    """Run a rule file's code (read by `read_rule_source`) in `module`, contained; a failure is a RuleError.
    `builtin`: a rule file of the installed package, whose code is taken from its compiled bytecode where that is
    current (`builtin_code`)."""
    code = builtin_code(path) if builtin else None
    if code is None:
        source = read_rule_source(path)
        try:
            code = compile(source, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
            raise RuleError(f"{path}: rule file failed to load: {describe(exc)}") from exc
    _value, error = call_rule(exec, code, module.__dict__, limit_s=limit_s)
    if error is not None:
        raise RuleError(f"{path}: rule file failed to load: {error}")


def builtin_code(path: Path) -> Any:
    """The code of a built-in rule file through Python's own loader, which takes it from the file's compiled bytecode
    (`__pycache__`, written by pip when the wheel is installed) where that matches the source, else compiles the
    source: compiling the 35 built-in rules costs ~45 ms of every run, loading their bytecode ~5 ms. None where the
    loader cannot read the file (it is then read and compiled as a user's rule file is)."""
    from importlib.machinery import SourceFileLoader

    try:
        name = f"ncuadvisor_rule_{path.stem}"
        return SourceFileLoader(name, str(path)).get_code(name)
    except (OSError, ImportError, SyntaxError, ValueError, EOFError):
        return None


def call_rule(fn: Callable[..., T], *args: Any, limit_s: float | None) -> tuple[T | None, str | None]:
    """`fn(*args)` (a call into a rule) contained: (its value, None), or (None, why it failed in one line). Only
    Ctrl-C (KeyboardInterrupt) goes through: that is the user's, not the rule's."""
    try:
        with _stdout_to_stderr(), _time_limit(limit_s):
            return fn(*args), None
    except RuleTimeout:
        return None, f"ran past its time limit of {limit_s:g} s"
    except SystemExit as exc:
        return None, f"called sys.exit({_safe_repr(exc.code)})"
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever a rule raises is the rule's failure
        return None, describe(exc)


def describe(exc: BaseException) -> str:
    """`Type: message`, on one line and bounded (the message of a rule's own exception may be anything)."""
    try:
        text = str(exc)
    except BaseException:  # noqa: BLE001 - a broken __str__
        text = "(its message cannot be shown)"
    return _one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _safe_repr(value: Any) -> str:
    try:
        return _one_line(repr(value))
    except BaseException:  # noqa: BLE001
        return "…"


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Standard output (sys.stdout and descriptor 1, which a subprocess or os.write would use) sent to stderr."""
    saved_fd = None
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass  # said when the command's own output is written
    try:
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved_fd = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


@contextlib.contextmanager
def _time_limit(limit_s: float | None) -> Iterator[None]:
    """RuleTimeout raised in the calling thread after `limit_s` seconds (SIGALRM in the main thread, which also
    interrupts a blocking sleep or read; elsewhere an asynchronous exception, seen between bytecodes), and again
    every half second while the rule runs on; past the grace, the command ends with one line."""
    if not limit_s:
        yield
        return
    deadline = time.monotonic() + limit_s + RULE_TIME_GRACE_S

    def expire() -> None:
        if time.monotonic() > deadline:
            _give_up(limit_s)
        raise RuleTimeout

    if threading.current_thread() is threading.main_thread():
        before = signal.signal(signal.SIGALRM, lambda signum, frame: expire())
        signal.setitimer(signal.ITIMER_REAL, limit_s, 0.5)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, before)
        return
    yield from _async_time_limit(limit_s, deadline)


def _async_time_limit(limit_s: float, deadline: float) -> Iterator[None]:
    import ctypes

    tid = threading.get_ident()
    done = threading.Event()

    def watch() -> None:
        wait = limit_s
        while not done.wait(wait):
            if time.monotonic() > deadline:
                _give_up(limit_s)
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), ctypes.py_object(RuleTimeout))
            wait = 0.5

    watcher = threading.Thread(target=watch, name="ncuadvisor-rule-limit", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _give_up(limit_s: float) -> None:
    """A rule that will not stop: one line and RuleError's exit code, at once (its state is unknown)."""
    try:
        os.write(2, f"ncuadvisor: error: a rule ran past its time limit of {limit_s:g} s and did not stop\n".encode())
    finally:
        os._exit(RuleError.exit_code)


def limit_for(origin: str) -> float | None:
    """The time limit of a call into a rule from `origin` (None: the built-in rules have none)."""
    return None if origin == "builtin" else RULE_TIME_LIMIT_S


def check_declarations(path: Path, cls: type) -> None:
    """A rule class's declared data of the types the engine reads: metric names and languages as tuples of strings,
    thresholds as a dict of finite numbers; else a RuleError."""
    for name in (
        "requires",
        "optional",
        "optional_languages",
        "weak_evidence",
        "per_instruction",
        "aliases",
        "languages",
    ):
        value = getattr(cls, name, ())
        if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
            raise RuleError(f"{path}: {name} must be a tuple of strings (it is {_safe_repr(value)})")
    thresholds = getattr(cls, "thresholds", {})
    if not isinstance(thresholds, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for k, v in thresholds.items()
    ):
        raise RuleError(f"{path}: thresholds must map names to finite numbers (it is {_safe_repr(thresholds)})")
    for name in ("title", "slug"):
        if not isinstance(getattr(cls, name, ""), str):
            raise RuleError(f"{path}: {name} must be a string")


def findings_of(check: Callable[[Any], Any], ctx: Any, kind: type[T], origin: str) -> tuple[list[T], str | None]:
    """A rule's findings on `ctx` (its bound `check` or `check_program` called contained, its answer checked to be
    findings of `kind`), or ([], why the rule failed)."""
    out, error = call_rule(check, ctx, limit_s=limit_for(origin))
    if error is not None:
        return [], error
    return check_findings(out, kind)


def check_findings(out: Any, kind: type[T]) -> tuple[list[T], str | None]:
    """What a rule returned (None, one finding or a list of them), as a list of `kind`, each of which reads back as
    the result's record (a finite number where a number goes, a string where a string goes); else ([], why)."""
    if out is None:
        return [], None
    items = out if isinstance(out, list) else [out]
    for i, f in enumerate(items):
        if not isinstance(f, kind):
            return [], _one_line(f"returned {type(f).__name__}, not a {kind.__name__} (or a list of them, or None)")
        try:
            record: Any = f.entry() if hasattr(f, "entry") else f  # a kernel finding's source lines are placed later
            type(record).from_dict(record.to_dict(), path=f"finding[{i}]")
        except InputError as exc:
            return [], _one_line(f"returned an invalid finding: {exc}")
        except Exception as exc:  # noqa: BLE001 - a finding whose fields are not even records
            return [], _one_line(f"returned an invalid finding: {describe(exc)}")
    return items, None
