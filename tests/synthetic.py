"""Big results for renderer tests and benchmarks/scale.py, built from a real analyzed report (no big report exists)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ncuadvisor.comparison.types import DiffResult
from ncuadvisor.pipeline.ranking import top_actions
from ncuadvisor.render import templates_dir
from ncuadvisor.result import KernelEntry, ProgramFindingEntry, Result


def many_kernels(result: dict, count: int, launches: int = 1) -> dict:
    """A renderer-test result: `result`'s kernels copied at the result-dict level under distinct names and ids until
    there are `count` of them, `launches` results each, ordered by time like a real result (no report is read)."""
    head, kernels = _copied_kernels(result, count, launches)
    out = copy.deepcopy(head)
    out["kernels"] = list(kernels)
    return out


def write_many_kernels(result: dict, count: int, path: Path, launches: int = 1) -> int:
    """`many_kernels(result, count, launches)` written as a saved result (the JSON `ncuadvisor report -o x.json`
    writes) one kernel at a time, so that a result of 100,000 kernels is made without holding it; its bytes."""
    head, kernels = _copied_kernels(result, count, launches)
    with path.open("w", encoding="utf-8") as out:
        text = json.dumps({**head, "kernels": []}, indent=2, ensure_ascii=False)
        before, after = text.split('"kernels": []', 1)
        out.write(before + '"kernels": [')
        for i, k in enumerate(kernels):
            out.write(("," if i else "") + "\n    " + json.dumps(k, ensure_ascii=False))
        out.write("\n  ]" + after + "\n")
    return path.stat().st_size


# kernels past this rank are too small to reach "where to start" (`ranking.MIN_PROGRAM_FRACTION` of the time) in a
# result of thousands of copies; where to start is ranked over the first ones so that no copy of them all is held
_RANKED = 2000


def _copied_kernels(result: dict, count: int, launches: int) -> tuple[dict, Iterator[dict]]:
    """The result's head (its report updated, where to start ranked over the copies) and its copied kernels in time
    order, each made when the iterator reaches it."""
    base = [k for k in result["kernels"] if k.get("duration_ns")]
    per_launch = [k["duration_ns"] / (k.get("launches") or 1) for k in base]
    order = sorted(range(count), key=lambda i: -per_launch[i % len(base)])  # a stable sort: copies in index order
    total = sum(per_launch[i % len(base)] * launches for i in range(count))

    def kernel(rank: int) -> dict:
        i = order[rank]
        k = copy.deepcopy(base[i % len(base)])
        k["id"] = f"k{rank}"
        k["name"] = f"{k['name']}_{i}"
        k["demangled"] = f"{k['demangled']} /* copy {i} */"
        k["per_launch_ns"] = per_launch[i % len(base)]
        k["duration_ns"] = k["per_launch_ns"] * launches
        k["launches"] = launches
        k["time_share"] = k["duration_ns"] / total
        k["result_ids"] = list(range(rank * launches, (rank + 1) * launches))
        return k

    head = {key: value for key, value in result.items() if key != "kernels"}
    head["report"] = {**result["report"], "kernels": count, "results": count * launches, "total_duration_ns": total}
    typed = [KernelEntry.from_dict(kernel(r)) for r in range(min(count, _RANKED))]
    program = [ProgramFindingEntry.from_dict(p) for p in result.get("program_findings") or []]
    head["top_actions"] = [a.to_dict() for a in top_actions(typed, total, program)]
    return head, (kernel(r) for r in range(count))


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
