"""Command line: a thin typer layer over analyze() and the renderers; errors become one line and an exit code."""

from __future__ import annotations

import os
import sys
import tempfile
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ncuadvisor import __version__
from ncuadvisor.errors import AdvisorError, InputError, OutputError
from ncuadvisor.options import SourceRootOption

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Roofline-grounded, ranked advice from Nsight Compute (ncu) reports.",
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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


def choose_format(output: Path | None, fmt: Format | None) -> Format:
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


def render(result: dict, fmt: Format, source_root: Path | None = None, rules: list | None = None) -> str:
    if fmt is Format.json:
        from ncuadvisor.render import to_json

        return to_json(result) + "\n"
    if fmt is Format.html:
        from ncuadvisor.render.html import render_html

        return render_html(result)
    if fmt is Format.md:
        from ncuadvisor.render.markdown import render_markdown

        return render_markdown(result)
    if fmt is Format.sarif:
        from ncuadvisor.commands_pr import sarif_text

        return sarif_text(result, source_root, rules)
    raise OutputError(f"format {fmt.value} cannot be written to a file")  # pragma: no cover


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


def write_output(path: Path, text: str) -> None:
    """Write atomically: a temporary file in the same folder, then rename."""
    target = path.resolve()
    parent = target.parent
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; an output file gets the usual permissions
        os.replace(tmp, target)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc.strerror or exc})") from exc


@app.command()
def report(
    path: Annotated[Path, typer.Argument(help="An Nsight Compute report (.ncu-rep or .ncu-repz).")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here; the extension picks the format.")
    ] = None,
    fmt: Annotated[Format | None, typer.Option("--format", "-f", help="Output format (default: by extension).")] = None,
    rules_dir: Annotated[
        list[Path] | None, typer.Option("--rules-dir", help="A folder of your own rule files (repeatable).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    top: Annotated[int, typer.Option("--top", min=0, help="Kernels shown in the terminal summary.")] = 10,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary when writing a file.")] = False,
    source_root: SourceRootOption = None,
) -> None:
    """Analyze a saved report: roofline bound of every kernel, then ranked findings with fixes."""
    from ncuadvisor.analysis.pipeline import analyze
    from ncuadvisor.engine import discover

    out_format = choose_format(output, fmt)
    if output is not None:
        check_output(output, force, [path])
    rules = discover(rules_dir or [])
    result = analyze(path, rules=rules)
    if output is None and out_format is not Format.terminal:
        sys.stdout.write(render(result, out_format, source_root, rules))
        return
    if output is not None:
        if out_format is Format.terminal:
            raise OutputError("--format terminal cannot be written to a file; use .html, .json, .md or .sarif")
        write_output(output, render(result, out_format, source_root, rules))
    if not quiet:
        from ncuadvisor.render.terminal import render_terminal

        render_terminal(result, top=top)
        if output is not None:
            Console(highlight=False).print(f"\nwrote {escape(str(output))}")


@app.command()
def rules(
    code: Annotated[str | None, typer.Argument(help="A rule code (e.g. MEM001) to explain in full.")] = None,
    rules_dir: Annotated[
        list[Path] | None, typer.Option("--rules-dir", help="Also list the rules in this folder.")
    ] = None,
) -> None:
    """The rule catalogue; `ncuadvisor rules MEM001` explains one rule."""
    from rich.table import Table

    from ncuadvisor.engine import discover
    from ncuadvisor.ruledoc import rule_help

    loaded = discover(rules_dir or [])
    console = Console(highlight=False, soft_wrap=True)
    if code is None:
        table = Table(header_style="bold")
        for col in ("code", "category", "title", "origin"):
            table.add_column(col)
        for r in sorted(loaded, key=lambda r: r.code):
            table.add_row(r.code, r.category, escape(r.title), escape(r.origin))
        console.print(table)
        return
    match = [r for r in loaded if code.upper() in (r.code, *r.aliases) or code == r.slug]
    if not match:
        raise InputError(f"no rule {code!r} (run `ncuadvisor rules` for the list)")
    console.print(escape(rule_help(match[0])), end="")


def reflow(text: str) -> str:
    """Join the hard-wrapped lines of each docstring paragraph."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))


def _click_exceptions() -> tuple:
    """click's ClickException, from click itself and from the copy typer >= 0.29 carries (typer._click): a usage
    error (unknown option, bad value, missing argument) from either is the user's, not an internal error."""
    import importlib

    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).ClickException)
        except (ImportError, AttributeError):
            pass
    return tuple(found)


def main() -> None:
    """Entry point: run the app; AdvisorError -> one line on stderr and its exit code, never a traceback."""
    try:
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(n) comes back as a return value outside standalone mode
            sys.exit(code)
    except AdvisorError as exc:
        err.print(f"ncuadvisor: error: {escape(str(exc))}")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("ncuadvisor: aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("ncuadvisor: interrupted")
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:  # click usage errors and anything unexpected
        if isinstance(exc, _click_exceptions()):
            ctx = getattr(exc, "ctx", None)
            where = (
                f" (see `{ctx.command_path} --help`)" if ctx is not None and getattr(ctx, "command_path", "") else ""
            )
            if exc.format_message().strip():  # no arguments at all: the help was shown, nothing to add
                err.print(f"ncuadvisor: error: {escape(exc.format_message())}{escape(where)}")
            sys.exit(exc.exit_code)
        if os.environ.get("NCUADVISOR_DEBUG"):
            raise
        err.print(
            f"ncuadvisor: internal error: {type(exc).__name__}: {escape(str(exc))} "
            "(set NCUADVISOR_DEBUG=1 for the traceback, and please report it)"
        )
        sys.exit(3)


# The pull-request commands (`diff`, `render`) live in commands_pr.py; registered here, after `app` exists.
from ncuadvisor.commands_pr import register as _register_pr_commands  # noqa: E402

_register_pr_commands(app)

# `profile` (runs ncu on a program) lives in profile.py.
from ncuadvisor.profile import register as _register_profile  # noqa: E402

_register_profile(app)
