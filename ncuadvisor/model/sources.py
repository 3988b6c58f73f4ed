"""What a source path is: the user's own code, or a library's (the CUDA toolkit's headers, Triton's language files,
Inductor's helpers) whose lines are inlined into the user's kernels; and a readable name for a mangled function."""

from __future__ import annotations

import re
from typing import Any

from ncuadvisor.units import in_toolkit

# the library files whose code a Triton kernel inlines: triton/language/*.py, Inductor's runtime helpers
_PY_LIBRARY = ("/triton/language/", "/torch/_inductor/runtime/", "/site-packages/triton/")


def in_library(path: Any) -> bool:
    """Whether a source path is a library's code inlined into a kernel (CUDA toolkit headers, Triton's language and
    Inductor's runtime helpers), not a line the user can change."""
    p = str(path or "").replace("\\", "/")
    return in_toolkit(p) or any(part in p for part in _PY_LIBRARY)


_SOURCE_NAME = re.compile(r"(\d+)")


def short_name(mangled: str | None) -> str | None:
    """The unqualified name of an Itanium-mangled function (`_ZN..._INTERNAL_..9atomicAddEPjj` -> `atomicAdd`), the
    name itself when it is not mangled, None when there is none. Namespaces the compiler invents are dropped."""
    if not mangled:
        return None
    if not mangled.startswith("_Z"):
        return mangled
    pos = 3 if mangled.startswith("_ZN") else 2
    names: list[str] = []
    while pos < len(mangled):
        while pos < len(mangled) and mangled[pos] in "rVKL":  # qualifiers
            pos += 1
        m = _SOURCE_NAME.match(mangled, pos)
        if not m:
            break
        n = int(m.group(1))
        start = m.end()
        names.append(mangled[start : start + n])
        pos = start + n
        if not mangled.startswith("_ZN"):
            break
    names = [n for n in names if n and not n.startswith("_INTERNAL")]
    return names[-1] if names else mangled
