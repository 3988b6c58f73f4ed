"""PyTorch eager and torch.compile reports: library/ATen/Triton kernels get advice in their own terms."""


def test_languages_are_recognised(analyzed):
    eager = analyzed("torch_eager")
    langs = {k["name"]: k["language"] for k in eager["kernels"]}
    assert langs["vectorized_layer_norm_kernel"] == "pytorch"
    assert langs["softmax_warp_forward"] == "pytorch"
    assert any(n.startswith("nvjet") and lang == "library" for n, lang in langs.items())
    compiled = analyzed("torch_compile")
    assert all(k["language"] == "triton" for k in compiled["kernels"] if k["name"].startswith("triton_"))


def test_cublas_matrix_product_on_tensor_cores_is_at_roofline(analyzed):
    r = analyzed("torch_eager")
    qkv = max((k for k in r["kernels"] if k["language"] == "library"), key=lambda k: k["roofline"]["flops"])
    # 2*M*N*K for the fused QKV projection: M = 8*512 tokens, N = 3*1024, K = 1024 (bf16 on tensor cores)
    assert (
        abs(qkv["roofline"]["flops_by_precision"]["tensor_bf16"] - 2 * 4096 * 3072 * 1024)
        < 0.01 * 2 * 4096 * 3072 * 1024
    )
    assert qkv["bound"] == "compute" and [f["rule"] for f in qkv["findings"]] == ["ROOF001"]


def test_no_cuda_code_advice_for_library_or_aten_kernels(analyzed):
    for k in analyzed("torch_eager")["kernels"]:
        if k["language"] in ("library", "pytorch"):
            assert {f["rule"] for f in k["findings"]} <= {
                "ROOF001",
                "LIB001",
                "PYT001",
                "PYT002",
                "ISU001",
                "GEN001",
            }, (
                k["name"],
                k["findings"],
            )
            for f in k["findings"]:  # the rules that do speak here speak PyTorch, not CUDA
                assert "__launch_bounds__" not in f["fix"] + (f.get("fix_code") or "")
                assert "__shared__" not in f["fix"] + (f.get("fix_code") or "")


def test_layout_copy_and_fusion_in_eager(analyzed):
    r = analyzed("torch_eager")
    assert any(f["rule"] == "PYT001" for k in r["kernels"] for f in k["findings"])
    assert any(p["rule"] == "PRG002" for p in r["program_findings"])


def test_triton_advice_speaks_triton(analyzed):
    r = analyzed("torch_compile")
    fixes = [
        f for k in r["kernels"] if k["language"] == "triton" for f in k["findings"] if f["category"] != "at-roofline"
    ]
    assert fixes
    for f in fixes:
        assert "__launch_bounds__" not in f["fix"] + f["fix_code"]
        assert any(w in f["fix"] + f["fix_code"] for w in ("BLOCK", "num_warps", "num_stages", "tl.", "program"))


def test_launch_overhead_on_2000_tiny_launches(analyzed):
    r = analyzed("tiny_phase1")
    p = [p for p in r["program_findings"] if p["rule"] == "PRG001"]
    assert p and "2000 launches" in p[0]["title"]
    assert r["top_actions"][0]["rule"] == "PRG001"


def test_launch_overhead_fix_speaks_the_program_language(analyzed):
    """PRG001's fix is the graph API of the code that launches: stream capture for hand-written CUDA kernels,
    torch.cuda.CUDAGraph / reduce-overhead for PyTorch's and Triton's."""
    cuda = [p for p in analyzed("tiny_phase1")["program_findings"] if p["rule"] == "PRG001"][0]
    assert "cudaStreamBeginCapture" in cuda["fix_code"] and "cudaGraphLaunch" in cuda["fix_code"]
    assert "torch" not in cuda["fix"] + cuda["fix_code"]
    torch = [p for p in analyzed("torch_dynshapes")["program_findings"] if p["rule"] == "PRG001"][0]
    assert "torch.cuda.CUDAGraph" in torch["fix_code"] and "cudaStreamBeginCapture" not in torch["fix_code"]


def test_evidence_without_a_source_line_ranks_no_instruction(analyzed):
    """ATen kernels carry no line information: their instructions merged under "-:?" used to name one of them
    (`S2R R3, SR_CTAID.X`) as "75% of executed instructions". Unlocated instructions are no place in the source."""
    r = analyzed("torch_eager")
    isu = [f for k in r["kernels"] for f in k["findings"] if f["rule"] == "ISU001"]
    assert isu  # the finding stays; only its line-less "lines" go
    for k in r["kernels"]:
        for f in k["findings"]:
            assert all(s["file"] is not None or s["line"] is not None for s in f["source"]), (k["name"], f["rule"])
