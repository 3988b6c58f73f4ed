"""The processes of a multi-process report: their ranks, kept beside the report in `<report>.processes.json`, and how
they are described and labelled.

A report does not hold the rank of a process (the command line it stores is ncu's own). `ncuadvisor profile`
therefore watches the processes ncu starts (`ncuadvisor.profile.ranks`) and keeps their RANK / LOCAL_RANK /
WORLD_SIZE beside the report, where `ncuadvisor report` reads them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ncuadvisor.reportfile.blocks import ProcessInfo

SIDECAR_SUFFIX = ".processes.json"


def sidecar_path(report: str | os.PathLike[str], suffix: str = SIDECAR_SUFFIX) -> Path:
    """The file kept beside `report` under `suffix` (a compressed copy of the report finds the same file)."""
    p = Path(report)
    if p.suffix in (".xz", ".gz"):
        p = p.with_suffix("")
    return p.with_name(p.name + suffix)


def read_sidecar(report: str | os.PathLike[str]) -> dict[int, dict[str, Any]]:
    """{pid: {"rank": .., "local_rank": .., "world_size": .., "executable": ..}} kept beside a report, or {}."""
    try:
        data = json.loads(sidecar_path(report).read_text())
        return {int(k): v for k, v in data.get("processes", {}).items() if isinstance(v, dict)}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def write_sidecar(report: str | os.PathLike[str], processes: dict[int, dict[str, Any]]) -> Path | None:
    if not processes:
        return None
    path = sidecar_path(report)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps({"processes": {str(k): v for k, v in sorted(processes.items())}}, indent=1))
        os.replace(tmp, path)
        return path
    except OSError:
        return None


def describe(processes: list[ProcessInfo], ranks: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per distinct process (first-result order): pid, host, executable, rank fields when known."""
    seen: dict[int, dict[str, Any]] = {}
    for p in processes:
        if p.pid not in seen:
            entry = asdict(p)
            entry.update({k: v for k, v in ranks.get(p.pid, {}).items() if k in ("rank", "local_rank", "world_size")})
            seen[p.pid] = entry
    return list(seen.values())


def process_label(entry: dict[str, Any] | None) -> str:
    """ "rank 1 (pid 4242)" or "pid 4242"."""
    if not entry:
        return ""
    if entry.get("rank") is not None:
        return f"rank {entry['rank']} (pid {entry['pid']})"
    return f"pid {entry['pid']}"
