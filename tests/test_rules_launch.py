"""LCH001's partial wave: a grid of at least a block per SM but a fraction of one wave (real reports)."""

import pytest


def test_partial_wave_on_the_model_steps_gemm(analyzed):
    res = analyzed("model_step_315")
    k = next(k for k in res["kernels"] if k["name"] == "gemm_tiled" and k["grid"] == "(32, 8, 1)")
    f = k["findings"][0]
    assert f["rule"] == "LCH001" and f["title"].startswith("Partial wave: 256 blocks where 792 fit")
    assert "split-K" in f["fix"] and "792 blocks" in f["fix"]
    waves = next(e for e in f["evidence"] if e["metric"] == "launch__waves_per_multiprocessor")
    assert waves["value"] < waves["threshold"] == 0.5
    # the same kernel at 512 blocks (0.65 waves) is told nothing of the kind
    big = next(k for k in res["kernels"] if k["name"] == "gemm_tiled" and k["grid"] == "(64, 8, 1)")
    assert not any(f["title"].startswith("Partial wave") for f in big["findings"])
    # Little's law over the busiest SM's active time, the L1/shared pipe capped at 85%, minus split-K's reduction
    # (checked against the split-K twins of workloads/cuda/wave.cu): about a quarter, not the 40-50% of Little's law
    # over the whole duration
    assert 0.15 < f["estimated_speedup"] < 0.35
    assert "Split-K pays a reduction of the 3 partial results" in f["fix"]
    assert "L1/shared memory" in f["speedup_model"]


def test_small_grid_of_a_tiled_kernel_is_told_split_k(analyzed):
    """64 blocks of the tiled GEMM on 132 SMs: the grid is the output tiles, so the fix is split-K (not a grid-stride
    launch), and the estimate spreads the same work over the idle SMs, less the reduction."""
    res = analyzed("model_step_315")
    k = next(k for k in res["kernels"] if k["name"] == "gemm_tiled" and k["grid"] == "(8, 8, 1)")
    f = k["findings"][0]
    assert f["rule"] == "LCH001" and f["title"].startswith("64 blocks for 132 SMs")
    assert "split the reduction loop across 12 blocks per tile" in f["fix"]
    assert "grid-stride" not in f["fix"]
    assert 0.3 < f["estimated_speedup"] < 0.6


@pytest.mark.parametrize("name", ["flaws", "cache", "torch_eager", "torch_compile", "probe", "tiny_sections"])
def test_partial_wave_silent_elsewhere(analyzed, name):
    for k in analyzed(name)["kernels"]:
        assert not any(f["title"].startswith("Partial wave") for f in k["findings"]), k["name"]


def test_fixed_call_sites_are_not_dynamic_shapes(analyzed):
    """model_step runs gemm_tiled at 6 matrix sizes, every one of them in every step: call sites, not shapes that
    change (PRG003 used to say they defeat CUDA Graphs). The duration-only capture of 5 sequence lengths, one after
    the other, still gets PRG003 (tests/test_processes.py)."""
    res = analyzed("model_step_315")
    shapes = {(k["grid"], k["block"]) for k in res["kernels"] if k["name"] == "gemm_tiled"}
    assert len(shapes) >= 4
    assert not [f for f in res["program_findings"] if f["rule"] == "PRG003"]


def test_split_k_estimate_on_the_measured_twins(analyzed):
    """workloads/cuda/wave.cu on the H200 (fixtures/wave.ncu-rep.xz; manifest_wave.json holds the timings): the same
    256-block GEMM over K = 256 and K = 4096. Serial split-K measured 14.5 -> 14.2 us (the reduction eats the gain)
    and 190.5 -> 144.4 us (-24%). The estimate must tell the two apart: small at K = 256, near the measured quarter at
    K = 4096; and no fixed twin is told to fix its grid again."""
    res = analyzed("wave")
    by = {k["name"]: k for k in res["kernels"]}
    short, long_ = by["gemm_big_tiles"]["findings"][0], by["gemm_big_tiles_long"]["findings"][0]
    assert short["rule"] == long_["rule"] == "LCH001"
    assert short["estimated_speedup"] < 0.2
    assert 0.2 < long_["estimated_speedup"] < 0.32
    assert "serial split-K" in long_["fix"] and "3 blocks per tile" in long_["fix"]
    for twin in (
        "gemm_small_tiles",
        "gemm_splitk",
        "splitk_sum",
        "gemm_splitk_serial",
        "gemm_two_per_thread",
        "gemm_splitk_serial_long",
    ):
        assert not any(f["rule"] == "LCH001" for f in by[twin]["findings"]), twin


def test_tail_effect_on_the_compiled_layer_norms(analyzed):
    """torch.compile's fused layer norms (fixtures/torch_compile): 4096 programs where 3,690 fit, 1.11 waves. The
    advice speaks Triton (a persistent grid of one wave), and the estimate shrinks only the SMs' active time: launch
    ramp and drain stay, so it saves less than the 1 - 1.11 / 2 = 44.5% of the whole duration."""
    res = analyzed("torch_compile")
    tails = [
        (k, f)
        for k in res["kernels"]
        for f in k["findings"]
        if f["rule"] == "LCH001" and f["title"].startswith("Tail effect: 1.11 waves")
    ]
    names = {k["name"] for k, _ in tails}
    assert any(n.startswith("triton_per_fused_add_native_layer_norm") for n in names), names
    for k, f in tails:
        if k["language"] != "triton":
            continue
        assert "persistent" in f["fix"] and "__launch_bounds__" not in f["fix"]
        assert "ramp and drain stay" in f["speedup_model"]
        assert 0.2 < f["estimated_speedup"] < 1 - 1.11 / 2
