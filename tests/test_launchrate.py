"""The host's launch interval: measured through the CUDA driver (`profile.launchrate`; None and a reason without a GPU),
kept beside a profile's reports, given to `report` (`--launch-interval-us`), and read by PRG004 on a real report
(fixtures/patterns.ncu-rep.xz: four launches of small_update and small_fused, a run of five tiny launches)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ncuadvisor.api import given_interval
from ncuadvisor.errors import InputError
from ncuadvisor.load.launchinterval import read_sidecar, sidecar_path, write_sidecar
from ncuadvisor.pipeline.analyze import analyze
from ncuadvisor.profile.launchrate import LaunchRate, for_rules, measure, measure_in_subprocess

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = ROOT / "fixtures" / "patterns.ncu-rep.xz"


def _prg004(result):
    found = [f for f in result.program_findings if f.rule == "PRG004"]
    assert len(found) == 1, [f.rule for f in result.program_findings]
    return found[0]


def test_the_measurement_never_raises_and_says_why_when_it_has_no_value():
    for rate in (measure(launches=20, repeats=2), measure_in_subprocess()):
        assert (rate.interval_ns is None) == (rate.why is not None), rate
        if rate.interval_ns is None:
            assert rate.why and "\n" not in rate.why and for_rules(rate) is None


@pytest.mark.gpu
def test_gpu_the_measured_interval_is_a_plausible_launch_cost():
    """On a GPU machine: a few µs per launch (measured ~2 µs on a fast host, ~4-5 µs on a slow one)."""
    rate = measure_in_subprocess()
    assert rate.interval_ns is not None, rate.why
    assert 500 <= rate.interval_ns <= 50_000, rate
    assert len(rate.samples_ns) == 5 and rate.call_overhead_ns is not None and rate.call_overhead_ns >= 0


def test_a_given_interval_is_checked():
    assert given_interval(None) is None
    got = given_interval(2.5)
    assert got is not None and got.interval_ns == 2500.0 and "--launch-interval-us" in got.source
    for bad in (0.0, -1.0, float("nan"), float("inf"), 5000.0):
        with pytest.raises(InputError, match="--launch-interval-us"):
            given_interval(bad)


def test_the_sidecar_keeps_a_measured_interval_and_nothing_else(tmp_path):
    report = tmp_path / "step.ncu-rep"
    assert write_sidecar(report, {"interval_ns": None, "why": "no GPU"}) is None
    assert not sidecar_path(report).exists() and read_sidecar(report) is None
    rate = LaunchRate(interval_ns=2100.0, samples_ns=[2100.0], device="H100")
    assert write_sidecar(report, rate.__dict__) == tmp_path / "step.ncu-rep.launch.json"
    assert read_sidecar(report) == 2100.0
    assert sidecar_path(tmp_path / "step.ncu-rep.xz") == sidecar_path(report)
    sidecar_path(report).write_text(json.dumps({"interval_ns": "fast"}))
    assert read_sidecar(report) is None


def test_prg004_without_the_interval_keeps_its_assumed_launch_cost():
    result = analyze(PATTERNS)
    f = _prg004(result)
    durations = f.estimated_saving_ns - 4 * 2000.0  # four launches removed of the five
    assert 0 < durations < 5 * 5000 and "launch interval is unknown" in f.saving_model
    assert result.report.launch_interval is None
    assert not [e for e in f.evidence if e.metric == "launch_interval"]


def test_prg004_with_the_interval_counts_the_longer_of_kernel_and_interval():
    """A slow host (10 µs, longer than every launch): four launches removed save four intervals; a fast one
    (0.5 µs, shorter than every launch): their GPU time alone, the old estimate less its assumed launch cost."""
    unknown = _prg004(analyze(PATTERNS)).estimated_saving_ns
    slow = analyze(PATTERNS, launch_interval=given_interval(10.0))
    assert _prg004(slow).estimated_saving_ns == pytest.approx(4 * 10_000.0)
    assert slow.report.launch_interval is not None and slow.report.launch_interval.interval_ns == 10_000.0
    fast = _prg004(analyze(PATTERNS, launch_interval=given_interval(0.5)))
    assert fast.estimated_saving_ns == pytest.approx(unknown - 4 * 2000.0)
    assert "0.50 µs (given with --launch-interval-us)" in fast.saving_model
    assert [e.value for e in fast.evidence if e.metric == "launch_interval"] == [500.0]


def test_report_reads_the_interval_profile_kept_beside_the_report(tmp_path):
    report = tmp_path / "patterns.ncu-rep.xz"
    shutil.copy(PATTERNS, report)
    write_sidecar(report, {"interval_ns": 10_000.0})
    result = analyze(report)
    assert _prg004(result).estimated_saving_ns == pytest.approx(4 * 10_000.0)
    assert result.report.launch_interval is not None
    assert "patterns.ncu-rep.launch.json" in result.report.launch_interval.source
    # a given interval wins over the kept one
    given = analyze(report, launch_interval=given_interval(0.5))
    assert given.report.launch_interval is not None and given.report.launch_interval.interval_ns == 500.0


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    from tests.test_profile import fake_ncu_cli

    return fake_ncu_cli(tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize("value", ["0", "nan", "1e9", "fast"])
def test_report_refuses_a_bad_interval_in_one_line(cli, value):
    from tests.test_profile import assert_one_error_line

    r = cli("report", str(PATTERNS), "--launch-interval-us", value, "-f", "json")
    assert r.code == 2 and "Traceback" not in r.err and "--launch-interval-us" in r.err, (r.code, r.err)
    if value != "fast":  # typer's own message for a value that is no number
        assert_one_error_line(r, 2)


def test_profile_records_the_measurement_or_why_it_has_none(cli, tmp_path):
    """Where the measurement has no GPU (this machine), profile runs on and says why; the report's PRG004 keeps the
    assumed launch cost."""
    from tests.test_profile import TARGET

    r = cli("profile", str(TARGET), "-o", "step.json", FAKE_NCU_PHASE1="patterns", FAKE_NCU_PHASE2="patterns")
    assert r.code == 0, r.err
    res = json.loads((tmp_path / "step.json").read_text())
    measured = res["report"]["profile"]["launch_interval"]
    assert (measured["interval_ns"] is None) == bool(measured.get("why")), measured
    assert ("launch_interval" in res["report"]) == (measured["interval_ns"] is not None)
    assert sidecar_path(tmp_path / "step.ncu-rep").exists() == (measured["interval_ns"] is not None)


def test_profile_gives_its_measured_interval_to_the_rules_and_keeps_it(cli, tmp_path, monkeypatch):
    """A measured interval (10 µs: a slow host) reaches PRG004 in profile's result and is kept beside the reports,
    where `report` finds it again. The measurement alone is replaced here (this machine has no GPU)."""
    from ncuadvisor.profile import launchrate
    from tests.test_profile import TARGET

    monkeypatch.setattr(launchrate, "measure_in_subprocess", lambda env=None: LaunchRate(10_000.0, device="test"))
    r = cli("profile", str(TARGET), "-o", "step.json", FAKE_NCU_PHASE1="patterns", FAKE_NCU_PHASE2="patterns")
    assert r.code == 0, r.err
    res = json.loads((tmp_path / "step.json").read_text())
    assert res["report"]["profile"]["launch_interval"]["interval_ns"] == 10_000.0
    assert res["report"]["launch_interval"]["source"] == launchrate.MEASURED
    (prg004,) = [f for f in res["program_findings"] if f["rule"] == "PRG004"]
    assert prg004["estimated_saving_ns"] == pytest.approx(4 * 10_000.0)
    assert read_sidecar(tmp_path / "step.ncu-rep") == 10_000.0
    assert read_sidecar(tmp_path / "step.phase1.ncu-rep") == 10_000.0
    assert res["report"]["profile"]["reports"] == ["step.phase1.ncu-rep", "step.ncu-rep"]  # the kept files apart
    assert "ncuadvisor report step.ncu-rep`" in r.out.replace("\n", "")  # the hint names a report, not a sidecar


def test_the_scorer_reads_the_interval_measured_beside_the_bench(tmp_path, monkeypatch):
    """benchmarks/accuracy.py: launch_interval.jsonl beside the patterns' bench file (launch_rate.sh writes both)
    gives the median of its measured lines; the fixtures' folders hold none (their scores keep the assumed cost)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import accuracy

    bench = tmp_path / "bench_patterns.jsonl"
    bench.write_text('{"kernel": "small_fused", "median_us": 5.1}\n')
    assert accuracy.launch_interval(None, bench) is None
    lines = [{"interval_ns": 2100.0}, {"interval_ns": None, "why": "x"}, {"interval_ns": 1900.0}, {"interval_ns": 2500}]
    (tmp_path / "launch_interval.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    got = accuracy.launch_interval(None, bench)
    assert got is not None and got.interval_ns == 2100.0 and "launch_interval.jsonl" in got.source
    given = accuracy.launch_interval("4.7", bench)
    assert given is not None and given.interval_ns == pytest.approx(4700.0)
    for folder in (ROOT / "fixtures" / "planted", ROOT / "fixtures" / "h100-planted-2026-12-06"):
        assert accuracy.launch_interval(None, next(folder.glob("bench_patterns*.jsonl"))) is None
