"""The registry of output formats (`render/formats.py`) is what the command line offers: the --format choices of
report, render and diff, the format of an -o extension, and a renderer that resolves for each format."""

import re
from pathlib import Path

import pytest

from ncuadvisor.cli.common import DiffFormat, Format, choose_format, format_help
from ncuadvisor.errors import OutputError
from ncuadvisor.render import formats


def test_the_choices_are_the_registry():
    assert [f.value for f in Format] == list(formats.FORMATS)
    assert [f.value for f in DiffFormat] == ["terminal", "json", "html", "md"]
    for name, spec in formats.FORMATS.items():
        assert f"{name}: {spec.help}" in format_help()


def test_each_renderer_resolves():
    for spec in formats.FORMATS.values():
        for target in (spec.report, spec.diff):
            if target is not None:
                assert callable(formats._function(target)), target
        assert spec.terminal == (spec.report is None)


@pytest.mark.parametrize(
    "ext, name", [(".json", "json"), (".HTML", "html"), (".htm", "html"), (".md", "md"), (".sarif", "sarif")]
)
def test_extensions_pick_the_format(ext, name):
    assert choose_format(Path(f"out{ext}"), None).name == name


def test_unknown_extension_lists_the_known_ones():
    """Every extension the registry owns, one per format, sorted (a new format's extension joins without a change
    here)."""
    known = formats.file_extensions()
    assert {".html", ".json", ".md", ".sarif"} <= set(known) and known == sorted(known)
    listed = ", ".join(known[:-1]) + " or " + known[-1]
    with pytest.raises(OutputError, match=re.escape(f"use {listed}, or pass --format")):
        choose_format(Path("out.txt"), None)


def test_a_format_renders_through_the_registry(typed):
    result = typed("pipeline_v1")
    text = formats.render_report(formats.get("digest"), result, formats.RenderOptions(top=2))
    assert text.startswith("ncuadvisor digest 2 | pipeline_v1")
    as_json = formats.render_report(formats.get("json"), result, formats.RenderOptions(kernel=result.kernels[0]))
    assert '"id": "k0"' in as_json and '"kernels"' not in as_json
