"""ISU001 (index arithmetic) on real reports: the blur pair of workloads/cuda/cache.cu (fixtures/cache.ncu-rep.xz,
captured on an H200) and PyTorch's ATen elementwise kernels (fixtures/torch_eager.ncu-rep.xz)."""


def by_name(res):
    return {k["name"]: k for k in res["kernels"]}


def test_clamped_blur_is_index_math_first(analyzed):
    k = by_name(analyzed("cache"))["blur_global"]
    first = k["findings"][0]
    assert first["rule"] == "ISU001" and first["category"] == "instruction-overhead"
    share = next(e["value"] for e in first["evidence"] if e["metric"] == "overhead_instruction_share")
    assert share >= 0.6
    assert 0.2 < first["estimated_speedup"] < 0.5  # measured: 140.9 -> 102.5 us for the hoisted twin (27% less time)
    assert any(s["file"] and s["file"].endswith("cache.cu") for s in first["source"])
    assert "32-bit" in first["fix"] and "__launch_bounds__" not in first["fix"]


def test_hoisted_twin_is_not_flagged(analyzed):
    k = by_name(analyzed("cache"))["blur_global_hoisted"]
    assert all(f["rule"] != "ISU001" for f in k["findings"])


def test_aten_kernels_get_pytorch_advice(analyzed):
    res = analyzed("torch_eager")
    hits = [(k, f) for k in res["kernels"] for f in k["findings"] if f["rule"] == "ISU001"]
    assert hits
    for k, f in hits:
        assert k["language"] == "pytorch"
        assert "contiguous" in f["fix"] and "torch.compile" in f["fix"]
    # cuBLAS matrix products stay at-roofline
    assert all(f["rule"] != "ISU001" for k in res["kernels"] if k["language"] == "library" for f in k["findings"])


def test_no_index_math_finding_on_the_planted_flaws(analyzed):
    """None of the 31 kernels of flaws.cu is issue-bound on bookkeeping: the rule stays quiet there."""
    res = analyzed("flaws")
    assert not [k["name"] for k in res["kernels"] for f in k["findings"] if f["rule"] == "ISU001"]
