"""Where library code inlined into a kernel was called from: for instructions whose line is in a library file (an
`atomicAdd` in CUDA's `device_atomic_functions.hpp`, a reduction in Triton's `standard.py`), the call chain read from
the line tables of the module the report embeds (`reportfile.cubin`), out to the user's line; where the module records
no inlining (Triton writes none) or is not embedded, the nearest line of the user's own file in program order.

The report's instruction addresses are where the module was loaded; the line tables count from the function's start.
The start is taken as the kernel's lowest listed address and kept only where the table's lines agree with the lines
`ncu_report` gave for the listed instructions (`AGREE` of them), so a wrong module or start gives no chain at all.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ncuadvisor.model.sources import in_library
from ncuadvisor.reportfile.cubin import Cubin, LineTable
from ncuadvisor.reportfile.modules import embedded_cubins

Location = tuple[str | None, int | None]
AGREE = 0.9  # the share of listed instructions whose table line must equal ncu_report's line


class Inlining:
    """The embedded modules of one report file, read once, on the first question."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._cubins: list[Cubin] | None = None

    def tables(self, mangled: str) -> list[LineTable]:
        if self._cubins is None:
            try:
                self._cubins = embedded_cubins(self.path)
            except (OSError, ValueError):
                self._cubins = []
        return [t for c in self._cubins if mangled in c.functions for t in c.tables().get(mangled, [])]

    def chains(self, mangled: str | None, pcs: list[int], known: dict[int, Location]) -> dict[int, dict[str, Any]]:
        """For each pc (of a kernel named `mangled`) whose line is in a library file: {"frames": [(file, line,
        function or None)], innermost first, out to the kernel's own code, from the module's inlining record (one
        frame where it has none), "nearest": (file, line) of the closest instruction in a user file, or None}.
        `known`: ncu_report's (file, line) of the kernel's listed instructions."""
        library = [pc for pc in pcs if in_library(known.get(pc, (None, None))[0])]
        if not library:
            return {}
        table, base = self._calibrated(mangled, known) if mangled else (None, 0)
        out: dict[int, dict[str, Any]] = {}
        for pc in library:
            frames: list[tuple[str | None, int | None, str | None]] = (
                [(f.file, f.line, f.function) for f in table.frames(pc - base)] if table else []
            )
            if not frames:
                file, line = known[pc]
                frames = [(file, line, None)]
            nearest = None
            if all(in_library(f[0]) for f in frames):
                nearest = _nearest_in_table(table, pc - base) if table else _nearest_known(known, pc)
            out[pc] = {"frames": frames, "nearest": nearest}
        return out

    def _calibrated(self, mangled: str, known: dict[int, Location]) -> tuple[LineTable | None, int]:
        lines = {pc: (os.path.basename(f), ln) for pc, (f, ln) in known.items() if f and ln}
        if not lines:
            return None, 0
        base = min(known)
        best: tuple[float, LineTable | None] = (0.0, None)
        for table in self.tables(mangled):
            if max(known) - base >= table.size:
                continue
            agree = 0
            for pc, want in lines.items():
                i = table.row_at(pc - base)
                row = table.rows[i] if i is not None else None
                agree += row is not None and (os.path.basename(row.file), row.line) == want
            score = agree / len(lines)
            if score >= AGREE and score > best[0]:
                best = (score, table)
        return best[1], base


def _nearest_in_table(table: LineTable, offset: int) -> Location | None:
    """The line of the closest row of the function, in program order, whose chain ends in a user file (the
    preceding one first at equal distance)."""
    rows = [(abs(r.address - offset), r.address > offset, i) for i, r in enumerate(table.rows)]
    for _, _, i in sorted(rows):
        mine = next((f for f in table.chain(i) if not in_library(f.file)), None)
        if mine is not None:
            return mine.file, mine.line
    return None


def _nearest_known(known: dict[int, Location], pc: int) -> Location | None:
    """The same among the listed instructions, where the module's table is not at hand."""
    mine = [(abs(p - pc), p > pc, loc) for p, loc in known.items() if loc[0] and loc[1] and not in_library(loc[0])]
    return min(mine, key=lambda t: (t[0], t[1]))[2] if mine else None
