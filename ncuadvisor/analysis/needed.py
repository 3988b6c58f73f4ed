"""What a kernel needs, from its per-instruction data: the bytes it loads and stores, and the XU work it cannot avoid.

Bytes: loads and stores, each the smaller of what its threads needed and what moved.

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
INST_EXECUTED = "inst_executed"
PER_INSTRUCTION = [IDEAL_SECTORS, INST_EXECUTED]  # the per-instruction metrics read here

# The SASS opcodes the XU pipe (`sm__inst_executed_pipe_xu`) runs on sm_90, by base opcode, as measured on an H200:
# in every kernel of fixtures/fp16.ncu-rep.xz (workloads/cuda/fp16.cu: one kernel per opcode family) and of the
# ceilings, flaws, patterns and torch_norm_chain reports, the pipe's count equals the sum of these opcodes' warp
# instructions: MUFU.* (transcendentals, reciprocals, square roots), F2F (float <-> double), I2F and F2I (the classic
# conversions, and integer division's I2F.U32.RP / F2I...TRUNC), FCHK (division's range check), and the bit
# operations POPC, FLO (count leading zeros) and BREV. Not XU: F2FP (packing conversions), I2FP.F32 (sm_90's
# int -> float), PRMT, SHFL. Only the transcendentals are needed work: conversions and bit operations are executed
# instructions like the ALU's, which name the limiter but do not set the floor. Other architectures get the same set,
# not measured there (2026-12-05: other people's sm_75/sm_86 reports store the XU pipe's share but not its count):
# their XU runs these opcode families too, and an opcode missing from the set only leaves work out of the SFU floor.
XU_OPCODES = frozenset({"MUFU", "F2F", "I2F", "F2I", "FCHK", "POPC", "FLO", "BREV"})


@dataclass
class InstructionFacts:
    """What the per-instruction data of one kernel tells the roofline (None where it has no such data)."""

    ideal_split: tuple[float, float] | None = None  # (load, store) ideal L2 sectors
    xu_needed_share: float | None = None  # of the XU pipe's warp instructions, the transcendental ones needed
    hfma_kinds: dict[str, float] | None = None  # executed HFMA2 warp instructions by what they compute (`hfma_kinds`)
    xu_opcodes: tuple[str, ...] = ()  # the XU pipe's base opcodes the kernel executed, most executed first
    # False: two of `xu_opcodes` ran equally often and their order is not the instructions' (`counted_facts`); only
    # the roofline's words on an XU-bound kernel show the order
    xu_order_known: bool = True


def instruction_facts(per_instruction: Mapping[str, Sequence[Instruction]]) -> InstructionFacts:
    """The facts of one kernel's per-instruction data (`ideal_split`, `xu_needed_share`)."""
    xu = xu_executed(per_instruction)  # one walk for both XU facts
    return InstructionFacts(
        ideal_split(per_instruction), xu_needed_share(xu), hfma_kinds(per_instruction), xu_opcodes(xu)
    )


# `memory_access_type` of the instructions with ideal sectors, against their opcodes: 2 LDG and LD, 6 LDGSTS, 4 STG
# and ST, 8 ATOMG, none for REDG (the opcode split of `ideal_split`: LD* loads, ST* stores, the others neither)
LOAD_ACCESS = frozenset({2.0, 6.0})
STORE_ACCESS = frozenset({4.0})


def counted_facts(
    per_instruction: Mapping[str, Sequence[Instruction]],
    opcodes: Mapping[str, float] | None,
    access: Mapping[int, float] | None,
    hfma_matters: bool = True,
) -> InstructionFacts | None:
    """`instruction_facts` without the SASS of any instruction: the XU opcodes and whether HFMA2 ran from the executed
    warp instructions per opcode (`opcodes`, the report's instanced metric), the load/store split from each
    instruction's memory access type (`access`). None where the report lacks one of them, where HFMA2 ran and what
    each computed counts (`hfma_matters`, `roofline.hfma_kinds_matter`: it is in the operands, only the SASS tells;
    where it does not count, `hfma_kinds` is None). Where two XU opcodes ran equally often, `xu_order_known` is False:
    `xu_opcodes` orders them as the SASS does (the order of the instructions) only by chance."""
    executed = per_instruction.get(INST_EXECUTED) or []
    ideal = [e for e in per_instruction.get(IDEAL_SECTORS) or [] if e.value]
    if opcodes is None or (ideal and access is None):
        return None
    ran = {op: v for op, v in opcodes.items() if v}
    hfma_ran = any(op.split(".")[0] == "HFMA2" for op in ran)
    if executed and hfma_ran and hfma_matters:
        return None
    xu = {op: v for op, v in ran.items() if op.split(".")[0] in XU_OPCODES} if executed else None
    bases = _xu_bases(xu)
    split = None
    if ideal:
        kinds = access or {}
        loads = sum((e.value for e in ideal if kinds.get(e.pc) in LOAD_ACCESS), 0.0)
        stores = sum((e.value for e in ideal if kinds.get(e.pc) in STORE_ACCESS), 0.0)
        split = (loads, stores)
    kinds_run = dict.fromkeys(HFMA_FLOPS, 0.0) if executed and not hfma_ran else None
    tied = len(set(bases.values())) < len(bases)
    return InstructionFacts(split, xu_needed_share(xu), kinds_run, xu_opcodes(xu), xu_order_known=not tied)


# FLOPs per packed-half thread instruction by what an HFMA2 (or HFMA2.MMA) computes: two halves each
HFMA_FLOPS = {"fma": 4.0, "add": 2.0, "mul": 2.0, "move": 0.0}
_ZERO = ("RZ", "-RZ")


def hfma_kinds(per_instruction: Mapping[str, Sequence[Instruction]]) -> dict[str, float] | None:
    """Executed HFMA2 / HFMA2.MMA warp instructions by what they compute, from their operands: `move` (a zero product,
    `HFMA2.MMA Rd, -RZ, RZ, imm, imm`: the compiler's way to load a 32-bit constant), `add` (multiplier `1, 1`: an
    __hadd2 issued as an FMA), `mul` (addend `-RZ`: an __hmul2 issued as an FMA), else `fma`. None without SASS."""
    entries = per_instruction.get(INST_EXECUTED) or []
    out = dict.fromkeys(HFMA_FLOPS, 0.0)
    for e in entries:
        if not e.value:
            continue
        text = (e.sass or "").strip().rstrip(";").strip()
        if not text:
            return None
        if text.startswith("@"):
            text = text.split(None, 1)[1] if " " in text else ""
        op, _, rest = text.partition(" ")
        if op.split(".")[0] != "HFMA2":
            continue
        args = [
            a.strip().split(".")[0] if a.strip().lstrip("-").startswith(("R", "UR")) else a.strip()
            for a in rest.split(",")
        ]
        if len(args) >= 3 and (args[1] in _ZERO or args[2] in _ZERO):
            kind = "move"
        elif len(args) >= 5 and args[2] == "1" and args[3] == "1":
            kind = "add"
        elif args and args[-1] in _ZERO:
            kind = "mul"
        else:
            kind = "fma"
        out[kind] += e.value
    return out if entries else None


def _opcode(sass: str | None) -> str:
    words = (sass or "").split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def xu_executed(per_instruction: Mapping[str, Sequence[Instruction]]) -> dict[str, float] | None:
    """Executed warp instructions of the XU pipe by opcode (MUFU.SIN, I2F.U32.RP, POPC, ...); None without executed
    counts by instruction or when an executed instruction has no SASS."""
    entries = per_instruction.get(INST_EXECUTED) or []
    if not entries:
        return None
    out: dict[str, float] = {}
    for e in entries:
        if not e.value:
            continue
        op = _opcode(e.sass)
        if not op:
            return None
        if op.split(".")[0] in XU_OPCODES:
            out[op] = out.get(op, 0.0) + e.value
    return out


def xu_needed_share(xu: Mapping[str, float] | None) -> float | None:
    """Of the XU instructions (`xu_executed`), the share that is needed work: the transcendentals (MUFU), less the
    reciprocals of integer division (one MUFU.RCP per I2F.*.RP: the compiler's idiom for a division by a run-time
    divisor); conversions and bit operations are not. None without them."""
    if xu is None:
        return None
    total = sum(xu.values())
    mufu = sum(v for op, v in xu.items() if op.split(".")[0] == "MUFU")
    rcp = sum(v for op, v in xu.items() if op.startswith("MUFU.RCP"))
    rp = sum(v for op, v in xu.items() if op.split(".")[0] == "I2F" and ".RP" in op)
    return (mufu - min(rcp, rp)) / total if total else 0.0


def xu_opcodes(xu: Mapping[str, float] | None) -> tuple[str, ...]:
    """The XU pipe's base opcodes (MUFU, F2F, POPC, ...) among `xu_executed`, most executed first (in the order of
    the instructions where counts tie); () without them."""
    count = _xu_bases(xu)
    return tuple(sorted(count, key=lambda op: -count[op]))


def _xu_bases(xu: Mapping[str, float] | None) -> dict[str, float]:
    """`xu_executed`'s counts by base opcode (MUFU.SIN and MUFU.EX2 both MUFU), in the order first met."""
    count: dict[str, float] = {}
    for op, v in (xu or {}).items():
        base = op.split(".")[0]
        count[base] = count.get(base, 0.0) + v
    return count


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
        op = _opcode(e.sass)
        if not op:
            return None
        seen = True
        if op.startswith("LD"):
            loads += e.value
        elif op.startswith("ST"):
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
