"""Which language a kernel is written in (cuda, triton, pytorch, library): it decides which rules apply and in which
language their fix is written."""

from __future__ import annotations

import re
from collections.abc import Iterable

# vendor kernels, never the user's code: cuBLAS(Lt), cuDNN, CUTLASS, NCCL, MAGMA
_LIBRARY_RE = re.compile(
    r"^(void )?(sm\d+_xmma|sm\d+_|ampere_|volta_|turing_|hopper_|cutlass|cublas|cublasLt|nvjet|xmma|cudnn|magma|"
    r"ncclDevKernel|ncclKernel)",
    re.IGNORECASE,
)
# names a library kernel often has (cuBLAS's gemv2T_kernel_val, gemmSN_NN_kernel, splitKreduce_kernel; FlashAttention's
# flash_fwd_kernel) and the user's own kernels as often (a gemm_tiled compiled with -lineinfo): library only when the
# kernel carries no source lines of its own
_LIBRARY_LIKE_RE = re.compile(r"^(void )?(gemm|gemv|splitKreduce|fmha|flash)", re.IGNORECASE)


def kernel_language(name: str, demangled: str, source_files: Iterable[str]) -> str:
    """cuda | triton | library | pytorch: decides which language the fix is written in."""
    files = [f for f in source_files if f]
    if name.startswith("triton_") or any(f.endswith(".py") for f in files):
        return "triton"
    if any(ns in demangled for ns in ("at::native", "at::cuda", "c10::", "at::")):
        return "pytorch"
    if _LIBRARY_RE.match(name) or _LIBRARY_RE.match(demangled):
        return "library"
    if not files and (_LIBRARY_LIKE_RE.match(name) or _LIBRARY_LIKE_RE.match(demangled)):
        return "library"
    return "cuda"
