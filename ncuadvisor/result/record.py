"""Typed JSON records: dataclasses that write themselves as JSON-ready dicts, read themselves back checking every value's
type, and describe themselves as a JSON Schema.

A record's fields are its JSON keys, in the order it writes them. Types are read from the annotations: `float`
(a finite number; an int stays an int), `int` (64-bit), `str`, `bool`, `None`, `Literal[...]`, `list[X]`,
`dict[str, X]`, unions of these, other records and `Any` (taken as it is). Two kinds of field bend the rule:

- `optional()`: a key that is written only when the record has it (`omit` says when not: by default, when the value
  is None); the JSON Schema does not require it.
- `flat()`: a record whose keys are written into this one's (not under a key of their own) when it is not None; it is
  read back when any of its keys is there, and its keys come all or none (`torch_op` with `torch_module`).

`from_dict` checks every value's type. With `complete=True` it also checks that every key the JSON Schema requires
is there (`json_schema` derives the schema from the same annotations, so the two agree: a saved file is read that
way, `ncuadvisor.saved.validate`). Otherwise a missing key reads as the field's default, else its type's empty value
(None where the type allows it, "", 0, [], {}), so that a partial dict (a test's, a hand-made one) can be read.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Literal, TypeVar, Union

from ncuadvisor.errors import InputError

R = TypeVar("R", bound="Record")

INT_LIMIT = 2**63  # a count or an id beyond 64 bits is no measurement (and would overflow the renderers' floats)


def _is_none(_record: Any, value: Any) -> bool:
    return value is None


def optional(default: Any = None, omit: Callable[[Any, Any], bool] = _is_none) -> Any:
    """A field written only when `omit(record, value)` is false (by default: when the value is not None)."""
    return dataclasses.field(default=default, metadata={"omit": omit})


def flat() -> Any:
    """A field holding a record (or None) whose keys are written into the enclosing record's own."""
    return dataclasses.field(default=None, metadata={"flat": True})


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    hint: Any
    omit: Callable[[Any, Any], bool] | None
    flat: bool
    default: Any  # dataclasses.MISSING when the field has none
    default_factory: Callable[[], Any] | None


class Record:
    """Base of the result's dataclasses: `to_dict`, `from_dict` and the JSON Schema come from the annotations."""

    # the record's description in the JSON Schema; the class docstring's first line when empty
    schema_title: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict: its keys in field order, optional ones only when present."""
        out: dict[str, Any] = {}
        for f in _fields(type(self)):
            value = getattr(self, f.name)
            if f.flat:
                if value is not None:
                    out.update(value.to_dict())
            elif f.omit is None or not f.omit(self, value):
                out[f.name] = _dump(value)
        return out

    @classmethod
    def from_dict(cls: type[R], data: Any, path: str = "", complete: bool = False) -> R:
        """Read a record from its dict, checking the type of every value (and with `complete`, that every required
        key is there); a wrong one is an InputError naming its place (`kernels[3].duration_ns: expected a number`).
        Unknown keys are left out."""
        return _read_record(cls, data, path, complete)


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _fields(cls: type) -> tuple[_Field, ...]:
    """The fields of a record class with their resolved annotations (read once per class)."""
    if cls in _FIELDS:
        return _FIELDS[cls]
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
        out.append(
            _Field(f.name, hints[f.name], f.metadata.get("omit"), bool(f.metadata.get("flat")), f.default, factory)
        )
    _FIELDS[cls] = tuple(out)
    return _FIELDS[cls]


def _flat_record(hint: Any) -> type[Record]:
    """The record class of a flat() field's `X | None` annotation."""
    return next(a for a in typing.get_args(hint) if isinstance(a, type) and issubclass(a, Record))


# -- reading --------------------------------------------------------------------------------------------------------


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _fail(path: str, expected: str) -> InputError:
    return InputError(f"{path or 'the result'}: expected {expected}")


def _read_record(cls: type[R], data: Any, path: str, complete: bool) -> R:
    if not isinstance(data, dict):
        raise _fail(path, "an object")
    kwargs: dict[str, Any] = {}
    for f in _fields(cls):
        if f.flat:
            sub = _flat_record(f.hint)
            keys = [g.name for g in _fields(sub)]
            if any(k in data for k in keys):
                kwargs[f.name] = _read_record(sub, {k: data[k] for k in keys if k in data}, path, complete)
            continue
        if f.name in data:
            kwargs[f.name] = _read(f.hint, data[f.name], _at(path, f.name), complete)
        elif complete and f.omit is None:
            raise InputError(f"{path or 'the result'}: `{f.name}` is missing")
        elif f.default_factory is not None:
            kwargs[f.name] = f.default_factory()
        elif f.default is not dataclasses.MISSING:
            kwargs[f.name] = f.default
        else:
            kwargs[f.name] = _empty(f.hint)
    return cls(**kwargs)


def _empty(hint: Any) -> Any:
    """The value a missing key of this type reads as."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        return None if type(None) in args else _empty(args[0])
    if origin is Literal:
        return args[0]
    if origin is list:
        return []
    if origin is dict:
        return {}
    if isinstance(hint, type) and issubclass(hint, Record):
        return _read_record(hint, {}, "", False)
    return {str: "", int: 0, float: 0.0, bool: False}.get(hint)


def _kind(value: Any) -> str:
    """The JSON kind of a value, as a reader would name what it expected."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_integer(value: Any) -> bool:
    """An int, or a float that is whole (JSON does not tell 28 from 28.0, nor does JSON Schema's "integer")."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _accepts(hint: Any, value: Any) -> bool:
    """Whether the value is of the type's JSON kind: the member of a union it is read as."""
    origin, kind = typing.get_origin(hint), _kind(value)
    if hint is Any:
        return True
    if origin is Literal:
        return any(_kind(a) == kind for a in typing.get_args(hint))
    if origin is list:
        return kind == "array"
    if origin is dict or (isinstance(hint, type) and issubclass(hint, Record)):
        return kind == "object"
    if hint is int:
        return _is_integer(value)
    return {type(None): "null", bool: "boolean", float: "number", str: "string"}.get(hint) == kind


def _read(hint: Any, value: Any, path: str, complete: bool) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if origin in (Union, types.UnionType):
        # ints first: a number that is whole reads as an int where the union has one ("a count or a label")
        for arg in sorted(args, key=lambda a: a is not int):
            if _accepts(arg, value):
                return _read(arg, value, path, complete)
        raise _fail(path, " or ".join(_describe(a) for a in args))
    if origin is Literal:
        if value in args and _kind(value) in {_kind(a) for a in args}:
            return value
        raise _fail(path, _describe(hint))
    if origin is list:
        if not isinstance(value, list):
            raise _fail(path, "an array")
        return [_read(args[0], v, f"{path}[{i}]", complete) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _fail(path, "an object")
        return {k: _read(args[1], v, _at(path, k), complete) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Record):
        return _read_record(hint, value, path, complete)
    if hint is type(None):
        if value is not None:
            raise _fail(path, "null")
        return None
    if hint is bool:
        if not isinstance(value, bool):
            raise _fail(path, "true or false")
        return value
    if hint is int:
        if not _is_integer(value):
            raise _fail(path, "an integer")
        if not -INT_LIMIT <= value < INT_LIMIT:
            raise _fail(path, "an integer of at most 64 bits")
        return value
    if hint is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _fail(path, "a number")
        if not _finite(value):
            raise _fail(path, "a finite number")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise _fail(path, "a string")
        return value
    raise TypeError(f"{path}: no reader for the type {hint!r}")  # pragma: no cover - a record declared wrongly


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too large for a float
        return False


def _describe(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is list:
        return "an array"
    if origin is dict or (isinstance(hint, type) and issubclass(hint, Record)):
        return "an object"
    return {type(None): "null", bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        hint, "a value"
    )


# -- JSON Schema ----------------------------------------------------------------------------------------------------


def json_schema(root: type[Record], schema_id: str, title: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a record and every record it holds (in `$defs`, by class name)."""
    defs: dict[str, Any] = {}
    body = _record_schema(root, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
        "title": title,
        **body,
        "$defs": dict(sorted(defs.items())),
    }


def _record_schema(cls: type[Record], defs: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    together: dict[str, list[str]] = {}  # a flat record's keys: written all or none
    for f in _fields(cls):
        if f.flat:
            sub = _record_schema(_flat_record(f.hint), defs)
            properties.update(sub["properties"])
            together.update({k: [o for o in sub["required"] if o != k] for k in sub["required"]})
            continue
        properties[f.name] = _schema(f.hint, defs)
        if f.omit is None:
            required.append(f.name)
    doc = cls.schema_title or (cls.__doc__ or "").strip().split("\n")[0]
    out = {"description": doc, "type": "object", "properties": properties, "required": required}
    return {**out, "dependentRequired": together} if together else out


def _schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return {}
    if origin in (Union, types.UnionType):
        parts = [_schema(a, defs) for a in args]
        if all(set(p) == {"type"} for p in parts):
            return {"type": [p["type"] for p in parts]}
        return {"anyOf": parts}
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(args[1], defs)}
    if isinstance(hint, type) and issubclass(hint, Record):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # taken before recursing: a record that holds itself
            defs[hint.__name__] = _record_schema(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    return {"type": {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}[hint]}
