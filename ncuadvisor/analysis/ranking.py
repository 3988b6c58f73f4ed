"""Where to start: every finding of the program, kernel and program level, ranked by the time it saves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ncuadvisor.result import savings_by_rule
from ncuadvisor.units import fmt_ns


def top_actions(
    kernels: list[dict[str, Any]], total_ns: float, program: Sequence[dict[str, Any]] = (), limit: int = 10
) -> list[dict[str, Any]]:
    """Where to start: every finding across the program (kernel and program level) ranked by the time it saves."""
    actions = [
        {
            "kernel": ", ".join(p["kernels"][:3]) + (" …" if len(p["kernels"]) > 3 else ""),
            "kernel_id": (p.get("kernel_ids") or [None])[0],
            "rule": p["rule"],
            "category": p["category"],
            "title": p["title"],
            "estimated_saving_ns": p["estimated_saving_ns"],
            "program_fraction": p["estimated_saving_ns"] / total_ns if total_ns else 0.0,
            "scope": "program",
        }
        for p in program
        if p["estimated_saving_ns"] > 0
    ]
    for k in kernels:
        for f, saving, variant in savings_by_rule(k).values():  # one action per rule and kernel
            label = (
                k["name"]
                if variant is None
                else f"{k['name']} ({fmt_ns(k['variants'][variant].get('per_launch_ns'))} launches)"
            )
            actions.append(
                {
                    "kernel": label,
                    "kernel_id": k["id"],
                    "rule": f["rule"],
                    "category": f["category"],
                    "title": f["title"],
                    "estimated_saving_ns": saving,
                    "program_fraction": saving / total_ns if total_ns else 0.0,
                    "scope": "kernel",
                    **({"variant": variant} if variant is not None else {}),
                }
            )
    actions.sort(key=lambda a: -a["estimated_saving_ns"])
    return actions[:limit]
