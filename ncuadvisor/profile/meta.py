"""What `ncuadvisor profile` did, as `report.profile` records it (`result.profile_info.ProfileInfo`): the target,
the filters, each run of ncu, the reports placed, the early start of phase 2's program."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ncuadvisor.load.launchinterval import SIDECAR_SUFFIX as LAUNCH_SIDECAR
from ncuadvisor.profile.target import TORCH_RUNNER

RUNNER_WORDS = "<ncuadvisor torch runner>"


def shown(argv: list[str]) -> list[str]:
    """A command line as recorded: the torch runner's source replaced by its name."""
    return [RUNNER_WORDS if a == TORCH_RUNNER else a for a in argv]


def profile_meta(s: Any, mode: str, extra: dict[str, Any]) -> dict[str, Any]:
    """`report.profile` of session `s` in `mode` ("two-phase" or "full"), with `extra` (the selection)."""
    meta = {
        "mode": mode,
        "target": s.target.argv
        if TORCH_RUNNER not in s.target.argv
        else [s.target.argv[0], "-c", RUNNER_WORDS, *s.target.argv[3:]],
        "ncu": s.ncu,
        "ncu_version": s.info.version_str,
        "filters": {
            "nvtx_include": s.filters.nvtx_include,
            "kernel": s.filters.kernel,
            "launch_skip": s.filters.launch_skip,
            "cache_control": s.filters.cache_control or "all",
            "clock_control": s.filters.clock_control,
            "target_processes": s.filters.target_processes or "all",
        },
        "torch_ops": s.torch_ops,
        **({"python_lines": True} if s.python_lines else {}),
        "phases": [
            {
                "phase": r.label.split(":")[0],
                "command": shown(r.command),
                "wall_s": round(r.wall_s, 2),
                "ncu_exit_code": r.rc,
                "program_exit_code": r.parser.app_exit,
                "launches_profiled": r.parser.profiled,
                "interrupted": r.interrupted,
                "replay_passes": max(
                    (e.passes for e in r.parser.events if e.kind == "progress" and e.passes), default=None
                ),
            }
            for r in s.runs
        ],
        "reports": [str(p) for p in s.placed if not str(p).endswith(LAUNCH_SIDECAR)],  # the interval: launch_interval
        "partial": bool(s.interrupted or s.incomplete),
        **({"early_start": s.early_note} if s.early_note else {}),
        **({"launch_interval": asdict(s.launch)} if getattr(s, "launch", None) is not None else {}),
    }
    meta.update(extra)
    return meta
