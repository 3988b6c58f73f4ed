"""Declarative rule cases: tests/rule_cases/CODE.toml, each case a hand-built kernel (or program) and what the rule
must make of it, run through the real engine.

A kernel case (a `Rule`):

    [[case]]
    name = "a strided transpose"          # the test id
    language = "cuda"                     # cuda | triton | pytorch | library (default cuda)
    kernel = "transpose_naive"            # the function name (default "kernel"); demangled = "..." when it matters
    time_share = 0.2                      # of the program's GPU time (default 1)
    launches = 1
    [case.metrics]                        # metric -> value, over the H200 defaults of h200.toml
    "gpu__time_duration.sum" = 958848
    [case.device]                         # device attributes, over h200.toml's
    [case.per_instruction]                # metric -> [[pc, value, sass], ...] (sass may be left out)
    "inst_executed" = [[0x0, 2097152, "LDG.E R7, desc[UR4][R2.64]"]]
    [case.expect]                         # the finding the rule must return; or, before the tables,
                                          # expect = "none" (silent) | "skipped" (metrics missing)
    title_contains = "Uncoalesced global stores"
    fix_contains = "shared memory"        # optional, like code_contains, message_contains, model_contains (the
                                          # speedup model) and confidence (equal)
    estimated_speedup = 0.77              # optional, within `tolerance` (default 0.01)
    predicts = { l2_sectors_per_needed_sector = 1.4286 }   # optional: counter -> the bound predicted (within 1e-3)

The roofline is computed from the metrics as the analysis does (`roofline.compute(row, sm_count)`), and the rule runs
alone through `engine.run_rules`, so that the engine's cap at the roofline floor and its 3% cut apply: "none" means
the rule returns nothing, or nothing worth showing. A program case (a `ProgramRule`) lists `[[case.kernels]]` (result
kernel entries: id, name, language, duration_ns, grid, block, roofline) and `[[case.launches]]` (kernel_id, stream,
duration_ns, dram_read_bytes, dram_write_bytes, grid, block; `repeat = N` for N launches in a row;
`repeat_launches = N` on the case repeats the whole sequence) and expects `estimated_saving_ns` instead;
`host_trace = "host-trace-2026-12-02/trace_X.json.xz"` (under fixtures/) gives it that host timeline, matched to its
kernels (name, grid, block, launches) as the pipeline matches a report's; `launch_interval_us = 2.5` gives it the
host's launch interval (`ProgramContext.launch_interval`, source "given"), as `profile` or `--launch-interval-us` do.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ncuadvisor.analysis import roofline
from ncuadvisor.analysis.hosttrace import read_trace
from ncuadvisor.analysis.language import LIBRARY_LANGUAGES
from ncuadvisor.analysis.walltime import HostModel
from ncuadvisor.model import Instruction, Kernel, num
from ncuadvisor.pipeline.locate import place
from ncuadvisor.result.types import KernelEntry, LaunchInterval
from ncuadvisor.rulekit import engine
from ncuadvisor.rulekit.contract import KernelContext, ProgramContext, ProgramRule, Rule, SourceSelection

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

CASES = Path(__file__).resolve().parent / "rule_cases"
DEFAULTS = tomllib.loads((CASES / "h200.toml").read_text())
RULES = {r.code: r for r in engine.discover()}
NONE, SKIPPED = "none", "skipped"


def case_files() -> list[Path]:
    return sorted(p for p in CASES.glob("*.toml") if p.name != "h200.toml")


def read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SystemExit(f"{path}: {exc}") from exc


def load_cases() -> list[Any]:
    params = []
    for path in case_files():
        for case in read(path).get("case", []):
            params.append(pytest.param(path.stem, case, id=f"{path.stem}: {case['name']}"))
    return params


def kernel_context(case: dict[str, Any]) -> KernelContext:
    """The context the engine gives a rule, built from a case the way the analysis builds it from a report."""
    metrics = {**DEFAULTS["metrics"], **case.get("metrics", {})}
    device = {**DEFAULTS["device"], **case.get("device", {})}
    launches = int(case.get("launches", 1))
    name = case.get("kernel", "kernel")
    kernel = Kernel(
        key=name,
        name=name,
        demangled=case.get("demangled", name),
        mangled="",
        grid="",
        block="",
        result_ids=[0],
        representative=0,
        launches=launches,
        duration_ns=(num(metrics.get("gpu__time_duration.sum")) or 0.0) * launches,
    )
    per_instruction = {
        metric: [Instruction(pc=e[0], value=float(e[1]), sass=e[2] if len(e) > 2 else None) for e in entries]
        for metric, entries in case.get("per_instruction", {}).items()
    }
    return KernelContext(
        kernel=kernel,
        metrics=metrics,
        roofline=roofline.compute(
            metrics, num(device.get("sm_count")), library_code=case.get("language", "cuda") in LIBRARY_LANGUAGES
        ),
        device=device,
        per_instruction=per_instruction,
        language=case.get("language", "cuda"),
        time_share=float(case.get("time_share", 1.0)),
    )


def program_context(case: dict[str, Any]) -> ProgramContext:
    kernels = []
    for k in case.get("kernels", []):
        entry = {"demangled": k["name"], "language": "cuda", "grid": "", "block": "", "duration_ns": 0.0, "launches": 1}
        entry = {**entry, "roofline": {}, **k}
        # no variants: the analysed launches are all of them, as in a result
        entry.setdefault("analysed_duration_ns", entry["duration_ns"])
        entry.setdefault("analysed_launches", entry["launches"])
        kernels.append(KernelEntry.from_dict(entry, f"kernels[{len(kernels)}]"))
    launches = []
    for _ in range(int(case.get("repeat_launches", 1))):
        for x in case.get("launches", []):
            one = {k: v for k, v in x.items() if k != "repeat"}
            launches += [{"stream": 7, "dram_read_bytes": None, "dram_write_bytes": None, **one}] * x.get("repeat", 1)
    for i, x in enumerate(launches):
        launches[i] = {**x, "result_id": i}
    total = case.get("total_ns") or sum(float(x.get("duration_ns") or 0.0) for x in launches)
    device = {**DEFAULTS["device"], **case.get("device", {})}
    host = None
    if "host_trace" in case:
        host = HostModel.build(read_trace(CASES.parent.parent / "fixtures" / case["host_trace"]), kernels)
    interval = None
    if "launch_interval_us" in case:
        interval = LaunchInterval(
            interval_ns=float(case["launch_interval_us"]) * 1000.0, source="given in the rule case"
        )
    return ProgramContext(kernels, launches, device, total, host=host, launch_interval=interval)


@pytest.mark.parametrize(("code", "case"), load_cases())
def test_rule_case(code: str, case: dict[str, Any]) -> None:
    rule = RULES[code]
    expect = case["expect"]
    if isinstance(rule, ProgramRule):
        found, errors = engine.run_program_rules([rule], program_context(case))
        assert not errors, errors
        check(expect, [f.to_dict() for f in found], "estimated_saving_ns")
        return
    verdict = engine.run_rules([rule], kernel_context(case))
    assert not verdict.errors, verdict.errors
    if expect == SKIPPED:
        assert [s.rule for s in verdict.skipped] == [code]
        return
    # a rule that ran on its weaker evidence (`Rule.weak_evidence`) and stayed silent keeps its note: not skipped
    assert not [s for s in verdict.skipped if not s.reason.endswith(engine.WEAK_SILENT)], verdict.skipped
    for f in verdict.findings:  # placed as the pipeline places them: each instruction at line = its pc
        if isinstance(f.source, SourceSelection):
            f.source = place(f.source, {e.pc: ("kernel.cu", e.pc) for e in f.source.candidates}, {})
    check(expect, [f.to_dict() for f in verdict.findings], "estimated_speedup")


def check(expect: str | dict[str, Any], found: list[dict[str, Any]], estimate: str) -> None:
    if expect == NONE:
        assert found == [], [f["title"] for f in found]
        return
    assert isinstance(expect, dict), f"expect is a table, {NONE!r} or {SKIPPED!r}"
    assert len(found) == 1, [f["title"] for f in found]
    f = found[0]
    assert expect["title_contains"] in f["title"]
    assert expect.get("fix_contains", "") in f["fix"]
    assert expect.get("message_contains", "") in f["message"]
    assert expect.get("code_contains", "") in f["fix_code"]
    assert expect.get("model_contains", "") in (f.get("speedup_model") or f.get("saving_model") or "")
    assert expect.get("confidence", f.get("confidence")) == f.get("confidence")
    if estimate in expect:
        tolerance = expect.get("tolerance", 0.01 if estimate == "estimated_speedup" else 1.0)
        assert f[estimate] == pytest.approx(expect[estimate], abs=tolerance)
    if "predicts" in expect:
        bounds = {p["metric"]: p["bound"] for p in f.get("predicts") or []}
        assert bounds == pytest.approx(expect["predicts"], abs=1e-3)


def test_every_rule_has_a_firing_and_a_silent_case() -> None:
    outcomes: dict[str, set[str]] = {code: set() for code in RULES}
    for path in case_files():
        assert path.stem in RULES, f"{path.name}: no rule {path.stem}"
        for case in read(path).get("case", []):
            outcomes[path.stem].add("none" if case["expect"] in (NONE, SKIPPED) else "finding")
    for code, rule in RULES.items():
        if isinstance(rule, Rule):
            assert outcomes[code] == {"finding", "none"}, f"{code}: tests/rule_cases/{code}.toml needs both outcomes"
