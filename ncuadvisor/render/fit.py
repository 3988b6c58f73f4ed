"""Terminal tables that fit the width they are given without cutting a word: a table is given as columns of plain
text and their markup, and as several layouts, widest first; `fitted_table` takes the first whose columns fit, each
wrapping column as wide as its longest word at least, and sets every column's width itself (rich, left to choose,
cuts words and crops the frame when the minimums do not fit)."""

from __future__ import annotations

from dataclasses import dataclass

from rich import box
from rich.cells import cell_len
from rich.table import Table


@dataclass(frozen=True)
class Column:
    header: str
    plain: list[str]  # each row's text as shown (for its width), lines split at "\n"
    markup: list[str]  # each row's cell as rich markup
    wraps: bool = False  # wraps between words (else kept whole)
    right: bool = False  # right-aligned


def longest_word(texts: list[str]) -> int:
    """The cells a text column needs to wrap its texts without cutting a word."""
    return max([cell_len(w) for t in texts for w in t.split()] + [1])


def _widest_line(texts: list[str]) -> int:
    return max([cell_len(line) for t in texts for line in t.split("\n")] + [1])


def table_width(columns: list[Column], framed: bool) -> tuple[int, list[int], list[int]]:
    """(the frame's and padding's cells, each column's least width, each column's whole width)."""
    frame = len(columns) - 1 + (2 if framed else 0) + 2 * len(columns) - (0 if framed else 2)
    least = [max(cell_len(c.header), longest_word(c.plain) if c.wraps else _widest_line(c.plain)) for c in columns]
    whole = [max(cell_len(c.header), _widest_line(c.plain)) for c in columns]
    return frame, least, whole


def layout(columns: list[Column], width: int, framed: bool) -> tuple[int, Table]:
    """The table of `columns` in `width` cells (framed: a heavy frame; else a rule under the header only), and the
    width it needs to cut no word. The wrapping columns share the room the others leave, each at least its longest
    word, the rest in proportion to what it lacks of its whole width."""
    frame, least, whole = table_width(columns, framed)
    need = frame + sum(least)
    wrapped = [i for i, c in enumerate(columns) if c.wraps]
    spare = width - frame - sum(w for w, c in zip(least, columns) if not c.wraps)
    room = max(0, spare - sum(least[i] for i in wrapped))
    lack = {i: whole[i] - least[i] for i in wrapped}
    widths = list(least)
    if sum(lack.values()) <= room:
        widths = [whole[i] if i in lack else least[i] for i in range(len(columns))]
    elif lack:
        total = sum(lack.values())
        for i in wrapped:
            widths[i] = least[i] + room * lack[i] // total
    table = Table(
        title=None,
        show_lines=False,
        header_style="bold",
        box=box.HEAVY_HEAD if framed else box.SIMPLE_HEAD,
        show_edge=framed,
        pad_edge=framed,
    )
    for c, w in zip(columns, widths):
        table.add_column(
            c.header, justify="right" if c.right else "left", no_wrap=not c.wraps, overflow="fold", width=w
        )
    for row in zip(*(c.markup for c in columns)):
        table.add_row(*row)
    return need, table


def fitted_table(layouts: list[tuple[list[Column], bool]], width: int) -> Table:
    """The first of `layouts` ((columns, framed), widest first) that fits `width` with no word cut, else the last."""
    table: Table | None = None
    for columns, framed in layouts:
        need, table = layout(columns, width, framed)
        if need <= width:
            return table
    assert table is not None, "no layout"
    return table
