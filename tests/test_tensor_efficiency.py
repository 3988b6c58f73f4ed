"""The share of the tensor peak a library GEMM reaches (`LIBRARY_TENSOR_EFFICIENCY`), which TEN001 and TEN002 use for
the time of a matrix product after it moves to cuBLAS/cuBLASLt: recomputed from the project's own captures, the
cuBLAS/nvjet kernels of the PyTorch fixtures with at least `LIBRARY_TENSOR_MIN_FLOPS` of tensor work, each distinct
kernel (name and work) once."""

import statistics

import pytest

from ncuadvisor.rulekit import LIBRARY_TENSOR_EFFICIENCY, LIBRARY_TENSOR_MIN_FLOPS


def _efficiencies(result) -> dict[tuple[str, float], float]:
    """(kernel name, tensor FLOPs) -> achieved tensor FLOP/s ÷ the report's tensor peak of its precision."""
    out = {}
    for k in result.kernels:
        r = k.roofline
        tensor = {p: v for p, v in r.flops_by_precision.items() if p.startswith("tensor") and v > 0}
        if k.language != "library" or not tensor or not r.duration_ns:
            continue
        work = sum(tensor.values())
        peak = r.peak_flops_per_s.get(max(tensor, key=lambda p: tensor[p]))
        if work >= LIBRARY_TENSOR_MIN_FLOPS and peak:
            out[(k.name, round(work / 1e9, 1))] = work / (r.duration_ns * 1e-9) / peak
    return out


def test_library_tensor_efficiency_is_the_median_of_the_captured_gemms(typed):
    found: dict[tuple[str, float], float] = {}
    for name in ("torch_gemm_conv", "torch_cast_copy", "torch_eager"):
        found.update(_efficiencies(typed(name)))
    # torch_gemm_conv's TF32 sm90_xmma GEMM, torch_cast_copy's two bf16 nvjet splitK GEMMs, torch_eager's bf16 nvjet
    assert len(found) == 4, found
    assert sorted(round(v, 2) for v in found.values()) == [0.71, 0.81, 0.82, 0.88]
    assert statistics.median(found.values()) == pytest.approx(LIBRARY_TENSOR_EFFICIENCY, abs=0.005)
