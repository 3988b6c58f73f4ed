"""The host's launch interval `ncuadvisor profile` measured (`profile.launchrate`), kept beside each report it places
in `<report>.launch.json`, where `ncuadvisor report` reads it back: no ncu report holds it."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from ncuadvisor.load import processes

SIDECAR_SUFFIX = ".launch.json"


def sidecar_path(report: str | os.PathLike[str]) -> Path:
    """`<report>.launch.json` beside `report` (or beside the report a compressed copy expands to)."""
    return processes.sidecar_path(report, SIDECAR_SUFFIX)


def valid_interval_ns(value: Any) -> float | None:
    """`value` as an interval in ns when it is one (a finite number, more than 0, under 1 ms), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and 0 < value < 1e6 else None


def read_sidecar(report: str | os.PathLike[str]) -> float | None:
    """The interval (ns) kept beside `report`, or None (no file, no measurement in it, or not a number)."""
    try:
        data = json.loads(sidecar_path(report).read_text())
    except (OSError, ValueError):
        return None
    return valid_interval_ns(data.get("interval_ns")) if isinstance(data, dict) else None


def write_sidecar(report: str | os.PathLike[str], measurement: dict[str, Any] | None) -> Path | None:
    """Keep a measured interval beside `report`; nothing when there is none. The path written, or None."""
    if not measurement or valid_interval_ns(measurement.get("interval_ns")) is None:
        return None
    path = sidecar_path(report)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(measurement, indent=1))
        os.replace(tmp, path)
        return path
    except OSError:
        return None
