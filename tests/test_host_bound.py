"""PRG005: the kernel fixes of an eager PyTorch step would leave less GPU work per launch than the host spends per
op. Measured on the H200 (fixtures/torch-loop-2026-12-01): TF32 took the planted fp32 step's kernels from 2,841 µs
to 992 µs, the call only from 2,955 µs to 2,148 µs."""

import pytest


def _prg005(result: dict) -> list[dict]:
    return [f for f in result["program_findings"] if f["rule"] == "PRG005"]


def test_the_fp32_training_step_is_told_it_would_wait_on_its_host(analyzed):
    res = analyzed("torch_train")
    (f,) = _prg005(res)
    ev = {e["metric"]: e["value"] for e in f["evidence"]}
    assert ev["launches"] == res["report"]["results"] == 52
    assert ev["gpu_ns_per_launch_after"] < 20_000
    # the GPU time left after the fixes, against what TF32 left when measured (992 µs): the same order
    after = res["report"]["total_duration_ns"] - ev["saved_ns"]
    assert 0.5 < after / 992_500 < 1.5
    assert f["estimated_saving_ns"] == 0.0 and "No saving is claimed" in f["message"]
    assert "TEN002 on 8 kernels" in f["message"]
    assert 'mode="reduce-overhead"' in f["fix"]
    tens = {k["id"] for k in res["kernels"] if k["findings"] and k["findings"][0]["rule"] == "TEN002"}
    assert set(f["kernel_ids"]) == tens
    # what the fixes save is what "where to start" gives them: TF32's one-setting entry over the same kernels (the
    # first GEMM's launches of another size included, at their own estimate)
    (tf32,) = [a for a in res["top_actions"] if a["rule"] == "TEN002"]
    assert set(tf32["kernel_ids"]) == tens and ev["saved_ns"] == pytest.approx(tf32["estimated_saving_ns"], abs=1)


@pytest.mark.parametrize("name", ["torch_eager", "torch_scatter", "torch_norm_chain", "flaws", "patterns"])
def test_silent_where_the_fixes_leave_enough_work_or_the_code_is_not_eager_pytorch(analyzed, name):
    assert not _prg005(analyzed(name))
