"""The typer app: its commands (each in a module of its own, registered here once), `--version`, `main`, which
turns every error into one line and its exit code (`ncuadvisor.errors`), never a traceback, and `run`, the program's
entry point, which ends the process as soon as `main` is done."""

from __future__ import annotations

import atexit
import errno
import importlib
import io
import os
import signal
import sys
from typing import Annotated, Any, NoReturn

import typer

from ncuadvisor.cli import diff, mcp_server, profile, render, report, rules
from ncuadvisor.cli.coercion import QuickCommand, QuickGroup
from ncuadvisor.cli.common import exit_on_sigterm, stderr_console
from ncuadvisor.errors import AdvisorError, InputError, InternalError, Interrupted, OutputError
from ncuadvisor.render import escape_terminal as escape
from ncuadvisor.version import __version__

app = typer.Typer(
    cls=QuickGroup,  # the options' values converted without pydantic where that gives the same (cli/coercion.py)
    add_completion=False,
    no_args_is_help=True,
    help="Roofline-grounded, ranked advice from Nsight Compute (ncu) reports.",
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ncuadvisor {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool | None, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = None,
) -> None:
    """ncuadvisor: what to fix in your kernels, in order of what it is worth."""


# In the order `--help` lists them.
app.command("report", cls=QuickCommand)(report.report)
app.command("rules", cls=QuickCommand)(rules.rules)
app.command("diff", cls=QuickCommand)(diff.diff)
app.command("render", cls=QuickCommand)(render.render)
# the program's own options follow it on the command line: they are the program's, not ncuadvisor's
app.command("profile", cls=QuickCommand, context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(
    profile.profile
)
app.command("mcp", cls=QuickCommand)(mcp_server.mcp)


# errors of a path, not of the program: one line and exit 2 (InputError) wherever they show
PATH_ERRNOS = (errno.EACCES, errno.EPERM, errno.ELOOP, errno.ENAMETOOLONG, errno.ENOTDIR, errno.ENOENT)


def _click_exceptions() -> tuple[type[Exception], ...]:
    """click's ClickException, from click itself and from the copy typer >= 0.29 carries (typer._click): a usage
    error (unknown option, bad value, missing argument) from either is the user's, not an internal error."""
    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).ClickException)
        except (ImportError, AttributeError):
            pass
    return tuple(found)


def _fail(exc: AdvisorError) -> NoReturn:
    message = str(exc)
    with _InterruptsDeferred():
        stderr_console().print(f"ncuadvisor: {exc.label}" + (f": {escape(message)}" if message else ""))
    sys.exit(exc.exit_code)


class _InterruptsDeferred:
    """While the command's closing line is printed, a Ctrl-C or SIGTERM that lands is swallowed instead of turning
    that line into a traceback (the exit follows at once anyway); the handlers before are put back afterwards, so
    that a caller running `main()` in its own process (a test) keeps its own."""

    def __enter__(self) -> None:
        self.before: dict[int, Any] = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self.before[sig] = signal.signal(sig, lambda signum, frame: None)
            except (ValueError, OSError):  # not the main thread
                pass

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.before.items():
            try:
                signal.signal(sig, handler)
            except (ValueError, OSError):
                pass


def _stdout_failed(exc: OSError) -> NoReturn:
    """Standard output cannot be written (`> /dev/full`, a full disk): one line and exit 2 (docs/usage.md);
    stdout is pointed at /dev/null so that Python's own flush at exit does not complain a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    _fail(OutputError(f"cannot write to standard output ({exc.strerror or exc})"))


class _WholeWrites(io.RawIOBase):
    """Descriptor 1 written whole: each write loops until every byte is out, and a failure (a full disk, the file
    size limit) raises. Python's own buffered stdout, given a short write of a large block, lost the rest silently
    (`report -f html > full/x.html` wrote 80 KB of 400 KB and exited 0)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])  # OSError on failure; a short write goes round again
        return done


def _whole_stdout() -> None:
    """Standard output through `_WholeWrites`, with the same encoding, error handler and line buffering; left as it
    is when it is not the process's own (a test's capture)."""
    if sys.stdout is None or sys.stdout is not sys.__stdout__:
        return
    out: Any = sys.stdout
    try:
        fd = out.fileno()
        out.flush()
    except (OSError, ValueError, AttributeError):
        return
    _REPLACED.append(out)  # kept alive: collected, it would close descriptor 1
    sys.stdout = io.TextIOWrapper(
        _WholeWrites(fd),  # type: ignore[arg-type]
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=out.line_buffering,
    )


_REPLACED: list[Any] = []


def _template_cache() -> None:
    """The renderers' cache of compiled templates, in the user's cache folder (`$XDG_CACHE_HOME/ncuadvisor/templates`,
    by default `~/.cache/ncuadvisor/templates`, made private), never the working or temporary directory; none where
    it cannot be made (a read-only home): every run then compiles them."""
    from ncuadvisor.render import use_template_cache

    try:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "ncuadvisor", "templates")
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except (OSError, RuntimeError):
        return
    use_template_cache(folder)


def main() -> None:
    """Entry point: run the app; AdvisorError -> one line on stderr and its exit code, never a traceback."""
    try:
        _run_command()
    finally:
        if _HOLD_SIGNALS_AT_END:
            _hold_signals()


# set by `run` (the program's entry point): once `main` is done, Ctrl-C and SIGTERM are held until the process ends
_HOLD_SIGNALS_AT_END = False


def _hold_signals() -> None:
    """Ignore SIGINT and SIGTERM for the rest of the process: the command is done (its output written, or its one
    line said), and what is left (flushing, the exit handlers that remove private copies) must run to the end. One
    that landed in the exit handlers printed "Exception ignored in atexit callback ... KeyboardInterrupt" and left
    the private folder behind. (Swallowed, not blocked: a thread of the native library would take a blocked one. By a
    Python handler that does nothing, not SIG_IGN: a signal that landed just before the change is run by Python after
    it, and with SIG_IGN in place Python printed "OSError: Signal 2 ignored due to race condition" with a traceback.)"""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, _swallow)
        except (OSError, ValueError):  # not the main thread
            pass


def _swallow(signum: int, frame: Any) -> None:
    """A signal handler that does nothing (`_hold_signals`)."""


def _run_command() -> None:
    exit_on_sigterm()
    _whole_stdout()
    _template_cache()
    try:
        code = app(standalone_mode=False)
        sys.stdout.flush()  # a full or failing stdout is said here (exit 2), not at interpreter exit
        if code == Interrupted.exit_code:  # typer turns Ctrl-C (and SIGTERM, see exit_on_sigterm) into a bare 130
            _fail(Interrupted())
        if isinstance(code, int) and code:  # typer.Exit(n) comes back as a return value outside standalone mode
            sys.exit(code)
    except AdvisorError as exc:
        _fail(exc)
    except typer.Exit as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _fail(Interrupted())
        sys.exit(exc.exit_code)
    except typer.Abort:
        with _InterruptsDeferred():
            stderr_console().print("ncuadvisor: aborted")
        sys.exit(Interrupted.exit_code)
    except KeyboardInterrupt:
        _fail(Interrupted())
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        if exc.errno in PATH_ERRNOS and exc.filename is not None:
            # a path the user gave that cannot be reached (a folder without search permission, a link loop), at
            # whichever option's check it showed
            _fail(InputError(f"{os.fsdecode(exc.filename)}: {exc.strerror or exc}"))
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT):
            if os.environ.get("NCUADVISOR_DEBUG"):
                raise
            _fail(
                InternalError(
                    f"{type(exc).__name__}: {exc} (set NCUADVISOR_DEBUG=1 for the traceback, and please report it)"
                )
            )
        _stdout_failed(exc)
    except Exception as exc:  # click usage errors and anything unexpected
        if isinstance(exc, _click_exceptions()):
            command_path = getattr(getattr(exc, "ctx", None), "command_path", None)
            where = f" (see `{command_path} --help`)" if command_path else ""
            message = exc.format_message()  # type: ignore[attr-defined]
            if message.strip():  # no arguments at all: the help was shown, nothing to add
                stderr_console().print(f"ncuadvisor: error: {escape(message)}{escape(where)}")
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        if os.environ.get("NCUADVISOR_DEBUG"):
            raise
        _fail(
            InternalError(
                f"{type(exc).__name__}: {exc} (set NCUADVISOR_DEBUG=1 for the traceback, and please report it)"
            )
        )


def run() -> NoReturn:
    """The program's entry point (`ncuadvisor`, `python -m ncuadvisor`): `main`, then the process ends at once. Its
    output is written and closed, its workers joined; what the interpreter would do next is free every object one by
    one, the native library's loaded report among them (0.03-0.1 s of a run for nothing). The exit handlers still
    run (a decompressed copy of the report is removed) and both streams are flushed first; a flush that fails, or an
    exit that is not a plain code, ends the way `main` would on its own."""
    global _HOLD_SIGNALS_AT_END
    _HOLD_SIGNALS_AT_END = True
    code = 0
    try:
        main()
    except SystemExit as exc:
        given = 0 if exc.code is None else exc.code
        if not isinstance(given, int):
            raise
        code = given
    try:
        sys.stdout.flush()
    except OSError as exc:  # what the command wrote did not all reach stdout: never exit 0
        try:
            _stdout_failed(exc)
        except SystemExit as failed:
            code = code or int(failed.code or OutputError.exit_code)
    except ValueError:
        sys.exit(code)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    atexit._run_exitfuncs()
    os._exit(code)
