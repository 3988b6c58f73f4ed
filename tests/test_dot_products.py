"""Integer dot products read as a matrix product's multiply-adds (`rulekit.models.fma_stream`): `IDP.4A` (four int8
products summed into an int32 accumulator, 8 integer operations a thread) multiplies two values loaded from memory and
adds a register, `acc += dot(a, b)`, as an `FFMA` of a product does; `IMAD` index arithmetic is not one. The int8
listing is CUTLASS's reference GEMM (`ReferenceGemm_kernel`, int8 in, int32 accumulate) from panjd123/cutlass
report-s4 (A100, ncu 2024.1.1, full set: fixtures/foreign/panjd123+cutlass__report-s4.ncu-rep.xz), its prologue and
its unrolled loop with the executions the report counts (`inst_executed`); the whole report is checked in
tests/test_foreign_rules.py. The IMAD listing is convmap_strided's (tests/test_grid_uniform.py)."""

from __future__ import annotations

from ncuadvisor.rulekit import fma_stream
from tests.test_grid_uniform import LOOP, PROLOGUE
from tests.test_rule_cases import kernel_context

# ReferenceGemm_kernel, pcs 0x...7f00 to 0x...85c0: 4608 warps, 24 steps of the 16-deep unrolled loop each
REFERENCE_GEMM = [
    (4608, "IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]"),
    (4608, "S2R R6, SR_CTAID.Y"),
    (4608, "S2R R3, SR_TID.Y"),
    (4608, "S2R R7, SR_CTAID.X"),
    (4608, "S2R R0, SR_TID.X"),
    (4608, "IMAD R6, R6, c[0x0][0x4], R3"),
    (4608, "ISETP.GE.AND P0, PT, R6, c[0x0][0x164], PT"),
    (4608, "IMAD R7, R7, c[0x0][0x0], R0"),
    (4608, "ISETP.GE.OR P0, PT, R7, c[0x0][0x160], P0"),
    (4608, "@P0 EXIT"),
    (4608, "IMAD.MOV.U32 R8, RZ, RZ, c[0x0][0x168]"),
    (4608, "ULDC.S8 UR4, c[0x0][0x18c]"),
    (4608, "IMAD.MOV.U32 R0, RZ, RZ, RZ"),
    (4608, "ULDC.S8 UR5, c[0x0][0x16c]"),
    (4608, "ISETP.GE.AND P0, PT, R8, 0x1, PT"),
    (4608, "UPRMT UR4, UR4, 0x7710, URZ"),
    (4608, "UPRMT UR5, UR5, 0x7710, URZ"),
    (4608, "ULDC.64 UR6, c[0x0][0x118]"),
    (4608, "@!P0 BRA 0x7b2df5268b70"),
    (4608, "IADD3 R0, R8, -0x1, RZ"),
    (4608, "IMAD.MOV.U32 R9, RZ, RZ, RZ"),
    (4608, "LOP3.LUT R8, R8, 0x3, RZ, 0xc0, !PT"),
    (4608, "ISETP.GE.U32.AND P0, PT, R0, 0x3, PT"),
    (4608, "IMAD.MOV.U32 R0, RZ, RZ, RZ"),
    (4608, "@!P0 BRA 0x7b2df5268a10"),
    (4608, "IADD3 R10, -R8, c[0x0][0x168], RZ"),
    (4608, "IMAD R2, R7, c[0x0][0x178], RZ"),
    (4608, "ULDC.64 UR8, c[0x0][0x180]"),
    (4608, "IMAD R40, R6, c[0x0][0x188], RZ"),
    (4608, "ISETP.GT.AND P0, PT, R10, RZ, PT"),
    (4608, "IMAD.MOV.U32 R9, RZ, RZ, RZ"),
    (4608, "IADD3 R4, P1, R2, c[0x0][0x170], RZ"),
    (4608, "SHF.R.S32.HI R39, RZ, 0x1f, R40"),
    (4608, "LEA.HI.X.SX32 R5, R2, c[0x0][0x174], 0x1, P1"),
    (4608, "@!P0 BRA 0x7b2df5268880"),
    (4608, "ISETP.GT.AND P1, PT, R10, 0xc, PT"),
    (4608, "PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0"),
    (4608, "@!P1 BRA 0x7b2df52685d0"),
    (4608, "PLOP3.LUT P0, PT, PT, PT, PT, 0x8, 0x0"),
    (110592, "IADD3 R2, P1, R40, UR8, RZ"),
    (110592, "LDG.E.U8 R41, [R4.64+0x3]"),
    (110592, "IADD3.X R3, R39, UR9, RZ, P1, !PT"),
    (110592, "LDG.E.U8 R42, [R4.64+0x2]"),
    (110592, "LDG.E.U8 R43, [R4.64+0x1]"),
    (110592, "LDG.E.U8 R44, [R4.64]"),
    (110592, "LDG.E.U8 R31, [R2.64+0x3]"),
    (110592, "LDG.E.U8 R32, [R2.64+0x2]"),
    (110592, "LDG.E.U8 R28, [R2.64+0x1]"),
    (110592, "LDG.E.U8 R29, [R2.64]"),
    (110592, "LDG.E.U8 R35, [R4.64+0x5]"),
    (110592, "LDG.E.U8 R36, [R4.64+0x4]"),
    (110592, "LDG.E.U8 R38, [R4.64+0x7]"),
    (110592, "LDG.E.U8 R37, [R4.64+0x6]"),
    (110592, "LDG.E.U8 R24, [R2.64+0x7]"),
    (110592, "LDG.E.U8 R25, [R2.64+0x6]"),
    (110592, "LDG.E.U8 R26, [R2.64+0x5]"),
    (110592, "LDG.E.U8 R27, [R2.64+0x4]"),
    (110592, "LDG.E.U8 R33, [R4.64+0xb]"),
    (110592, "LDG.E.U8 R34, [R4.64+0xa]"),
    (110592, "LDG.E.U8 R22, [R4.64+0x9]"),
    (110592, "LDG.E.U8 R23, [R4.64+0x8]"),
    (110592, "LDG.E.U8 R16, [R2.64+0xb]"),
    (110592, "LDG.E.U8 R19, [R2.64+0xa]"),
    (110592, "LDG.E.U8 R14, [R2.64+0x9]"),
    (110592, "LDG.E.U8 R17, [R2.64+0x8]"),
    (110592, "LDG.E.U8 R21, [R4.64+0xf]"),
    (110592, "LDG.E.U8 R20, [R4.64+0xe]"),
    (110592, "LDG.E.U8 R13, [R4.64+0xd]"),
    (110592, "LDG.E.U8 R18, [R4.64+0xc]"),
    (110592, "LDG.E.U8 R12, [R2.64+0xf]"),
    (110592, "LDG.E.U8 R15, [R2.64+0xe]"),
    (110592, "LDG.E.U8 R11, [R2.64+0xd]"),
    (110592, "LDG.E.U8 R30, [R2.64+0xc]"),
    (110592, "IADD3 R10, R10, -0x10, RZ"),
    (110592, "ISETP.GT.AND P1, PT, R10, 0xc, PT"),
    (110592, "UIADD3 UR8, UP0, UR8, 0x10, URZ"),
    (110592, "IADD3 R4, P2, R4, 0x10, RZ"),
    (110592, "UIADD3.X UR9, URZ, UR9, URZ, UP0, !UPT"),
    (110592, "IADD3 R9, R9, 0x10, RZ"),
    (110592, "IMAD.X R5, RZ, RZ, R5, P2"),
    (110592, "PRMT R41, R42, 0x7604, R41"),
    (110592, "PRMT R44, R44, 0x7604, R43"),
    (110592, "PRMT R31, R32, 0x7604, R31"),
    (110592, "PRMT R28, R29, 0x7604, R28"),
    (110592, "PRMT R28, R28, 0x1054, R31"),
    (110592, "PRMT R36, R36, 0x7604, R35"),
    (110592, "PRMT R35, R44, 0x1054, R41"),
    (110592, "PRMT R37, R37, 0x7604, R38"),
    (110592, "IDP.4A.S8.S8 R35, R28, R35, R0"),
    (110592, "PRMT R36, R36, 0x1054, R37"),
    (110592, "PRMT R24, R25, 0x7604, R24"),
    (110592, "PRMT R27, R27, 0x7604, R26"),
    (110592, "PRMT R24, R27, 0x1054, R24"),
    (110592, "PRMT R33, R34, 0x7604, R33"),
    (110592, "IDP.4A.S8.S8 R24, R24, R36, R35"),
    (110592, "PRMT R22, R23, 0x7604, R22"),
    (110592, "PRMT R22, R22, 0x1054, R33"),
    (110592, "PRMT R16, R19, 0x7604, R16"),
    (110592, "PRMT R17, R17, 0x7604, R14"),
    (110592, "PRMT R17, R17, 0x1054, R16"),
    (110592, "PRMT R20, R20, 0x7604, R21"),
    (110592, "IDP.4A.S8.S8 R17, R17, R22, R24"),
    (110592, "PRMT R13, R18, 0x7604, R13"),
    (110592, "PRMT R13, R13, 0x1054, R20"),
    (110592, "PRMT R12, R15, 0x7604, R12"),
    (110592, "PRMT R11, R30, 0x7604, R11"),
    (110592, "PRMT R12, R11, 0x1054, R12"),
    (110592, "IDP.4A.S8.S8 R0, R12, R13, R17"),
    (110592, "@P1 BRA 0x7b2df5268170"),
]


def context(listing: list[tuple[float, str]]):
    entries = [[16 * i, value, sass] for i, (value, sass) in enumerate(listing)]
    return kernel_context({"name": "listing", "per_instruction": {"inst_executed": entries}})


def test_an_int8_reference_gemm_is_a_stream_of_products() -> None:
    stream = fma_stream(context(REFERENCE_GEMM))
    assert stream is not None
    # four IDP.4A a loop step, each factor a register PRMT packed from loaded bytes, each adding the last one's result
    assert stream.fma == 4 * 110592 and stream.products == stream.fma and stream.mufu == 0
    assert stream.product_share == 1.0
    # 442,368 warp instructions × 32 lanes × 8 operations: the 384×384×384 product's 2 × 384³ = 113 M
    assert stream.dot_lanes == 4 * 110592 * 32
    assert stream.dot_ops == 8 * stream.dot_lanes == 2 * 384**3


def test_index_arithmetic_on_imad_is_no_product() -> None:
    # a convolution's loop: IMAD R7, R6, R13, R7 multiplies two registers no FMA wrote and adds a third, as a product
    # would, but its factors are indices; only the FFMA of the pixel and the weight counts
    stream = fma_stream(context([(1.0, s) for s in PROLOGUE] + [(121.0, s) for s in LOOP]))
    assert stream is not None
    assert stream.fma == 121.0 and stream.dot_ops == 0.0 and stream.dot_lanes == 0.0
    # the index arithmetic alone: no multiply-add at all
    index_only = [(121.0, s) for s in LOOP if not s.startswith("FFMA")]
    alone = fma_stream(context(index_only))
    assert alone is not None and alone.fma == 0.0 and alone.product_share == 0.0
