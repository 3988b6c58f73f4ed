"""Where the sources are: the git top level of a folder, and the forms of a source root, for the SARIF's relative
paths (the renderer itself runs no command and reads no file)."""

from __future__ import annotations

import os
import subprocess


def default_source_root(cwd: str | os.PathLike[str] | None = None) -> str:
    """The git top level of `cwd` (default: the current directory), else the directory itself."""
    here = os.fspath(cwd) if cwd is not None else os.getcwd()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True, timeout=10
        )
        top = out.stdout.strip()
        if out.returncode == 0 and top:
            return top
    except (OSError, subprocess.SubprocessError):
        pass
    return here


def source_root_forms(source_root: str | os.PathLike[str]) -> list[str]:
    """The source root as given, then the real path it resolves to when that differs (a symlinked checkout):
    a report may name its files either way."""
    root = os.fspath(source_root)
    forms = [root]
    try:
        real = os.path.realpath(root)
    except OSError:  # pragma: no cover
        return forms
    if os.path.normpath(real) != os.path.normpath(root):
        forms.append(real)
    return forms
