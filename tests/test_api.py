"""The Python API through its public names only: `ncuadvisor.analyze`, `ncuadvisor.diff`, what a `Result`, a `Kernel`
and a `Diff` offer, on real reports read by the real library."""

import json
import subprocess
import sys

import pytest

import ncuadvisor
from ncuadvisor.errors import InputError
from tests.conftest import FIXTURES, in_child


@pytest.fixture(scope="module")
def flaws(report_path):
    path = report_path("flaws")
    return in_child(lambda: ncuadvisor.analyze(path))  # the test process opens no report


def test_import_is_cheap_and_loads_the_api_on_first_use():
    code = "import sys, ncuadvisor; print(sorted(m for m in sys.modules if m.startswith('ncuadvisor')))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "['ncuadvisor', 'ncuadvisor.version']"
    assert ncuadvisor.__version__
    assert {"analyze", "diff", "Result", "Kernel", "Diff"} <= set(dir(ncuadvisor))
    with pytest.raises(AttributeError):
        ncuadvisor.no_such_name  # noqa: B018


def test_the_result_is_the_json_of_the_command_line(flaws, report_path):
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(report_path("flaws")), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    cli, api = json.loads(p.stdout), json.loads(flaws.to_json())
    for d in (cli, api):
        d.pop("created")
    assert cli == api


def test_kernels_where_to_start_and_lookup(flaws):
    kernels = flaws.kernels
    assert [k.duration_ns for k in kernels] == sorted((k.duration_ns for k in kernels), reverse=True)
    assert flaws.where_to_start[0].rule == "ATM001"
    k = flaws.kernel("transpose_naive")
    assert k.findings[0].rule == "MEM001" and k.bound == "memory"
    assert flaws.kernel(k.id).id == k.id
    assert flaws.kernel(k.demangled).id == k.id
    assert "MEM001" in repr(k)
    with pytest.raises(InputError, match="ambiguous: 3 kernel groups"):
        flaws.kernel("transpose")
    with pytest.raises(InputError, match="no kernel 'nothing_like_it'"):
        flaws.kernel("nothing_like_it")


def test_to_pandas_one_row_per_kernel(flaws):
    pd = pytest.importorskip("pandas")
    frame = flaws.to_pandas()
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == len(flaws.kernels)
    row = frame.set_index("name").loc["transpose_naive"]
    k = flaws.kernel("transpose_naive")
    assert row["first_rule"] == "MEM001"
    assert row["estimated_speedup"] == k.findings[0].estimated_speedup
    assert row["bound"] == k.bound and row["headroom"] == k.headroom


def test_to_pandas_without_pandas_says_how_to_get_it(tmp_path):
    # a folder whose `pandas` cannot be imported, first on the path
    (tmp_path / "pandas.py").write_text("raise ImportError('no pandas here')\n")
    code = (
        "import ncuadvisor\n"
        f"r = ncuadvisor.analyze({str(FIXTURES / 'tiny_sections.ncu-rep.xz')!r})\n"
        "try:\n    r.to_pandas()\nexcept ImportError as e:\n    print(e)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{FIXTURES.parent}"},
    )
    assert "pip install 'ncuadvisor[pandas]'" in p.stdout, p.stderr


def test_notebook_display_is_the_report_page(flaws):
    page = flaws._repr_html_()
    assert page.startswith("<iframe srcdoc=") and "&lt;svg" in page  # the page, escaped, with the roofline
    card = flaws.kernel("transpose_naive")._repr_html_()
    assert "transpose_naive" in card and "Uncoalesced global stores" in card and "&lt;svg" in card
    assert "hist_global_atomic" not in card  # the kernel alone


def test_digest_through_the_api(flaws):
    assert flaws.digest().startswith("ncuadvisor digest 2 | ")
    assert flaws.kernel("transpose_naive").digest_json()["kernel_digests"][0]["findings"][0]["rule"] == "MEM001"


def test_diff_of_two_versions(report_path):
    d = ncuadvisor.diff(report_path("pipeline_v0"), report_path("pipeline_v1"))
    assert d.verdict == "improved"
    assert d.to_dict()["kind"] == "diff"
    assert d._repr_html_().startswith("<iframe srcdoc=")


def test_diff_stays_the_api_function_once_the_comparison_package_is_imported():
    import ncuadvisor.comparison  # noqa: F401  (what `ncuadvisor diff` and the API's diff import)
    from ncuadvisor import api

    assert ncuadvisor.diff is api.diff


def test_a_report_that_cannot_be_read_is_one_input_error(tmp_path):
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(b"not a report")
    with pytest.raises(InputError):
        ncuadvisor.analyze(bad)
