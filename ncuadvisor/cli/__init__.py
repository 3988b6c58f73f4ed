"""The command line: a thin typer layer over the analysis, the profile package and the renderers.

`app` holds the commands (`report`, `rules`, `diff`, `render`, `profile`, one module each); `main` is the entry point
(`ncuadvisor = "ncuadvisor.cli:main"`, `python -m ncuadvisor`).
"""

from ncuadvisor.cli.app import app, main

__all__ = ["app", "main"]
