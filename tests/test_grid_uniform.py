"""`rulekit.models.grid_uniform_loads`: the global loads whose address no thread or block index reaches (a filter's
weight every thread shares), from register dataflow over the SASS. The lines are the naive conv2d's (Swagatam1812's
naive.ncu-rep, A100: the pixel's address from `SR_TID`/`SR_CTAID`, the weight's from the parameter and two loop
counters); the whole report is checked in tests/rule_cases/TIL001.toml and tests/test_counted_after.py."""

from __future__ import annotations

from dataclasses import dataclass

from ncuadvisor.rulekit import grid_uniform_loads


@dataclass
class Line:
    pc: int
    sass: str


PROLOGUE = [
    "S2R R14, SR_CTAID.Y",
    "S2R R15, SR_TID.X",
    "S2R R12, SR_CTAID.X",
    "S2R R13, SR_TID.Y",
    "IMAD R14, R14, c[0x0][0x4], R15",
    "IMAD R12, R12, c[0x0][0x0], R13",
    "IMAD.MOV.U32 R5, RZ, RZ, RZ",
    "IMAD.MOV.U32 R24, RZ, RZ, RZ",
    "IMAD.WIDE R16, R14, c[0x0][0x17c], R12",  # R16 varies here, then is written again from the counters
]
LOOP = [
    "IMAD.IADD R19, R12, 0x1, R24",
    "IMAD.MOV.U32 R17, RZ, RZ, 0x4",
    "IMAD R16, R5, c[0x0][0x184], R24",
    "IADD3 R11, P1, R19, R16, RZ",  # the pixel's index (and a carry) from the thread's column
    "IMAD.WIDE R16, R16, R17, c[0x0][0x168]",
    "LEA R10, P1, R11, c[0x0][0x160], 0x2",
    "LEA.HI.X R11, R11, c[0x0][0x164], R14, 0x2, P1",
    "LDG.E.CONSTANT R9, [R10.64]",  # the pixel
    "LDG.E.CONSTANT R18, [R16.64]",  # the weight
    "FFMA.FTZ R0, R9, R18, R0",
    "IADD3 R24, R24, 0x1, RZ",
    "IADD3 R5, R5, 0x1, RZ",
]


def lines(texts: list[str]) -> list[Line]:
    return [Line(16 * i, t) for i, t in enumerate(texts)]


def test_a_filters_weight_is_grid_uniform_and_its_pixel_is_not() -> None:
    listing = lines(PROLOGUE + LOOP)
    uniform = {next(x.sass for x in listing if x.pc == pc) for pc in grid_uniform_loads(listing)}
    assert uniform == {"LDG.E.CONSTANT R18, [R16.64]"}


def test_a_loop_counter_that_a_thread_index_reaches_is_not() -> None:
    # the counter starts at the thread's row: every address it forms varies, on the back edge too
    listing = lines([*PROLOGUE, "IMAD.MOV.U32 R5, RZ, RZ, R14", *LOOP])
    assert grid_uniform_loads(listing) == set()


def test_a_listing_that_never_reads_an_index_says_nothing() -> None:
    assert grid_uniform_loads(lines(LOOP)) == set()


def test_a_predicated_write_never_makes_an_address_uniform() -> None:
    # the counter starts at the thread's row, and only some threads reset it
    listing = lines([*PROLOGUE, "IMAD.MOV.U32 R5, RZ, RZ, R14", "@P0 IMAD.MOV.U32 R5, RZ, RZ, RZ", *LOOP])
    assert grid_uniform_loads(listing) == set()


def test_a_branchs_target_joins_what_varies_on_the_path_that_jumped() -> None:
    # the threads that jump keep the row-based counter; those that fall through reset it
    head = [*PROLOGUE, "IMAD.MOV.U32 R5, RZ, RZ, R14"]
    target = 16 * (len(head) + 2)
    listing = lines([*head, f"@P0 BRA {target:#x}", "IMAD.MOV.U32 R5, RZ, RZ, RZ", *LOOP])
    assert grid_uniform_loads(listing) == set()
    # without the branch the reset reaches every thread: the weight is uniform again
    listing = lines([*head, "NOP", "IMAD.MOV.U32 R5, RZ, RZ, RZ", *LOOP])
    assert len(grid_uniform_loads(listing)) == 1
