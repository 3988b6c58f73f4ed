"""The pull-request commands: `ncuadvisor diff` and `ncuadvisor render` (registered on the app by `register`).

They follow `ncuadvisor report` (cli.py): output checks before any work, the format from the extension, atomic
writes, errors as one line and an exit code (`AdvisorError` -> cli.main). cli.py's helpers are imported inside the
functions, so that cli.py can import this module at its end without a cycle.

Exit codes of `diff`: 0 clean, 1 the `--fail-on` gate failed, 2 unusable input or output (3 a bug, as everywhere).
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from ncuadvisor.errors import AdvisorError, OutputError
from ncuadvisor.options import SourceRootOption
from ncuadvisor.result.validate import DIFF_KIND, REPORT_KIND, kind_of, load_saved, supported_versions  # noqa: F401


class GateFailed(AdvisorError):
    """`diff --fail-on`: the diff shows a regression (or new findings). One line on stderr, exit code 1.

    An exception rather than typer.Exit(1): cli.main runs the app with standalone_mode=False, where click turns
    typer.Exit into a return value that main does not pass on."""

    exit_code = 1


class DiffFormat(str, Enum):
    terminal = "terminal"
    json = "json"
    html = "html"
    md = "md"


class RenderFormat(str, Enum):
    terminal = "terminal"
    json = "json"
    html = "html"
    md = "md"
    sarif = "sarif"


class FailOn(str, Enum):
    regression = "regression"
    findings = "findings"


# -- saved results ---------------------------------------------------------------------------------------------


def _result_of(path: Path, rules: list) -> Any:
    """A report is analyzed; a saved report result (.json) is read as it is."""
    if path.suffix.lower() == ".json":
        return load_saved(path, want=(REPORT_KIND,))
    from ncuadvisor.analysis.pipeline import analyze

    return analyze(path, rules=rules)


def discover_rules(rules_dir: list[Path] | None) -> list:
    """The rule objects (built-in and the user's folders): the SARIF's rule help texts come from their docstrings."""
    from ncuadvisor.engine import discover

    return discover(rules_dir or [])


def sarif_text(result: dict[str, Any], source_root: Path | None, rules: list | None = None) -> str:
    """The SARIF of a result: the source root (--source-root, else the git top level), the repository-relative path
    of each source file under it and the rules' documentation are looked up here and passed in as data."""
    from ncuadvisor.gitinfo import default_source_root, source_root_forms
    from ncuadvisor.render.sarif import render_sarif, repository_paths, source_files
    from ncuadvisor.ruledoc import rule_docs

    root = str(source_root) if source_root is not None else default_source_root()
    paths = repository_paths(source_files(result), source_root_forms(root))
    return render_sarif(result, root, paths, rule_docs(rules or []))


# -- formats ---------------------------------------------------------------------------------------------------


def _format_name(output: Path | None, fmt: Enum | None) -> str:
    """The format's name: --format, else the output's extension (.sarif here; the rest as `report` does)."""
    from ncuadvisor.cli import choose_format

    if fmt is not None:
        return str(fmt.value)
    if output is not None and output.suffix.lower() == ".sarif":
        return "sarif"
    try:
        return choose_format(output, None).value
    except OutputError as exc:
        raise OutputError(str(exc).replace("use .html, .json or .md", "use .html, .json, .md or .sarif")) from None


def _render_report(result: dict[str, Any], name: str, source_root: Path | None, rules_dir: list[Path] | None) -> str:
    from ncuadvisor.cli import Format, render

    if name == "sarif":
        return sarif_text(result, source_root, discover_rules(rules_dir))
    return render(result, Format(name))


def _render_diff(diff: dict[str, Any], name: str) -> str:
    from ncuadvisor.render import diff_render

    if name == "json":
        return diff_render.render_diff_json(diff)
    if name == "html":
        return diff_render.render_diff_html(diff)
    if name == "md":
        return diff_render.render_diff_markdown(diff)
    if name == "sarif":
        raise OutputError(
            "a diff has no SARIF form: upload the SARIF of the new report (`ncuadvisor report pr.ncu-rep -o x.sarif`);"
            " code scanning itself tells new alerts from old ones"
        )
    raise OutputError(f"format {name} cannot be written to a file")  # pragma: no cover


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


# -- commands --------------------------------------------------------------------------------------------------


def diff_command(
    before: Annotated[
        Path,
        typer.Argument(help="The baseline (e.g. main): a report (.ncu-rep, .ncu-rep.xz) or a saved result (.json)."),
    ],
    after: Annotated[Path, typer.Argument(help="The new version (e.g. the pull request), same kinds.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the diff here; the extension picks the format.")
    ] = None,
    fmt: Annotated[
        DiffFormat | None, typer.Option("--format", "-f", help="Output format (default: by extension).")
    ] = None,
    fail_on: Annotated[
        FailOn | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a kernel or the total got slower beyond the threshold (regression), "
            "or when a finding is new (findings).",
        ),
    ] = None,
    threshold: Annotated[
        str | None,
        typer.Option(
            "--threshold",
            help="Noise threshold: smaller changes are 'unchanged' (e.g. 5%, 0.05). Default 5%, from ncu's "
            "run-to-run spread; changes under 1 µs never count.",
        ),
    ] = None,
    rules_dir: Annotated[
        list[Path] | None, typer.Option("--rules-dir", help="A folder of your own rule files (repeatable).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    top: Annotated[int, typer.Option("--top", min=0, help="Kernels shown in the terminal table.")] = 20,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No terminal summary when writing a file.")] = False,
) -> None:
    """Compare two reports of the same program (before, after): time, bound and findings per kernel; a CI gate."""
    from ncuadvisor.cli import check_output, write_output
    from ncuadvisor.diff import diff_results, gate, parse_threshold
    from ncuadvisor.render.diff_render import render_diff_terminal

    value = parse_threshold(threshold) if threshold is not None else None
    name = _format_name(output, fmt)
    if name == "sarif":
        _render_diff({}, name)  # raises the explanation
    if output is not None:
        check_output(output, force, [before, after])
        if name == "terminal":
            raise OutputError("--format terminal cannot be written to a file; use .html, .json or .md")
    rules = discover_rules(rules_dir)
    result_before = _result_of(before, rules)
    result_after = _result_of(after, rules)
    d = diff_results(result_before, result_after, threshold=value)
    if output is None and name != "terminal":
        sys.stdout.write(_render_diff(d, name))
    else:
        if output is not None:
            write_output(output, _render_diff(d, name))
        if not quiet:
            render_diff_terminal(d, top=top)
            if output is not None:
                _console().print(f"\nwrote {escape(str(output))}")
    reasons = gate(d, fail_on.value if fail_on is not None else None)
    if reasons:
        shown = "; ".join(reasons[:3]) + (f"; and {len(reasons) - 3} more" if len(reasons) > 3 else "")
        raise GateFailed(f"--fail-on {fail_on.value} failed: {shown}")


def render_command(
    path: Annotated[Path, typer.Argument(help="A saved result: the JSON of `ncuadvisor report` or `ncuadvisor diff`.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here; the extension picks the format.")
    ] = None,
    fmt: Annotated[
        RenderFormat | None, typer.Option("--format", "-f", help="Output format (default: by extension).")
    ] = None,
    source_root: SourceRootOption = None,
    rules_dir: Annotated[
        list[Path] | None,
        typer.Option("--rules-dir", help="SARIF: also take rule help texts from this folder (repeatable)."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    top: Annotated[
        int | None,
        typer.Option("--top", min=0, help="Kernels shown in the terminal summary (default 10, a diff's 20)."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Say nothing when writing a file.")] = False,
) -> None:
    """Re-render a saved result (report or diff JSON) as html, md, sarif, json or terminal; no report or ncu needed."""
    from ncuadvisor.cli import check_output, write_output

    name = _format_name(output, fmt)
    if output is not None:
        check_output(output, force, [path])
        if name == "terminal":
            raise OutputError("--format terminal cannot be written to a file; use .html, .json, .md or .sarif")
    saved = load_saved(path)
    kind, data = kind_of(saved), saved.to_dict()
    if kind == DIFF_KIND and name == "sarif":
        _render_diff(data, name)  # raises the explanation
    if name == "terminal":
        if kind == DIFF_KIND:
            from ncuadvisor.render.diff_render import render_diff_terminal

            render_diff_terminal(data, top=top or 20)
        else:
            from ncuadvisor.render.terminal import render_terminal

            render_terminal(data, top=top or 10)
        return
    text = _render_diff(data, name) if kind == DIFF_KIND else _render_report(data, name, source_root, rules_dir)
    if output is None:
        sys.stdout.write(text)
        return
    write_output(output, text)
    if not quiet:
        _console().print(f"wrote {escape(str(output))}")


_REGISTERED_ATTR = "_ncuadvisor_pr_commands"


def register(app: typer.Typer) -> None:
    """Add `diff` and `render` to the app (once: a second call on the same app does nothing)."""
    if getattr(app, _REGISTERED_ATTR, False):
        return
    app.command("diff")(diff_command)
    app.command("render")(render_command)
    setattr(app, _REGISTERED_ATTR, True)
