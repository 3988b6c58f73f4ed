"""A result's section list and NCU's rule results, decoded from the report file (no `ncu_report`).

The deep data of a result whose SASS nobody reads and whose module has no lines (a cuBLAS kernel, an ATen kernel no
gated rule admits) is read from the file (`reportfile.instances`): opening the result through `ncu_report` costs
~25 ms and ~30 MB (a cuBLAS result lists thousands of instructions) kept for the life of the process. Among it, its
section identifiers and NCU's rule results; the report file holds both in the result's message: 17, the sections ({1: identifier}), and 19, the rule results
({1: identifier, 2: name, 3: {1: messages}, 4: section}). A message is one entry of `rule_results_as_dicts()`:
{1: text {1: message, 2: kind, 4: title}, 8: focus metrics {2: name, 3: value (double), 4: severity, 5: info},
10: speedup estimation {1: type, 2: speedup (double)}}, or {9: ...} alone, which `ncu_report` gives as an empty
message of type 0. A rule result without messages gives no entry.

Anything else (a message with a table, 12; a kind or field not seen on the fixtures) raises `_Unknown`: that result is
opened through `ncu_report` as before. Verified entry by entry against `ncu_report` on the fixtures
(tests/test_ncurules.py).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from ncuadvisor.reportfile.blocks import _varint

# the message kind of the file (text, 2) -> `rule_message["type"]` as ncu_report gives it; 0 where the file has none
_KINDS = {0: 0, 1: 1, 2: 3, 4: 2}
_TEXT = {1, 2, 3, 4}
_FOCUS = {1, 2, 3, 4, 5}
_SPEEDUP = {1, 2}


class _Unknown(Exception):
    """A field this reader does not know: the result is read through ncu_report."""


def _walk(b: bytes) -> dict[int, list[Any]]:
    """A message's fields: varints as ints, 64-bit fields as doubles, length-delimited ones as bytes."""
    out: dict[int, list[Any]] = {}
    i, end = 0, len(b)
    while i < end:
        key, i = _varint(b, i, end)
        field, wire = key >> 3, key & 7
        v: Any
        if wire == 0:
            v, i = _varint(b, i, end)
        elif wire == 1:
            if i + 8 > end:
                raise _Unknown("double past the end")
            v, i = struct.unpack_from("<d", b, i)[0], i + 8
        elif wire == 2:
            n, i = _varint(b, i, end)
            if i + n > end:
                raise _Unknown("field past the end")
            v, i = b[i : i + n], i + n
        else:
            raise _Unknown(f"wire type {wire}")
        out.setdefault(field, []).append(v)
    return out


def _one(f: dict[int, list[Any]], key: int, default: Any) -> Any:
    vals = f.get(key)
    if not vals:
        return default
    if len(vals) != 1:
        raise _Unknown(f"field {key} repeated")
    return vals[0]


def _text(v: Any) -> str:
    if not isinstance(v, bytes):
        raise _Unknown("not a string")
    return v.decode("utf-8", "surrogateescape")


def _known(f: dict[int, list[Any]], fields: set[int]) -> dict[int, list[Any]]:
    if set(f) - fields:
        raise _Unknown(f"fields {sorted(set(f) - fields)}")
    return f


def _message(raw: bytes) -> dict[str, Any]:
    """One message of a rule result as `rule_results_as_dicts()` gives it, without the rule's names."""
    f = _walk(raw)
    if set(f) == {9}:
        return {"rule_message": {"title": "", "message": "", "type": 0}}
    _known(f, {1, 8, 10})
    text = _known(_walk(_one(f, 1, b"")), _TEXT)
    kind = _one(text, 2, 0)
    if kind not in _KINDS:
        raise _Unknown(f"message kind {kind}")
    out: dict[str, Any] = {
        "rule_message": {
            "title": _text(_one(text, 4, b"")),
            "message": _text(_one(text, 1, b"")),
            "type": _KINDS[kind],
        }
    }
    if 8 in f:
        focus = []
        for raw_metric in f[8]:
            m = _known(_walk(raw_metric), _FOCUS)
            focus.append(
                {
                    "name": _text(_one(m, 2, b"")),
                    "value": float(_one(m, 3, 0.0)),
                    "severity": int(_one(m, 4, 0)),
                    "info": _text(_one(m, 5, b"")),
                }
            )
        out["focus_metrics"] = focus
    if 10 in f:
        s = _known(_walk(_one(f, 10, b"")), _SPEEDUP)
        out["speedup_estimation"] = {"type": int(_one(s, 1, 0)), "speedup": float(_one(s, 2, 0.0))}
    return out


def rule_results(rules: Iterable[bytes]) -> list[dict[str, Any]]:
    """The entries of `rule_results_as_dicts()` from a result's rule results (19), in order; raises _Unknown where
    one holds what this reader does not know."""
    out = []
    for raw in rules:
        r = _walk(raw)
        _known(r, {1, 2, 3, 4, 5})  # 5: the rule's source markers, which the dicts leave out
        body = _known(_walk(_one(r, 3, b"")), {1}) if 3 in r else {}
        for raw_message in body.get(1, []):
            entry = {
                "rule_identifier": _text(_one(r, 1, b"")),
                "name": _text(_one(r, 2, b"")),
                "section_identifier": _text(_one(r, 4, b"")),
            }
            entry.update(_message(raw_message))
            out.append(entry)
    return out


def sections(raw_sections: Iterable[bytes]) -> list[str]:
    """The identifiers of a result's sections (17: {1: identifier}), in the order ncu_report lists them."""
    return sorted(_text(_one(_walk(raw), 1, b"")) for raw in raw_sections)
