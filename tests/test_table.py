"""The table of results (`model.table`): the operations the analysis uses, and each column's values as a pandas frame
built from the same rows holds them (the values rules, the roofline and every output have always seen)."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ncuadvisor.model import Table, group_kernels
from ncuadvisor.model.table import typed_column

NAN = float("nan")


def _same(a, b) -> bool:
    """Equal values of equal types, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def test_columns_rows_and_lookup():
    t = Table(
        [
            {"result_id": 0, "name": "a", "x": 1.5, "n": 3},
            {"result_id": 1, "name": "b", "x": None, "n": 4},
            {"result_id": 2, "name": "c", "x": 2.0, "n": 5},
        ],
        ["result_id", "name", "x", "n", "absent"],
    )
    assert len(t) == 3 and not t.empty and t.columns == ["result_id", "name", "x", "n", "absent"]
    assert t["name"] == ["a", "b", "c"] and t["n"] == [3, 4, 5]
    assert math.isnan(t["x"][1]) and t["x"][0] == 1.5  # a gap among numbers is NaN
    assert all(math.isnan(v) for v in t["absent"])  # a column no row has: gaps
    assert t.get("nope", "default") == "default" and t.get("n") == [3, 4, 5]
    with pytest.raises(KeyError):
        t["nope"]
    assert t.row(2)["name"] == "c"
    with pytest.raises(KeyError):
        t.row(7)
    row = t.row(0)
    row["name"] = "changed"  # rows are copies: the table does not change
    next(iter(t))["name"] = "changed"
    t.rows()[0]["name"] = "changed"
    assert t.row(0)["name"] == "a"
    kept = t.where(lambda r: r["n"] != 4)
    assert kept["result_id"] == [0, 2] and kept.columns == t.columns and kept.row(2)["n"] == 5
    assert t.where(lambda r: False).empty
    kept.set_column("process", ["7", "8"])
    assert kept["process"] == ["7", "8"] and kept.row(0)["process"] == "7" and "process" not in t.columns
    with pytest.raises(ValueError):
        kept.set_column("process", ["7"])


def test_rows_are_in_result_id_order():
    t = Table([{"result_id": 2, "d": 1.0}, {"result_id": 0, "d": 2.0}, {"result_id": 1, "d": 3.0}])
    assert t["result_id"] == [0, 1, 2] and t["d"] == [2.0, 3.0, 1.0]


def test_group_kernels_on_a_table():
    rows = [
        {"result_id": i, "name": n, "demangled": n, "mangled": "_Z" + n, "grid": "(1, 1, 1)", "block": "(32, 1, 1)",
         "nvtx": "", "process": "", "gpu__time_duration.sum": d}
        for i, (n, d) in enumerate([("a", 10.0), ("b", 50.0), ("a", 30.0), ("a", 20.0), ("b", None)])
    ]  # fmt: skip
    kernels = group_kernels(Table(rows))
    assert [k.name for k in kernels] == ["a", "b"]  # 60 ns before 50 ns
    a, b = kernels
    assert a.result_ids == [0, 2, 3] and a.representative == 3 and a.duration_ns == 60.0
    assert (a.launch_min_ns, a.launch_max_ns) == (10.0, 30.0)
    assert b.result_ids == [1, 4] and b.representative == 4 and b.duration_ns == 50.0  # no time: 0 ns, shortest
    assert [k.representative for k in group_kernels(Table(rows), pick="first")] == [0, 1]
    assert len(group_kernels(Table(rows), pick="each")) == 5
    assert group_kernels(Table([], ["result_id", "name"])) == []


def _columns():
    """Columns of every mix of the kinds of value a reader gives (floats, text, None), and of ints and bools."""
    kinds = [1.5, 0.0, 7, True, "text", None, NAN, -3.25e12, 2**64 + 1]
    for n in (1, 2, 3):
        yield from (list(c) for c in itertools.product(kinds, repeat=n))
    rng = random.Random(1)
    for _ in range(300):
        yield [rng.choice(kinds) for _ in range(rng.randint(1, 6))]


def test_column_values_are_the_frames():
    pd = pytest.importorskip("pandas")
    if int(pd.__version__.split(".")[0]) < 3:
        pytest.skip("pandas 2 keeps None in a column of text with gaps; the table holds NaN, as pandas 3 does")
    for values in _columns():
        frame = pd.DataFrame([{"c": v} for v in values], columns=["c"])
        expected = [r["c"] for r in frame.to_dict("records")]
        got = typed_column(values)
        assert all(_same(a, b) for a, b in zip(got, expected)) and len(got) == len(expected), (values, got, expected)


def test_report_to_json_imports_no_pandas_jinja2_or_rich(tmp_path):
    """`ncuadvisor report -f json` (its workers forked from it, or started from the fork server's preload of
    `ncuadvisor.load.workers`) imports none of the three: pandas alone cost 0.35-0.4 s of every run."""
    import subprocess
    import sys

    from tests.conftest import FIXTURES

    code = (
        "import sys\n"
        "import ncuadvisor.load.workers\n"
        "preload = sorted(m for m in ('pandas', 'jinja2', 'rich') if m in sys.modules)\n"
        "from ncuadvisor.cli import main\n"
        f"sys.argv = ['ncuadvisor', 'report', {str(FIXTURES / 'probe.ncu-rep.xz')!r}, '-f', 'json', '-o', "
        f"{str(tmp_path / 'r.json')!r}, '-q']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(preload, sorted(m for m in ('pandas', 'jinja2', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []", out.stdout + out.stderr
    assert (tmp_path / "r.json").stat().st_size > 0
