"""The results of a report as a table (`Profile.results`): one row per result, in result-id order, a row being a dict
of the identity columns (`ID_COLUMNS`) and one column per metric the analysis asked for. Plain Python, with only
what the analysis does with it: a column, a row by result id, every row, the rows that pass a test.

A column holds its values as a pandas frame of the same rows holds them, the values rules and the roofline have
always been given: a column of numbers with gaps holds floats, each gap NaN (an integer column without gaps keeps its
ints); a column of text with gaps has NaN in each gap; a column with nothing in it keeps its Nones; any other mix is
kept as it is. Readers give floats, text and None, so a metric a result lacks is NaN wherever another result has a
number for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any

NAN = float("nan")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


_NONE = type(None)


def _column(rows: list[Mapping[str, Any]], column: str) -> list[Any]:
    """The values of a column of rows (mappings), a gap where a row lacks it."""
    try:
        return list(map(itemgetter(column), rows))
    except KeyError:
        return [r.get(column, NAN) for r in rows]


def typed_column(values: Sequence[Any]) -> list[Any]:
    """The values of one column as the table holds them (the module's docstring)."""
    types = set(map(type, values))
    if types <= {float, str, _NONE}:  # what the readers give: decided without looking at each value
        if _NONE not in types or types == {_NONE}:
            return list(values)  # no gap to fill, or nothing but gaps
        if str in types and float in types and any(v == v for v in values if type(v) is float):
            return list(values)  # text and numbers: kept as they are
        return [NAN if v is None else v for v in values]
    return _typed_slowly(values)


def _typed_slowly(values: Sequence[Any]) -> list[Any]:
    kinds: set[type] = set()
    gaps = nan_gap = False
    for v in values:
        if v is None:
            gaps = True
        elif isinstance(v, float):
            if v != v:
                gaps = nan_gap = True
            else:
                kinds.add(float)
        elif isinstance(v, bool):
            kinds.add(bool)
        elif isinstance(v, int):
            kinds.add(int if -(2**63) <= v < 2**64 else object)
        elif isinstance(v, str):
            kinds.add(str)
        else:
            kinds.add(object)
    if not kinds:  # nothing but gaps: all None stays None
        return [NAN] * len(values) if nan_gap else list(values)
    if kinds <= {int, float} and (gaps or float in kinds):
        return [NAN if _missing(v) else float(v) for v in values]
    if kinds == {str} and gaps:
        return [NAN if _missing(v) else v for v in values]
    return list(values)


class Table:
    """Rows of results in result-id order (the module's docstring). `columns` fixes the columns and their order; a
    row without a column has a gap there."""

    def __init__(self, rows: Iterable[Mapping[str, Any]] = (), columns: Sequence[str] | None = None):
        given = list(rows)
        names = list(columns) if columns is not None else list(dict.fromkeys(k for r in given for k in r))
        if "result_id" in names and any(a["result_id"] > b["result_id"] for a, b in zip(given, given[1:])):
            given.sort(key=lambda r: r["result_id"])
        typed = [typed_column(_column(given, c)) for c in names]
        self._init(names, [dict(zip(names, values)) for values in zip(*typed)] if names else [{} for _ in given])

    def _init(self, columns: list[str], rows: list[dict[str, Any]]) -> None:
        self.columns = columns
        self._rows = rows
        self._by_id: dict[Any, dict[str, Any]] | None = None

    @classmethod
    def _of(cls, columns: list[str], rows: list[dict[str, Any]]) -> Table:
        """A table of rows already typed and in order."""
        table = cls.__new__(cls)
        table._init(columns, rows)
        return table

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def empty(self) -> bool:
        return not self._rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every row (a copy), in result-id order."""
        return (dict(r) for r in self._rows)

    def rows(self) -> list[dict[str, Any]]:
        """Every row (a copy), in result-id order."""
        return [dict(r) for r in self._rows]

    def __getitem__(self, column: str) -> list[Any]:
        """The values of a column, in row order; KeyError where the table has no such column."""
        if column not in self.columns:
            raise KeyError(column)
        return [r[column] for r in self._rows]

    def get(self, column: str, default: Any = None) -> Any:
        """The values of a column, or `default` where the table has no such column."""
        return self[column] if column in self.columns else default

    def row(self, result_id: int) -> dict[str, Any]:
        """The row (a copy) of a result; KeyError where no row has that id."""
        if self._by_id is None:
            self._by_id = {}
            for r in self._rows:
                self._by_id.setdefault(r["result_id"], r)
        return dict(self._by_id[result_id])

    def where(self, keep: Callable[[dict[str, Any]], bool]) -> Table:
        """The rows for which `keep(row)` is true, as a table of the same columns (a copy)."""
        return Table._of(list(self.columns), [dict(r) for r in self._rows if keep(r)])

    def set_column(self, column: str, values: Sequence[Any]) -> None:
        """Sets (or adds) a column: one value per row, in row order."""
        if len(values) != len(self._rows):
            raise ValueError(f"{len(values)} values for a column of {len(self._rows)} rows")
        typed = typed_column(values)
        if column not in self.columns:
            self.columns.append(column)
        for r, v in zip(self._rows, typed):
            r[column] = v
        self._by_id = None
