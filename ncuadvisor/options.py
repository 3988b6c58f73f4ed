"""Command-line option types shared by several commands (kept apart so that command modules do not import each other)."""

from pathlib import Path
from typing import Annotated

import typer

SourceRootOption = Annotated[
    Path | None,
    typer.Option(
        "--source-root",
        exists=True,
        file_okay=False,
        help="SARIF: make source paths relative to this folder (default: the git top level of the current "
        "directory, else the current directory).",
    ),
]
