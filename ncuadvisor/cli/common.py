"""What the commands share: options, the output format and its file (checked before any work, written atomically),
the rules under the user's configuration, and saved results read back.

Every command imports this module and the layers below the command line, never another command.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ncuadvisor.errors import OutputError
from ncuadvisor.render import escape_terminal as escape
from ncuadvisor.render import formats
from ncuadvisor.rulekit.config import Config, configured_rules, resolve_config

if TYPE_CHECKING:
    from rich.console import Console

    from ncuadvisor.comparison.types import DiffResult
    from ncuadvisor.result.types import Result

# -- options -------------------------------------------------------------------------------------------------------

SourceRootOption = Annotated[
    Path | None,
    typer.Option(
        "--source-root",
        exists=True,
        file_okay=False,
        help="SARIF: make source paths relative to this folder (default: the git top level of the current "
        "directory, else the current directory).",
    ),
]
RulesDirOption = Annotated[
    list[Path] | None, typer.Option("--rules-dir", help="A folder of your own rule files (repeatable).")
]
SelectOption = Annotated[
    list[str] | None,
    typer.Option(
        "--select",
        help="Run only these rules: a code or a prefix, e.g. MEM or LCH001 (repeatable; replaces the configuration's).",
    ),
]
IgnoreOption = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore",
        help="Do not run these rules: a code or a prefix (repeatable; replaces the configuration's).",
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="The configuration: a pyproject.toml with \\[tool.ncuadvisor], or an ncuadvisor.toml (default: the "
        "nearest one in this folder or above).",
    ),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]


def stdout_console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


# -- the rules -----------------------------------------------------------------------------------------------------


def load_rules(
    rules_dir: list[Path] | None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    config_file: Path | None = None,
    quiet: bool = False,
    filter_rules: bool = True,
) -> list[Any]:
    """The rules to run: the built-in ones and the user's folders, under the configuration in effect (the command
    line's options replace the file's). A configuration file that applies is named on stderr, unless `quiet`."""
    config = resolve_config(config_file, select, ignore, rules_dir)
    rules = configured_rules(config, filter_rules=filter_rules)
    note_config(config, quiet)
    return rules


def note_config(config: Config, quiet: bool) -> None:
    if config.path is not None and not config.is_empty and not quiet:
        stderr_console().print(f"ncuadvisor: configuration: {escape(str(config.path))}", style="dim")


# -- output --------------------------------------------------------------------------------------------------------


def _format_enum(name: str, formats: list[str]) -> Any:
    """A str Enum of format names for typer's --format choices (member names: the format's, `-` as `_`)."""
    return Enum(name, [(f.replace("-", "_"), f) for f in formats], type=str)


if TYPE_CHECKING:

    class Format(str, Enum):
        """The formats of a report result: every format of the registry (`render.formats.FORMATS`)."""

    class DiffFormat(str, Enum):
        """The formats of a diff: the terminal and those with a diff form."""

else:
    Format = _format_enum("Format", list(formats.FORMATS))
    DiffFormat = _format_enum("DiffFormat", [f.name for f in formats.FORMATS.values() if f.terminal or f.diff])


def format_help(diff: bool = False) -> str:
    """--format's help: the formats and what each is (the registry's help texts)."""
    shown = [f for f in formats.FORMATS.values() if not diff or f.terminal or f.diff]
    return "Output format (default: by extension): " + "; ".join(f"{f.name}: {f.help}" for f in shown) + "."


def _extensions_text() -> str:
    exts = formats.file_extensions()
    return ", ".join(exts[:-1]) + " or " + exts[-1]


def choose_format(output: Path | None, fmt: Enum | None) -> formats.OutputFormat:
    """--format, else the output's extension, else the terminal."""
    if fmt is not None:
        return formats.get(str(fmt.value))
    if output is None:
        return formats.get("terminal")
    by_ext = formats.by_extension(output)
    if by_ext is None:
        raise OutputError(
            f"{output}: cannot tell the format from the extension (use {_extensions_text()}, or pass --format)"
        )
    return by_ext


def format_name(output: Path | None, fmt: Enum | None) -> str:
    """The name of the format of a command with its own format choices: --format, else the output's extension."""
    return choose_format(output, fmt).name


def refuse_terminal_file(fmt: formats.OutputFormat, diff: bool = False) -> None:
    """The terminal summary is never written to a file: the error names the extensions that are."""
    if fmt.terminal:
        exts = [f.extensions[0] for f in formats.FORMATS.values() if f.extensions and (not diff or f.diff)]
        exts.sort()
        raise OutputError(f"--format terminal cannot be written to a file; use {', '.join(exts[:-1])} or {exts[-1]}")


def render_report(
    result: Result,
    fmt: formats.OutputFormat,
    source_root: Path | None = None,
    rules: list[Any] | None = None,
    kernel: str | None = None,
    top: int | None = None,
) -> str:
    """A report result as the text of a file format (SARIF takes the rules' help texts from `rules`); with `kernel`
    (the formats that speak of one kernel), that kernel's alone; `top`: the kernels of a digest."""
    if fmt.report is None:
        raise OutputError(f"format {fmt.name} cannot be written to a file")  # pragma: no cover
    entry = None
    if kernel is not None:
        from ncuadvisor.result.lookup import find_kernel

        if not fmt.one_kernel:
            shown = ", ".join(f.name for f in formats.FORMATS.values() if f.one_kernel)
            raise OutputError(f"--kernel: the {fmt.name} format is of a whole report; use {shown}")
        entry = find_kernel(result, kernel)
    options = formats.RenderOptions(
        top=10 if top is None else top,
        kernel=entry,
        sarif=sarif_inputs(result, source_root, rules) if fmt.sarif_inputs else None,
    )
    return formats.render_report(fmt, result, options)


def sarif_inputs(result: Result, source_root: Path | None, rules: list[Any] | None = None) -> formats.SarifInputs:
    """What the SARIF of a result needs: the source root (--source-root, else the git top level), the
    repository-relative path of each source file under it and the rules' documentation, looked up here."""
    from ncuadvisor.gitinfo import default_source_root, source_root_forms
    from ncuadvisor.render.sarif import repository_paths, source_files
    from ncuadvisor.rulekit.docs import rule_docs

    # a relative root (`--source-root .`) is the folder it names from here: %SRCROOT% must be an absolute URI
    root = os.path.abspath(source_root) if source_root is not None else default_source_root()
    paths = repository_paths(source_files(result), source_root_forms(root))
    return formats.SarifInputs(root, paths, rule_docs(rules or []))


def refuse_diff_sarif(name: str) -> None:
    """A diff has no SARIF form: for `sarif`, the error that says what to do instead."""
    if name == "sarif":
        raise OutputError(
            "a diff has no SARIF form: upload the SARIF of the new report (`ncuadvisor report pr.ncu-rep -o x.sarif`);"
            " code scanning itself tells new alerts from old ones"
        )


def render_diff(diff: DiffResult, name: str) -> str:
    """A diff result as the text of a file format; a diff has no SARIF form (the error says what to do instead)."""
    refuse_diff_sarif(name)
    fmt = formats.get(name)
    if fmt.diff is None:
        shown = ", ".join(f.name for f in formats.FORMATS.values() if f.diff)
        raise OutputError(f"a diff has no {name} form: use {shown}")
    return formats.render_diff(fmt, diff)


def check_output(path: Path, force: bool, inputs: list[Path]) -> None:
    """Before any work: never overwrite an input, and an existing file only with --force."""
    target = path.resolve()
    for inp in inputs:
        if inp.exists() and inp.resolve() == target:
            raise OutputError(f"{path}: refusing to overwrite the input report")
    if target.exists() and not force:
        raise OutputError(f"{path}: already exists (pass --force to overwrite it)")
    if target.exists() and target.is_dir():
        raise OutputError(f"{path}: is a directory")
    parent = target.parent
    if not parent.is_dir():
        raise OutputError(f"{path}: the folder {parent} does not exist")


def write_output(path: Path, text: str | Iterable[str], force: bool = False) -> None:
    """Write atomically: a temporary file in the same folder, then, without `force`, linked to the target only if it
    still does not exist (a file created meanwhile is never clobbered), with `force` renamed over it. A target that
    is not a regular file (a device, a pipe) is written in place, never replaced. The temporary file is removed on
    every path out (an error, a full disk, Ctrl-C). Text that cannot be UTF-8 (a lone surrogate) is replaced. `text`
    may come in pieces (a result too big to hold as one string)."""
    target = path.resolve()
    pieces = [text] if isinstance(text, str) else text
    try:
        if target.exists() and not target.is_file() and not target.is_dir():
            if not force:
                raise OutputError(f"{path}: already exists (pass --force to write to it)")
            with open(target, "wb") as dev:
                for piece in pieces:
                    dev.write(piece.encode("utf-8", "replace"))
            return
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                for piece in pieces:
                    fh.write(piece.encode("utf-8", "replace"))
            os.chmod(tmp, _output_mode(target))
            if force:
                os.replace(tmp, target)
            else:
                _link_new(tmp, target, path)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror or exc})") from exc


def _output_mode(target: Path) -> int:
    """The permissions of a written output: those of the file it replaces (`--force` keeps a private file private),
    else the usual ones under the umask (mkstemp makes 0600)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _link_new(tmp: str, target: Path, path: Path) -> None:
    """Give the written temporary file the target's name only if no file has it (hard link: exclusive and atomic; a
    file system without hard links gets an exclusive create and a copy)."""
    try:
        os.link(tmp, target)
        return
    except FileExistsError as exc:
        raise OutputError(f"{path}: already exists (created while this ran; pass --force to overwrite it)") from exc
    except OSError:
        pass
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError as exc:
        raise OutputError(f"{path}: already exists (created while this ran; pass --force to overwrite it)") from exc
    with os.fdopen(fd, "wb") as dst, open(tmp, "rb") as src:
        dst.write(src.read())


def exit_on_sigterm() -> None:
    """SIGTERM ends the command the way Ctrl-C does (KeyboardInterrupt: exit 130, one line), so that every
    `finally` and exit handler runs and no temporary file or folder is left behind. A process forked from this one
    (a worker, which inherits the handler) that gets SIGTERM ends at once and silently: the command stopping its
    workers after one failed must not print their tracebacks."""
    import signal

    main_pid = os.getpid()

    def _raise(signum: int, frame: Any) -> None:
        if os.getpid() != main_pid:
            os._exit(128 + signum)
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, _raise)
    except (ValueError, OSError):  # not the main thread: leave the default
        pass


def wrote(path: Path, blank_line: bool = True) -> None:
    """`wrote PATH` on stdout, after the terminal summary (a blank line apart)."""
    stdout_console().print(f"{chr(10) if blank_line else ''}wrote {escape(str(path))}")


# -- saved results -------------------------------------------------------------------------------------------------
# (read and checked against the JSON Schema by ncuadvisor.saved.validate)
