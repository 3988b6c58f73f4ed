"""What the commands share: options, the output format and its file (checked before any work, written atomically),
the rules under the user's configuration, and saved results read back.

Every command imports this module and the layers below the command line, never another command.
"""

from __future__ import annotations

import os
import stat
import tempfile
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ncuadvisor.config import Config, configured_rules, resolve_config
from ncuadvisor.errors import OutputError
from ncuadvisor.render import escape_terminal as escape

if TYPE_CHECKING:
    from rich.console import Console

    from ncuadvisor.diff.types import DiffResult
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


class Format(str, Enum):
    terminal = "terminal"
    json = "json"
    html = "html"
    md = "md"
    sarif = "sarif"


EXTENSIONS = {
    ".json": Format.json,
    ".html": Format.html,
    ".htm": Format.html,
    ".md": Format.md,
    ".sarif": Format.sarif,
}


def choose_format(output: Path | None, fmt: Format | None) -> Format:
    """--format, else the output's extension, else the terminal."""
    if fmt is not None:
        return fmt
    if output is None:
        return Format.terminal
    by_ext = EXTENSIONS.get(output.suffix.lower())
    if by_ext is None:
        raise OutputError(
            f"{output}: cannot tell the format from the extension (use .html, .json, .md or .sarif, or pass --format)"
        )
    return by_ext


def format_name(output: Path | None, fmt: Enum | None) -> str:
    """The name of the format of a command with its own format choices: --format, else the output's extension."""
    if fmt is not None:
        return str(fmt.value)
    return choose_format(output, None).value


def render_report(result: Result, fmt: Format, source_root: Path | None = None, rules: list[Any] | None = None) -> str:
    """A report result as the text of a file format (SARIF takes the rules' help texts from `rules`)."""
    if fmt is Format.json:
        from ncuadvisor.render import to_json

        return to_json(result.to_dict()) + "\n"
    if fmt is Format.html:
        from ncuadvisor.render.html import render_html

        return render_html(result)
    if fmt is Format.md:
        from ncuadvisor.render.markdown import render_markdown

        return render_markdown(result)
    if fmt is Format.sarif:
        return sarif_text(result, source_root, rules)
    raise OutputError(f"format {fmt.value} cannot be written to a file")  # pragma: no cover


def sarif_text(result: Result, source_root: Path | None, rules: list[Any] | None = None) -> str:
    """The SARIF of a result: the source root (--source-root, else the git top level), the repository-relative path
    of each source file under it and the rules' documentation are looked up here and passed in as data."""
    from ncuadvisor.gitinfo import default_source_root, source_root_forms
    from ncuadvisor.render.sarif import render_sarif, repository_paths, source_files
    from ncuadvisor.ruledoc import rule_docs

    root = str(source_root) if source_root is not None else default_source_root()
    paths = repository_paths(source_files(result), source_root_forms(root))
    return render_sarif(result, root, paths, rule_docs(rules or []))


def refuse_diff_sarif(name: str) -> None:
    """A diff has no SARIF form: for `sarif`, the error that says what to do instead."""
    if name == "sarif":
        raise OutputError(
            "a diff has no SARIF form: upload the SARIF of the new report (`ncuadvisor report pr.ncu-rep -o x.sarif`);"
            " code scanning itself tells new alerts from old ones"
        )


def render_diff(diff: DiffResult, name: str) -> str:
    """A diff result as the text of a file format; a diff has no SARIF form (the error says what to do instead)."""
    from ncuadvisor.render import diff_render

    refuse_diff_sarif(name)
    if name == "json":
        return diff_render.render_diff_json(diff)
    if name == "html":
        return diff_render.render_diff_html(diff)
    if name == "md":
        return diff_render.render_diff_markdown(diff)
    raise OutputError(f"format {name} cannot be written to a file")  # pragma: no cover


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


def write_output(path: Path, text: str, force: bool = False) -> None:
    """Write atomically: a temporary file in the same folder, then, without `force`, linked to the target only if it
    still does not exist (a file created meanwhile is never clobbered), with `force` renamed over it. A target that
    is not a regular file (a device, a pipe) is written in place, never replaced. The temporary file is removed on
    every path out (an error, a full disk, Ctrl-C). Text that cannot be UTF-8 (a lone surrogate) is replaced."""
    target = path.resolve()
    data = text.encode("utf-8", "replace")
    try:
        if target.exists() and not target.is_file() and not target.is_dir():
            if not force:
                raise OutputError(f"{path}: already exists (pass --force to write to it)")
            with open(target, "wb") as dev:
                dev.write(data)
            return
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
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
# (read and checked against the JSON Schema by ncuadvisor.result.validate)
