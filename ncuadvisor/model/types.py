"""The types of the data model: a loaded report (Profile), its results' deep data, kernels and their variants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ncuadvisor.model.table import Table
from ncuadvisor.units import finite, fmt_ns

# Identity columns of Profile.results (metrics are the other columns, named as ncu names them).
ID_COLUMNS = [
    "result_id",  # running index over the whole report
    "range_idx",
    "action_idx",
    "name",  # function name, e.g. "copy_strided"
    "demangled",  # full demangled signature, e.g. "copy_strided(const float *, float *, int, int)"
    "mangled",
    "grid",  # "(x, y, z)"
    "block",
    "nvtx",  # innermost NVTX ranges, " > "-joined, "" when none
    "process",  # process id or "" (multi-process reports)
    "device_id",
]


@dataclass(slots=True)
class Instruction:
    """One instruction's value of a per-instruction metric (Source Counters). `sass` is read before the rules run for
    the kernels whose rules look at instructions; `file` and `line` only after them, for the instructions a finding
    shows (`ncuadvisor.pipeline.locate`): a kernel has thousands of instructions, a finding shows three."""

    pc: int
    value: float
    sass: str | None = None
    file: str | None = None
    line: int | None = None


SourceLine = Instruction  # the name rule files written before Instruction existed use


@dataclass
class ResultDetail:
    """Non-scalar data of one result: per-instruction metrics and NCU's own rule results."""

    result_id: int
    # metric name -> one Instruction per instruction (pc) with a non-zero value, in the report's order
    per_instruction: dict[str, list[Instruction]] = field(default_factory=dict)
    ncu_rules: list[dict[str, Any]] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    # the source file of the first instruction listed (it tells a Triton kernel's generated .py from CUDA code)
    first_file: str | None = None
    # (file, line) of the kernel's entry: the lowest pc of its longest per-instruction list
    entry: tuple[str, int] | None = None
    entry_pc: int | None = None
    # executed warp instructions per SASS opcode with its modifiers (`MUFU.EX2`, `I2F.U32.RP`), the report's
    # instanced `sass__inst_executed_per_opcode_with_modifier_all`; None where the report has no such metric
    opcodes: dict[str, float] | None = None
    # the `memory_access_type` of each listed instruction that has one (2 loads, 6 LDGSTS, 4 stores, 8 atomics);
    # None where the report has no such metric
    access_types: dict[int, float] | None = None


@dataclass
class Profile:
    """One loaded report."""

    path: str
    results: Table  # one row per result (`model.table`)
    device: dict[str, Any]
    ncu_version: str | None = None
    command_line: str | None = None
    reader_version: str | None = None
    clocks_locked: bool | None = None  # ncu locked the clocks (--clock-control base, its default); None: not said
    details: dict[int, ResultDetail] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # one entry per process when the report holds several (pid, host, executable, rank when known), else empty
    processes: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Variant:
    """Launches of a kernel group whose duration sets them apart from the launch the group is analysed on: another
    problem size or call site of the same kernel and launch shape (an ATen copy that transposes at one call site
    and not at another, one cuBLAS kernel at two K's), analysed on a launch of its own."""

    result_ids: list[int]
    representative: int  # the launch of median duration among these
    launches: int
    duration_ns: float
    launch_min_ns: float
    launch_max_ns: float


@dataclass
class Kernel:
    """Results of the same kernel with the same launch shape, grouped: the unit the analysis talks about."""

    key: str
    name: str
    demangled: str
    mangled: str
    grid: str
    block: str
    result_ids: list[int]
    representative: int  # result whose deep metrics stand for the group (median duration)
    launches: int
    duration_ns: float  # total over launches
    nvtx: str = ""
    process: str = ""
    launch_min_ns: float = 0.0  # the shortest and the longest launch: far apart when one name and launch shape
    launch_max_ns: float = 0.0  # holds several problem sizes or call sites, while the analysis looks at one launch
    variants: list[Variant] = field(default_factory=list)  # launches of another duration, analysed on their own

    @property
    def analysed_launches(self) -> int:
        """The launches the group's own analysis stands for: all of them but its variants'."""
        return self.launches - sum(v.launches for v in self.variants)

    @property
    def analysed_ns(self) -> float:
        return self.duration_ns - sum(v.duration_ns for v in self.variants)

    @property
    def per_launch_ns(self) -> float:
        return self.duration_ns / self.launches if self.launches else 0.0

    @property
    def launch_note(self) -> str | None:
        """Said when the launches of this group differ by more than LAUNCH_SPREAD in duration: one name and launch
        shape then holds several problem sizes or call sites (a cuBLAS kernel at two K's, an ATen copy that transposes
        at one call site and not at another), and the deep metrics and findings come from one of its launches."""
        if self.variants:
            return spread_note(
                self.launch_min_ns,
                self.launch_max_ns,
                f"{self.analysed_launches} of the {self.launches} launches are analysed here, the other "
                "sizes as variants of their own",
            )
        if self.launches < 2 or self.launch_min_ns <= 0 or self.launch_max_ns <= LAUNCH_SPREAD * self.launch_min_ns:
            return None
        return spread_note(self.launch_min_ns, self.launch_max_ns, "the analysis looks at one launch")


def spread_note(shortest_ns: Any, longest_ns: Any, what: str) -> str:
    """The note of a kernel group whose launches differ in duration (`Kernel.launch_note`), ending in what was
    analysed of them."""
    return (
        f"launches take {fmt_ns(shortest_ns)} to {fmt_ns(longest_ns)}: several problem sizes or call sites share "
        f"this name and launch shape; {what}"
    )


LAUNCH_SPREAD = 1.5  # longest ÷ shortest launch of a kernel group above which its launches are not alike


def num(value: Any) -> float | None:
    """A metric value as a finite float, or None when it is missing or not a number."""
    return finite(value)
