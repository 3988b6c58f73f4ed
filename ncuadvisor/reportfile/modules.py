"""The CUDA modules a report file embeds, and which results' kernels carry source-line information, read from the
report file (no `ncu_report`).

Asking `ncu_report` for the source line of one instruction (`action.source_info`) loads the line tables of the
result's module first: 0.15-0.45 s per result on the PyTorch and cuBLAS modules of a training step, to learn that
they have none (they are built without `-lineinfo`). The report file says so for much less: besides the results, a
block's payload holds the modules ("sources": 1: module id, 4: the module's CUBIN, an ELF file, 9: its functions),
and each result names its module (15: {1: module id}). A module has line information when its ELF has a line-table
section (`.debug_line`, `.nv_debug_line_sass`: what `nvcc -lineinfo` or `-G` writes); its results then get their
lines looked up as before, and the others are known to have none.

Anything this reader does not understand (another layout, a module seen without its ELF, an ELF it cannot parse)
answers "may have lines", so the lookups happen as before; verified against `ncu_report` on every fixture
(tests/test_modules.py). The same walk hands the modules' images to `reportfile.cubin` (their line tables and
inlining record): it finds, on every fixture, the images a scan of the file for ELF headers finds.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from ncuadvisor.reportfile.blocks import FileView, _fields, iter_blocks, partial_message, u32
from ncuadvisor.reportfile.cubin import Cubin, elf_sections


def _result_module_class() -> Any:
    """A message class that reads only a result's module reference (15: {1: id}); None without protobuf."""
    return partial_message(
        "ncuadvisor_modules", {"ModuleRef": [("id", 1, "uint64")], "ResultModule": [("module", 15, "ModuleRef")]}
    )


LINE_SECTIONS = (b".debug_line", b".nv_debug_line")  # prefixes: .debug_line, .nv_debug_line_sass, .nv_debug_line


def elf_has_lines(mm: Any, start: int, end: int) -> bool | None:
    """Whether the ELF at mm[start:end] has a line-table section; None when it is not a little-endian ELF64 this
    reader can walk."""
    sections = elf_sections(mm, start, end - start)
    return None if sections is None else any(s.name.encode().startswith(LINE_SECTIONS) for s in sections)


def _module_of(mm: Any, start: int, end: int, parse: Any) -> int | None:
    """The module id a result names (15: {1: id}), None when it names none."""
    if parse is not None:
        r = parse.FromString(mm.view(start, end - start))
        return int(r.module.id) if r.HasField("module") and r.module.HasField("id") else None
    mod = _fields(mm, start, end).get(15)
    ids = _fields(mm, *mod[0]).get(1) if mod and isinstance(mod[0], tuple) else None
    return int(ids[0]) if ids and isinstance(ids[0], int) else None


def _payloads(mm: Any, want: set[int] | None, parse: Any) -> Iterator[tuple[str, int | None, int, int]]:
    """The messages of every block's payload in file order: ("result", its module id or None, start, end) for each
    result (the module read only for the results of `want`, every one when None), then ("module", id, start, end) for
    each module with its CUBIN, the span being that ELF image (4). Raises ValueError where the layout is not this."""
    index = 0
    for block in iter_blocks(mm):
        n_results = int((block.header.get(2) or [0])[0])
        j, end = block.payload_start, block.payload_end
        k = 0
        while j + 4 <= end:
            n = u32(mm, j)
            if j + 4 + n > end:
                raise ValueError("a message past its block")
            if k < n_results:
                read = want is None or index in want
                yield "result", (_module_of(mm, j + 4, j + 4 + n, parse) if read else None), j + 4, j + 4 + n
                index += 1
            else:
                f = _fields(mm, j + 4, j + 4 + n)
                if f.get(1) and isinstance(f[1][0], int) and f.get(4) and isinstance(f[4][0], tuple):
                    yield "module", int(f[1][0]), *f[4][0]
            j += 4 + n
            k += 1


def result_modules(
    path: str | os.PathLike[str], wanted: Iterable[int] | None = None
) -> tuple[list[int | None], dict[int, bool], list[int]] | None:
    """The module id each result names, in file order (None for a result not in `wanted`, when given, or naming
    none), for each module whether it may carry line information (False: known to have none), and the size of each
    result's message in bytes, in file order (what opening it costs `ncu_report` goes with it). None when the file
    is not in the layout described above."""
    found = module_facts(path, wanted)
    return None if found is None else found[:3]


def module_facts(
    path: str | os.PathLike[str], wanted: Iterable[int] | None = None
) -> tuple[list[int | None], dict[int, bool], list[int], dict[int, bool]] | None:
    """`result_modules` and, from the same walk (each module's sections read once), `debug_modules`."""
    want = None if wanted is None else set(wanted)
    try:
        with open(path, "rb") as fh:
            mm = FileView(fh)
            module_of: list[int | None] = []
            lines: dict[int, bool] = {}
            sizes: list[int] = []
            debug: dict[int, bool] = {}
            for kind, ident, start, end in _payloads(mm, want, _result_module_class()):
                if kind == "result":
                    module_of.append(ident)
                    sizes.append(end - start)
                elif ident is not None:
                    sections = elf_sections(mm, start, end - start)
                    has = None if sections is None else any(s.name.encode().startswith(LINE_SECTIONS) for s in sections)
                    # unknown counts as "has lines"; a module seen twice keeps "has lines" if either says so
                    lines[ident] = lines.get(ident, False) or has is not False
                    debug[ident] = debug.get(ident, False) or any(s.name in DEBUG_SECTIONS for s in sections or [])
            return module_of, lines, sizes, debug
    except Exception:  # a layout this reader does not know
        return None


def results_with_lines(path: str | os.PathLike[str], wanted: Iterable[int] | None = None) -> list[bool] | None:
    """For every result in file order: False when its module is known to carry no line information (its source
    lines need not be looked up), True otherwise; with `wanted` (result indices), only those results' payloads are
    read (the others answer True). None when the file is not in the layout described above."""
    found = result_modules(path, wanted)
    if found is None:
        return None
    module_of, lines, _ = found
    return [m is None or lines.get(m, True) for m in module_of]


# A module built with `nvcc -G` (a debug build: no optimisation, every variable in local memory) carries the full
# DWARF debug information; `-lineinfo` writes the line tables alone (nvcc 13.0, sm_90 cubins: -G adds .debug_info and
# .debug_abbrev to -lineinfo's .debug_line and .nv_debug_line_sass; a release build has neither)
DEBUG_SECTIONS = (".debug_info",)


def debug_modules(path: str | os.PathLike[str]) -> dict[int, bool] | None:
    """For each module id, whether its ELF is a debug build's (`DEBUG_SECTIONS`); None when the file is not in the
    layout described above."""
    try:
        with open(path, "rb") as fh:
            mm = FileView(fh)
            out: dict[int, bool] = {}
            for kind, ident, start, end in _payloads(mm, set(), None):
                if kind == "module" and ident is not None:
                    sections = elf_sections(mm, start, end - start) or []
                    out[ident] = out.get(ident, False) or any(s.name in DEBUG_SECTIONS for s in sections)
            return out
    except Exception:  # a layout this reader does not know
        return None


def module_images(path: str | os.PathLike[str]) -> list[tuple[int, int]] | None:
    """Where each module's ELF image (its CUBIN, 4) lies in the report file: (start, end) in file order; None when the
    file is not in the layout described above."""
    try:
        with open(path, "rb") as fh:
            return [(start, end) for kind, _, start, end in _payloads(FileView(fh), set(), None) if kind == "module"]
    except (OSError, ValueError, IndexError, struct.error):
        return None


def embedded_cubins(path: str | os.PathLike[str]) -> list[Cubin]:
    """Every CUDA module the report file holds (`module_images`), in file order; those whose ELF this reader cannot
    walk are left out, and a file not in the layout described above holds none."""
    out = []
    with open(path, "rb") as fh:
        mm = FileView(fh)
        for start, end in module_images(path) or []:
            try:
                out.append(Cubin(bytes(mm[start:end])))
            except (IndexError, ValueError, struct.error):
                pass
    return out
