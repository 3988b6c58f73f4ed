"""`rulekit.models.grid_uniform_loads`: the global loads whose address no thread or block index reaches (a filter's
weight every thread shares), from register dataflow over the SASS. The lines are convmap_strided's (the planted 11×11
convolution of workloads/cuda/convmap.cu, nvcc 13.0 -arch=sm_90, as fixtures/convmap-2026-12-06/convmap.ncu-rep.xz
lists them): the pixel's address from `SR_TID`/`SR_CTAID` and the row counter, the weight's from the parameters, the
filter size and the uniform loop counter `UR4` alone; the whole report is checked in tests/rule_cases/TIL001.toml."""

from __future__ import annotations

from dataclasses import dataclass

from ncuadvisor.rulekit import grid_uniform_loads


@dataclass
class Line:
    pc: int
    sass: str


PROLOGUE = [
    "S2R R0, SR_CTAID.X",
    "LDC.64 R6, c[0x0][0x228]",
    "ULDC UR4, c[0x0][0x0]",
    "S2R R3, SR_TID.X",
    "S2R R2, SR_CTAID.Y",
    "S2R R5, SR_TID.Y",
    "IMAD R0, R0, UR4, R3",  # the output's row, from threadIdx.x
    "ULDC UR4, c[0x0][0x4]",
    "IMAD R2, R2, UR4, R5",  # its column
    "LDC R5, c[0x0][0x230]",
    "ULDC.64 UR6, c[0x0][0x210]",
    "IADD3 R11, R6, -0x1, R5",  # the padded image's pitch
    "UIADD3 UR5, UP0, UR6, 0x8, URZ",
    "SHF.R.S32.HI R3, RZ, 0x1f, R2",
    "SHF.R.S32.HI R13, RZ, 0x1f, R11",
    "UIADD3.X UR6, URZ, UR7, URZ, UP0, !UPT",
    "UMOV UR4, URZ",  # the filter row's counter, uniform
]
LOOP = [
    "LDC R5, c[0x0][0x230]",  # the filter size
    "IADD3 R6, R0, UR4, RZ",  # the input row, from the thread's
    "SHF.R.S32.HI R4, RZ, 0x1f, R6",
    "IMAD R7, R4, R11, RZ",
    "IMAD R7, R6, R13, R7",
    "IMAD R14, R5, UR4, RZ",  # the weight's index: the filter size times the counter
    "UIADD3 UR4, UR4, 0x1, URZ",
    "IMAD.WIDE.U32 R4, R11, R6, R2",
    "IADD3 R16, R5, R7, RZ",
    "LDC.64 R8, c[0x0][0x218]",
    "LEA R6, P2, R4, UR5, 0x2",
    "LEA.HI.X R7, R4, UR6, R16, 0x2, P2",
    "IMAD.WIDE R8, R14, 0x4, R8",
    "LDG.E.CONSTANT R21, desc[UR8][R8.64]",  # the weight
    "LDG.E.CONSTANT R23, desc[UR8][R6.64+-0x8]",  # the pixel
    "FFMA R23, R21, R23, R18",
]
WEIGHT = "LDG.E.CONSTANT R21, desc[UR8][R8.64]"


def lines(texts: list[str]) -> list[Line]:
    return [Line(16 * i, t) for i, t in enumerate(texts)]


def with_size(*inserted: str) -> list[str]:
    """The loop with `inserted` right after the filter size is read (the register the weight's index multiplies)."""
    return [*PROLOGUE, LOOP[0], *inserted, *LOOP[1:]]


def test_a_filters_weight_is_grid_uniform_and_its_pixel_is_not() -> None:
    listing = lines(PROLOGUE + LOOP)
    uniform = {next(x.sass for x in listing if x.pc == pc) for pc in grid_uniform_loads(listing)}
    assert uniform == {WEIGHT}


def test_an_index_that_a_thread_index_reaches_is_not() -> None:
    # the weight's index multiplies the thread's row: every address it forms varies
    assert grid_uniform_loads(lines(with_size("IMAD.MOV.U32 R5, RZ, RZ, R0"))) == set()


def test_a_listing_that_never_reads_an_index_says_nothing() -> None:
    assert grid_uniform_loads(lines(LOOP)) == set()


def test_a_predicated_write_never_makes_an_address_uniform() -> None:
    # only some threads overwrite the filter size with their row
    assert grid_uniform_loads(lines(with_size("@P0 IMAD.MOV.U32 R5, RZ, RZ, R0"))) == set()


def test_a_branchs_target_joins_what_varies_on_the_path_that_jumped() -> None:
    # the threads that jump keep their row in R5; those that fall through read the filter size again
    head = [*PROLOGUE, LOOP[0], "IMAD.MOV.U32 R5, RZ, RZ, R0"]
    target = 16 * (len(head) + 2)
    listing = lines([*head, f"@P0 BRA {target:#x}", "LDC R5, c[0x0][0x230]", *LOOP[1:]])
    assert grid_uniform_loads(listing) == set()
    # without the branch the size reaches every thread: the weight is uniform again
    listing = lines([*head, "NOP", "LDC R5, c[0x0][0x230]", *LOOP[1:]])
    assert len(grid_uniform_loads(listing)) == 1
