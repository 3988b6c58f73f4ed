"""The CUDA modules (cubins, ELF) a report embeds, and their line tables with the compiler's inlining record: which
function an instruction's line was inlined from and the line it was called at. `ncu_report` gives an instruction's
innermost line only (`source_info`: a file and a line), so an `atomicAdd` shows as `device_atomic_functions.hpp:112`;
the call site in the user's file is in the module's `.debug_line`, written when the program is built with
`-lineinfo` (or `-G`).

ptxas writes DWARF (version 2) line programs, one sequence per function, its start relocated to the function's
symbol, and marks inlined code with an extended opcode of its own (0x90): two ULEB128 numbers, the row of the same
sequence the code was inlined at (counted from 1; 0: not inlined) and the offset in `.debug_str` of the inlined
function's (mangled) name. That state holds for the rows that follow until the next such opcode, like the file.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

ELF_MAGIC = b"\x7fELF\x02\x01"  # 64-bit, little-endian
EM_CUDA = 190
SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 2, 4, 8
STT_SECTION, STT_FUNC = 3, 2
DW_LNE_END_SEQUENCE, DW_LNE_SET_ADDRESS, DW_LNE_NV_INLINED_CALL = 1, 2, 0x90


@dataclass(frozen=True)
class Frame:
    """One level of an instruction's inlining: a line, and the function it is in (mangled; None: the function the
    sequence describes, the kernel itself)."""

    file: str
    line: int
    function: str | None


@dataclass(frozen=True)
class Row:
    address: int
    file: str
    line: int
    context: int  # the row (from 1) of this sequence the code was inlined at; 0 when it was not
    function: str | None  # the inlined function's mangled name, where context is not 0


class LineTable:
    """The rows of one function's line sequence, in program order."""

    def __init__(self, function: str, rows: list[Row], size: int):
        self.function, self.rows, self.size = function, rows, size
        self._addresses = [r.address for r in rows]

    def row_at(self, offset: int) -> int | None:
        """Index of the row holding `offset`: the last address at or before it, and of several rows at that address
        (a call site, then the first line of the code inlined there) the first, as `ncu_report` reads them."""
        i = bisect_right(self._addresses, offset) - 1
        if i < 0:
            return None
        while i > 0 and self._addresses[i - 1] == self._addresses[i]:
            i -= 1
        return i

    def frames(self, offset: int) -> list[Frame]:
        """The inlining chain of the instruction at `offset` in the function, innermost first: its line, then the
        line each inlined function was called at, ending in the function's own code. Empty outside the table."""
        i = self.row_at(offset)
        return self.chain(i) if i is not None else []

    def chain(self, i: int | None) -> list[Frame]:
        """The inlining chain from row `i` out (`frames`)."""
        out: list[Frame] = []
        while i is not None and len(out) < 64:
            row = self.rows[i]
            out.append(Frame(row.file, row.line, row.function if row.context else None))
            # the call site is an earlier row of the same sequence; anything else is not a chain to follow
            i = row.context - 1 if 0 < row.context <= i else None
        return out


def _leb(buf: bytes, pos: int, signed: bool = False) -> tuple[int, int]:
    """The LEB128 number at `pos` (unsigned, or `signed`) and the position after it."""
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (value - (1 << shift) if signed and b & 0x40 else value), pos


def _uleb(buf: bytes, pos: int) -> tuple[int, int]:
    return _leb(buf, pos)


def _sleb(buf: bytes, pos: int) -> tuple[int, int]:
    return _leb(buf, pos, signed=True)


def _cstr(buf: bytes, pos: int) -> tuple[str, int]:
    end = buf.index(b"\0", pos)
    return buf[pos:end].decode("utf-8", "replace"), end + 1


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    offset: int
    size: int
    link: int
    info: int


def _section_table(buf: Any, at: int, size: int) -> tuple[int, list[tuple[int, ...]]] | None:
    """(where the section header table ends, its raw entries) of the 64-bit little-endian ELF at buf[at:at+size]
    (bytes, an mmap or a `blocks.FileView`); None when the table is not one this reader can walk or lies outside."""
    head = bytes(buf[at : at + 64])
    if len(head) < 64 or head[:6] != ELF_MAGIC:
        return None
    shoff = struct.unpack_from("<Q", head, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
    end = shoff + shentsize * shnum
    if shentsize != 64 or not 0 < shnum < 1 << 16 or end > size:
        return None
    table = bytes(buf[at + shoff : at + end])
    return end, [struct.unpack_from("<IIQQQQIIQQ", table, i * 64) for i in range(shnum)]


def elf_sections(buf: Any, at: int, size: int) -> list[_Section] | None:
    """The named sections of the 64-bit little-endian ELF at buf[at:at+size] (bytes, an mmap or a
    `blocks.FileView`), reading only its headers and section names; None when it is not one this reader can walk."""
    found = _section_table(buf, at, size)
    if found is None:
        return None
    raw = found[1]
    shstrndx = struct.unpack_from("<H", bytes(buf[at + 0x3E : at + 0x40]))[0]
    if shstrndx >= len(raw) or raw[shstrndx][4] + raw[shstrndx][5] > size:
        return None
    names = bytes(buf[at + raw[shstrndx][4] : at + raw[shstrndx][4] + raw[shstrndx][5]])
    out = []
    for r in raw:
        if r[0] >= len(names):
            return None
        end = names.find(b"\0", r[0])
        name = names[r[0] : end if end >= 0 else len(names)].decode("utf-8", "replace")
        out.append(_Section(name, r[1], r[4], r[5], r[6], r[7]))
    return out


class Cubin:
    """One embedded module: its function symbols and, on demand, their line tables."""

    def __init__(self, image: bytes):
        self.image = image
        sections = elf_sections(image, 0, len(image))
        if sections is None:
            raise ValueError("not an ELF64 image this reader can walk")
        self.sections = sections
        self.by_name = {s.name: s for s in self.sections}
        self.symbols = self._symbols()
        self.functions = {name for name, kind, _ in self.symbols if kind == STT_FUNC}
        self._tables: dict[str, list[LineTable]] | None = None

    def data(self, name: str) -> bytes:
        s = self.by_name.get(name)
        return self.image[s.offset : s.offset + s.size] if s and s.type != SHT_NOBITS else b""

    def _symbols(self) -> list[tuple[str, int, int]]:
        """(name, type, section index) of each symbol; a section symbol is named after its section."""
        tab = next((s for s in self.sections if s.type == SHT_SYMTAB), None)
        if tab is None or tab.link >= len(self.sections):
            return []
        strings = self.sections[tab.link]
        out = []
        for i in range(tab.size // 24):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", self.image, tab.offset + i * 24)
            kind = st_info & 0xF
            if kind == STT_SECTION and st_shndx < len(self.sections):
                name = self.sections[st_shndx].name.removeprefix(".text.")
            else:
                name = _cstr(self.image, strings.offset + st_name)[0] if st_name else ""
            out.append((name, kind, st_shndx))
        return out

    def tables(self) -> dict[str, list[LineTable]]:
        """The line table of each function that has one, by mangled name."""
        if self._tables is None:
            self._tables = {}
            try:
                for table in self._line_tables():
                    self._tables.setdefault(table.function, []).append(table)
            except (IndexError, ValueError, struct.error):
                pass  # a line program this reader does not follow: the rows read so far stand
        return self._tables

    def _relocated(self) -> dict[int, str]:
        """Offset in .debug_line -> the symbol relocated there (the function a sequence's start address names)."""
        out = {}
        for s in self.sections:
            if s.type == SHT_RELA and s.name == ".rela.debug_line":
                for i in range(s.size // 24):
                    r_offset, r_info, _ = struct.unpack_from("<QQq", self.image, s.offset + i * 24)
                    sym = r_info >> 32
                    if sym < len(self.symbols):
                        out[r_offset] = self.symbols[sym][0]
        return out

    def _line_tables(self) -> Iterator[LineTable]:
        buf, strings, relocated = self.data(".debug_line"), self.data(".debug_str"), self._relocated()
        sizes = {s.name.removeprefix(".text."): s.size for s in self.sections if s.name.startswith(".text.")}
        unit = 0
        while unit + 4 <= len(buf):
            length = struct.unpack_from("<I", buf, unit)[0]
            if length >= 0xFFFFFFF0:
                return  # 64-bit DWARF: not written by ptxas
            end = unit + 4 + length
            version = struct.unpack_from("<H", buf, unit + 4)[0]
            if version > 4:
                return  # DWARF 5 line headers describe their files differently; ptxas writes version 2
            header_length = struct.unpack_from("<I", buf, unit + 6)[0]
            pos = unit + 10
            min_inst = buf[pos]
            pos += 2 if version >= 4 else 1  # (maximum operations per instruction)
            line_base = struct.unpack_from("<b", buf, pos + 1)[0]
            line_range, opcode_base = buf[pos + 2], buf[pos + 3]
            lengths = list(buf[pos + 4 : pos + 3 + opcode_base])
            pos += 3 + opcode_base
            dirs = [""]
            while buf[pos]:
                directory, pos = _cstr(buf, pos)
                dirs.append(directory)
            pos += 1
            files = [""]
            while buf[pos]:
                name, pos = _cstr(buf, pos)
                d, pos = _uleb(buf, pos)
                _, pos = _uleb(buf, pos)
                _, pos = _uleb(buf, pos)
                under = dirs[d] if d < len(dirs) else ""
                files.append(name if name.startswith("/") or not under else f"{under}/{name}")
            files = [_normal(f) for f in files]
            yield from self._program(
                buf, unit + 10 + header_length, end, (min_inst, line_base, line_range, opcode_base, lengths),
                files, strings, relocated, sizes,
            )  # fmt: skip
            unit = end

    @staticmethod
    def _program(
        buf: bytes,
        pos: int,
        end: int,
        params: tuple[int, int, int, int, list[int]],
        files: list[str],
        strings: bytes,
        relocated: dict[int, str],
        sizes: dict[str, int],
    ) -> Iterator[LineTable]:
        min_inst, line_base, line_range, opcode_base, lengths = params
        address, file, line, context, function = 0, 1, 1, 0, None
        owner: str | None = None
        rows: list[Row] = []

        def emit() -> None:
            if 0 < file < len(files):
                rows.append(Row(address, files[file], line, context, function if context else None))

        while pos < end:
            op = buf[pos]
            pos += 1
            if op >= opcode_base:
                adjusted = op - opcode_base
                address += (adjusted // line_range) * min_inst
                line += line_base + adjusted % line_range
                emit()
            elif op == 0:
                n, pos = _uleb(buf, pos)
                sub, body = buf[pos], pos + 1
                if sub == DW_LNE_END_SEQUENCE:
                    if owner is not None and rows:
                        yield LineTable(owner, rows, sizes.get(owner, address))
                    address, file, line, context, function, owner, rows = 0, 1, 1, 0, None, None, []
                elif sub == DW_LNE_SET_ADDRESS:
                    address = int.from_bytes(buf[body : pos + n], "little")
                    owner = relocated.get(body, owner)
                elif sub == DW_LNE_NV_INLINED_CALL:
                    context, p = _uleb(buf, body)
                    offset, _ = _uleb(buf, p)
                    function = _cstr(strings, offset)[0] if context and offset < len(strings) else None
                pos += n
            elif op == 1:  # copy
                emit()
            elif op == 2:  # advance_pc
                n, pos = _uleb(buf, pos)
                address += n * min_inst
            elif op == 3:  # advance_line
                n, pos = _sleb(buf, pos)
                line += n
            elif op == 4:  # set_file
                file, pos = _uleb(buf, pos)
            elif op == 8:  # const_add_pc
                address += ((255 - opcode_base) // line_range) * min_inst
            elif op == 9:  # fixed_advance_pc
                address += struct.unpack_from("<H", buf, pos)[0]
                pos += 2
            else:  # set_column, negate_stmt, basic_block and the rest: skip their ULEB128 operands
                for _ in range(lengths[op - 1] if op - 1 < len(lengths) else 0):
                    _, pos = _uleb(buf, pos)


def _normal(path: str) -> str:
    """`/usr/local/cuda/bin/../targets/x/include/h.hpp` -> `/usr/local/cuda/targets/x/include/h.hpp`."""
    parts: list[str] = []
    for p in path.split("/"):
        if p == ".." and parts and parts[-1] not in ("", ".."):
            parts.pop()
        elif p != ".":
            parts.append(p)
    return "/".join(parts)
