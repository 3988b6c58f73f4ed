"""Where a profile session's reports go: next to the output (`<stem>.phase1.ncu-rep`, `<stem>.ncu-rep`,
`<stem>.round2.ncu-rep`, ...; ncu 2026.3+ writes `.ncu-repz`), never over an existing file without `--force`."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ncuadvisor.errors import OutputError
from ncuadvisor.load import launchinterval, processes
from ncuadvisor.profile.selection import MAX_ROUNDS


def report_base(output: Path) -> Path:
    """`step.html` -> `step` (reports are `step.phase1.ncu-rep`, `step.ncu-rep`, `step.round2.ncu-rep`)."""
    return output.with_suffix("") if output.suffix else output


def planned_reports(base: Path, full: bool) -> list[Path]:
    names = (
        [f"{base.name}.ncu-rep"]
        if full
        else [f"{base.name}.phase1.ncu-rep", f"{base.name}.ncu-rep"]
        + [f"{base.name}.round{r}.ncu-rep" for r in range(2, MAX_ROUNDS + 1)]
    )
    out = []
    for n in names:
        out += [base.parent / n, base.parent / (n + "z")]
    return out


def place_report(src: Path, dest_stem: Path, force: bool) -> Path:
    """Move ncu's report from the private folder to `<dest_stem><.ncu-rep|-repz>`; over a file only with --force."""
    dest = dest_stem.parent / (dest_stem.name + src.suffix)
    if dest.exists() and not force:
        raise OutputError(f"{dest}: already exists (pass --force to overwrite it)")
    try:
        os.replace(src, dest)
    except OSError:
        try:
            shutil.move(str(src), str(dest))
        except OSError as exc:
            raise OutputError(f"{dest}: cannot write ({exc.strerror or exc})") from exc
    return dest


def write_sidecars(report: Path, procs: dict[int, dict[str, Any]], launch: Any) -> list[Path]:
    """What is kept beside a placed report for `ncuadvisor report`: the ranks of its processes
    (`<report>.processes.json`) and the host's launch interval measured before phase 1 (`<report>.launch.json`,
    `launch` a `profile.launchrate.LaunchRate`). The files written."""
    kept = [
        processes.write_sidecar(report, procs),
        launchinterval.write_sidecar(report, asdict(launch) if launch is not None else None),
    ]
    return [p for p in kept if p is not None]
