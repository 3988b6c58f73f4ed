"""Big results for renderer tests and benchmarks/scale.py, built from a real analyzed report (no big report exists)."""

from __future__ import annotations

import copy
import re
from typing import Any

from ncuadvisor.comparison.types import DiffResult
from ncuadvisor.pipeline.ranking import top_actions
from ncuadvisor.render import templates_dir
from ncuadvisor.result import KernelEntry, ProgramFindingEntry, Result


def many_kernels(result: dict, count: int, launches: int = 1) -> dict:
    """A renderer-test result: `result`'s kernels copied at the result-dict level under distinct names and ids until
    there are `count` of them, `launches` results each, ordered by time like a real result (no report is read)."""
    base = [k for k in result["kernels"] if k.get("duration_ns")]
    out = copy.deepcopy(result)
    kernels = []
    for i in range(count):
        k = copy.deepcopy(base[i % len(base)])
        k["name"] = f"{k['name']}_{i}"
        k["demangled"] = f"{k['demangled']} /* copy {i} */"
        k["per_launch_ns"] = k["duration_ns"] / (k.get("launches") or 1)
        k["duration_ns"] = k["per_launch_ns"] * launches
        k["launches"] = launches
        kernels.append(k)
    kernels.sort(key=lambda k: -k["duration_ns"])
    total = sum(k["duration_ns"] for k in kernels)
    for i, k in enumerate(kernels):
        k["id"] = f"k{i}"
        k["result_ids"] = list(range(i * launches, (i + 1) * launches))
        k["time_share"] = k["duration_ns"] / total
    out["kernels"] = kernels
    out["report"].update({"kernels": count, "results": count * launches, "total_duration_ns": total})
    typed = [KernelEntry.from_dict(k) for k in kernels]
    program = [ProgramFindingEntry.from_dict(p) for p in out.get("program_findings") or []]
    out["top_actions"] = [a.to_dict() for a in top_actions(typed, total, program)]
    return out


def typed_result(data: Any) -> Result:
    """A result as the renderers take it: a test's result dict (the JSON contract, as a saved file holds it) read
    through the result's types, as `ncuadvisor render` reads a saved JSON; a typed result as it is."""
    return data if isinstance(data, Result) else Result.from_dict(data)


def typed_diff(data: Any) -> DiffResult:
    """A diff as the renderers take it: a test's diff dict read through the diff's types; a typed diff as it is."""
    return data if isinstance(data, DiffResult) else DiffResult.from_dict(data)


PAGE_SCRIPT = (templates_dir() / "_report.js").read_text()  # the HTML page's own script, as the template holds it


def page_scripts(page: str) -> list[str]:
    """The text of each `<script>` of a page other than the JSON data block."""
    return re.findall(r"<script>\n(.*?)</script>", page, re.S)
