"""Which language a kernel's advice is written in: the user's own `gemm_*` kernel is CUDA code, not a library's."""

import pytest

from ncuadvisor.analysis.language import kernel_language, library_evidence, other_language, possible_languages


def test_user_gemm_with_source_lines_is_cuda_code(analyzed):
    # model_step.cu's gemm_tiled, compiled with -lineinfo: its findings are CUDA code changes
    res = analyzed("model_step_315")
    gemms = [k for k in res["kernels"] if k["name"] == "gemm_tiled"]
    assert gemms and all(k["language"] == "cuda" for k in gemms)
    # the 64-block launch (8 x 8 blocks on 132 SMs) was told nothing while it was taken for a cuBLAS kernel
    small = [k for k in gemms if k["grid"] == "(8, 8, 1)"]
    assert small and small[0]["findings"] and small[0]["findings"][0]["rule"] == "LCH001"


def test_library_like_names_are_decided_by_evidence():
    """A user's gemm, flash or fmha kernel built without -lineinfo is the user's CUDA code unless its demangled name
    shows a library's types or a name only cuBLAS uses (before: library by the name alone, every CUDA rule skipped
    silently); the evidence is said (`library_evidence`)."""
    user = [
        ("gemm_tiled", "gemm_tiled(const float *, const float *, float *, int)"),
        ("flash_fwd_kernel", "flash_fwd_kernel"),  # no template, no namespace: the user's own
        ("fmha_naive", "fmha_naive(const __half *, __half *, int)"),
        # the B2b GEMM a user composed from CUTLASS's templates (panjd123/cutlass, A100 80GB)
        (
            "Kernel",
            "void cutlass::Kernel<cutlass::gemm::kernel::B2bGemm<cutlass::gemm::threadblock::B2bMma<int>>>(int)",
        ),
    ]
    for name, demangled in user:
        assert kernel_language(name, demangled, []) == "cuda", name
        assert library_evidence(name, demangled, []) is None
    flash = (
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, (bool)0, (bool)0, "
        "cutlass::half_t, Flash_kernel_traits<(int)128, (int)128, (int)64, (int)4, cutlass::half_t>>, (bool)0>(Flash_fwd_params)"
    )
    assert kernel_language("flash_fwd_kernel", flash, []) == "library"
    assert library_evidence("flash_fwd_kernel", flash) == "Flash_fwd_kernel_traits in its name"
    assert library_evidence("splitKreduce_kernel", "void splitKreduce_kernel<32, 16, int, float>(...)") == (
        "a kernel name only cuBLAS uses"
    )
    cublas_cutlass = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(Params)"
    assert kernel_language("Kernel2", cublas_cutlass, []) == "library"


# PyTorch's memory-efficient attention (xFormers' CUTLASS kernels built into libtorch), as the transformers GPT-2
# step's phase 1 on the H100 named it (fixtures/profile-cost-2026-12-06/full_gpt2_train.json.xz)
MEM_EFF = (
    "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, "
    "float, (bool)1, (bool)0, (bool)0, (int)64, (int)64, (int)64, (bool)0>::Params)"
)


def test_a_library_binarys_types_decide_before_the_source_lines_are_known():
    """Phase 2 of `profile` collects the metrics of every language a kernel may turn out to be in: PyTorch's own
    attention kernel is library code whatever source lines a report holds, so the CUDA and Triton rules' metrics are
    not collected for it (before: its fmha_ name alone made the PyTorch step's collection 131 metrics in 21 replay
    passes, 2026-12-06); a user's fmha or gemm kernel, whose names carry no library's types, keeps them."""
    assert kernel_language("fmha_cutlassB_f32_aligned_64x64_k64_sm80", MEM_EFF, ["/src/kernel_backward.h"]) == "library"
    assert library_evidence("fmha_cutlassB_f32_aligned_64x64_k64_sm80", MEM_EFF, ["x.h"]) == (
        "PyTorchMemEffAttention in its name"
    )
    assert possible_languages("fmha_cutlassB_f32_aligned_64x64_k64_sm80", MEM_EFF) == {"library"}
    flash = "void flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128>>(Flash_fwd_params)"
    assert possible_languages("flash_fwd_kernel", flash) == {"library", "cuda", "triton"}
    assert possible_languages("gemm_tiled", "gemm_tiled(float*)") == {"cuda", "triton"}
    assert possible_languages("nvjet_sm90_tst", "nvjet_sm90_tst") == {"library"}


def test_library_names():
    assert kernel_language("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_256x128", []) == "library"
    assert kernel_language("sm90_xmma_gemm_bf16", "sm90_xmma_gemm_bf16", []) == "library"
    # a vendor prefix stays a library kernel even when the report resolves a source line for it
    assert kernel_language("cutlass_80_tensorop_s1688gemm", "cutlass_80_tensorop_s1688gemm", ["gemm.h"]) == "library"
    # cuBLAS's legacy kernels carry no source lines: library; the same names with the user's source: CUDA
    assert kernel_language("gemv2T_kernel_val", "void gemv2T_kernel_val<int, int, float>(...)", []) == "library"
    assert kernel_language("gemv2T_kernel_val", "gemv2T_kernel_val", ["/home/me/gemv.cu"]) == "cuda"
    assert kernel_language("flash_fwd_kernel", "flash_fwd_kernel", ["/home/me/attn.cu"]) == "cuda"
    assert kernel_language("triton_poi_fused_add_0", "triton_poi_fused_add_0", []) == "triton"
    assert kernel_language("elementwise_kernel", "void at::native::elementwise_kernel<128, 4>(...)", []) == "pytorch"
    assert kernel_language("my_kernel", "my_kernel(float*)", [""]) == "cuda"


# demangled names as the real reports hold them (fixtures/torch_norm_chain, torch_cast_copy, torch_train, torch_scatter)
GELU = (
    "void at::native::vectorized_elementwise_kernel<(int)8, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, "
    "at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::"
    "[lambda(c10::BFloat16) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<(int)8, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char *, (unsigned long)3>>(int, T2, T3)"
)
LAYOUT_COPY = (
    "void at::native::elementwise_kernel<(int)128, (int)4, void at::native::gpu_kernel_impl_nocast<at::native::"
    "direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() "
    "(instance 12)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)]>(at::TensorIteratorBase &, const T1 &)::"
    "[lambda(int) (instance 1)]>(int, T3)"
)
CAST = (
    "void at::native::vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy_kernel_cuda(at::"
    "TensorIteratorBase &)::[lambda(float) (instance 1)], std::array<char *, (unsigned long)2>>(int, T2, T3)"
)


def test_display_name_keeps_the_op_of_aten_generic_kernels():
    from ncuadvisor.analysis.language import display_name

    assert display_name("vectorized_elementwise_kernel", GELU) == "GeluCUDAKernelImpl"
    assert display_name("vectorized_elementwise_kernel", ADD) == "CUDAFunctor_add<BFloat16>"
    assert display_name("elementwise_kernel", LAYOUT_COPY) == "direct_copy"
    assert display_name("vectorized_elementwise_kernel", CAST) == "bfloat16_copy"
    # kernels with a name of their own keep it
    layer_norm = "void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(int, T2, const T1 *)"
    assert display_name("vectorized_layer_norm_kernel", layer_norm) == "vectorized_layer_norm_kernel"
    assert display_name("sm80_xmma_gemm_f32f32", "sm80_xmma_gemm_f32f32") == "sm80_xmma_gemm_f32f32"


def test_copy_kind_tells_a_cast_from_a_layout_copy():
    from ncuadvisor.analysis.language import cast_types, copy_kind

    assert copy_kind(CAST) == "cast" and cast_types(CAST) == ("float32", "bfloat16")
    assert copy_kind(LAYOUT_COPY) == "layout" and cast_types(LAYOUT_COPY) is None
    # the nocast kernel decides over DRAM bytes skewed by L2 (a small tensor)
    assert copy_kind(LAYOUT_COPY, 6.3e6, 2.1e6) == "layout"
    silent = (
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)>"
    )
    assert copy_kind(silent, 268e6, 115e6) == "cast" and copy_kind(silent, 134e6, 120e6) == "layout"
    assert copy_kind(ADD) is None


def test_display_name_of_reductions_foreach_scatters_and_scalar_ops():
    from ncuadvisor.analysis.language import display_name

    reduce = (
        "void at::native::reduce_kernel<(int)128, (int)4, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
        "at::native::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) "
        "(instance 1)]>, unsigned int, float, (int)4, (int)4>>(T3)"
    )
    foreach = (
        "void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<(int)2>, "
        "at::native::<unnamed>::UnaryOpFunctor<float, (int)2, (int)1, (int)1>, at::native::Sqrt<float>>(T1, T2, T3...)"
    )
    scatter = (
        "void at::native::_scatter_gather_elementwise_kernel<(int)128, (int)8, void at::native::"
        "_cuda_scatter_gather_internal_kernel<(bool)1, float, long>::operator ()<at::native::ReduceAdd>(at::"
        "TensorIterator &, long, long, long, const T1 &)::[lambda(int) (instance 1)]>(int, T3)"
    )
    mul = (
        "void at::native::vectorized_elementwise_kernel<(int)8, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, "
        "c10::BFloat16, at::native::binary_internal::MulFunctor<float>>, std::array<char *, (unsigned long)2>>(int, T2, T3)"
    )
    assert display_name("reduce_kernel", reduce) == "reduce sum_functor"
    assert display_name("multi_tensor_apply_kernel", foreach) == "foreach Sqrt"
    assert display_name("_scatter_gather_elementwise_kernel", scatter) == "scatter ReduceAdd"
    assert display_name("vectorized_elementwise_kernel", mul) == "MulFunctor"


@pytest.mark.parametrize(
    "demangled",
    [
        "void at_cuda_detail::cub::detail::radix_sort::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::detail::"
        "radix::policy_hub<long, long, unsigned int>::Policy900, false, long, long, int, unsigned int, "
        "at_cuda_detail::cub::detail::identity_decomposer_t>(int *, unsigned int *, const long *, long *, "
        "const long *, long *, unsigned int, int, int, at_cuda_detail::cub::detail::identity_decomposer_t)",
        "void cub::CUB_200200_900_NS::DeviceScanKernel<cub::CUB_200200_900_NS::DeviceScanPolicy<int>::Policy900>(int)",
        "void thrust::THRUST_200200_900_NS::cuda_cub::core::_kernel_agent<int>(int)",
    ],
)
def test_cub_and_thrust_kernels_are_library_code(demangled):
    """CUB's and Thrust's own kernels are library code, vendored by ATen or called by the user's program: no rule
    advises on their instructions."""
    assert kernel_language("k", demangled, []) == "library"


def test_an_aten_kernel_with_cub_in_its_template_arguments_stays_pytorch():
    d = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, cub::Sum>>>(int)"
    assert kernel_language("reduce_kernel", d, []) == "pytorch"
    assert (
        kernel_language("k", "void at::native::<unnamed>::compute_grad_weight<float, long>(const T2 *)", [])
        == "pytorch"
    )


def test_rules_skipped_on_library_code_are_said(analyzed):
    """A kernel taken for library code says which rules for CUDA code did not run on it, and on what evidence."""
    res = analyzed("torch_gemm_conv")
    libs = [k for k in res["kernels"] if k["language"] == "library"]
    assert libs
    for k in libs:
        notes = [s for s in k["skipped_rules"] if s["rule"] == "cuda-rules"]
        assert len(notes) == 1 and notes[0]["reason"].startswith("taken for library code (")
        assert "MEM001" in notes[0]["reason"] and "ROOF001" not in notes[0]["reason"]
    assert not any(
        s["rule"] == "cuda-rules" for k in res["kernels"] if k["language"] != "library" for s in k["skipped_rules"]
    )


def test_other_languages_are_named_where_their_names_tell():
    """Julia's (CUDA.jl) kernels take a CuKernelContext and CuDeviceArrays (as in IndexSpaces.jl's report on an A40),
    Numba's carry `cudapy` in their mangled namespace, CuPy's generated kernels start `cupy_`; a plain CUDA C kernel
    (or an extern "C" RawKernel) is told nothing."""
    julia = "julia__5_11155(CuKernelContext, CuDeviceArray<Float16x2, (int)1, (int)1>, Float16x2)"
    assert other_language("julia__5_11155", julia) == "Julia (CUDA.jl)"
    assert other_language("_ZN6cudapy8__main__7add_242B", "cudapy::__main__::add$242") == "Python (Numba)"
    assert other_language("cupy_add__float32_float32_float32", "") == "Python (CuPy)"
    assert other_language("hd_enc_lvid_packed_cuda", "hd_enc_lvid_packed_cuda") is None
    assert other_language("gemm_tiled", "gemm_tiled(const float *, float *, int)") is None


def test_other_languages_have_the_key_of_their_fixes():
    """The key under which a rule holds a fix written in that language (`rulekit.contract.WRITTEN_IN`)."""
    from ncuadvisor.analysis.language import written_in
    from ncuadvisor.rulekit.contract import WRITTEN_IN

    julia = "julia__5_11155(CuKernelContext, CuDeviceArray<Float16x2, (int)1, (int)1>, Float16x2)"
    assert written_in("julia__5_11155", julia) == "julia"
    assert written_in("_ZN6cudapy8__main__7add_242B", "cudapy::__main__::add$242") == "numba"
    assert written_in("cupy_add__float32_float32_float32", "") == "cupy"
    assert written_in("gemm_tiled", "gemm_tiled(const float *, float *, int)") is None
    assert set(WRITTEN_IN) == {"julia", "numba", "cupy"}
