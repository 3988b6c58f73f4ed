"""Wall-time savings beside the GPU savings, when a host timeline was measured (`report --host-trace`,
`profile --host-time`): the result's side of `analysis.walltime`.

Each "where to start" entry gets `estimated_wall_saving_ns`: the measured timeline replayed with the entry's
kernels at their estimated new durations, against the replay with their measured ones, per report window. What an
entry changes:

- a kernel entry (or the kernels one setting fixes): each traced launch of the kernel loses the fraction of its time
  the entry's rule estimates (`estimated_speedup`), the fraction of the kernel's own launches or of the variant
  (size) whose per-launch time is nearest the traced launch's;
- a program finding's entry (fusion, ...): its saving spread over its kernels' launches in proportion to their GPU
  time. The launches stay: a fusion that removes launches also removes their host calls, which the replay does not
  see, so where the host sets the pace it underestimates such an entry's wall saving;
- a program finding whose saving is wall time already (`speedup_type` "wall": PRG006's CUDA graphs): that saving.

The result gets `host_timeline`: the measured facts, or, when none of the trace's kernels is one of the report's,
`used: false` with the reason (and a warning that says so in every format).
"""

from __future__ import annotations

from ncuadvisor.analysis.walltime import HostModel, Parts
from ncuadvisor.result.host_info import HostTimeline
from ncuadvisor.result.kernel_fixes import saved_parts
from ncuadvisor.result.types import Result, TopAction


def action_parts(result: Result, a: TopAction) -> dict[str, Parts]:
    """Kernel id -> the parts of its time the entry's fix saves."""
    program = next((p for p in result.program_findings if p.rule == a.rule and p.title == a.title), None)
    if program is not None:
        ks = [k for k in (result.kernel(i) for i in program.kernel_ids) if k is not None]
        total = sum(k.duration_ns for k in ks)
        f = program.estimated_saving_ns / total if total > 0 else 0.0
        return {k.id: [(None, f)] for k in ks}
    ids = a.kernel_ids or ([a.kernel_id] if a.kernel_id else [])
    return {k.id: saved_parts(k, a.rule) for k in (result.kernel(i) for i in ids) if k is not None}


def host_entry(model: HostModel) -> HostTimeline:
    """The result's record of a host timeline matched to the report."""
    t = model.timeline
    if not model.matched:
        kinds = len({o.name for o in t.kernels})
        return HostTimeline(
            path=t.path,
            used=False,
            note=(
                f"timeline not used: none of its {len(t.kernels)} kernel launches ({kinds} kernels) is one of the "
                "report's (by demangled name, grid and block): was it recorded from the same program?"
            ),
            launches=model.launches,
            trace_wall_ns=t.window_ns,
        )
    note = None
    if t.cpu_ops:
        note = (
            f"the trace records {t.cpu_ops} CPU ops (ProfilerActivity.CPU): the profiler's own host time per op is "
            "then far larger, and so is the host time measured here; record CUDA activities only"
        )
    return HostTimeline(
        path=t.path,
        used=True,
        note=note,
        windows=round(model.windows, 3),
        wall_per_window_ns=model.wall_per_window_ns(),
        gpu_busy_share=model.gpu_busy_share,
        host_ns_per_launch=model.host_ns_per_launch,
        host_bound=model.host_bound,
        launches=model.launches,
        matched_launches=model.matched_launches,
        unmatched_kernels=model.unmatched_kernels,
        trace_wall_ns=t.window_ns,
        profiler_stall_ns=model.profiler_stall_ns,
        profiler_call_cost_ns=t.call_cost_ns,
    )


def add_wall_estimates(result: Result, model: HostModel) -> None:
    """Set `host_timeline` and each "where to start" entry's wall saving (None where its kernels are not in the
    trace); a timeline that matches nothing is said in the warnings."""
    result.host_timeline = host_entry(model)
    if not model.matched:
        result.report.warnings.append(f"host timeline {model.timeline.path}: {result.host_timeline.note}")
        return
    wall = {(p.rule, p.title) for p in result.program_findings if p.speedup_type == "wall"}
    for a in result.top_actions:
        if a.scope == "program" and (a.rule, a.title) in wall:
            a.estimated_wall_saving_ns = a.estimated_saving_ns  # its saving is wall time already (PRG006's graphs)
            continue
        a.estimated_wall_saving_ns = model.wall_saving_ns(action_parts(result, a))
