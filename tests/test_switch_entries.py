"""A fix that is one setting for the whole program (TEN002's TF32) heads one "where to start" entry for every kernel it
heads, their savings summed. On the H200, TF32 took the planted fp32 training step's kernels from 2,841 µs to 992 µs
(fixtures/torch-loop-2026-12-01): one change, eight GEMM kernels."""

import io

from rich.console import Console

from ncuadvisor.pipeline.ranking import top_actions
from ncuadvisor.render.terminal import render_terminal
from ncuadvisor.render.view import report_view


def test_tf32_is_one_entry_for_the_eight_fp32_gemms_of_the_training_step(typed):
    res = typed("torch_train")
    per_kernel = top_actions(res.kernels, res.report.total_duration_ns, res.program_findings, limit=100)
    ten = [a for a in per_kernel if a.rule == "TEN002"]
    assert len(ten) == 8 and all(a.scope == "kernel" for a in ten)
    first = res.top_actions[0]
    assert (first.scope, first.rule) == ("program", "TEN002")
    assert first.title.endswith("(one setting)") and first.kernel.startswith("8 kernels: ")
    assert sorted(first.kernel_ids or []) == sorted(str(a.kernel_id) for a in ten)
    assert abs(first.estimated_saving_ns - sum(a.estimated_saving_ns for a in ten)) < 1.0
    assert first.launches == sum(a.launches or 0 for a in ten)
    assert not any(a.scope == "kernel" and a.rule == "TEN002" for a in res.top_actions)
    # the view keeps the entry's own label, and the terminal gives its fix
    view = report_view(res)
    assert view.top_actions[0].kernel.startswith("8 kernels: ")
    out = io.StringIO()
    render_terminal(res, console=Console(file=out, width=400, color_system=None))
    text = out.getvalue()
    assert "enable TF32 (one setting)" in text and "torch.set_float32_matmul_precision('high')" in text


def test_a_single_kernel_keeps_its_own_entry(typed):
    res = typed("torch_gemm_conv")
    (merged,) = [a for a in res.top_actions if a.rule == "TEN002"]
    assert merged.scope == "program" and len(merged.kernel_ids or []) == 2  # the GEMM and the convolution
    one = [k for k in res.kernels if k.id == merged.kernel_ids[0]]
    alone = top_actions(one, res.report.total_duration_ns, (), switches={"TEN002": "TF32"})
    assert [(a.scope, a.rule) for a in alone] == [("kernel", "TEN002")]
