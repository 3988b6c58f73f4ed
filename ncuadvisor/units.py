"""Formatting of quantities: the only formatters (no dependencies, so any stage may import them).

Every formatter takes whatever a result holds (a number, None, sometimes text from a hand-edited JSON) and returns
text; a missing value is "–" (an en dash) unless the formatter says otherwise.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from typing import Any

MISSING = "–"
_SI = (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def finite(value: Any) -> float | None:
    """A value as a finite float, or None when it is missing, not a number, NaN or infinite."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def number(value: Any) -> float | None:
    """A finite float, or None: like `finite`, but booleans are not numbers here."""
    return None if isinstance(value, bool) else finite(value)


# -- durations, fractions, sizes, rates ------------------------------------------------------------------------


def fmt_ns(ns: Any, missing: str = MISSING, seconds: bool = True) -> str:
    """Nanoseconds, readable: 1234 -> '1.2 µs'; `missing` for None; above 1 s in seconds unless `seconds` is off."""
    if ns is None:
        return missing
    ns = float(ns)
    if seconds and ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def fmt_pct(x: Any, digits: int = 0) -> str:
    """A 0..1 fraction as a percentage: 0.256 -> '26%'; a positive share too small to show, '<1%' (or '<0.01%')."""
    if x is None:
        return MISSING
    v = float(x) * 100
    step = 10.0**-digits
    if 0 < v < step / 2:
        return f"<{step:.{digits}f}%"
    return f"{v:.{digits}f}%"


def fmt_pct100(v: Any, digits: int = 0) -> str:
    """A percentage already on a 0..100 scale (SOL values, NCU speedups): 25.6 -> '26%', 0.4 -> '<1%'."""
    f = number(v)
    return MISSING if f is None else fmt_pct(f / 100, digits)


def fmt_bytes(b: Any) -> str:
    """A byte count with a decimal prefix: 1.5e6 -> '1.5 MB'."""
    if b is None:
        return MISSING
    b = float(b)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= scale:
            return f"{b / scale:.1f} {unit}"
    return f"{b:.0f} B"


def fmt_rate(x: Any, unit: str) -> str:
    """Per-second rates with SI prefixes: fmt_rate(4.8e12, 'B/s') -> '4.80 TB/s'."""
    if x is None:
        return MISSING
    x = float(x)
    for prefix, scale in _SI:
        if abs(x) >= scale:
            return f"{x / scale:.2f} {prefix}{unit}"
    return f"{x:.2f} {unit}"


def fmt_x(x: Any, digits: int = 1) -> str:
    """A ratio such as headroom: 3.04 -> '3.0×', 250 -> '250×'; `digits` under 10× (an evidence value beside its
    threshold: 1.58× under 1.60× does not read as 1.6× under 1.6×)."""
    if x is None:
        return MISSING
    x = float(x)
    return f"{x:.{digits}f}×" if x < 10 else f"{x:.1f}×" if x < 100 else f"{x:.0f}×"


def fmt_hz(x: Any) -> str:
    """A clock: 1.978e9 -> '1.98 GHz'."""
    return fmt_rate(x, "Hz")


TINY = 0.001  # an evidence value below this shows as '<0.001'


def fmt_num(v: Any) -> str:
    """An evidence value: integers with thousands separators, others to 3 significant digits, under a thousandth
    '<0.001'; text as it is."""
    if v is None:
        return MISSING
    if isinstance(v, (bool, str)):
        return str(v)
    f = number(v)
    if f is None:
        return str(v)
    if f.is_integer() and abs(f) < 1e15:
        return f"{int(f):,}"
    if abs(f) >= 1000:
        return f"{f:,.0f}"
    if abs(f) >= 100:
        return f"{f:.1f}"
    if 0 < abs(f) < TINY:  # '0.000237 waves per SM' reads as nothing, and '2.37e-04' as a code
        return f"<{TINY:g}" if f > 0 else f"−<{TINY:g}"
    return f"{f:.3g}"


# -- changes (the diff) ----------------------------------------------------------------------------------------


def _sign(x: float) -> str:
    return "+" if x > 0 else "−" if x < 0 else "±"  # a real minus sign


def fmt_change(x: Any) -> str:
    """A relative change with its sign: 0.05 -> '+5.0%', -0.565 -> '−56.5%'."""
    f = finite(x)
    if f is None:
        return MISSING
    text = f"{abs(f) * 100:.1f}%" if abs(f) < 10 else f"{abs(f) * 100:.0f}%"
    return _sign(f) + text


def fmt_delta_ns(ns: Any) -> str:
    """A signed duration: 997900 -> '+997.9 µs'."""
    f = finite(ns)
    return MISSING if f is None else _sign(f) + fmt_ns(abs(f))


def fmt_threshold(x: Any) -> str:
    """A threshold as a percentage without trailing zeros: 0.05 -> '5%', 0.025 -> '2.5%'."""
    f = finite(x)
    return MISSING if f is None else f"{f * 100:.3g}%"


# -- chart axes ------------------------------------------------------------------------------------------------


def fmt_si(v: float) -> str:
    """An axis value with an SI prefix and no unit: 1e12 -> '1 T'."""
    for prefix, scale in _SI:
        if v >= scale:
            return f"{v / scale:g} {prefix}"
    return f"{v:g}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def fmt_decade(e: int, m: int = 1) -> str:
    """The label of m × 10**e on a log axis: '0.01', '1000', '0.2', and beyond those '10⁵', '10⁻⁴', '2×10⁻⁵' (a
    reader meets no exponent notation)."""
    if -3 <= e <= 4:
        return f"{m * 10.0**e:g}"
    power = "10" + str(e).translate(_SUPERSCRIPT)
    return power if m == 1 else f"{m}×{power}"


# -- names and paths -------------------------------------------------------------------------------------------


def dim3_of(text: Any) -> tuple[int, int, int] | None:
    """A launch dimension as the result writes it, "(8192, 1, 1)" (`load.native.dim3`), as three numbers (missing
    ones 1); None for anything else (empty, more than three numbers)."""
    nums = [int(x) for x in re.findall(r"\d+", str(text or ""))]
    if not nums or len(nums) > 3:
        return None
    nums += [1] * (3 - len(nums))
    return (nums[0], nums[1], nums[2])


def clip(text: Any, limit: int) -> str:
    """Text cut at `limit` characters, the last one an ellipsis ("" for None): long kernel names in one line."""
    s = "" if text is None else str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def short_name(name: Any, limit: int = 80) -> str:
    """A readable kernel name: templates collapsed (`f<...>`), then cut at `limit` characters; "–" for None. A short
    name with one flat template argument list (`CUDAFunctor_add<BFloat16>`) keeps it: the type tells kernels apart."""
    if name is None:
        return MISSING
    if len(str(name)) <= limit and str(name).count("<") == 1 and str(name).endswith(">"):
        return str(name)
    out, depth = [], 0
    for ch in str(name):
        if ch == "<":
            if depth == 0:
                out.append("<…>")
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return clip("".join(out), limit)


def fit_name(name: Any, limit: int) -> str:
    """A kernel name in `limit` characters, keeping what identifies it: templates collapsed, then leading namespaces
    dropped ('…::vectorized_elementwise_kernel<…>'), then the middle cut ('fused_add_…_gelu_0'); "–" for None."""
    text = short_name(name, 10**6)
    if len(text) <= limit or limit < 8:
        return text if len(text) <= limit else clip(text, max(limit, 1))
    head, sep, tail = text.rpartition("::")
    if sep and len(tail) + 3 <= limit:
        return "…::" + tail
    keep = limit - 1
    front = (keep + 1) // 2
    return text[:front] + "…" + text[len(text) - (keep - front) :]


LABEL_MAX = 36  # a kernel's short name (`compact_name`): no word of a table cell longer than this


def compact_name(name: Any, limit: int = LABEL_MAX) -> str:
    """A kernel name in about `limit` characters, cut only between its words: templates collapsed, then leading
    namespaces dropped ('…::vectorized_elementwise_kernel<…>'), then the middle tokens of an underscored name left
    out, keeping its head and its last word ('nvjet_sm90_tst_256x128_64x4_1x2_…_TNT'); "–" for None. The same name
    gives the same text at every width, so the table, the actions and every format agree."""
    text = short_name(name, 10**6)
    if len(text) <= limit:
        return text
    head, sep, tail = text.rpartition("::")
    if sep and len(tail) + 3 <= limit:
        return "…::" + tail
    tokens = re.split(r"(_+)", text)  # words and the underscores between them
    if len(tokens) < 3:
        return fit_name(text, limit)
    last = tokens[-1]
    kept: list[str] = []
    for t in tokens[:-2]:
        if len("".join(kept)) + len(t) + 3 + len(last) > limit:  # '_…_' between the head and the last word
            break
        kept.append(t)
    front = "".join(kept)
    if not front.strip("_"):
        return fit_name(text, limit)
    return front + ("" if front.endswith("_") else "_") + "…_" + last


def first_sentence(text: Any, limit: int = 160) -> str:
    """The first sentence of a text, on one line, cut at `limit` characters ("" for none): a fix in one line."""
    s = " ".join(str(text or "").split())
    for stop in (". ", "; "):
        at = s.find(stop)
        if 0 < at < limit:
            return s[: at + 1].rstrip(";")
    return clip(s, limit)


_CHAIN_REPEAT = re.compile(r"(?<![^\s(])(?P<k>[^\s→]+)(?: → (?P=k)(?![^\s).,;:]))+")


def compress_chain(text: Any) -> str:
    """A chain of kernels with its repeats counted: 'a → a → a → b' -> 'a ×3 → b' ("" for None)."""
    return _CHAIN_REPEAT.sub(
        lambda m: f"{m.group('k')} ×{m.group(0).count(' → ') + 1}", "" if text is None else str(text)
    )


def basename(path: Any) -> str:
    """A source path's file name ('/a/b/k.cu' -> 'k.cu', Windows separators too); "–" for none."""
    if not path:
        return MISSING
    return posixpath.basename(str(path).replace("\\", "/")) or str(path)


def counted(n: float, noun: str) -> str:
    """'1 block', '3 blocks', '2 bytes': a whole count with its noun, plural when it is not one."""
    whole = int(round(n))
    return f"{whole} {noun}" + ("" if whole == 1 else "s")


def in_toolkit(path: Any) -> bool:
    """Whether a source path is inside the CUDA toolkit's headers (device_atomic_functions.hpp and the like)."""
    p = str(path or "").replace("\\", "/")
    return "/include/" in p and ("/cuda" in p or "/targets/" in p)


def basename_loc(loc: Any) -> str:
    """A location's file name and line: '/a/b/pipeline.cu:68' -> 'pipeline.cu:68'; "" for none."""
    if not loc:
        return ""
    text = str(loc)
    path, sep, line = text.rpartition(":")
    if not sep or not line.isdigit():
        return os.path.basename(text.replace("\\", "/"))
    return f"{os.path.basename(path.replace(chr(92), '/'))}:{line}"
