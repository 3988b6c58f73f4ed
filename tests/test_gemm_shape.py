"""GEN001 reads a tensor-core product's shape from its launch and counters (`rulekit.models.gemm_shape`), never from
its name, in the real H200 reports of PyTorch programs: a bf16 nvjet GEMM of fixtures/torch_compile.ncu-rep.xz (one
tile per SM, K = 1024: not "K too small") and the TF32 NHWC convolution of fixtures/torch_gemm_conv.ncu-rep.xz (a
library product whose floor is the tensor pipe's while no unit is half busy)."""


def gen001(result: dict, name_part: str) -> list[dict]:
    return [f for k in result["kernels"] if name_part in k["name"] for f in k["findings"] if f["rule"] == "GEN001"]


def test_a_bf16_gemm_one_tile_per_sm(analyzed):
    (f,) = gen001(analyzed("torch_compile"), "nvjet")
    assert "one tile per SM, the tile pipeline's fill and drain not amortised" in f["title"]
    assert "M·N ≈ 4,194,304 outputs (at 2 bytes each) in 128 tiles of ~32,768, K ≈ 1,024" in f["message"]
    assert "K too small" not in f["title"]


def test_a_tf32_convolution_takes_the_tensor_path(analyzed):
    found = gen001(analyzed("torch_gemm_conv"), "sm90_xmma_fprop_implicit_gemm")
    assert found, "the TF32 convolution at 2.7x its floor gets GEN001"
    assert "K ≈ 576" in found[0]["message"] and "long scoreboard" not in found[0]["title"]
