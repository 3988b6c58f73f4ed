"""The `profile` part of a result (`report.profile`): what `ncuadvisor profile` was asked to profile, its phases,
the kernels it chose in rounds and the collection it used. Part of the result's types (`result.types` holds the
rest and names these too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ncuadvisor.result.record import Record, optional


@dataclass(kw_only=True)
class ProfileFilters(Record):
    """What the user asked `ncuadvisor profile` to profile."""

    nvtx_include: list[str] = field(default_factory=list)
    kernel: str | None = None
    launch_skip: int | None = 0
    cache_control: str | None = "all"
    clock_control: str | None = "none"
    target_processes: str | None = "all"


@dataclass(kw_only=True)
class ProfilePhase(Record):
    """One run of ncu."""

    phase: str
    command: list[str]
    wall_s: float
    ncu_exit_code: int | None = None
    program_exit_code: int | None = None
    launches_profiled: int | None = None
    interrupted: bool = False
    replay_passes: int | None = None  # replay passes per profiled launch (the most ncu printed), what a launch costs


@dataclass(kw_only=True)
class EarlyStart(Record):
    """Phase 2's program started while phase 1 ran (`ncu --mode launch`, attached for round 1): whether it was used,
    and why not when it was not."""

    used: bool
    why: str | None = optional()  # why it was not used
    port: int | None = optional()
    launch_command: list[str] | None = optional()
    waited_s: float | None = optional()  # how long round 1 waited for it to reach its first CUDA call
    started_before_attach_s: float | None = optional()  # how long it ran beside phase 1 before the attach


@dataclass(kw_only=True)
class SelectionRound(Record):
    """One phase-2 run: how it named the kernels it was missing and how many it found."""

    round: int
    strategy: str
    kernel_name_base: str
    asked: int
    found: int
    launches_profiled: int | None = None
    # why the round ran when it was not for kernels still missing: "per-instruction data" (`profile.instructions`:
    # the kernels a rule deciding on SourceCounters' data may fire on, profiled again with it)
    purpose: str | None = optional()


@dataclass(kw_only=True)
class Selection(Record):
    """Which kernels a two-phase profile analysed in depth, and how."""

    top: int | None = None
    coverage: float | None = None
    phase1_kernels: int
    phase1_launches: int
    chosen: list[str] = field(default_factory=list)
    chosen_share: float
    # of the chosen kernels, those phase 1 placed near their tensor ceiling (the at-roofline verdict, no phase 2)
    at_tensor_ceiling: list[str] | None = optional()
    rounds: list[SelectionRound] = field(default_factory=list)
    window_launches: int | None = None
    config_launches: int | None = None
    collection: Collection | None = None


@dataclass(kw_only=True)
class Collection(Record):
    """What phase 2 collected on each chosen launch: "declared", the metrics the analysis reads, named one by one
    (`metrics` of them), with the sections that carry per-instruction data; or "sections", the whole analysis
    sections."""

    mode: Literal["declared", "sections"]
    sections: list[str] = field(default_factory=list)
    metrics: int = 0


@dataclass(kw_only=True)
class LaunchMeasurement(Record):
    """The host's launch interval `profile` measured before phase 1, outside ncu (`profile.launchrate`): ns per launch
    enqueued, None where it could not be measured (`why`: no CUDA driver, no GPU)."""

    interval_ns: float | None
    why: str | None = optional()
    samples_ns: list[float] = field(default_factory=list)  # per launch, each repeat, the loop's call cost removed
    call_overhead_ns: float | None = optional()
    launches: int = 0
    device: str | None = optional()


@dataclass(kw_only=True)
class ProfileInfo(Record):
    """How `ncuadvisor profile` made the result: the target, the filters, each run of ncu."""

    mode: Literal["two-phase", "full"]
    target: list[str]
    ncu: str
    ncu_version: str | None = None
    filters: ProfileFilters
    torch_ops: bool = False
    python_lines: bool | None = optional()  # --python-lines: kernels carry the Python line that launched them
    phases: list[ProfilePhase] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)
    partial: bool = False
    selection: Selection | None = optional()
    early_start: EarlyStart | None = optional()  # phase 2's program started while phase 1 ran (profile.early)
    wall_s: float | None = optional()
    launch_interval: LaunchMeasurement | None = optional()  # the host's launch interval, measured before phase 1
