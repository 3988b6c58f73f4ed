"""The kernels as a table (`--format csv`): one row per kernel, in the result's order (by GPU time), for a
spreadsheet or a script. RFC 4180: comma-separated, CRLF line ends, a header row, a field quoted when it holds a
comma, a quote or a line end, and its quotes doubled (kernel names are C++ templates full of commas and quotes).

Columns: `id`, `kernel` (its name), `demangled` (its full signature: templates and parameters), `language`, `launches`, `time_ns` (the kernel's GPU time over its launches),
`share` (of the report's GPU time, a fraction), `bound`, `headroom` (the time over the roofline floor), then the
kernel's first finding: `rule`, `title`, `saving` (the fraction of the kernel's time its fix should save) and
`saving_ns` (that saving over every size of the kernel). A kernel without a finding leaves the last four empty, as a
value the report lacks is left empty.
"""

from __future__ import annotations

import csv
import io

from ncuadvisor.render.formats import RenderOptions
from ncuadvisor.result.types import KernelEntry, Result

COLUMNS = (
    "id", "kernel", "demangled", "language", "launches", "time_ns", "share", "bound", "headroom", "rule", "title", "saving",
    "saving_ns",
)  # fmt: skip


def _row(k: KernelEntry) -> list[str | int | float]:
    row: list[str | int | float] = [
        k.id,
        k.name,
        k.demangled,
        k.language,
        k.launches,
        round(k.duration_ns),
        round(k.time_share, 4),
        k.bound,
        round(k.headroom, 2) if k.headroom is not None else "",
    ]
    if not k.findings:
        return row + ["", "", "", ""]
    first = k.findings[0]
    saved = k.savings_by_rule().get(first.rule)
    return row + [first.rule, first.title, round(first.estimated_speedup, 3), round(saved[1]) if saved else 0]


def render(result: Result, options: RenderOptions) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")  # QUOTE_MINIMAL, quotes doubled: RFC 4180
    writer.writerow(COLUMNS)
    writer.writerows(_row(k) for k in result.kernels)
    return out.getvalue()
