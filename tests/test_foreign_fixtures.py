"""The foreign reports committed in fixtures/foreign (other people's ncu reports, on their GPUs and ncu versions): each
is read by the command line with exit 0, on the device and with the kernel its label names, and each has a label, a
source row and a permissive licence."""

import json
import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FOREIGN = FIXTURES / "foreign"
COMMITTED = sorted(FOREIGN.glob("*.ncu-rep.xz"))
LABELS = {r["file"]: r for r in tomllib.loads((ROOT / "benchmarks" / "foreign_labels.toml").read_text())["report"]}


def test_each_committed_report_has_a_label_a_source_row_and_a_permissive_licence():
    sources = (FOREIGN / "SOURCES.md").read_text()
    assert COMMITTED, "no foreign reports committed"
    for path in COMMITTED:
        name = path.name.removesuffix(".xz")
        assert name in LABELS, name
        row = next(line for line in sources.splitlines() if line.startswith(f"| `{name}` |"))
        assert row.split("|")[-3].strip() in ("MIT", "Apache-2.0", "BSD-3-Clause", "BSD-2-Clause"), row
    assert sum(p.stat().st_size for p in COMMITTED) <= 1_500_000


# One small report (a 2022.4 report from a GTX 1660 Ti) in the quick run; the others, 2-5 s each, in the slow one.
QUICK = "josiahls+cuda_learning_mojo__profile.ncu-rep.xz"


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=() if p.name == QUICK else pytest.mark.slow, id=p.name.removesuffix(".ncu-rep.xz"))
        for p in COMMITTED
    ],
)
def test_committed_foreign_report_reads_with_exit_0(path):
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", "report", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    label = LABELS[path.name.removesuffix(".xz")]
    assert doc["report"]["device"]["name"] == label["gpu"]
    assert any(k["name"] == label["kernel"] for k in doc["kernels"])


@pytest.mark.slow
def test_the_benchmark_scores_the_committed_reports_without_the_cache(tmp_path):
    """`benchmarks/foreign.py` with an empty cache scores the committed reports from fixtures/foreign and lists the
    others as not fetched, each scored one with exit 0 and a verdict."""
    out = tmp_path / "scores.json"
    p = subprocess.run(
        [sys.executable, "benchmarks/foreign.py", "--cache", str(tmp_path / "empty"), "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    scores = json.loads(out.read_text())
    committed = {c.name.removesuffix(".xz") for c in COMMITTED}
    assert set(scores) == set(LABELS)
    for name, s in scores.items():
        if name in committed:
            assert s["rc"] == 0 and s["verdict"] in ("right", "wrong", "missing"), (name, s)
        else:
            assert s["verdict"] == "no report", (name, s)
    assert f"scored {len(committed)} of {len(LABELS)} labelled reports" in p.stdout
