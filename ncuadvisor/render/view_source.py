"""The view's source parts: a finding's source line (with the library code it calls) and the Python line that
launched a kernel (with the CUDA graph replay it ran in), and `take`, which fills a view object from a typed record."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

from ncuadvisor.result import types as rt
from ncuadvisor.units import basename, in_toolkit

T = TypeVar("T")


def take(cls: type[T], record: Any, **given: Any) -> T:
    """A `cls` whose fields are the typed `record`'s attributes of the same names (None for those it lacks, and all
    of them when the record is None), except those `given`."""
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    return cls(**{n: given[n] if n in given else getattr(record, n, None) for n in names})


@dataclass(frozen=True)
class SourceLine:
    file: str | None
    line: int | None
    code: str | None
    sass: str | None
    share: float | None
    metric: str | None
    toolkit: bool = False  # the file is one of the CUDA toolkit's headers, not the user's code
    via: str = ""  # the library code the line's instructions are in: "in atomicAdd (device_atomic_functions.hpp:112)"


def _via(inl: rt.InlinedEntry | None) -> str:
    """Words for a source line's `inlined` entry: the library function it calls and the line ncu showed."""
    if inl is None:
        return ""
    where = f"{basename(inl.file)}:{inl.line}" if inl.file and inl.line else ""
    fn = f"{inl.function}" if inl.function else "library code"
    at = f" ({where})" if where else ""
    if inl.nearest:
        return f"nearest line of yours to {fn}{at}: the report records no call site"
    return f"calls {fn}{at}"


@dataclass(frozen=True)
class PythonLine:
    """The Python line that launched a kernel (`profile --python-lines`)."""

    file: str
    line: int
    function: str
    code: str | None
    backward_of: str | None
    graph_replay: rt.GraphReplay | None

    @property
    def where(self) -> str:
        """`model.py:42`, with `, backward of GeluBackward0` for a kernel autograd ran in backward, and `, replayed
        from a CUDA graph` (`... at train.py:42` when the replay's line is not the kernel's own)."""
        text = _basename_line(self.file, self.line)
        if self.backward_of and self.backward_of != "backward":
            text = f"{text}, backward of {self.backward_of}"
        elif self.backward_of:
            text = f"{text}, in backward"
        if self.graph_replay is None:
            return text
        if self.replayed_here:
            return f"{text}, replayed from a CUDA graph"
        return f"{text}, replayed from a CUDA graph at {self.replayed_at}"

    @property
    def replayed_at(self) -> str | None:
        """`train.py:42`: the line that replayed the CUDA graph the kernel ran in; None when it ran in none."""
        replay = self.graph_replay
        return None if replay is None else _basename_line(replay.file, replay.line)

    @property
    def replayed_here(self) -> bool:
        """Whether the line is the replay's (a kernel of a CUDA graph with no line of its own)."""
        replay = self.graph_replay
        return replay is not None and (replay.file, replay.line) == (self.file, self.line)


def _basename_line(file: str | None, line: int | None) -> str:
    return f"{str(file or '').replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"


def python_line(pl: rt.PythonLine | None) -> PythonLine | None:
    return take(PythonLine, pl) if pl is not None and pl.file and pl.line is not None else None


def source(ref: rt.SourceRefEntry | rt.SourceAnchor | None) -> SourceLine:
    return take(
        SourceLine, ref, toolkit=in_toolkit(getattr(ref, "file", None)), via=_via(getattr(ref, "inlined", None))
    )


INSTRUCTIONS = "inst_executed"
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


@dataclass(frozen=True)
class CitedLine:
    """One line of a kernel's source view: a line its findings cite, with what the report measured there.

    `inst_share` is the line's share of the kernel's executed instructions, `stall` the stall reason with the largest
    share of its samples on this line (`stall_share`), `other` the rest of the per-line metrics the findings carry
    (excess sectors, wavefronts) as (metric, share); each None or empty where no finding carried it."""

    file: str
    line: int
    code: str | None
    via: str
    toolkit: bool
    inst_share: float | None
    stall: str | None
    stall_share: float | None
    other: list[tuple[str, float]]
    rules: list[str]  # the findings that cite the line, in the card's order


def cited_lines(findings: list[rt.FindingEntry]) -> list[CitedLine]:
    """The lines a kernel's findings cite, each once (its measures from every finding that cites it), the line with
    the largest share of instructions (else of stall samples) first; lines without a file or number are left out."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for f in findings:
        for s in f.source:
            if not s.file or s.line is None:
                continue
            row = rows.setdefault(
                (s.file, s.line),
                {"code": s.code, "via": _via(s.inlined), "inst": None, "stall": None, "other": {}, "rules": []},
            )
            row["code"] = row["code"] or s.code
            row["via"] = row["via"] or _via(s.inlined)
            if f.rule not in row["rules"]:
                row["rules"].append(f.rule)
            share = s.share
            if share is None:
                continue
            metric = s.metric or ""
            if metric == INSTRUCTIONS:
                row["inst"] = max(row["inst"] or 0.0, share)
            elif metric.startswith(STALL_PREFIX):
                reason = metric[len(STALL_PREFIX) :].replace("_", " ")
                if row["stall"] is None or share > row["stall"][1]:
                    row["stall"] = (reason, share)
            elif metric:
                row["other"][metric] = max(row["other"].get(metric, 0.0), share)
    out = [
        CitedLine(
            file=file,
            line=line,
            code=r["code"],
            via=r["via"],
            toolkit=in_toolkit(file),
            inst_share=r["inst"],
            stall=r["stall"][0] if r["stall"] else None,
            stall_share=r["stall"][1] if r["stall"] else None,
            other=sorted(r["other"].items()),
            rules=r["rules"],
        )
        for (file, line), r in rows.items()
    ]
    return sorted(out, key=lambda c: (-(c.inst_share or 0.0), -(c.stall_share or 0.0), str(c.file), c.line))
