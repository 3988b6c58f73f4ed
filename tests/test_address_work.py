"""The address-only arithmetic detector (`rulekit.models.address_work_of`): instructions whose results are read only
as the addresses of global loads, on hand-written SASS and on the real listing of conv9.cu's clamped 9×9 convolution
(tests/rule_cases/TIL001.toml, from fixtures/conv9-2026-12-06/conv9.ncu-rep.xz)."""

import sys
from pathlib import Path

import pytest

from ncuadvisor.rulekit.models import address_only_pcs, address_work_of, parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CASES = Path(__file__).resolve().parent / "rule_cases"


def only(listing: list[tuple[int, float, str]]) -> set[int]:
    return address_only_pcs(sorted((pc, v, parse(s)) for pc, v, s in listing))


def test_a_clamped_tap_is_address_only_and_its_data_is_not():
    listing = [
        (0x00, 1, "VIADDMNMX R4, R6, 0xfffffffc, RZ, !PT"),  # clamp x - 4 at 0
        (0x10, 1, "VIMNMX R4, R4, UR11, PT"),  # ... and at w - 1
        (0x20, 1, "SHF.R.S32.HI R5, RZ, 0x1f, R4"),  # sign-extend: the pair R4, R5
        (0x30, 1, "IMAD.WIDE R8, R3, 0x2008, R4"),  # yy * pitch + xx, the addend the 64-bit pair
        (0x40, 1, "LEA R10, P1, R8, UR8, 0x2"),
        (0x50, 1, "LEA.HI.X R11, R8, UR9, R9, 0x2, P1"),
        (0x60, 1, "LDG.E.CONSTANT R27, desc[UR6][R10.64]"),
        (0x70, 1, "FFMA R0, R27, UR12, RZ"),  # the loaded value is data
        (0x80, 1, "IMAD R2, R6, 0x4, RZ"),  # an index that addresses the store: not address-only
        (0x90, 1, "STG.E desc[UR6][R2.64], R0"),
        (0xA0, 1, "EXIT"),
    ]
    assert only(listing) == {0x00, 0x10, 0x20, 0x30, 0x40, 0x50}
    work = address_work_of(listing)
    assert work.address == 6 and work.executed == 11
    assert (work.address_alu, work.address_fma) == (5, 1)  # IMAD.WIDE on the FMA pipe, the rest on the ALU


def test_a_value_read_as_data_too_is_not_address_only():
    listing = [
        (0x00, 1, "IMAD.WIDE R2, R6, 0x4, R4"),
        (0x10, 1, "LDG.E R7, desc[UR4][R2.64]"),
        (0x20, 1, "I2FP.F32.S32 R8, R6"),  # R6 is also data: the IMAD.WIDE that reads it stays address-only
        (0x30, 1, "IADD3 R9, R6, 0x1, RZ"),
        (0x40, 1, "FADD R7, R7, R8"),
        (0x50, 1, "STG.E desc[UR4][R2.64], R7"),  # the load's address also addresses the store
        (0x60, 1, "EXIT"),
    ]
    assert only(listing) == set()


def test_a_loop_pointer_that_also_counts_the_loop_stays():
    listing = [
        (0x00, 1, "IMAD.WIDE R2, R0, 0x4, R4"),
        (0x10, 100, "LDG.E R7, desc[UR4][R2.64]"),
        (0x20, 100, "FADD R9, R9, R7"),
        (0x30, 100, "IADD3 R2, P0, R2, 0x10, RZ"),  # the pointer steps: read by the next load ...
        (0x40, 100, "IADD3.X R3, RZ, R3, RZ, P0, !PT"),
        (0x50, 100, "IADD3 R10, R10, 0x1, RZ"),  # ... the trip count is not an address
        (0x60, 100, "ISETP.GE.AND P1, PT, R10, R11, PT"),
        (0x70, 100, "@!P1 BRA 0x10"),
        (0x80, 1, "STG.E desc[UR4][R12.64], R9"),
        (0x90, 1, "EXIT"),
    ]
    assert only(listing) == {0x00, 0x30, 0x40}
    assert address_work_of(listing).address == 1  # the loop keeps its pointer steps: only the setup goes


def test_the_clamped_convolution_of_the_h100_capture():
    case = next(
        c for c in tomllib.loads((CASES / "TIL001.toml").read_text())["case"] if c.get("kernel") == "conv9_clamped"
    )
    work = address_work_of([tuple(e) for e in case["per_instruction"]["inst_executed"]])
    warps = 2097152  # 8192 × 8192 outputs, 32 a warp
    assert work.executed / warps == 527
    assert work.address / warps == pytest.approx(302, abs=2)  # 81 taps × (IMAD.WIDE, LEA, LEA.HI.X) and the clamps
    assert work.address_alu / work.alu > 0.95 and work.address_fma / work.fma == pytest.approx(0.5, abs=0.02)
