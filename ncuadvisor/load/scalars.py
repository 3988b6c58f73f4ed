"""The scalar side of a report as a `Profile`: every result's metrics (`ReportReader.results`), the device, the
processes, and the warnings of a damaged or cut-short file. Deep data is read separately (`ReportReader.details`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ncuadvisor.errors import InputError
from ncuadvisor.load.reader import ReportReader
from ncuadvisor.model import Profile


def read_results(reader: ReportReader, metrics: Iterable[str]) -> Profile:
    """The scalar side of a report as a Profile: every result's metrics, the device, the processes, and a warning
    when the file is cut short. Deep data is read separately (`ReportReader.details`)."""
    frame = reader.results(metrics)
    profile = Profile(
        path=str(reader.path),
        results=frame,
        device=reader.device(),
        ncu_version=reader.ncu_version,
        command_line=reader.command_line,
        reader_version=reader.reader_version,
        clocks_locked=reader.clocks_locked,
    )
    # a result that reads back without a name is not whole (a damaged payload the structural check let through):
    # it is dropped and counted, never analysed as a kernel "nan" with 0 ns
    named = frame.where(lambda row: _named(row["name"]))
    unnamed = len(frame) - len(named)
    if unnamed:
        if named.empty:
            raise InputError(f"{reader.path}: no whole kernel result in the report ({unnamed} without a name)")
        frame = profile.results = named
    found = reader.integrity
    if found.damaged or unnamed:
        lost = found.summary()
        if unnamed:
            lost = "; ".join(
                x for x in (lost, f"{unnamed} result{'s' if unnamed != 1 else ''} without a name left out") if x
            )
        profile.warnings.insert(
            0,
            f"partial: the report file is {'damaged' if unnamed else found.state}: this analyses its {len(frame)} "
            f"whole results; {lost}",
        )
    _attach_processes(profile, reader)
    return profile


def _named(name: Any) -> bool:
    """Whether a result's name column holds a name (not a gap, not empty)."""
    return name is not None and not (isinstance(name, float) and name != name) and str(name) != ""


def _attach_processes(profile: Profile, reader: ReportReader) -> None:
    """Several processes in one report (ncu --target-processes all): the pid of each result goes into the `process`
    column (kernels are grouped per process) and the processes, with their ranks when `profile` recorded them, into
    `profile.processes`. One process: nothing changes."""
    from ncuadvisor.load.processes import describe, read_sidecar

    procs = reader.processes()
    frame = profile.results
    if not procs or len({p.pid for p in procs}) < 2:
        return
    if len(procs) != len(frame):
        profile.warnings.append(
            f"the report holds several processes, but their {len(procs)} results do not line up with the "
            f"{len(frame)} that ncu_report lists: kernels are not split by process"
        )
        return
    frame.set_column("process", [str(procs[int(rid)].pid) for rid in frame["result_id"]])
    profile.processes = describe(procs, read_sidecar(profile.path))
