"""PyTorch training steps: the optimizer's foreach kernels (PYT003) and cuDNN's layout transforms around NCHW
convolutions (PYT004), on real reports (the planted training step, the transformer's step captured three ways, the
TF32 twin of an NCHW convolution) and on what `ncuadvisor profile` made of two steps nobody tuned
(fixtures/unplanted-2026-12-02: their results, the program rules run again on them)."""

from __future__ import annotations

import json
import lzma
import re
from pathlib import Path
from typing import Any

import pytest

from ncuadvisor.analysis.language import foreach_kernel
from ncuadvisor.pipeline.build import Analysis, build
from ncuadvisor.result.types import KernelEntry
from ncuadvisor.rulekit import engine
from ncuadvisor.rulekit.contract import ProgramContext
from tests.conftest import FIXTURES
from tests.synthetic import typed_result

UNPLANTED = FIXTURES / "unplanted-2026-12-02"
RULES = {r.code: r for r in engine.discover()}
BENCH_CONV = FIXTURES / "tf32-twin-2026-12-01" / "bench_conv_fixes.jsonl"


def program(result: dict, rule: str) -> dict | None:
    found = [p for p in result["program_findings"] if p["rule"] == rule]
    assert len(found) <= 1
    return found[0] if found else None


def foreach_ids(result: dict) -> set[str]:
    return {k["id"] for k in result["kernels"] if foreach_kernel(k["demangled"]) is not None}


def evidence(finding: dict, metric: str) -> float:
    return next(e["value"] for e in finding["evidence"] if e["metric"] == metric)


def launches_of(kernels: list[dict], with_bytes: bool = False) -> list[dict]:
    """The launches of these kernel entries in result-id order, each at its group's mean time, on its stream; without
    DRAM bytes (PRG002's chains, which weigh those, find nothing then), or `with_bytes`: each profiled launch's load
    and store bytes, as a full capture records them."""
    launches = []
    for k in kernels:
        r = k.get("roofline") or {}
        deep = with_bytes and k.get("profiled")
        for rid in k["result_ids"]:
            launches.append(
                {
                    "result_id": rid,
                    "kernel_id": k["id"],
                    "name": k["name"],
                    "stream": (k.get("launch") or {}).get("stream"),
                    "duration_ns": k["duration_ns"] / len(k["result_ids"]),
                    "dram_read_bytes": r.get("load_bytes") if deep else None,
                    "dram_write_bytes": r.get("store_bytes") if deep else None,
                    "grid": k["grid"],
                    "block": k["block"],
                }
            )
    return sorted(launches, key=lambda x: x["result_id"])


def rerun(name: str, rules: list[Any] | None = None, with_bytes: bool = False, folder: Path = UNPLANTED) -> dict:
    """A saved result of `ncuadvisor profile` (`folder/name.json.xz`) with its program findings and ranking made again
    by today's rules (or `rules`), over its launches rebuilt from the kernels' result ids (`launches_of`)."""
    data = json.loads(lzma.open(folder / f"{name}.json.xz").read())
    saved = typed_result(data)
    analysis = Analysis(saved.report, saved.kernels, launches_of(data["kernels"], with_bytes))
    return build(analysis, engine.discover() if rules is None else rules).to_dict()


def gpt_parameters(vocab: int = 50304, seq: int = 1024, d: int = 768, layers: int = 6) -> int:
    """workloads/torch/gpt_step.py's parameters at its defaults: embeddings (the head tied to the token one), per block
    two LayerNorms and the qkv, proj, fc and out Linears (12 d² + 13 d), the final LayerNorm."""
    return vocab * d + seq * d + layers * (12 * d * d + 13 * d) + 2 * d


def cnn_parameters(width: int = 64, blocks: int = 2, classes: int = 1000) -> int:
    """workloads/torch/cnn_step.py's parameters at its defaults: the 7×7 stem and its BatchNorm, the residual blocks
    (two 3×3 convolutions with BatchNorm, a 1×1 one where the shape changes), the classifier."""
    total, c = 3 * width * 49 + 2 * width, width
    for stage in range(3):
        cout = width * 2**stage
        for i in range(blocks):
            total += c * cout * 9 + cout * cout * 9 + 4 * cout
            if (i == 0 and stage > 0) or c != cout:
                total += c * cout + 2 * cout
            c = cout
    return total + c * classes + classes


def test_foreach_adamw_of_the_planted_step_gets_fused(analyzed):
    """The fp32 training step's AdamW (torch.optim's default, foreach): every multi-tensor kernel is its update, 8 ops
    of 80 bytes per fp32 parameter in all, against 28 fused; the fix is fused=True, not torch.compile of the module."""
    r = analyzed("torch_train")
    f = program(r, "PYT003")
    assert f is not None
    assert set(f["kernel_ids"]) == foreach_ids(r) and len(f["kernel_ids"]) == 7
    assert "8 foreach ops" in f["title"]
    assert evidence(f, "foreach_bytes_per_parameter") == pytest.approx(80, abs=2)
    assert evidence(f, "fused_bytes_per_parameter") == 28
    foreach_ns = sum(k["duration_ns"] for k in r["kernels"] if k["id"] in foreach_ids(r))
    assert f["estimated_saving_ns"] == pytest.approx(
        foreach_ns * (1 - 28 / evidence(f, "foreach_bytes_per_parameter")), rel=1e-3
    )
    assert "fused=True" in f["fix_code"] and "torch.optim.AdamW" in f["fix_code"]
    assert "PYT003" in [a["rule"] for a in r["top_actions"]]


@pytest.mark.parametrize(
    "name", ["torch_train", "torch_train_phase1_all", "profile-cost-2026-11-30/train_profile", "torch_eager"]
)
def test_no_fusion_chain_holds_a_multi_tensor_kernel(analyzed, name):
    """The launches of one foreach op are chunks of one list of tensors (the merged profile of the transformer's step
    held two of one addcdiv_, which PRG002 called a chain to torch.compile); chains of the model's own ops stay."""
    r = analyzed(name)
    for p in r["program_findings"]:
        if p["rule"] == "PRG002":
            assert not set(p["kernel_ids"]) & foreach_ids(r), p["title"]
    if name == "torch_eager":
        assert program(r, "PRG002") is not None


@pytest.mark.slow  # analyses a 38-pass capture of every launch (~10 s)
def test_a_timed_only_step_gets_the_estimate_of_a_fully_measured_one(analyzed):
    """The transformer's bf16 training step timed only (duration of every launch: the bytes from time at 85% of the
    DRAM peak) and the same step with the full set on every launch (measured bytes): the same 8 ops, parameters, bytes
    per parameter and saving within a few tens of percent."""
    timed, full = (
        program(analyzed(n), "PYT003") for n in ("torch_train_phase1_all", "profile-cost-2026-11-30/train_naive_full")
    )
    assert timed is not None and full is not None
    assert "none was profiled" in timed["saving_model"] and "profiled launches" in full["saving_model"]
    assert "8 foreach ops" in timed["title"] and "8 foreach ops" in full["title"] and "bf16" in full["message"]
    for metric, within in (("parameters", 0.2), ("foreach_bytes_per_parameter", 0.15)):
        assert evidence(timed, metric) == pytest.approx(evidence(full, metric), rel=within)
    assert evidence(full, "fused_bytes_per_parameter") == 14  # 7 bf16 tensors
    assert timed["estimated_saving_ns"] == pytest.approx(full["estimated_saving_ns"], rel=0.25)


def test_gpt_step_adamw_after_clip_grad_norm():
    """The GPT step: AdamW's 8 foreach ops over the model's parameters; clip_grad_norm_'s norms (LpNormFunctor) and
    its scaling by the clip coefficient (BinaryOpScalarTensorFunctor) are named, not counted; the fix heads "where to
    start" after the loss, and no fusion chain of foreach chunks is left."""
    r = rerun("gpt")
    f = program(r, "PYT003")
    assert f is not None
    assert "8 foreach ops" in f["title"] and "fp32 parameters" in f["message"]
    # the parameter count from the bytes the profiled launches stored: the model's own within a few percent
    assert evidence(f, "parameters") == pytest.approx(gpt_parameters(), rel=0.05)
    assert evidence(f, "foreach_bytes_per_parameter") == pytest.approx(80, rel=0.05)
    clip = {
        k["id"]
        for k in r["kernels"]
        if (fk := foreach_kernel(k["demangled"])) and fk.functor in ("LpNormFunctor", "BinaryOpScalarTensorFunctor")
    }
    assert len(clip) == 4 and not clip & set(f["kernel_ids"]) and set(f["kernel_ids"]) == foreach_ids(r) - clip
    assert "clip_grad_norm_" in f["message"]
    assert [a["rule"] for a in r["top_actions"][:2]] == ["PYT005", "PYT003"]  # after the loss (PYT005)
    assert not any(set(p["kernel_ids"]) & foreach_ids(r) for p in r["program_findings"] if p["rule"] == "PRG002")


def twins_kernel_us(name: str, pattern: str) -> float:
    """The kernel time per step (µs) of the kernels whose name matches, in a twin run of twins.jsonl (torch.profiler,
    the mean of its rounds)."""
    rows = [json.loads(line) for line in (UNPLANTED / "twins.jsonl").read_text().splitlines()]
    rounds = [row for row in rows if row.get("name") == name]
    assert rounds
    return sum(us for row in rounds for k, (us, _) in row["top"].items() if re.search(pattern, k)) / len(rounds)


def twins_step_us(name: str) -> float:
    rows = [json.loads(line) for line in (UNPLANTED / "twins.jsonl").read_text().splitlines()]
    rounds = [row["kernel_us"] for row in rows if row.get("name") == name]
    assert rounds
    return sum(rounds) / len(rounds)


def test_cnn_step_sgd_and_layout_transforms():
    """The ResNet step: every cuDNN transform is the NCHW model's (nchwToNhwc of inputs and filters, nhwcToNchw of
    outputs) and channels_last heads "where to start"; SGD with momentum gets fused=True, its parameters exactly the
    model's (the profiled update stored one fp32 per parameter in each of its two launches)."""
    r = rerun("cnn")
    t = program(r, "PYT004")
    assert t is not None
    transforms = {k["id"] for k in r["kernels"] if "nchwToNhwc" in k["name"] or "nhwcToNchw" in k["name"]}
    assert transforms <= set(t["kernel_ids"])
    assert evidence(t, "transform_launches") == sum(len(k["result_ids"]) for k in r["kernels"] if k["id"] in transforms)
    assert "channels_last" in t["fix_code"]
    assert r["top_actions"][0]["rule"] == "PYT004"
    o = program(r, "PYT003")
    assert o is not None and "torch.optim.SGD" in o["fix_code"]
    assert evidence(o, "parameters") == pytest.approx(cnn_parameters(), rel=0.001)


def nhwc_model_ns(k: dict, sm_count: float) -> float:
    """The NHWC time of an NCHW BatchNorm kernel group, from its entry as the saved result holds it: the busiest unit's
    share of the profiled launch stays, the rest divides by the warps in flight gained when all SMs hold the warps
    that fit; not below the floor at 85%; scaled to every launch of the group."""
    r, launch = k["roofline"], k["launch"]
    busy = max(r["sol"]["memory_pct"], r["sol"]["compute_pct"]) / 100
    gain = max(
        1.0,
        sm_count
        * launch["theoretical_occupancy_pct"]
        / (min(launch["grid_size"], sm_count) * launch["achieved_occupancy_pct"]),
    )
    per_launch = max(r["duration_ns"] * (busy + (1 - busy) / gain), r["theoretical_ns"] / 0.85)
    return k["duration_ns"] * min(1.0, per_launch / r["duration_ns"])


def test_cnn_step_batchnorm_as_nhwc_kernels():
    """channels_last also swaps cuDNN's NCHW BatchNorm kernels (one block per channel: 64 blocks on 132 SMs, 16 warps
    each) for NHWC ones that fill the GPU: PYT004 counts what that saves beside the transforms. Measured on the H200
    (twins.jsonl, torch.profiler): the BatchNorm kernels took 938 µs a step as NCHW, 407 µs as NHWC, and channels_last
    saved 1.22 ms of kernels in all; the model and the whole estimate stay within 30% of both."""
    r = rerun("cnn")
    t = program(r, "PYT004")
    assert t is not None
    batchnorm = [k for k in r["kernels"] if re.search(r"\bbn_\w*1C11", k["name"])]
    transforms = {k["id"] for k in r["kernels"] if "nchwToNhwc" in k["name"] or "nhwcToNchw" in k["name"]}
    assert len(batchnorm) == 8 and {k["name"] for k in batchnorm} == {
        "bn_fw_tr_1C11_kernel_NCHW",
        "bn_fw_tr_1C11_singleread",
        "bn_bw_1C11_kernel_new",
        "bn_bw_1C11_singleread",
    }
    assert set(t["kernel_ids"]) == transforms | {k["id"] for k in batchnorm}
    nchw_ns = sum(k["duration_ns"] for k in batchnorm)
    sms = r["report"]["device"]["sm_count"]
    nhwc_ns = sum(nhwc_model_ns(k, sms) for k in batchnorm)
    transforms_ns = sum(k["duration_ns"] for k in r["kernels"] if k["id"] in transforms)
    assert evidence(t, "nchw_batchnorm_ns") == pytest.approx(nchw_ns, abs=1)
    assert evidence(t, "nhwc_batchnorm_ns") == pytest.approx(nhwc_ns, abs=1)
    assert t["estimated_saving_ns"] == pytest.approx(transforms_ns + nchw_ns - nhwc_ns)
    assert "64 blocks on 132 SMs with 16 warps each where 64 fit" in t["message"]
    assert "NCHW BatchNorm kernels (" in t["saving_model"] and "would run as NHWC ones" in t["saving_model"]
    # against the twins measured on the same machine
    measured_nhwc = twins_kernel_us("cnn_channels_last", r"^batchnorm_\w*nhwc") * 1e3
    assert nhwc_ns == pytest.approx(measured_nhwc, rel=0.3)
    measured_saving = (twins_step_us("cnn") - twins_step_us("cnn_channels_last")) * 1e3
    assert t["estimated_saving_ns"] == pytest.approx(measured_saving, rel=0.3)
    assert transforms_ns < 0.7 * measured_saving  # the transforms alone fell short by more than 30%


def test_tf32_nchw_convolution_transforms_counted_channels_last_fft_ones_not(analyzed):
    """One convolution with TF32 in NCHW (cuDNN converts input and filter with nchwToNhwc for its NHWC tensor-core
    kernel), then in channels_last FP32 (nhwcToNchw of input and filter for FFT): only the first two count. Measured
    (bench): channels_last on top of TF32 saved 28 µs per call; the transforms' time is most of it, the rest is the
    launches removed and cuDNN's NHWC kernel."""
    r = analyzed("tf32-twin-2026-12-01/torch_conv_fixes")
    f = program(r, "PYT004")
    assert f is not None
    by_id = {k["id"]: k for k in r["kernels"]}
    assert {by_id[i]["name"] for i in f["kernel_ids"]} == {"nchwToNhwcKernel"}
    assert sorted(rid for i in f["kernel_ids"] for rid in by_id[i]["result_ids"]) == [0, 1]
    rows = [json.loads(line) for line in BENCH_CONV.read_text().splitlines()]
    us = {row["variant"]: row["median_us"] for row in rows if row.get("case") == "conv_nchw" and "variant" in row}
    measured_ns = (us["tf32"] - us["twin"]) * 1e3
    assert 0.5 * measured_ns <= f["estimated_saving_ns"] <= measured_ns
    # no BatchNorm here: the saving is the transforms' time alone
    assert not any(e["metric"].endswith("batchnorm_ns") for e in f["evidence"]) and "BatchNorm:" not in f["title"]
    assert f["estimated_saving_ns"] == pytest.approx(sum(by_id[i]["duration_ns"] for i in f["kernel_ids"]))


def test_no_batchnorm_part_without_nchw_batchnorm_kernels():
    """The transformer step has neither transforms nor cuDNN BatchNorm: no PYT004; the NCHW BatchNorm kernels alone,
    without transforms that show cuDNN converting NCHW tensors for NHWC kernels, are no finding either."""
    assert program(rerun("gpt"), "PYT004") is None
    r = rerun("cnn")
    kernels = [k for k in r["kernels"] if "nchwToNhwc" not in k["name"] and "nhwcToNchw" not in k["name"]]
    assert any(re.search(r"\bbn_\w*1C11", k["name"]) for k in kernels)
    typed = [KernelEntry.from_dict(k) for k in kernels]
    ctx = ProgramContext(typed, launches_of(kernels), r["report"]["device"], r["report"]["total_duration_ns"])
    found, errors = engine.run_program_rules([RULES["PYT004"]], ctx)
    assert not errors and not found


def test_fp32_nchw_convolution_is_ten002s_alone(analyzed):
    """An FP32 NCHW convolution on the FMA pipes has no transforms yet: TEN002 counts those TF32 would add in its new
    time, PYT004 says nothing. Over every report here, no kernel PYT004 counts has a TEN002 finding."""
    r = analyzed("torch_gemm_conv")
    assert program(r, "PYT004") is None
    conv = next(k for k in r["kernels"] if k["name"].startswith("sm80_xmma_fprop_implicit_gemm_f32f32"))
    assert "NCHW layout transforms" in conv["findings"][0]["speedup_model"]
    for name in ("torch_gemm_conv", "tf32-twin-2026-12-01/torch_conv_fixes"):
        res = analyzed(name)
        ten002 = {k["id"] for k in res["kernels"] if any(x["rule"] == "TEN002" for x in k["findings"])}
        counted: set[Any] = set((program(res, "PYT004") or {"kernel_ids": []})["kernel_ids"])
        assert not ten002 & counted
