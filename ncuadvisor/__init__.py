"""ncuadvisor: roofline-grounded, ranked advice from Nsight Compute reports.

The Python API (docs/api.md): `ncuadvisor.analyze(path)` returns a `Result`, `ncuadvisor.diff(a, b)` a `Diff`. They
are loaded on first use, so that `import ncuadvisor` stays as cheap as reading the version.
"""

from ncuadvisor.version import __version__

TYPE_CHECKING = False  # not typing's: importing typing would cost more than the rest of `import ncuadvisor`
if TYPE_CHECKING:
    from typing import Any

    from ncuadvisor.api import Diff, Kernel, Result, analyze, diff

_API = ("analyze", "diff", "Result", "Kernel", "Diff")

__all__ = ["Diff", "Kernel", "Result", "__version__", "analyze", "diff"]


def __getattr__(name: str) -> "Any":
    if name in _API:
        from ncuadvisor import api

        return getattr(api, name)
    raise AttributeError(f"module 'ncuadvisor' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
