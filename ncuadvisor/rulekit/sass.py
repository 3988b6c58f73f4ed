"""One reader of SASS instruction text for every rule: the opcode, the operands, the registers an operand names, the
destination and the sources, the base register of an address, and the width of a memory access.

A line as ncu stores it: an optional predicate, the opcode with its modifiers, then comma-separated operands
(`@P0 LDG.E.128 R4, desc[UR4][R2.64+0x10] ;`). Nothing here reads the report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Opcodes that end a straight-line run of instructions (a use of a pending load waits at them).
FLOW_BREAK = ("BRA", "EXIT", "RET", "BAR", "BSYNC", "WARPSYNC", "CALL", "JMP", "BRX", "JMX")
# Opcodes whose first operand is read, not written.
NO_DESTINATION = (
    "ST",
    "RED",
    "BRA",
    "EXIT",
    "RET",
    "BAR",
    "BSYNC",
    "BSSY",
    "WARPSYNC",
    "CALL",
    "JMP",
    "MEMBAR",
    "NOP",
    "DEPBAR",
    "ERRBAR",
    "CCTL",
    "YIELD",
    "BPT",
    "BRX",
    "JMX",
    "ARRIVES",
)
_WIDTH = ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1))
_REG_RE = re.compile(r"(?<![A-Za-z0-9_])R(\d+)(\.64|\.128)?")
_PLAIN_REG = re.compile(r"R\d+")
_ADDRESS = re.compile(r"\[(?:[^\]]*?\])?\[?(R\d+)(?:\.64)?")  # the base register of `desc[UR4][R2.64+0x4]`
_IMMEDIATE = re.compile(r"0x[0-9a-f]+")


@dataclass(frozen=True)
class Instruction:
    """One SASS line taken apart: `@P0 IMAD.WIDE R2, R5, 0x4, R2` -> predicate "@P0", opcode "IMAD.WIDE", operands
    ["R2", "R5", "0x4", "R2"]."""

    predicate: str
    opcode: str
    operands: tuple[str, ...]

    @property
    def writes(self) -> bool:
        """Whether the first operand is a destination (a store, branch or barrier has none)."""
        return not self.opcode.startswith(NO_DESTINATION)

    @property
    def destination(self) -> str | None:
        """The destination register when it is a plain register (`R2`), else None."""
        first = self.operands[0] if self.operands else ""
        return first if self.writes and _PLAIN_REG.fullmatch(first) else None

    @property
    def source_registers(self) -> list[str]:
        """The plain registers the instruction reads (every register operand after the destination)."""
        rest = self.operands[1:] if self.writes else self.operands
        return [o for o in rest if _PLAIN_REG.fullmatch(o)]

    def registers_read(self) -> set[int]:
        """Every register number the instruction reads, 64- and 128-bit pairs and quads expanded."""
        rest = self.operands[1:] if self.writes else self.operands
        return set().union(*(registers(o) for o in rest))

    def immediate(self, index: int) -> int | None:
        """The operand at `index` as a hexadecimal immediate (`0x20` -> 32), else None."""
        if -len(self.operands) <= index < len(self.operands) and _IMMEDIATE.fullmatch(self.operands[index]):
            return int(self.operands[index], 16)
        return None


def parse(sass: str | None) -> Instruction:
    """Take one SASS line apart (an empty line gives an empty opcode)."""
    text = (sass or "").strip().rstrip(";").strip()
    predicate = ""
    if text.startswith("@"):
        predicate, _, text = text.partition(" ")
    parts = text.split(None, 1)
    op, rest = (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")
    operands = tuple(o.strip() for o in rest.split(",")) if rest.strip() else ()
    return Instruction(predicate, op, operands)


def opcode(sass: str | None) -> str:
    """The opcode of one SASS instruction with its modifiers (`@P0 LDG.E.128 R4, [R2.64]` -> `LDG.E.128`)."""
    parts = (sass or "").strip().split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def registers(operand: str) -> set[int]:
    """The register numbers an operand names (`R4.64` -> {4, 5}; `[R2.64+0x10]` -> {2, 3})."""
    out: set[int] = set()
    for m in _REG_RE.finditer(operand):
        base, width = int(m.group(1)), {".64": 2, ".128": 4}.get(m.group(2) or "", 1)
        out.update(range(base, base + width))
    return out


def data_register(operand: str) -> str | None:
    """The register an operand reads, its negation, absolute value and reuse flag stripped (`-|R4|.reuse` -> R4);
    None for RZ, a constant bank (`c[0x0][0x210]`) or an immediate."""
    name = operand.strip().lstrip("-|").split("|")[0].split(".")[0]
    return name if _PLAIN_REG.fullmatch(name) else None


def address_base(sass: str | None) -> str | None:
    """The base register of a memory instruction's address (`LDG.E R0, desc[UR4][R2.64+0x4]` -> R2)."""
    m = _ADDRESS.search((sass or "").split(" ", 1)[-1].replace("desc[", "["))
    return m.group(1) if m else None


def access_bytes(sass: str, size_type: float | None = None) -> int | None:
    """Bytes per thread of a load/store instruction, from its SASS (`LDG.E.128` -> 16, `LDG.E.U8` -> 1, `LDG.E` -> 4);
    `memory_access_size_type` is an enumeration that only matches bits for 32 and up, so the SASS decides."""
    op = (sass or "").split(" ")[0]
    if op.startswith(("LD", "ST", "RED", "ATOM")):
        for suffix, width in _WIDTH:
            if suffix in op:
                return width
        return 4
    if size_type and size_type >= 8:
        return int(size_type) // 8
    return None
