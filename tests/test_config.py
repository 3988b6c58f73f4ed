"""The user's configuration ([tool.ncuadvisor] in pyproject.toml, ncuadvisor.toml, --config, --select/--ignore):
which rules run and with which thresholds, on the real fixture pipeline_v2 (scale_add: MEM001 fires, excess 0.7)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ncuadvisor.errors import ConfigError
from ncuadvisor.rulekit.config import Config, apply_config, configured_rules, find_config, load_config, resolve_config
from ncuadvisor.rulekit.engine import discover
from tests.golden import run_cli


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def codes(rules: list) -> set[str]:
    return {r.code for r in rules}


def rules_fired(result: dict) -> set[str]:
    return {f["rule"] for k in result["kernels"] for f in k["findings"]}


@pytest.fixture(scope="module")
def all_codes() -> set[str]:
    return codes(discover())


# -- finding and reading the file ----------------------------------------------------------------------------------


def test_found_upwards_like_ruff(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_config(deep) is None
    write(tmp_path / "a" / "pyproject.toml", "[project]\nname = 'x'\n")  # no [tool.ncuadvisor]: passed over
    write(tmp_path / "pyproject.toml", "[tool.ncuadvisor]\nignore = ['MEM001']\n")
    assert find_config(deep) == (tmp_path / "pyproject.toml").resolve()
    write(tmp_path / "a" / "b" / "ncuadvisor.toml", "ignore = ['MEM002']\n")
    assert find_config(deep) == (tmp_path / "a" / "b" / "ncuadvisor.toml").resolve()
    assert resolve_config(start=deep).ignore == ("MEM002",)


def test_settings_and_command_line_override(tmp_path):
    path = write(
        tmp_path / "pyproject.toml",
        "[tool.ncuadvisor]\nselect = ['mem', 'LCH001']\nignore = ['MEM003']\nrules-dir = ['my_rules']\n"
        "[tool.ncuadvisor.thresholds.MEM001]\nmin_excess_fraction = 0.4\n",
    )
    cfg = load_config(path)
    assert cfg.select == ("MEM", "LCH001") and cfg.ignore == ("MEM003",)
    assert cfg.rules_dirs == (tmp_path / "my_rules",)  # relative to the file
    assert cfg.thresholds == {"MEM001": {"min_excess_fraction": 0.4}}
    over = resolve_config(path, select=["LCH"], ignore=None, rules_dirs=[tmp_path])
    assert over.select == ("LCH",) and over.ignore == ("MEM003",) and over.rules_dirs == (tmp_path,)


# -- applying it ---------------------------------------------------------------------------------------------------


def test_select_and_ignore_by_code_and_prefix(all_codes):
    mem = {c for c in all_codes if c.startswith("MEM")}
    assert codes(apply_config(discover(), Config(select=("MEM", "LCH001")))) == mem | {"LCH001"}
    assert codes(apply_config(discover(), Config(ignore=("MEM001",)))) == all_codes - {"MEM001"}
    # the more specific selector wins; ignore wins a tie
    assert codes(apply_config(discover(), Config(select=("MEM001",), ignore=("MEM",)))) == {"MEM001"}
    assert codes(apply_config(discover(), Config(select=("MEM",), ignore=("MEM001",)))) == mem - {"MEM001"}
    assert codes(apply_config(discover(), Config(select=("MEM001",), ignore=("MEM001",)))) == set()
    assert codes(apply_config(discover(), Config(ignore=("MEM",)), filter_rules=False)) == all_codes


def test_thresholds_are_set_per_instance_never_on_the_class():
    rules = configured_rules(Config(thresholds={"MEM001": {"min_excess_fraction": 0.8}}))
    (mem001,) = [r for r in rules if r.code == "MEM001"]
    assert mem001.thresholds["min_excess_fraction"] == 0.8
    assert type(mem001).thresholds["min_excess_fraction"] == 0.3
    (fresh,) = [r for r in discover() if r.code == "MEM001"]
    assert fresh.thresholds["min_excess_fraction"] == 0.3


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (Config(select=("XYZ",)), "no rule code starts with XYZ"),
        (Config(ignore=("MEM-1",)), "is not a rule code or prefix"),
        (Config(thresholds={"MEM999": {"x": 1.0}}), "no rule MEM999"),
        (Config(thresholds={"MEM001": {"min_excess": 1.0}}), "MEM001 has no threshold `min_excess`"),
    ],
)
def test_what_does_not_fit_is_a_config_error(config, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        apply_config(discover(), config)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.ncuadvisor]\nselct = ['MEM']\n", "unknown key `selct` in [tool.ncuadvisor]"),
        ("[tool.ncuadvisor]\nselect = 'MEM'\n", "`select` must be a list"),
        ("[tool.ncuadvisor.thresholds.MEM001]\nmin_excess_fraction = 'high'\n", "must be a finite number"),
        ("[tool.ncuadvisor]\nrules-dir = 3\n", "`rules-dir` must be a folder"),
        ("[tool.ncuadvisor\n", "not valid TOML"),
    ],
)
def test_bad_files(tmp_path, text, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(write(tmp_path / "pyproject.toml", text))


# -- on a real report ----------------------------------------------------------------------------------------------


def test_ignore_removes_the_finding_and_a_threshold_decides_whether_it_fires(report_path):
    from ncuadvisor.pipeline.analyze import analyze

    path = report_path("pipeline_v2")
    assert "MEM001" in rules_fired(analyze(path, rules=configured_rules(Config())).to_dict())
    assert "MEM001" not in rules_fired(analyze(path, rules=configured_rules(Config(ignore=("MEM001",)))).to_dict())
    # scale_add wastes 70% of its sectors: over a 0.6 threshold it fires, under 0.8 not
    fires = configured_rules(Config(thresholds={"MEM001": {"min_excess_fraction": 0.6}}))
    quiet = configured_rules(Config(thresholds={"MEM001": {"min_excess_fraction": 0.8}}))
    res = analyze(path, rules=fires).to_dict()
    (finding,) = [f for k in res["kernels"] for f in k["findings"] if f["rule"] == "MEM001"]
    assert {"metric": "excess_fraction", "threshold": 0.6}.items() <= next(
        e for e in finding["evidence"] if e["metric"] == "excess_fraction"
    ).items()
    assert "MEM001" not in rules_fired(analyze(path, rules=quiet).to_dict())


@pytest.mark.slow
def test_the_command_reads_the_nearest_pyproject(tmp_path, report_path):
    write(tmp_path / "pyproject.toml", "[tool.ncuadvisor]\nignore = ['MEM001']\n")
    (tmp_path / "sub").mkdir()
    p = run_cli("report", report_path("pipeline_v2"), "--format", "json", cwd=tmp_path / "sub")
    assert p.returncode == 0, p.stderr
    assert "MEM001" not in rules_fired(json.loads(p.stdout))
    assert f"ncuadvisor: configuration: {tmp_path / 'pyproject.toml'}" in p.stderr
    # the command line's --select and --ignore replace the file's (its ignore = ["MEM001"] no longer applies)
    p = run_cli(
        "report",
        report_path("pipeline_v2"),
        "-f",
        "json",
        "--select",
        "MEM",
        "--ignore",
        "MEM003",
        cwd=tmp_path / "sub",
    )
    assert p.returncode == 0, p.stderr
    assert rules_fired(json.loads(p.stdout)) == {"MEM001"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "text", "message"),
    [
        ([], "[tool.ncuadvisor]\nignore = ['NOPE']\n", "pyproject.toml: `ignore`: no rule code starts with NOPE"),
        ([], "[tool.ncuadvisor.thresholds.MEM001]\nmin_excess = 0.4\n", "MEM001 has no threshold `min_excess`"),
        ([], "[tool.ncuadvisor]\nfoo = 1\n", "unknown key `foo`"),
        (["--select", "QQQ"], "", "--select: no rule code starts with QQQ"),
        (["--config", "missing.toml"], "", "missing.toml: no such configuration file"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_2(tmp_path, report_path, args, text, message):
    if text:
        write(tmp_path / "pyproject.toml", text)
    p = run_cli("report", report_path("pipeline_v2"), *args, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncuadvisor: error: ") and message in lines[0], p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_rules_shows_the_thresholds_in_effect(tmp_path):
    write(tmp_path / "ncuadvisor.toml", "ignore = ['MEM001']\n[thresholds.MEM001]\nmin_excess_fraction = 0.45\n")
    p = run_cli("rules", "MEM001", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "min_excess_fraction = 0.45" in p.stdout  # listed although ignored: the catalogue shows every rule
