"""A kernel of a result by what a person calls it: its id (`k3`), its name, its demangled name or its display name.

One lookup for the command line's `--kernel`, the Python API's `result.kernel(name)` and the MCP server's `kernel`
tool, with one error that says what matched (several kernel groups of one name: they differ by launch shape or
process) or what names there are.
"""

from __future__ import annotations

from ncuadvisor.errors import InputError
from ncuadvisor.result.types import KernelEntry, Result

NAMES_SHOWN = 8  # names listed in the error when nothing matched


def _names(k: KernelEntry) -> tuple[str, ...]:
    return tuple(n for n in (k.name, k.demangled, k.display_name, k.mangled) if n)


def find_kernel(result: Result, name: str) -> KernelEntry:
    """The one kernel group `name` designates: an id, else an exact name (name, demangled, display or mangled), else
    the groups whose name contains `name`. InputError when none or several match (listing them, with their ids)."""
    by_id = result.kernel(name)
    if by_id is not None:
        return by_id
    for found in (
        [k for k in result.kernels if name in _names(k)],
        [k for k in result.kernels if any(name in n for n in _names(k))],
    ):
        if len(found) == 1:
            return found[0]
        if found:
            shapes = "; ".join(f"{k.id}: {k.name} grid {k.grid} block {k.block}" for k in found[:NAMES_SHOWN])
            more = f"; and {len(found) - NAMES_SHOWN} more" if len(found) > NAMES_SHOWN else ""
            raise InputError(
                f"kernel {name!r} is ambiguous: {len(found)} kernel groups match ({shapes}{more}); name one by its id"
            )
    names = ", ".join(k.name for k in result.kernels[:NAMES_SHOWN])
    more = f", and {len(result.kernels) - NAMES_SHOWN} more" if len(result.kernels) > NAMES_SHOWN else ""
    raise InputError(f"no kernel {name!r} in the report (its kernels: {names or 'none'}{more})")
