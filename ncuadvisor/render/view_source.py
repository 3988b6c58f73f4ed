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
    file: Any
    line: Any
    code: Any
    sass: Any
    share: Any
    metric: Any
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

    file: Any
    line: Any
    function: Any
    code: Any
    backward_of: Any
    graph_replay: Any

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


def _basename_line(file: Any, line: Any) -> str:
    return f"{str(file or '').replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}"


def python_line(pl: rt.PythonLine | None) -> PythonLine | None:
    return take(PythonLine, pl) if pl is not None and pl.file and pl.line is not None else None


def source(ref: rt.SourceRefEntry | rt.SourceAnchor | None) -> SourceLine:
    return take(
        SourceLine, ref, toolkit=in_toolkit(getattr(ref, "file", None)), via=_via(getattr(ref, "inlined", None))
    )
