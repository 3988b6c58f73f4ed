"""The command line's values converted without building typer's pydantic adapters, where that gives the same value.

typer (0.29 and later) converts each option's value through a pydantic TypeAdapter built for it on first use:
importing pydantic and building the adapters of one command's dozen options costs ~0.1 s of every run, more than
anything else the command line does. ncuadvisor's options are paths, strings, choices and bounded integers, whose
plain values typer's own helpers convert the same way (`coerce_cli_path`, `coerce_cli_choice`) or that need no
conversion. `QuickGroup` and `QuickCommand` (the app's classes) give every parameter a conversion that handles
those plain values and hands anything else (a number out of bounds, a path that is not written in its canonical
form, text that is not UTF-8, another type) to typer's own conversion, unchanged: its values and its error messages
stay typer's. With another typer (no `_coercion` module, or parameters without its runtime hook) nothing changes.
`tests/test_cli_coercion.py` holds each quick value to typer's own on every option of every command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from typer.core import TyperCommand, TyperGroup

try:
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
except ImportError:  # another typer: its own conversion throughout
    RuntimeParam = None  # type: ignore[assignment,misc]

_DEFER = object()
_INT = re.compile(r"0|[1-9][0-9]{0,17}")


def _plain_text(value: Any) -> bool:
    """A str typer would take as it is: UTF-8 text without NUL (pydantic rejects the surrogate escapes of bytes that
    are not UTF-8)."""
    if type(value) is not str or "\0" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def quick_value(annotation: Any, info: Any, value: Any, param: Any, ctx: Any) -> Any:
    """`value` converted as typer converts it for a parameter of this annotation and ParameterInfo, or _DEFER where
    this cannot tell (typer's own conversion is then used)."""
    if info.parser is not None:
        return _DEFER
    if getattr(annotation, "__origin__", None) is list:
        if not isinstance(value, (list, tuple)):
            return _DEFER
        (item,) = annotation.__args__
        items = [quick_value(item, info, v, param, ctx) for v in value]
        return _DEFER if any(v is _DEFER for v in items) else items
    if annotation is str:
        return value if _plain_text(value) else _DEFER
    if annotation is int:
        if type(value) is int:
            number = value
        elif _plain_text(value) and _INT.fullmatch(value):
            number = int(value)
        else:
            return _DEFER
        if info.clamp or (info.min is not None and number < info.min) or (info.max is not None and number > info.max):
            return _DEFER
        return number
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        if isinstance(value, annotation):
            return value
        if not _plain_text(value):
            return _DEFER
        try:
            return coerce_cli_choice(value, choices=list(annotation), case_sensitive=info.case_sensitive, ctx=ctx)
        except ValueError:
            return _DEFER
    if annotation is Path and info.path_type is None:
        # typer makes the text a Path (pydantic: Path(text)), then checks it; the check names the text, which a Path
        # spells the same only in its canonical form ("a/b", not "./a/b" or "a//b/")
        if not _plain_text(value) or not value or str(Path(value)) != value:
            return _DEFER
        return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
    return _DEFER


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class QuickParam(RuntimeParam):
        """typer's runtime conversion of one parameter: `quick_value`, else typer's own (built on first need)."""

        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            got = quick_value(self.annotation, self.parameter_info, value, param, ctx)
            if got is not _DEFER:
                return got
            full = build_runtime_param(self.descriptor)
            param._runtime_param = full
            return full._coerce_value(value, param=param, ctx=ctx)


def quicken(params: list[Any]) -> None:
    """Give each typer parameter of `params` the quick conversion (those already converted keep theirs)."""
    if RuntimeParam is None:
        return
    for p in params:
        descriptor = getattr(p, "type_descriptor", None)
        if descriptor is None or getattr(p, "_runtime_param", False) is not None:
            continue
        p._runtime_param = QuickParam(
            parameter_info=descriptor.parameter_info, annotation=descriptor.annotation, descriptor=descriptor
        )


def untyped_flags(params: list[Any]) -> None:
    """Show no value type for an on/off flag in the help (typer 0.29 writes `--force <bool>`, as though the flag took
    a value): an empty metavar, which click never prints for a flag anyway."""
    for p in params:
        if getattr(p, "is_flag", False) and getattr(p, "metavar", "") is None:
            p.metavar = ""


class _Quick:
    """Its parameters, its help option included, get the quick conversion (`quicken`), and its flags no value type
    in the help (`untyped_flags`)."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        quicken(self.params)
        untyped_flags(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        quicken([option] if option is not None else [])
        untyped_flags([option] if option is not None else [])
        return option


class QuickCommand(_Quick, TyperCommand):
    """A command whose parameters, its help option included, get the quick conversion (`quicken`)."""


class QuickGroup(_Quick, TyperGroup):
    """The app's group, its parameters and help option as `QuickCommand`'s."""
