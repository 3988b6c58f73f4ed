"""The bytes a kernel needs from memory: loads and stores, each the smaller of what its threads needed and what moved.

- Loads: the ideal L2 sectors of its global load instructions (what the threads asked for, as if coalesced) against
  DRAM's read bytes (what came from memory: fewer when the input already sat in L2).
- Stores: the ideal sectors of its global store instructions against the sectors the SMs wrote to L2
  (`lts__t_sectors_srcunit_tex_op_write`: what left the SMs). DRAM's write bytes are not the measure: an output still
  dirty in L2 when the kernel ends never reaches `dram__bytes_write` (18-25 MB of an H200's L2).

The split by direction needs the per-instruction ideal sectors (Source Counters) and each instruction's SASS opcode
(`LD*` loads, `ST*` stores); reductions and atomics (`RED`, `ATOM`) are read-modify-writes done in L2 and count on
neither side, as in the total. Without the split (no Source Counters, or a library kernel whose SASS is not read), the
total is the smaller of the ideal sectors and DRAM's reads plus the SMs' writes. A kernel that loads through TMA
(cuBLAS, CUTLASS on Hopper) moves its operands outside the ideal sectors: its loads are DRAM's read bytes and its
stores the SMs' writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ncuadvisor.model import Instruction

SECTOR_BYTES = 32
IDEAL_SECTORS = "memory_l2_theoretical_sectors_global_ideal"
PER_INSTRUCTION = [IDEAL_SECTORS]  # the per-instruction metric the split reads


@dataclass
class Needed:
    """Compulsory bytes, and their loads and stores when the report tells them apart."""

    total: float | None = None
    loads: float | None = None
    stores: float | None = None


def ideal_split(per_instruction: Mapping[str, Sequence[Instruction]]) -> tuple[float, float] | None:
    """(load sectors, store sectors) the threads needed, from the per-instruction ideal sectors and the SASS of each
    instruction; None when the report has no such data or an instruction with sectors has no SASS."""
    entries = per_instruction.get(IDEAL_SECTORS) or []
    loads = stores = 0.0
    seen = False
    for e in entries:
        if not e.value:
            continue
        words = (e.sass or "").split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if not words:
            return None
        seen = True
        if words[0].startswith("LD"):
            loads += e.value
        elif words[0].startswith("ST"):
            stores += e.value
    return (loads, stores) if seen else None


def needed_bytes(
    *,
    ideal_sectors: float | None,
    split: tuple[float, float] | None,
    dram_read: float | None,
    dram_write: float | None,
    dram_bytes: float | None,
    sm_write_bytes: float | None,
    uses_tma: bool,
) -> Needed:
    """The compulsory bytes of one kernel (module docstring), from its counters and the optional split. `dram_bytes`:
    DRAM's reads and writes, or its rate × the duration when the report has no byte counts (`--set basic`)."""
    if uses_tma:  # the ideal sectors miss the operands: what moved is all there is
        if dram_read is not None and sm_write_bytes is not None:
            return _both(dram_read, sm_write_bytes)
        return Needed(dram_bytes)
    if split is not None:
        ideal_loads, ideal_stores = (s * SECTOR_BYTES for s in split)
        loads = min(ideal_loads, dram_read) if dram_read is not None else ideal_loads
        stores_moved = sm_write_bytes if sm_write_bytes is not None else dram_write
        stores = min(ideal_stores, stores_moved) if stores_moved is not None else ideal_stores
        return _both(loads, stores)
    moved = dram_read + sm_write_bytes if dram_read is not None and sm_write_bytes is not None else dram_bytes
    ideal = ideal_sectors * SECTOR_BYTES if ideal_sectors is not None else None
    candidates = [b for b in (moved, ideal) if b is not None]
    return Needed(min(candidates) if candidates else None)


def _both(loads: float, stores: float) -> Needed:
    return Needed(loads + stores, loads, stores)
