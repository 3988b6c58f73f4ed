"""Which language a kernel is written in (cuda, triton, pytorch, library): it decides which rules apply and in which
language their fix is written."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# vendor kernels, never the user's code: cuBLAS(Lt), cuDNN, CUTLASS, NCCL, MAGMA
_LIBRARY_RE = re.compile(
    r"^(void )?(sm\d+_xmma|sm\d+_|ampere_|volta_|turing_|hopper_|cutlass|cublas|cublasLt|nvjet|xmma|cudnn|magma|"
    r"ncclDevKernel|ncclKernel)",
    re.IGNORECASE,
)
# names a library kernel often has (cuBLAS's gemv2T_kernel_val, gemmSN_NN_kernel, splitKreduce_kernel; FlashAttention's
# flash_fwd_kernel) and the user's own kernels as often (a gemm_tiled, a flash_attn_kernel, built without -lineinfo):
# library only by evidence (`library_evidence`), never by the name alone
_LIBRARY_LIKE_RE = re.compile(r"^(void )?(gemm|gemv|splitKreduce|fmha|flash)", re.IGNORECASE)
# the evidence, in a library-like kernel's demangled name: a library's own types and namespaces (cuBLAS's
# cublasGemvParams and cublasGemvTensorStrided, FlashAttention's flash:: and Flash_fwd_kernel_traits, PyTorch's
# pytorch_flash:: and PyTorchMemEffAttention::, xFormers' fmha_cutlass, cuBLAS's generated cutlass_80_... kernels)
_LIBRARY_EVIDENCE_RE = re.compile(
    r"cublas|\bflash::|Flash_(?:fwd|bwd)_kernel_traits|pytorch_flash|PyTorchMemEffAttention|\bfmha::|fmha_cutlass|"
    r"xformers|\bcutlass_\d"
)
# the part of that evidence that names a vendor's or a framework's own binary (cuBLAS's types and its generated
# cutlass_80_... kernels, PyTorch's attention kernels, xFormers'): library code even where the report resolves source
# lines for it, so known from the names alone before phase 2 of `profile` collects them (`possible_languages`)
_LIBRARY_BINARY_RE = re.compile(r"cublas|pytorch_flash|PyTorchMemEffAttention|xformers|\bcutlass_\d")
# kernel names only cuBLAS uses (its legacy kernels: splitKreduce_kernel, gemv2T_kernel_val, gemmSN_NN_kernel, ...)
_CUBLAS_NAMES_RE = re.compile(
    r"^(void )?(splitKreduce_kernel|gemv2[NT]_kernel\w*|gemmSN_[NT][NT]_kernel|gemmk1_kernel)\b"
)
# a CUTLASS kernel the program composed itself (`cutlass::Kernel<cutlass::gemm::kernel::B2bGemm<...>>`): CUTLASS is a
# header library compiled into the user's program, unlike cuBLAS's generated `cutlass::Kernel2<cutlass_80_...>`
_USER_CUTLASS_RE = re.compile(r"^(void )?cutlass::Kernel2?<cutlass::")


# CUB and Thrust's own kernels (`cub::…::DeviceRadixSortOnesweepKernel`, ATen's vendored `at_cuda_detail::cub::…`,
# `thrust::…::cuda_cub::core::_kernel_agent`): library code whatever program calls them, told by the kernel's own
# qualified name (the text before its template arguments), not by a `cub::` in the arguments of an ATen kernel
_CUB_RE = re.compile(r"(?:^|::)(?:cub|thrust)::")


def qualified_name(demangled: str) -> str:
    """The kernel function's qualified name: `void at_cuda_detail::cub::X<…>(…)` → `at_cuda_detail::cub::X`."""
    text = demangled[5:] if demangled.startswith("void ") else demangled
    text = text.replace("<unnamed>", "{unnamed}").replace("(anonymous namespace)", "{anonymous}")
    cut = min((i for i in (text.find("<"), text.find("(")) if i >= 0), default=len(text))
    return text[:cut].strip()


# the languages of kernels whose code is a library's (PyTorch's ATen, cuBLAS, CUB, ...), not the user's to change
LIBRARY_LANGUAGES = frozenset({"library", "pytorch"})


def kernel_language(name: str, demangled: str, source_files: Iterable[str]) -> str:
    """cuda | triton | library | pytorch: decides which language the fix is written in."""
    files = [f for f in source_files if f]
    if name.startswith("triton_") or any(f.endswith(".py") for f in files):
        return "triton"
    if _CUB_RE.search(qualified_name(demangled or name)):
        return "library"
    if any(ns in demangled for ns in ("at::native", "at::cuda", "c10::", "at::")):
        return "pytorch"
    return "library" if library_evidence(name, demangled, files) else "cuda"


def library_evidence(name: str, demangled: str, source_files: Iterable[str] = ()) -> str | None:
    """Why a kernel (not Triton's, CUB's or PyTorch's) is taken for library code, in words, or None (the user's
    CUDA code): a vendor's name prefix (cuBLAS's ampere_/sm90_xmma_, cuDNN, NCCL), or a library-like name (gemm,
    gemv, flash, fmha) with a library's types in its demangled name or a name only cuBLAS uses, and no source lines
    of its own. A CUTLASS kernel the program composed itself is its code."""
    files = [f for f in source_files if f]
    if _USER_CUTLASS_RE.match(demangled or "") and not _LIBRARY_EVIDENCE_RE.search(demangled):
        return None
    if _LIBRARY_RE.match(name) or _LIBRARY_RE.match(demangled):
        return "a library's name prefix"
    if not (_LIBRARY_LIKE_RE.match(name) or _LIBRARY_LIKE_RE.match(demangled)):
        return None
    if m := _LIBRARY_BINARY_RE.search(demangled or ""):
        return f"{m.group(0)} in its name"
    if files:
        return None
    if _CUBLAS_NAMES_RE.match(name) or _CUBLAS_NAMES_RE.match(demangled):
        return "a kernel name only cuBLAS uses"
    if m := _LIBRARY_EVIDENCE_RE.search(demangled):
        return f"{m.group(0)} in its name"
    return None


# ATen's copy kernels: `direct_copy_kernel_cuda` (same dtype, any strides), `<dtype>_copy_kernel_cuda` (a cast to
# that dtype, `[lambda(<source type>)]`), the generic path's `LoadWithCast`/`StoreWithCast`/`fetch_and_cast`
_ATEN_COPY_RE = re.compile(r"direct_copy_kernel|copy_kernel|CatArrayBatchedCopy|index_put|clone|contiguous")
_CAST_FN_RE = re.compile(r"\b(\w+?)_copy_kernel_cuda\b(?:\([^()]*\)::\[lambda\((?P<src>[\w:]+)\))?")
_DYNAMIC_CAST_RE = re.compile(r"LoadWithCast|StoreWithCast|fetch_and_cast|cast_and_store")
_DTYPES = {
    "float": "float32",
    "double": "float64",
    "c10::Half": "float16",
    "c10::BFloat16": "bfloat16",
    "Half": "float16",
}
# a DRAM read/write ratio this far from 1 means the element size changes between input and output
CAST_BYTE_RATIO = 1.4


def copy_kind(demangled: str, read_bytes: float | None = None, write_bytes: float | None = None) -> str | None:
    """ "cast" for an ATen copy that changes the dtype, "layout" for one that keeps it, None for no ATen copy.

    A cast is told by its kernel (`bfloat16_copy_kernel_cuda`, a copy with `LoadWithCast`; `gpu_kernel_impl_nocast`
    converts nothing) or, when the name says nothing, by its DRAM bytes: reading 4 bytes per element and writing 2 is
    a float → bf16 cast, not a layout change."""
    if not _ATEN_COPY_RE.search(demangled):
        return None
    m = _CAST_FN_RE.search(demangled)
    if m and m.group(1) != "direct":
        return "cast"
    if _DYNAMIC_CAST_RE.search(demangled):
        return "cast"
    if "_nocast" in demangled:  # ATen's copy without conversion: same dtype in and out
        return "layout"
    # DRAM bytes only when the name is silent: a small tensor read from (or left in) L2 skews them
    if read_bytes and write_bytes:
        ratio = read_bytes / write_bytes
        if ratio >= CAST_BYTE_RATIO or ratio <= 1 / CAST_BYTE_RATIO:
            return "cast"
    return "layout"


def cast_types(demangled: str) -> tuple[str, str] | None:
    """(source, destination) dtype of an ATen cast kernel when its name states them: `bfloat16_copy_kernel_cuda(...)::
    [lambda(float)]` → ("float32", "bfloat16")."""
    m = _CAST_FN_RE.search(demangled)
    if not m or m.group(1) == "direct" or not m.group("src"):
        return None
    src = m.group("src")
    return _DTYPES.get(src, src.replace("c10::", "")), m.group(1)


# ATen's generic kernels: the op is in their template arguments
_GENERIC_RE = re.compile(
    r"^(?:void )?(?:at::native::)?(?:\w+::)*(elementwise_kernel|vectorized_elementwise_kernel|unrolled_elementwise_kernel|"
    r"reduce_kernel|elementwise_kernel_with_index|_scatter_gather_elementwise_kernel|index_elementwise_kernel|"
    r"vectorized_templated_elementwise_kernel)\b"
)
_OP_FN_RE = re.compile(r"(?:at::native::)?(?:<unnamed>::)?(\w+)\([^()]*(?:\([^()]*\))?[^()]*\)(?: const)?::\[lambda")
_FUNCTOR_RE = re.compile(r"(\w*Functor\w*|\w+Ops?)(<[^<>]*>)?")
_NS_RE = re.compile(r"\b(?:c10|at|std|at::native)::")
_SUFFIX_RE = re.compile(r"(_kernel_cuda|_cuda_kernel|_kernel)$")
_WRAPPED_RE = re.compile(r"\b(?:AUnary|BUnary|Binary)Functor<[^<>]*?(?:\w+::)*(\w+Functor)<")


# reductions name their combine op (`sum_functor`, `MeanOps`), foreach kernels the math after their functor
# (`std::multiplies`, `at::native::Sqrt`), scatters their reduction (`ReduceAdd`)
_REDUCE_RE = re.compile(r"^(?:void )?at::native::reduce_kernel<.*?\b(\w+_functor|\w+Ops)\b")
_FOREACH_RE = re.compile(
    r"^(?:void )?(?:at::native::)?(?:<unnamed>::)?multi_tensor_apply_kernel<.*?Functor<[^<>]*>, (?:std::|at::native::)?"
    r"(\w+)"
)
_SCATTER_RE = re.compile(r"_scatter_gather_elementwise_kernel<.*?operator \(\)<(?:at::native::)?(\w+)>")


def display_name(name: str, demangled: str) -> str:
    """A short name that tells ATen's generic kernels apart by the op they run: `CUDAFunctor_add<BFloat16>`,
    `GeluCUDAKernelImpl`, `direct_copy`, `bfloat16_copy`, `reduce sum_functor`, `foreach multiplies`,
    `scatter ReduceAdd`; other kernels keep their function name."""
    for pattern, prefix in ((_REDUCE_RE, "reduce"), (_FOREACH_RE, "foreach"), (_SCATTER_RE, "scatter")):
        if demangled and (m := pattern.search(demangled)):
            return f"{prefix} {m.group(1)}"
    if not demangled or not _GENERIC_RE.match(demangled):
        return name
    args = demangled[demangled.find("<") + 1 :]
    m = _OP_FN_RE.search(args)
    if m and m.group(1) not in ("operator", "gpu_kernel_impl", "gpu_kernel_impl_nocast"):
        return _SUFFIX_RE.sub("", m.group(1)) or m.group(1)
    # a tensor-scalar op wraps its math: AUnaryFunctor<..., MulFunctor<float>> is a MulFunctor
    wrapped = _WRAPPED_RE.search(args)
    if wrapped:
        return wrapped.group(1)
    f = _FUNCTOR_RE.search(args)
    if f and "Functor" in f.group(1):
        return _NS_RE.sub("", f.group(1) + (f.group(2) or ""))
    return name


# Kernels other languages compile to PTX, told by their names: CUDA.jl's (Julia: `julia_*`, taking a CuKernelContext
# and CuDeviceArray arguments, IndexSpaces.jl on an A40), Numba's (`cudapy::` in the mangled namespace), CuPy's
# generated elementwise and reduction kernels (`cupy_*`). A CuPy RawKernel or Mojo kernel is `extern "C"` code that
# cannot be told from CUDA C by its name. Each: its pattern, its name in words, the key a rule's fix in it has
# (`fixes = {"julia": Fix(...)}`: `rulekit.contract.WRITTEN_IN`).
_OTHER_LANGUAGES = (
    (re.compile(r"CuKernelContext|CuDeviceArray|^_Z\d+julia_|^julia_"), "Julia (CUDA.jl)", "julia"),
    (re.compile(r"cudapy|numba", re.IGNORECASE), "Python (Numba)", "numba"),
    (re.compile(r"^cupy_"), "Python (CuPy)", "cupy"),
)


def _other(name: str, demangled: str) -> tuple[str, str] | None:
    for pattern, language, key in _OTHER_LANGUAGES:
        if pattern.search(name) or pattern.search(demangled or ""):
            return language, key
    return None


def other_language(name: str, demangled: str) -> str | None:
    """The language a kernel the analysis treats as CUDA code was written in, where its names tell it (Julia,
    Numba, CuPy), else None: the rules run on it as on CUDA code, and its fixes are written for CUDA C unless a rule
    has words in its language (`written_in`)."""
    other = _other(name, demangled)
    return other[0] if other else None


def written_in(name: str, demangled: str) -> str | None:
    """The key of that language ("julia", "numba", "cupy"), under which a rule may hold a fix written in it."""
    other = _other(name, demangled)
    return other[1] if other else None


def possible_languages(name: str, demangled: str) -> set[str]:
    """Every language `kernel_language` may decide for a kernel once its report is read, known from its names alone
    (before its source lines are collected): a library-like name without a vendor prefix or a library binary's own
    types (`PyTorchMemEffAttention`, `cublas`) may turn out to be the user's CUDA code, and a CUDA-looking name may be
    a Triton kernel whose source is Python."""
    lang = kernel_language(name, demangled, [])
    out = {lang}
    if lang == "library" and library_evidence(name, demangled, ["?"]) is None:
        out |= {"cuda", "triton"}
    if lang == "cuda":
        out.add("triton")
    return out


# the ATen op behind an atomic or histogram kernel, for messages only (rules fire on counters, not on names)
_ATOMIC_OPS = (
    (re.compile(r"indexFunc(Large|Small)Index"), "index_add_"),
    (re.compile(r"_scatter_gather_elementwise_kernel|scatter_gather"), "scatter_add_ / scatter_reduce_"),
    (re.compile(r"index_put|indexing_backward"), "index_put_(accumulate=True)"),
    (re.compile(r"embedding_backward|EmbeddingBag|embedding_bag"), "embedding backward"),
    (re.compile(r"[Hh]istogram|histc|bincount"), "bincount / histc"),
)


def aten_op(demangled: str, default: str = "an ATen scatter") -> str:
    """The PyTorch op an ATen scatter or histogram kernel implements, in words ('index_add_', 'bincount / histc')."""
    return next((op for pattern, op in _ATOMIC_OPS if pattern.search(demangled)), default)


# ATen's multi-tensor-apply kernels: one launch runs a functor over chunks of lists of tensors (`torch._foreach_*`
# ops: optimizers' foreach steps, clip_grad_norm_'s norms and scaling, zero_grad; the fused optimizers' math). The
# functor's template arguments are <element type, lists, lists read, list written>; the op follows the functor.
_MTA_RE = re.compile(r"^(?:void )?at::native::(?:<unnamed>::|\(anonymous namespace\)::)?multi_tensor_apply_kernel<")
_MTA_FUNCTOR_RE = re.compile(r"(\w+Functor)<([^<>]*)>,\s*(?:[\w:]+::)?(\w+)")
_INT_ARG_RE = re.compile(r"^\((?:int|bool)\)(\d+)$")
ELEMENT_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "Half": 2, "BFloat16": 2}


@dataclass(frozen=True)
class ForeachKernel:
    """An ATen multi-tensor-apply kernel, from its demangled name: `BinaryOpScalarFunctor<float, (int)1, (int)1,
    (int)0>, std::multiplies<float>` is functor BinaryOpScalarFunctor, element float, 1 list, 1 read, op
    multiplies."""

    functor: str
    element: str
    lists: int | None
    reads: int | None
    op: str

    @property
    def element_bytes(self) -> int | None:
        return ELEMENT_BYTES.get(self.element)


def foreach_kernel(demangled: str) -> ForeachKernel | None:
    """The functor, element type, list counts and op of an ATen multi-tensor-apply kernel; None for any other."""
    m = _MTA_RE.match(demangled or "")
    if not m:
        return None
    f = _MTA_FUNCTOR_RE.search(demangled, m.end())
    if not f:
        return ForeachKernel(functor="", element="", lists=None, reads=None, op="")
    args = [a.strip() for a in f.group(2).split(",")]
    ints = [int(i.group(1)) if (i := _INT_ARG_RE.match(a)) else None for a in args[1:3]] + [None, None]
    return ForeachKernel(functor=f.group(1), element=args[0], lists=ints[0], reads=ints[1], op=f.group(3))


# ATen's softmax kernels (SoftMax.cu, PersistentSoftmax.cuh): one block per row for long rows (`cunn_SoftMaxForward`,
# `cunn_SoftMaxForwardSmem` with the row cached in shared memory, `cunn_SoftMaxBackward`), a warp per row (or two) for
# rows of up to 1,024 elements (`softmax_warp_forward/backward<input_t, output_t, acc_t, log2_elements,
# is_log_softmax, is_masked>`), and `cunn_SpatialSoftMax*` for a softmax over a middle dimension (N, C, H, W).
# Log-softmax is told by the epilogue (`LogSoftMaxForwardEpilogue`) or by the warp kernels' is_log_softmax flag.
_SOFTMAX_RE = re.compile(
    r"\b(?P<fn>cunn_SoftMax(?:Forward|Backward)(?:Smem|Gmem)?|cunn_SpatialSoftMax(?:Forward|Backward)|"
    r"softmax_warp_(?:forward|backward))<"
)
_NLL_RE = re.compile(r"\bnll_loss(?:2d)?_(?:forward|backward)\w*")


@dataclass(frozen=True)
class SoftmaxKernel:
    """An ATen softmax or log-softmax kernel, from its demangled name: which pass (`forward`, `backward`), which
    implementation (`block`: a block per row, `warp`: a warp per row, `spatial`), whether it is a log-softmax, and
    the element types it reads (`reads`: the input forward, the output and its gradient backward) and writes
    (`writes`: the output forward, the input's gradient backward)."""

    direction: str
    kind: str
    log: bool
    reads: str
    writes: str
    log2_elements: int | None = None  # the warp kernels: rows of at most 2**log2_elements elements

    @property
    def write_bytes(self) -> int | None:
        return ELEMENT_BYTES.get(self.writes)

    @property
    def read_bytes(self) -> int | None:
        return ELEMENT_BYTES.get(self.reads)


def _template_args(text: str, start: int) -> list[str]:
    """The top-level template arguments of the `<` at `start - 1`."""
    args: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text[start:]:
        if ch == "<" or ch == "(":
            depth += 1
        elif ch == ">" or ch == ")":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    args.append("".join(cur).strip())
    return args


def softmax_kernel(demangled: str) -> SoftmaxKernel | None:
    """What an ATen softmax kernel computes, from its template arguments; None for any other kernel."""
    m = _SOFTMAX_RE.search(demangled or "")
    if not m:
        return None
    fn, args = m.group("fn"), _template_args(demangled, m.end())
    direction = "backward" if "ackward" in fn else "forward"
    if fn.startswith("softmax_warp"):  # <input_t, output_t, acc_t, log2_elements, is_log_softmax, is_masked>
        if len(args) < 5:
            return None
        log2 = _INT_ARG_RE.match(args[3])
        flag = _INT_ARG_RE.match(args[4])
        # backward: reads the output and its gradient (input_t), writes the input's gradient (output_t)
        return SoftmaxKernel(
            direction=direction,
            kind="warp",
            log=bool(flag and flag.group(1) == "1"),
            reads=args[0],
            writes=args[1],
            log2_elements=int(log2.group(1)) if log2 else None,
        )
    log = "LogSoftMax" in demangled[m.end() :]
    if fn.startswith("cunn_Spatial"):  # <scalar_t, accscalar_t, outscalar_t, [index_t,] Epilogue>
        scalar, out = args[0], args[2] if len(args) > 2 else ""
    else:  # <ILP, scalar_t, accscalar_t, outscalar_t, Epilogue>
        scalar, out = (args[1], args[3]) if len(args) > 3 else ("", "")
    reads, writes = (scalar, out) if direction == "forward" else (out, scalar)
    return SoftmaxKernel(
        direction=direction, kind="spatial" if "Spatial" in fn else "block", log=log, reads=reads, writes=writes
    )


def nll_loss_kernel(demangled: str) -> bool:
    """Whether the kernel is one of ATen's nll_loss kernels (forward or backward, 1-D or 2-D targets)."""
    return bool(_NLL_RE.search(demangled or ""))


def aten_generic_kernel(demangled: str) -> bool:
    """Whether the kernel is one of ATen's generic elementwise or reduction loops (a cast, a fill, an add, a sum)."""
    return bool(_GENERIC_RE.match(demangled or ""))
