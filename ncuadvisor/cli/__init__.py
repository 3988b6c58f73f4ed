"""The command line: a thin typer layer over the analysis, the profile package and the renderers.

`app` holds the commands (`report`, `rules`, `diff`, `render`, `profile`, `mcp`, one module each); `main` runs it, `run` is the
entry point (`ncuadvisor = "ncuadvisor.cli:run"`, `python -m ncuadvisor`): `main`, then the process ends at once.
"""

from ncuadvisor.cli.app import app, main, run

__all__ = ["app", "main", "run"]
