"""The contract between the engine and a rule file (ours in rules/, or a user's own folder).

A rule file defines one subclass of `Rule` (one kernel at a time) or `ProgramRule` (every kernel and launch). It
declares the metrics it needs as data (`requires`, `optional`, `per_instruction`: names from `ncuadvisor.metrics`);
the engine reads them once for every kernel, skips the rule (and says why) when the report lacks them, and calls
`check` with a `KernelContext`. Its thresholds are named (`thresholds`), its fix per kernel language is data
(`fixes`, `Fix`), and its class docstring is its documentation, in the sections of `DOC_SECTIONS`.

A rule file imports everything it uses from `ncuadvisor.rulekit` (this contract, the performance models of
`rulekit.models`, the SASS reader of `rulekit.sass`, the metric names of `ncuadvisor.metrics`).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

from ncuadvisor.analysis.language import written_in
from ncuadvisor.analysis.roofline import Roofline
from ncuadvisor.metrics import Device, LaunchStats
from ncuadvisor.model import Instruction, Kernel, num
from ncuadvisor.result.types import (
    EvidenceEntry,
    FindingEntry,
    InlinedEntry,
    KernelEntry,
    LaunchInterval,
    ProgramFindingEntry,
    SourceRefEntry,
)

if TYPE_CHECKING:  # the host timeline's model is built only with a host trace (`analysis.walltime`)
    from ncuadvisor.analysis.walltime import HostModel

CATEGORIES = (
    "at-roofline",
    "coalescing",
    "bank-conflicts",
    "vectorize",
    "tiling",
    "tensor-cores",
    "occupancy",
    "launch-config",
    "divergence",
    "atomics",
    "warp-primitives",
    "local-memory",
    "latency",
    "launch-overhead",
    "fusion",
    "dynamic-shapes",
    "precision",
    "cache",
    "instruction-overhead",
)

DOC_SECTIONS = (
    "What it detects",
    "Why it costs time",
    "Example",
    "Use instead",
    "Speedup estimate",
    "False positives",
)

CODE_RE = re.compile(r"^[A-Z]{2,5}\d{3}$")

# The kernel languages a fix can be written for (engine.kernel_language decides a kernel's). "cuda" is the default:
# a kernel whose language a rule has no fix for gets the rule's CUDA fix.
LANGUAGES = ("cuda", "triton", "pytorch", "library")
# The languages other than CUDA C that compile to the same PTX, told by a kernel's names (`analysis.language.
# written_in`): such a kernel's language is "cuda" (the rules for CUDA code run on it), and a rule that holds a fix
# under its key (`fixes = {"cuda": ..., "julia": ...}`) gives that one instead of the CUDA text.
WRITTEN_IN = ("julia", "numba", "cupy")

# A field of a fix template: `{name}` or `{name:format_spec}`, as in str.format. Any other brace is text, so C++ and
# Python code in a template needs no escaping.
_FIELD_RE = re.compile(r"\{([A-Za-z_]\w*)(?::([^{}]*))?\}")


@dataclass(frozen=True)
class Fix:
    """What to change, in one kernel language: the advice (`text`) and a code change (`code`, may be empty).

    Both are templates: `{name}` and `{name:.0f}` are filled with the values the rule passes for the finding (see
    `Rule.fix_for`); every other brace is literal."""

    text: str
    code: str = ""

    def fields(self) -> list[str]:
        """The names of the template's fields, in order of appearance, each once."""
        found = [m.group(1) for m in _FIELD_RE.finditer(self.text + "\n" + self.code)]
        return list(dict.fromkeys(found))

    def plain(self) -> Fix:
        """The template with each field shown as `{name}`, without its format spec: what the docs print."""

        def bare(m: re.Match[str]) -> str:
            return "{" + m.group(1) + "}"

        return Fix(text=_FIELD_RE.sub(bare, self.text), code=_FIELD_RE.sub(bare, self.code))

    def fill(self, **values: Any) -> Fix:
        """The fix with its fields filled in; a field without a value is a KeyError (a bug of the rule)."""

        def one(m: re.Match[str]) -> str:
            return format(values[m.group(1)], m.group(2) or "")

        return Fix(text=_FIELD_RE.sub(one, self.text), code=_FIELD_RE.sub(one, self.code))


class _FixTable:
    """The fixes of a rule as class data, shared by `Rule` and `ProgramRule`.

    `fixes` maps a language to its Fix. A rule whose advice depends on what it found declares the other situations
    in `fixes_when`: a short phrase (shown in the docs as "when ...") -> the fixes of that situation, which replace
    `fixes` for the languages they name."""

    fixes: ClassVar[Mapping[str, Fix]] = {}
    fixes_when: ClassVar[Mapping[str, Mapping[str, Fix]]] = {}

    @classmethod
    def fix_in(cls, language: str, when: str | Iterable[str] = (), **fields: Any) -> Fix:
        """The fix for `language` (else the CUDA one, else the first declared), in the situations `when` (applied in
        order, a later one winning), with its template fields filled from `fields`."""
        table: dict[str, Fix] = dict(cls.fixes)
        for situation in [when] if isinstance(when, str) else when:
            table.update(cls.fixes_when[situation])
        fix = table.get(language) or table.get("cuda") or next(iter(table.values()), None)
        if fix is None:
            raise LookupError(f"rule {cls.__name__} declares no fix")
        return fix.fill(**fields)

    @classmethod
    def has_fix(cls, language: str, when: str | Iterable[str] = ()) -> bool:
        """Whether the rule holds a fix of its own for `language` in the situations `when`."""
        situations = [when] if isinstance(when, str) else list(when)
        return language in cls.fixes or any(language in cls.fixes_when[s] for s in situations)


# What a finding rests on and the source lines it points at: the result's own records (`Evidence(metric, value,
# threshold, label, unit)`, `SourceRef(file, line, code, sass, metric, value, share, inlined)`; `Inlined`: the library code a line's instructions are in).
Evidence = EvidenceEntry
SourceRef = SourceRefEntry
Inlined = InlinedEntry


@dataclass
class SourceSelection:
    """The source lines a finding points at, chosen by a rule (`KernelContext.top_lines`) and placed after the rules
    ran (`ncuadvisor.pipeline.locate`): the instructions that qualify, their metric and its total over the kernel;
    their lines are those with the largest share of the total (instructions merged per line), at least `min_share`
    of it, at most `limit` of them. Iterating gives the instructions, largest value first."""

    metric: str
    total: float
    candidates: list[Instruction]
    limit: int = 3
    min_share: float = 0.05

    def _by_value(self) -> list[Instruction]:
        return sorted(self.candidates, key=lambda e: -e.value)

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self._by_value())

    def __getitem__(self, index: Any) -> Any:
        return self._by_value()[index]

    def __len__(self) -> int:
        return len(self.candidates)


@dataclass
class Finding(FindingEntry):
    """What a kernel rule emits: the result's `FindingEntry` (its fields: rule, category, title, message, fix,
    fix_code, estimated_speedup, speedup_model, speedup_type, confidence, evidence, source, changes_floor), except
    that `source` may be a `SourceSelection` (`KernelContext.top_lines`), whose lines are placed after the rules ran
    (`ncuadvisor.pipeline.locate`). `entry()` is the finding as the result holds it."""

    source: list[SourceRef] | SourceSelection = field(default_factory=list)  # type: ignore[assignment]
    # the rules whose fix this one's fixed kernel applies too, and that come first where they fire on the kernel: the
    # engine then counts this estimate on their fixed kernel (`engine.counted_after`); not part of the result
    counted_after: tuple[str, ...] = ()

    def entry(self) -> FindingEntry:
        """The finding as the result's `FindingEntry`: its fields as they are, its source lines as placed (none
        while a selection was never placed)."""
        values = {f.name: getattr(self, f.name) for f in fields(FindingEntry)}
        values["source"] = list(self.source) if isinstance(self.source, list) else []
        return FindingEntry(**values)


class KernelContext:
    """What a rule sees of one kernel: its representative result's metrics, its roofline and its source data."""

    def __init__(
        self,
        kernel: Kernel,
        metrics: dict[str, Any],
        roofline: Roofline,
        device: dict[str, Any],
        per_instruction: dict[str, list[Instruction]],
        language: str,
        time_share: float,
        sections: Iterable[str] = (),
    ):
        self.kernel = kernel
        self.metrics = metrics
        self.roofline = roofline
        self.device = device
        self._per_instruction = per_instruction
        self.language = language  # "cuda" | "triton" | "library"
        self.time_share = time_share
        self.sections = set(sections)
        # the H200 calibrations a shared model used for this kernel on another architecture (`models.streaming_ns`):
        # the engine says them in the speedup model of the rule's findings
        self.calibrations: set[str] = set()
        # the `requires` metrics the report lacks while a rule runs on its weaker evidence (`Rule.weak_evidence`);
        # empty on its main path
        self.weak: list[str] = []

    def m(self, name: str) -> float | None:
        """A metric of the representative result as a float, None when the report lacks it."""
        return num(self.metrics.get(name))

    def has(self, *names: str) -> bool:
        return all(self.m(n) is not None for n in names)

    def per_instruction(self, name: str) -> list[Instruction]:
        return self._per_instruction.get(name, [])

    @property
    def written_in(self) -> str | None:
        """The language (`WRITTEN_IN`) a CUDA-language kernel was written in, told by its names; None for CUDA C and
        for the other kernel languages."""
        if self.language != "cuda":
            return None
        return written_in(self.kernel.name, self.kernel.demangled)

    @property
    def is_triton(self) -> bool:
        return self.language == "triton"

    @property
    def sm_count(self) -> int:
        return int(self.device.get("sm_count") or self.m(Device.SM_COUNT) or 0)

    @property
    def block_size(self) -> int:
        return int(self.m(LaunchStats.BLOCK_SIZE) or 0)

    def top_lines(
        self,
        name: str,
        limit: int = 3,
        min_share: float = 0.05,
        sass_filter: Any = None,
        memory_only: bool = False,
        pcs: set[int] | None = None,
    ) -> SourceSelection:
        """The source lines with the largest share of a per-instruction metric, instructions merged per line (placed
        after the rules ran: `SourceSelection`). `memory_only` looks only at load/store/atomic instructions (the
        `memory_type` metric's)."""
        entries = self.per_instruction(name)
        total = sum(e.value for e in entries) or 0.0
        if memory_only:
            memory = {e.pc for e in self.per_instruction("memory_type")}
            entries = [e for e in entries if e.pc in memory]
        if pcs is not None:
            entries = [e for e in entries if e.pc in pcs]
        if sass_filter is not None:
            entries = [e for e in entries if sass_filter(e.sass or "")]
        if total <= 0:
            entries = []
        return SourceSelection(metric=name, total=total, candidates=entries, limit=limit, min_share=min_share)


class Rule(_FixTable):
    """Base class of a per-kernel rule. Subclasses set the class attributes and implement `check`."""

    code: ClassVar[str] = ""
    slug: ClassVar[str] = ""
    category: ClassVar[str] = ""
    title: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()  # metrics that must be present, else the rule is skipped
    optional: ClassVar[tuple[str, ...]] = ()  # metrics read when present
    # the languages whose kernels `profile` collects `optional` for (empty: every language of the rule); a metric
    # that costs replay passes and only refines an estimate is left out of the collection for the others
    optional_languages: ClassVar[tuple[str, ...]] = ()
    # the rule's weakest evidence (ncu's basic set, a custom set): when the report lacks a metric of `requires` but
    # has one of these, the rule still runs, `k.weak` names what is missing, and the engine marks its findings low
    # confidence and names the sections that would confirm them (`engine._run`)
    weak_evidence: ClassVar[tuple[str, ...]] = ()
    per_instruction: ClassVar[tuple[str, ...]] = ()  # per-instruction metrics for source lines
    # the rule reads `per_instruction` only to place its finding on source lines, and decides without it: a kernel
    # without line tables (ATen's, a library's) needs no per-instruction data for it (`engine.instructions_wanted`)
    lines_only: ClassVar[bool] = False
    thresholds: ClassVar[dict[str, float]] = {}
    aliases: ClassVar[tuple[str, ...]] = ()  # old codes of a renamed rule
    # the fix is one setting for the whole program (TF32 for every FP32 library call): "where to start" lists the
    # kernels whose first fix it is as one entry, their savings summed
    switch: ClassVar[bool] = False
    # kernel languages the rule's advice applies to: a code change is no advice for a cuBLAS or ATen kernel
    languages: ClassVar[tuple[str, ...]] = ("cuda", "triton")
    # a fallback runs only on a kernel that no other rule gave a finding or a verdict (GEN001: the mechanism the
    # limiter, the stalls and the instruction mix name, where no specific rule spoke)
    fallback: ClassVar[bool] = False
    origin: str = "builtin"  # set by the engine: "builtin" or the user folder the rule came from

    def check(self, k: KernelContext) -> Finding | list[Finding] | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def sass_when(self, k: KernelContext) -> bool | None:
        """Optional, for a rule that reads instructions (`per_instruction`): whether it can fire on the kernel, judged
        before any instruction is read, on `k.metrics`, `k.roofline`, `k.kernel`'s names and `k.language` alone (no
        per-instruction data, no time share). False must mean that `check` returns None: call it first in `check`
        (`if not self.sass_when(k): return None`). Where every rule of a kernel's language that reads instructions
        overrides it, the kernel is disassembled only when one of them says True. None (this default): no gate."""
        return None

    def fix_for(self, k: KernelContext, when: str | Iterable[str] = (), **fields: Any) -> Fix:
        """The fix in the kernel's language (`fixes`, else its CUDA fix), in the situations `when` (`fixes_when`),
        its template fields filled from `fields`: `self.finding(fix=self.fix_for(k, kind=kind), ...)`. A CUDA-language
        kernel written in Julia, Numba or CuPy (`k.written_in`) gets the rule's fix in that language where it has one."""
        written = k.written_in
        if written is not None and self.has_fix(written, when):
            return self.fix_in(written, when, **fields)
        return self.fix_in(k.language, when, **fields)

    def finding(self, **kw: Any) -> Finding:
        """A Finding with this rule's code, category and title filled in; `fix` may be a `Fix` (its text and code)."""
        kw.setdefault("title", self.title)
        return Finding(rule=self.code, category=self.category, **_unpack_fix(kw))

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        return parse_doc(cls.__doc__ or "")


def _unpack_fix(kw: dict[str, Any]) -> dict[str, Any]:
    fix = kw.get("fix")
    if isinstance(fix, Fix):
        kw["fix"], kw["fix_code"] = fix.text, fix.code
    return kw


def parse_doc(doc: str) -> dict[str, str]:
    """Split a rule docstring into its sections ('What it detects:' ... ), keyed by section title."""
    sections: dict[str, str] = {}
    current = "summary"
    lines: list[str] = []
    pattern = re.compile(r"^\s*(" + "|".join(re.escape(s) for s in DOC_SECTIONS) + r")\s*:\s*$")
    for raw in doc.expandtabs().splitlines():
        match = pattern.match(raw)
        if match:
            sections[current] = _dedent("\n".join(lines))
            current, lines = match.group(1), []
        else:
            lines.append(raw)
    sections[current] = _dedent("\n".join(lines))
    return {k: v for k, v in sections.items() if v}


def _dedent(text: str) -> str:
    return textwrap.dedent(text).strip()


# What a program rule emits: the result's own record (rule, category, title, message, fix, kernels, kernel_ids,
# estimated_saving_ns, saving_model, speedup_type, confidence, evidence, fix_code).
ProgramFinding = ProgramFindingEntry


class ProgramContext:
    """What a program rule sees: every kernel entry (`KernelEntry`, with its roofline and findings, typed as the result
    has it) and every launch in order. The entries are the result's own: a program rule reads them, never writes."""

    def __init__(
        self,
        kernels: list[KernelEntry],
        launches: list[dict[str, Any]],
        device: dict[str, Any],
        total_ns: float,
        host: HostModel | None = None,
        launch_interval: LaunchInterval | None = None,
    ):
        self.kernels = kernels  # the result's kernel entries, by total time
        self.by_id = {k.id: k for k in kernels}
        # one dict per result in launch order: {"result_id", "kernel_id", "stream", "duration_ns",
        #                                       "dram_read_bytes", "dram_write_bytes"}
        self.launches = launches
        self.device = device
        self.total_ns = total_ns
        # the host timeline measured beside the report, matched to these kernels (`--host-trace`): None without one
        self.host = host
        # the host's launch interval (ns per launch issued, and its source: `profile` measures it where the program
        # runs, `report --launch-interval-us` gives it): None when unknown; no ncu report holds it
        self.launch_interval = launch_interval
        # kernel id -> the code of the rule that owns the kernel (`ProgramRule.owns`): filled by the engine, which runs
        # the owning rules first; the other program rules leave these kernels out of what they count
        self.owned: dict[str, str] = {}


class ProgramRule(_FixTable):
    """Base class of a program-level rule: `check_program` returns ProgramFindings; `fix_in(language, ...)` picks a
    fix by the language of the kernels a finding is about."""

    code: ClassVar[str] = ""
    slug: ClassVar[str] = ""
    category: ClassVar[str] = ""
    title: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()  # metrics read for every result (may be absent: rules degrade)
    optional: ClassVar[tuple[str, ...]] = ()
    per_instruction: ClassVar[tuple[str, ...]] = ()
    thresholds: ClassVar[dict[str, float]] = {}
    aliases: ClassVar[tuple[str, ...]] = ()
    # the rule's findings own the kernels they name (one owner per kernel): it runs before the other program rules,
    # which see those kernels in `ProgramContext.owned` and leave them out, and the kernel findings on them are
    # suppressed (the program finding's saving is their time), so no time is claimed twice
    owns: ClassVar[bool] = False
    origin: str = "builtin"

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:  # pragma: no cover - abstract
        raise NotImplementedError

    def finding(self, **kw: Any) -> ProgramFinding:
        """A ProgramFinding with this rule's code, category and title; `fix` may be a `Fix` (its text and code)."""
        kw.setdefault("title", self.title)
        return ProgramFinding(rule=self.code, category=self.category, **_unpack_fix(kw))

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        return parse_doc(cls.__doc__ or "")
