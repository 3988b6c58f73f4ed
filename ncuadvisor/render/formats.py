"""The output formats, in one registry: each format's name, what it renders a report (and a diff) with, the file
extensions it owns, whether it is the terminal summary, whether it speaks of one kernel (`--kernel`), and its help.

The command line asks this registry for everything a format decides: the `--format` choices and their help, the
format of an `-o` path's extension, whether a format can be written to a file. A new format is one module with
`render(result, options) -> str` (a `Result` and `RenderOptions`) plus one line in FORMATS naming it.

Renderers are imported when a format is used (`module:function`), so that reading the registry costs nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ncuadvisor.comparison.types import DiffResult
    from ncuadvisor.result.types import KernelEntry, Result


@dataclass(frozen=True)
class SarifInputs:
    """What SARIF needs beyond the result, looked up by the command line: the source root, each source file's path
    in the repository, and the rules' documentation (`rulekit.docs.rule_docs`)."""

    source_root: str
    repository_paths: Mapping[str, str]
    rule_docs: list[dict[str, Any]]


@dataclass(frozen=True)
class RenderOptions:
    """What a format may take besides the result: the kernels of a digest (`top`), one kernel (`--kernel`, resolved),
    the SARIF inputs."""

    top: int = 10
    kernel: KernelEntry | None = None
    sarif: SarifInputs | None = None


@dataclass(frozen=True)
class OutputFormat:
    """One format. `report` and `diff` are `module:function` of its renderers (`report`: `(result, options) -> str`,
    `diff`: `(diff) -> str`), None where it has no such form; `terminal`: the summary printed to the terminal, never a
    file; `one_kernel`: it takes `--kernel`; `sarif_inputs`: the command line looks up the SARIF inputs for it."""

    name: str
    help: str
    report: str | None
    diff: str | None = None
    extensions: tuple[str, ...] = ()
    terminal: bool = False
    one_kernel: bool = False
    sarif_inputs: bool = False


# In the order `--help` lists them.
FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat("terminal", "the summary on the terminal (the default without -o)", None, terminal=True),
        OutputFormat(
            "json",
            "the result (schema_version 1); with --kernel, that kernel's entry",
            "ncuadvisor.render.formats:render_json",
            "ncuadvisor.render.diff_render:render_diff_json",
            (".json",),
            one_kernel=True,
        ),
        OutputFormat(
            "html",
            "one self-contained page",
            "ncuadvisor.render.formats:render_html",
            "ncuadvisor.render.diff_render:render_diff_html",
            (".html", ".htm"),
        ),
        OutputFormat(
            "md",
            "markdown for a pull-request comment",
            "ncuadvisor.render.formats:render_markdown",
            "ncuadvisor.render.diff_render:render_diff_markdown",
            (".md",),
        ),
        OutputFormat(
            "sarif",
            "code-scanning alerts",
            "ncuadvisor.render.formats:render_sarif",
            None,
            (".sarif",),
            sarif_inputs=True,
        ),
        OutputFormat(
            "digest",
            "a compact text for agents (<= 6,000 characters; --kernel: one kernel, <= 1,500)",
            "ncuadvisor.render.digest:render",
            one_kernel=True,
        ),
        OutputFormat(
            "digest-json", "the digest as one line of JSON", "ncuadvisor.render.digest:render_json", one_kernel=True
        ),
        OutputFormat(
            "csv",
            "one row per kernel and its first finding (RFC 4180)",
            "ncuadvisor.render.csv_table:render",
            None,
            (".csv",),
        ),
    )
}


def get(name: str) -> OutputFormat:
    return FORMATS[name]


def by_extension(path: Path) -> OutputFormat | None:
    """The format that owns a path's extension, None when none does."""
    suffix = path.suffix.lower()
    return next((f for f in FORMATS.values() if suffix in f.extensions), None)


def file_extensions() -> list[str]:
    """The extensions that pick a format, one per format (its first), sorted: for the messages that list them."""
    return sorted(f.extensions[0] for f in FORMATS.values() if f.extensions)


def _function(spec: str) -> Callable[..., str]:
    module, _, name = spec.partition(":")
    fn: Callable[..., str] = getattr(importlib.import_module(module), name)
    return fn


def render_report(fmt: OutputFormat, result: Result, options: RenderOptions) -> str:
    """A report result in a format (not the terminal's)."""
    if fmt.report is None:
        raise ValueError(f"the {fmt.name} format has no text form")
    return _function(fmt.report)(result, options)


def render_diff(fmt: OutputFormat, diff: DiffResult) -> str:
    if fmt.diff is None:
        raise ValueError(f"the {fmt.name} format has no diff form")
    return _function(fmt.diff)(diff)


# -- the formats written before the registry, taking (result, options) ---------------------------------------------


def render_json(result: Result, options: RenderOptions) -> str:
    from ncuadvisor.render import to_json

    return to_json((options.kernel or result).to_dict()) + "\n"


def render_html(result: Result, options: RenderOptions) -> str:
    from ncuadvisor.render.html import render_html as page

    return page(result)


def render_markdown(result: Result, options: RenderOptions) -> str:
    from ncuadvisor.render.markdown import render_markdown as text

    return text(result)


def render_sarif(result: Result, options: RenderOptions) -> str:
    from ncuadvisor.render.sarif import render_sarif as sarif

    inputs = options.sarif or SarifInputs("", {}, [])
    return sarif(result, inputs.source_root, inputs.repository_paths, inputs.rule_docs)
