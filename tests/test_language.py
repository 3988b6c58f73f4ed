"""Which language a kernel's advice is written in: the user's own `gemm_*` kernel is CUDA code, not a library's."""

from ncuadvisor.analysis.language import kernel_language


def test_user_gemm_with_source_lines_is_cuda_code(analyzed):
    # model_step.cu's gemm_tiled, compiled with -lineinfo: its findings are CUDA code changes
    res = analyzed("model_step_315")
    gemms = [k for k in res["kernels"] if k["name"] == "gemm_tiled"]
    assert gemms and all(k["language"] == "cuda" for k in gemms)
    # the 64-block launch (8 x 8 blocks on 132 SMs) was told nothing while it was taken for a cuBLAS kernel
    small = [k for k in gemms if k["grid"] == "(8, 8, 1)"]
    assert small and small[0]["findings"] and small[0]["findings"][0]["rule"] == "LCH001"


def test_library_names():
    assert kernel_language("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_256x128", []) == "library"
    assert kernel_language("sm90_xmma_gemm_bf16", "sm90_xmma_gemm_bf16", []) == "library"
    # a vendor prefix stays a library kernel even when the report resolves a source line for it
    assert kernel_language("cutlass_80_tensorop_s1688gemm", "cutlass_80_tensorop_s1688gemm", ["gemm.h"]) == "library"
    # cuBLAS's legacy kernels carry no source lines: library; the same names with the user's source: CUDA
    assert kernel_language("gemv2T_kernel_val", "void gemv2T_kernel_val<int, int, float>(...)", []) == "library"
    assert kernel_language("gemv2T_kernel_val", "gemv2T_kernel_val", ["/home/me/gemv.cu"]) == "cuda"
    assert kernel_language("flash_fwd_kernel", "flash_fwd_kernel", []) == "library"
    assert kernel_language("flash_fwd_kernel", "flash_fwd_kernel", ["/home/me/attn.cu"]) == "cuda"
    assert kernel_language("triton_poi_fused_add_0", "triton_poi_fused_add_0", []) == "triton"
    assert kernel_language("elementwise_kernel", "void at::native::elementwise_kernel<128, 4>(...)", []) == "pytorch"
    assert kernel_language("my_kernel", "my_kernel(float*)", [""]) == "cuda"
