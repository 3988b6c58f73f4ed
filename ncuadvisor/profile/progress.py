"""The progress shown while ncu runs: a live bar on a terminal, one line per phase elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ncuadvisor.profile.output import QUIET_WARNINGS, Event

if TYPE_CHECKING:
    from rich.progress import Progress
from ncuadvisor.units import clip

PROGRAM_LINE_MAX = 1 << 16


class ProgressUI:
    """The progress bar (stderr) fed by ncu's own output; the program's output goes to stdout as it comes.

    On an interactive terminal the bar is one row that rich redraws in place (and erases at the end of the phase):
    the phase, the bar, the launches profiled so far (`12/31` with ncu's own count, `12/~29` against our estimate,
    `2001` when no total is known), the kernel and its replay, the elapsed time. The phase and the count keep their
    width; the bar and the kernel name share what is left, so a narrow terminal still shows which phase and how far.
    Anywhere else (a pipe, a file, TERM=dumb) there is no bar: one line per phase and its summary, with the program's
    output and ncu's warnings as they come.
    """

    def __init__(self, verbose: bool = False, quiet: bool = False):
        from rich.console import Console

        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.out = Console(highlight=False, soft_wrap=True)
        self.verbose = verbose
        self.quiet = quiet
        self._progress: Progress | None = None
        self._task: Any = None
        self._label = ""
        self._done = 0
        self._total: int | None = None
        self._exact = False  # the total is ncu's own (`(i/n)` in its progress lines), not our estimate
        # the names ncu prints when it filters by mangled name (`_ZN2at6native…`) -> the function names users know
        self.display_names: dict[str, str] = {}
        self._pending = ""  # the program's unfinished line, held while a live bar shares the terminal

    def start(self, label: str, total: int | None) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column

        self._label, self._done, self._total, self._exact = label, 0, total, False
        if not self.quiet:
            self.err.print(f"[bold]{label}[/bold]")
        if self.err.is_interactive and not self.quiet:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.fields[phase]}"),
                BarColumn(bar_width=None, table_column=Column(ratio=1)),
                TextColumn("{task.fields[count]}"),
                TextColumn("{task.fields[detail]}", table_column=Column(ratio=2, no_wrap=True, overflow="ellipsis")),
                TimeElapsedColumn(),
                console=self.err,
                transient=True,
                expand=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "", total=total, phase=label.split(":")[0], count=self._count(0), detail="starting the program"
            )

    def _count(self, launch: int) -> str:
        if not self._total:
            return str(launch)
        return f"{launch}/{'' if self._exact else '~'}{self._total}"

    def _update(self, detail: str, launch: int) -> None:
        """Show `detail` about `launch` (1-based); an estimated total that turns out short grows with the count."""
        if self._progress is None or self._task is None:
            return
        if self._total is not None and not self._exact and launch > self._total:
            self._total = launch
        self._progress.update(
            self._task, total=self._total, completed=self._done, count=self._count(launch), detail=detail
        )

    def _count_from(self, ev: Event) -> None:
        if ev.n is not None:
            self._total, self._exact = ev.n, True

    def event(self, ev: Event) -> None:
        from rich.markup import escape

        name = self.display_names.get(ev.name or "", ev.name or "")
        if ev.kind == "progress":
            self._count_from(ev)
            self._done = ev.i if ev.i is not None else self._done + 1
            passes = f" · {ev.passes} pass{'es' if ev.passes != 1 else ''}" if ev.passes else ""
            self._update(f"{escape(clip(name, 60))}{passes}", self._done)
            if self.verbose:
                self._print_err(ev.text, "dim")
        elif ev.kind == "progress-partial":
            self._count_from(ev)
            self._update(f"{escape(clip(name, 60))} · replay {ev.code}%", ev.i if ev.i is not None else self._done + 1)
        elif ev.kind == "output":
            self._print_out(ev.text)
        elif ev.kind in ("error", "app-exit"):
            self._print_err(ev.text, "red")
        elif ev.kind in ("no-kernels", "available"):
            self._print_err(ev.text, "yellow")
        elif ev.kind == "warning":
            if self.verbose or not any(q in ev.text for q in QUIET_WARNINGS):
                self._print_err(ev.text, "yellow")
        elif ev.kind == "connected":
            self._update("program started", self._done)
            if self.verbose:
                self._print_err(ev.text, "dim")
        elif self.verbose:
            self._print_err(ev.text, "dim")

    def program_output(self, text: str, end: bool = False) -> None:
        """The program's output as it comes, never kept whole: written on at once, except that above a live bar on
        the terminal it goes by whole lines (a partial line would land on the bar's row), at most
        `PROGRAM_LINE_MAX` characters held (`end`: the program is done, what is held goes out)."""
        if self._progress is not None and self.out.is_terminal:
            self._pending += text
            cut = self._pending.rfind("\n") + 1
            if end or len(self._pending) > PROGRAM_LINE_MAX:
                cut = len(self._pending)
            if cut:
                lines, self._pending = self._pending[:cut], self._pending[cut:]
                self._progress.console.print(lines.rstrip("\n"), markup=False, highlight=False)
            return
        if self._pending:
            text, self._pending = self._pending + text, ""
        if text:
            self.out.file.write(text)
            self.out.file.flush()

    def _print_out(self, text: str) -> None:
        # While the bar is live on the terminal that stdout also writes to, the line goes through the bar's console,
        # which prints it above the bar (as rich's own stdout redirection does): written to stdout directly it would
        # land on the bar's row and leave a stale copy of the bar on screen.
        console = self._progress.console if self._progress is not None and self.out.is_terminal else self.out
        console.print(text, markup=False, highlight=False)

    def _print_err(self, text: str, style: str) -> None:
        console = self._progress.console if self._progress is not None else self.err
        console.print(text, markup=False, highlight=False, style=style)

    def note(self, text: str, style: str = "dim") -> None:
        if not self.quiet:
            self._print_err(text, style)

    def stop(self, summary: str | None = None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if summary and not self.quiet:
            self.err.print(f"  {summary}", style="dim", markup=False, highlight=False)
