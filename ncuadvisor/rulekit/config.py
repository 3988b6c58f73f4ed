"""The user's configuration of the rules: which run (`select`, `ignore`), extra rule folders, threshold overrides.

Found the way ruff finds its own: `--config FILE`, else the first folder from the current one up to the root that
holds an `ncuadvisor.toml` (its top level is the configuration) or a `pyproject.toml` with a `[tool.ncuadvisor]`
table (a pyproject.toml without one is passed over). For example:

    [tool.ncuadvisor]
    select = ["MEM", "LCH001"]     # rule codes or prefixes to run (default: every rule)
    ignore = ["MEM003"]            # rule codes or prefixes not to run
    rules-dir = ["ci/rules"]       # folders of your own rules, relative to this file

    [tool.ncuadvisor.thresholds.MEM001]
    min_excess_fraction = 0.4

The command line's `--select`, `--ignore` and `--rules-dir` replace the file's. As in ruff, when a rule matches both
`select` and `ignore` the more specific selector wins (`select = ["MEM001"]`, `ignore = ["MEM"]` runs MEM001), and
`ignore` wins a tie. Anything that does not fit (an unknown key, rule code, prefix or threshold, a value of the
wrong type) is a ConfigError: one line, exit code 2. This module is the only place a configuration is applied.
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ncuadvisor.errors import ConfigError
from ncuadvisor.rulekit.contract import ProgramRule, Rule
from ncuadvisor.rulekit.engine import discover

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_NAME = "ncuadvisor.toml"
PYPROJECT_NAME = "pyproject.toml"
KEYS = ("select", "ignore", "rules-dir", "thresholds")
_SELECTOR_RE = re.compile(r"^[A-Z]+[0-9]*$")

AnyRule = Rule | ProgramRule


@dataclass(frozen=True)
class Config:
    """A configuration, and where each of its settings comes from (named in error messages)."""

    path: Path | None = None  # the file, None when there is none
    select: tuple[str, ...] | None = None  # None: every rule
    ignore: tuple[str, ...] = ()
    rules_dirs: tuple[Path, ...] = ()
    thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    select_origin: str = "select"
    ignore_origin: str = "ignore"

    @property
    def is_empty(self) -> bool:
        return self.select is None and not self.ignore and not self.rules_dirs and not self.thresholds


CONFIG_MAX_BYTES = 4 << 20  # a configuration is a few lines; a pyproject.toml a few kilobytes


def _read_bytes(path: Path) -> bytes:
    """A configuration file's bytes: a regular file (a FIFO opens without blocking and is refused) of bounded size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ConfigError(f"{path}: not a regular file")
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(CONFIG_MAX_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(data) > CONFIG_MAX_BYTES:
        raise ConfigError(f"{path}: too large for a configuration file (over {CONFIG_MAX_BYTES:,} bytes)")
    return data


def _parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML (not UTF-8 at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from exc
    except RecursionError as exc:
        raise ConfigError(f"{path}: not valid TOML (nested too deeply)") from exc


def _read_toml(path: Path) -> dict[str, Any]:
    return _parse_toml(path, _read_bytes(path))


def _table_of(path: Path, data: dict[str, Any]) -> dict[str, Any] | None:
    """The configuration table of a parsed file: `[tool.ncuadvisor]` of a pyproject.toml, else the top level."""
    if path.name != PYPROJECT_NAME:
        return data
    tool = data.get("tool")
    table = tool.get("ncuadvisor") if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def find_config(start: Path) -> Path | None:
    """The configuration file that applies in folder `start`: the nearest ncuadvisor.toml, or pyproject.toml with
    a `[tool.ncuadvisor]` table, in `start` or a folder above it (ncuadvisor.toml first within one folder)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        own = folder / CONFIG_NAME
        if own.is_file():
            return own
        pyproject = folder / PYPROJECT_NAME
        if pyproject.is_file() and _is_ours(pyproject):
            return pyproject
    return None


def _is_ours(pyproject: Path) -> bool:
    """Whether a pyproject.toml found up the tree holds a `[tool.ncuadvisor]` table. One that cannot be read or
    parsed is another tool's business, passed over, unless its text names the table (then its error is said)."""
    try:
        data = _read_bytes(pyproject)
    except ConfigError:
        return False
    try:
        return _table_of(pyproject, _parse_toml(pyproject, data)) is not None
    except ConfigError:
        if re.search(rb"tool\s*\.\s*[\"']?ncuadvisor", data):
            raise
        return False


def _codes(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f'{path}: `{key}` must be a list of rule codes or prefixes (e.g. ["MEM", "LCH001"])')
    return tuple(v.strip().upper() for v in value)


def load_config(path: Path) -> Config:
    """Read and check a configuration file (a pyproject.toml's `[tool.ncuadvisor]`, or an ncuadvisor.toml)."""
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    table = _table_of(path, _read_toml(path))
    where = "[tool.ncuadvisor]" if path.name == PYPROJECT_NAME else "the file"
    if table is None:
        raise ConfigError(f"{path}: has no [tool.ncuadvisor] table")
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise ConfigError(f"{path}: unknown key `{unknown[0]}` in {where} (known: {', '.join(KEYS)})")
    select = _codes(path, "select", table["select"]) if "select" in table else None
    ignore = _codes(path, "ignore", table["ignore"]) if "ignore" in table else ()
    dirs = table.get("rules-dir", [])
    if isinstance(dirs, str):
        dirs = [dirs]
    if not isinstance(dirs, list) or not all(isinstance(d, str) for d in dirs):
        raise ConfigError(f"{path}: `rules-dir` must be a folder or a list of folders (relative to this file)")
    thresholds = table.get("thresholds", {})
    if not isinstance(thresholds, dict) or not all(isinstance(v, dict) for v in thresholds.values()):
        raise ConfigError(
            f"{path}: `thresholds` must hold one table per rule (e.g. [tool.ncuadvisor.thresholds.MEM001])"
        )
    for code, values in thresholds.items():
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value):
                shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
                raise ConfigError(f"{path}: thresholds.{code}.{name} must be a finite number, not {shown}")
    return Config(
        path=path,
        select=select,
        ignore=ignore,
        rules_dirs=tuple(path.parent / d for d in dirs),
        thresholds={code.upper(): {n: float(v) for n, v in values.items()} for code, values in thresholds.items()},
        select_origin=f"{path}: `select`",
        ignore_origin=f"{path}: `ignore`",
    )


def _finite(value: float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer too large for a float
        return False


def resolve_config(
    config_file: Path | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    rules_dirs: Sequence[Path] | None = None,
    start: Path | None = None,
) -> Config:
    """The configuration in effect: `config_file`, else the one found from `start` (the current folder), with the
    command line's options (when given) in place of the file's."""
    if config_file is not None:
        config = load_config(config_file)
    else:
        found = find_config(start if start is not None else Path.cwd())
        config = load_config(found) if found is not None else Config()
    if select:
        config = replace(config, select=tuple(s.strip().upper() for s in select), select_origin="--select")
    if ignore:
        config = replace(config, ignore=tuple(s.strip().upper() for s in ignore), ignore_origin="--ignore")
    if rules_dirs:
        config = replace(config, rules_dirs=tuple(rules_dirs))
    return config


def _specificity(rule: AnyRule, selectors: Iterable[str]) -> int:
    """How specific the most specific selector matching the rule is (its length), 0 when none does."""
    best = 0
    for s in selectors:
        if s in rule.aliases or rule.code.startswith(s):
            best = max(best, len(s))
    return best


def _check_selectors(rules: Sequence[AnyRule], selectors: Iterable[str], origin: str) -> None:
    for s in selectors:
        if not _SELECTOR_RE.match(s):
            raise ConfigError(f"{origin}: {s!r} is not a rule code or prefix (e.g. MEM, MEM001)")
        if not any(s in r.aliases or r.code.startswith(s) for r in rules):
            raise ConfigError(f"{origin}: no rule code starts with {s} (see `ncuadvisor rules`)")


def apply_config(rules: list[AnyRule], config: Config, filter_rules: bool = True) -> list[AnyRule]:
    """The rules `config` runs (`select`, `ignore`; all of them when `filter_rules` is false), with its thresholds.

    A threshold override is set on the rule instance, on a copy of its class's thresholds: the class is never
    changed, so rules discovered again start from their defaults."""
    _check_selectors(rules, config.select or (), config.select_origin)
    _check_selectors(rules, config.ignore, config.ignore_origin)
    by_code = {c: r for r in rules for c in (r.code, *r.aliases)}
    where = f"{config.path}: " if config.path is not None else ""
    for code, values in config.thresholds.items():
        rule = by_code.get(code)
        if rule is None:
            raise ConfigError(f"{where}thresholds: no rule {code} (see `ncuadvisor rules`)")
        for name in values:
            if name not in rule.thresholds:
                known = ", ".join(rule.thresholds) or "none"
                raise ConfigError(
                    f"{where}thresholds.{code}: {rule.code} has no threshold `{name}` (its thresholds: {known})"
                )
        rule.thresholds = {**type(rule).thresholds, **values}  # type: ignore[misc]  # per instance, by design
    if not filter_rules:
        return rules
    kept = []
    for rule in rules:
        selected = _specificity(rule, config.select) if config.select is not None else 0
        if config.select is not None and not selected:
            continue
        ignored = _specificity(rule, config.ignore)
        if ignored and ignored >= selected:
            continue
        kept.append(rule)
    return kept


def configured_rules(config: Config, filter_rules: bool = True) -> list[AnyRule]:
    """The rules to run under `config`: the built-in rules and its rule folders, selected, with its thresholds."""
    return apply_config(discover(config.rules_dirs), config, filter_rules=filter_rules)
