"""The diff of two results (schema_version 1, kind "diff"): the typed form of the JSON that `ncuadvisor diff` writes.
`DiffResult.to_dict()` is that JSON, `DiffResult.from_dict()` reads it back; what each field means is in the
package's docstring (`ncuadvisor.comparison`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from ncuadvisor.result.record import Record, optional
from ncuadvisor.result.types import Bound, Generator, Ident, TopAction

SCHEMA_VERSION: Final = 1
KIND: Final = "diff"

Status = Literal["regressed", "improved", "unchanged", "added", "removed"]
Verdict = Literal["regressed", "improved", "unchanged"]
ProcessMatching = Literal["per-process", "summed"] | None


@dataclass(kw_only=True)
class Noise(Record):
    """What counts as a change: more than max(threshold × time before, min_change_ns)."""

    threshold: float
    min_change_ns: float
    threshold_source: Literal["default", "option"]


@dataclass(kw_only=True)
class ReportSide(Record):
    """One of the two results compared."""

    name: str
    path: str
    ncu_version: str | None = None
    device: str | None = None
    kernels: int
    results: int
    total_duration_ns: float
    created: str
    warnings: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class TotalChange(Record):
    """The program's GPU time before and after."""

    before_ns: float
    after_ns: float
    change_ns: float
    change: float | None = None  # change_ns ÷ the time before (scaled in per-launch mode)
    status: Status
    before_scaled_ns: float | None = optional()  # per-launch mode: the time before at the results after


@dataclass(kw_only=True)
class Comparison(Record):
    """Totals compared as they are, or per launch when the captures cover different lengths of one program."""

    mode: Literal["total", "per-launch"]
    launch_scale: float | None = None


@dataclass(kw_only=True)
class KernelSide(Record):
    """A kernel's group of kernel entries on one side (several when a name's launch shapes are compared as one)."""

    ids: list[str]
    launches: int
    grid: str | None = None
    block: str | None = None
    shapes: list[str] = field(default_factory=list)  # "grid (..) block (..)" of each entry, when several
    duration_ns: float
    per_launch_ns: float | None = None
    time_share: float
    bound: Bound
    headroom: float | None = None
    at_roofline: bool


@dataclass(kw_only=True)
class FindingChange(Record):
    """One rule's finding on one side of a comparison."""

    rule: str
    category: str
    title: str
    estimated_speedup: float | None = None  # null for program findings
    estimated_saving_ns: float
    fix: str
    location: str | None = None  # file:line
    kernels: list[str] | None = optional()  # program findings: the kernels involved (up to five)
    before_saving_ns: float | None = optional()  # unchanged findings: the saving before
    # resolved findings of a kernel on both sides: the time the kernel saved, measured (time before − time after,
    # per launch in per-launch mode), and that ÷ the saving predicted; a kernel's resolved findings share one change
    measured_saving_ns: float | None = optional()
    measured_fraction: float | None = optional()


@dataclass(kw_only=True)
class FindingChanges(Record):
    """Findings by rule code: only after, only before, on both sides (largest saving first)."""

    new: list[FindingChange] = field(default_factory=list)
    resolved: list[FindingChange] = field(default_factory=list)
    unchanged: list[FindingChange] = field(default_factory=list)


@dataclass(kw_only=True)
class ProcessSide(Record):
    """The process of a kernel on one side."""

    pid: Ident
    rank: Ident | None = optional()


@dataclass(kw_only=True)
class ProcessMatch(Record):
    """The process key a kernel was matched under: its rank, or its place in start order."""

    key: int | None
    label: str  # "rank 1", else "process 1"
    before: ProcessSide | None
    after: ProcessSide | None


@dataclass(kw_only=True)
class CounterCheck(Record):
    """A finding's prediction checked after the change: the counter the fix was to move, before and after, whether it
    reached the predicted bound (`met`), and the kernel's time change beside the one the finding estimated."""

    rule: str
    finding: Literal["resolved", "persists"]  # the rule's finding on the kernel (or in the program) after the change
    metric: str
    label: str
    before: float | None
    after: float | None
    predicted: float | None
    bound: float
    expect: Literal["<=", ">="]
    met: bool | None  # None: the after report does not measure the counter
    kernel_change: float | None
    predicted_change: float | None
    text: str


@dataclass(kw_only=True)
class KernelChange(Record):
    """One kernel compared: matched (by identity, by name alone, or by role where the name changed), added or
    removed."""

    name: str
    demangled: str
    status: Status
    match: Literal["identity", "name", "role"] | None
    match_note: str | None = None
    change_ns: float
    change: float | None = None
    launches_note: str | None = None
    before: KernelSide | None
    after: KernelSide | None
    findings: FindingChanges
    before_scaled_ns: float | None = optional()  # per-launch mode: the time before at the launches after
    process: ProcessMatch | None = optional()  # per-process matching only
    # the predictions of the findings before, checked against the counters after (kernels on both sides)
    counter_checks: list[CounterCheck] | None = optional()


@dataclass(kw_only=True)
class Summary(Record):
    """Counts of kernels by status and of findings new and resolved."""

    regressed: int = 0
    improved: int = 0
    unchanged: int = 0
    added: int = 0
    removed: int = 0
    new_findings: int = 0
    resolved_findings: int = 0
    name_matches: int = 0
    role_matches: int = 0  # kernels whose name changed, matched by their place in the program and their work


def _program_scope(action: FirstFix, _value: object) -> bool:
    return action.scope == "program"


@dataclass(kw_only=True)
class FirstFix(TopAction):
    """The after side's first top action, with the launch shape that tells its kernel from others of its name."""

    kernel_shape: str | None = optional(omit=_program_scope)


@dataclass(kw_only=True)
class DiffResult(Record):
    """The comparison of two results: per kernel and in total, findings new and resolved, the verdict."""

    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["diff"] = KIND
    generator: Generator
    created: str
    noise: Noise
    before: ReportSide
    after: ReportSide
    total: TotalChange
    comparison: Comparison
    process_match: ProcessMatching = None
    kernels: list[KernelChange] = field(default_factory=list)
    program_findings: FindingChanges
    summary: Summary
    verdict: Verdict
    first_fix: FirstFix | None = None
    warnings: list[str] = field(default_factory=list)
    # the predictions of the program findings before (the launches of the kernels each names), checked after the change
    program_counter_checks: list[CounterCheck] | None = optional()
