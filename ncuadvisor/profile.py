"""`ncuadvisor profile`: profile a real program with ncu at a fraction of the cost of a full run, then analyze it.

Two phases by default:

1. one cheap pass over every launch the filters let through (`--metrics gpu__time_duration.sum`, one replay pass):
   the distinct kernels ranked by total GPU time;
2. the sections the rules need (`ncuadvisor.analysis.pipeline.ANALYSIS_SECTIONS`, `--import-source yes`) on ONE launch of each
   kernel that matters (`--top K`, or the fewest kernels that cover `--coverage` of the GPU time, 0.9 by default),
   selected with `--kernel-id ::regex:^(names)$:1`. Kernels that round misses are retried with
   `--filter-mode per-launch-config --launch-count 1`, at most `MAX_ROUNDS` rounds in all (each round runs the
   program again). Measured on the H200 with ncu 2025.3.1 and `--nvtx-range step` after warm-up steps: round 1
   caught the ATen kernels but none of the cuBLAS `nvjet_*` kernels; per-launch-config caught those, one per launch
   configuration (grid, block, shared memory; two kernels of the same configuration need two rounds).

The result knows the time share of every kernel from phase 1 and the deep metrics of the chosen ones; kernels seen
only in phase 1 keep their name, launches and time, with `"profiled": false` and `bound: "unknown"`, and count for the
program-level rules (launch overhead, fusion candidates). `--full` is ncu's `--set full` on every launch instead.

The reports are kept next to the output (`<stem>.phase1.ncu-rep`, `<stem>.ncu-rep`, `<stem>.round2.ncu-rep`, ...;
ncu 2026.3+ writes `.ncu-repz`), never over an existing file without `--force`.

Multi-process: ncu follows child processes by default (`--target-processes all`), so workers and `torchrun` ranks
land in the same report and are analysed together; `--target-processes application-only` profiles the launched
process alone. ncu writes every process into the one report; the analysis splits kernels per process (the report's
own process blocks) and shows the rank of each, read from the RANK / LOCAL_RANK / WORLD_SIZE environment of the
processes ncu starts (kept beside the report in `<report>.processes.json`).

Exit codes (`ncuadvisor profile`):

| code | meaning |
|---|---|
| 0 | success |
| 2 | unusable input or output: the script or program not found, options that do not fit together, an output or report file that exists (without `--force`), an unknown output extension |
| 3 | internal error (a bug: `NCUADVISOR_DEBUG=1` shows the traceback) |
| 4 | written but incomplete: the program exited non-zero or crashed (what ncu collected is analysed and marked partial), or no chosen kernel could be profiled in depth |
| 5 | ncu not found, or older than 2022.1 |
| 6 | ncu could not profile: no permission for the GPU performance counters (`ERR_NVGPUCTRPERM`), no usable GPU, or another ncu error (ncu's own lines are shown verbatim, then our reading) |
| 7 | nothing profiled: no kernel launch matched `--nvtx-range`/`--kernel`/`--launch-skip`, or the program ended before launching one |
| 130 | interrupted (Ctrl-C): what was collected so far is analysed and written when there is anything |
"""

from __future__ import annotations

import codecs
import copy
import importlib.util
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ncuadvisor import ncu as ncu_mod
from ncuadvisor.errors import AdvisorError, InputError, OutputError
from ncuadvisor.load.processes import ProcessWatcher, write_sidecar
from ncuadvisor.units import clip

MAX_ROUNDS = 4
DEFAULT_COVERAGE = 0.9
INTERRUPT_GRACE_S = 60.0

# Phase 1 reads only these per result (reading a metric costs ~25 µs; phase 1 may hold 100k launches).
PHASE1_METRICS = [
    "gpu__time_duration.sum",
    "launch__stream_id",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
]


# -- errors -------------------------------------------------------------------------------------------------------


class ProfileError(AdvisorError):
    """ncu could not profile (permissions, no GPU, ncu's own errors)."""

    exit_code = 6


class NcuMissingError(ProfileError):
    """ncu is not installed where we look, or is too old."""

    exit_code = 5


class ProfileInterrupted(ProfileError):
    """Ctrl-C before ncu saved anything."""

    exit_code = 130


class NothingProfiledError(ProfileError):
    """ncu ran but no kernel launch matched, or the program ended before its first kernel."""

    exit_code = 7


EXIT_PARTIAL = 4
EXIT_INTERRUPTED = 130


# -- the target ---------------------------------------------------------------------------------------------------

# Runs a script under PyTorch's NVTX emission (every ATen op becomes an NVTX range), with the module that called it
# as an outer range "module:<Type>". Passed with `python -c`, so the target's Python needs only torch.
TORCH_RUNNER = r"""
import os, runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
import torch
from torch.cuda import nvtx as _nvtx
def _pre(module, args):
    _nvtx.range_push("module:" + type(module).__name__)
def _post(module, args, out):
    _nvtx.range_pop()
torch.nn.modules.module.register_module_forward_pre_hook(_pre)
torch.nn.modules.module.register_module_forward_hook(_post)
with torch.autograd.profiler.emit_nvtx(record_shapes=False):
    runpy.run_path(script, run_name="__main__")
"""


@dataclass
class Target:
    argv: list[str]  # what ncu launches
    display: str  # how we name it to the user
    stem: str  # default output name
    script: Path | None = None


def resolve_target(words: Sequence[str], torch_ops: bool = False, python: str | None = None) -> Target:
    """`train.py args` -> [python, train.py, args]; `./bin args` -> as given, checked to exist and be executable."""
    if not words:
        raise InputError(
            "nothing to profile: give a Python script or an executable (e.g. `ncuadvisor profile train.py`)"
        )
    first, rest = words[0], list(words[1:])
    if first.startswith("-"):
        raise InputError(
            f"{first}: not an option of `ncuadvisor profile`; put the program first, or after `--` "
            "(e.g. `ncuadvisor profile -- ./my_binary --size 4096`)"
        )
    python = python or sys.executable
    if first.endswith(".py"):
        script = Path(first)
        if not script.is_file():
            raise InputError(f"{first}: script not found")
        if torch_ops:
            if importlib.util.find_spec("torch") is None:
                raise InputError("--torch-ops needs PyTorch in this Python (pip install 'ncuadvisor[torch]')")
            argv = [python, "-c", TORCH_RUNNER, str(script), *rest]
        else:
            argv = [python, str(script), *rest]
        return Target(argv=argv, display=" ".join([first, *rest]), stem=script.stem, script=script)
    if torch_ops:
        raise InputError("--torch-ops works on Python scripts only (ncuadvisor profile --torch-ops train.py)")
    if os.sep in first or (os.altsep and os.altsep in first):
        path = Path(first)
        if not path.exists():
            raise InputError(f"{first}: no such file")
        if path.is_dir() or not os.access(path, os.X_OK):
            raise InputError(f"{first}: not an executable file")
        exe = str(path.resolve()) if not path.is_absolute() else str(path)
    else:
        found = shutil.which(first)
        if found is None:
            raise InputError(f"{first}: command not found (give its path, e.g. ./{first})")
        exe = found
    return Target(argv=[exe, *rest], display=" ".join([first, *rest]), stem=Path(first).name.split(".")[0] or "profile")


# -- choosing kernels ---------------------------------------------------------------------------------------------


def select_kernels(kernels: Sequence[Any], top: int | None = None, coverage: float | None = None) -> list[Any]:
    """The kernels worth the deep pass, by total time: the first `top`, or the fewest covering `coverage` of the
    GPU time (0.9 by default); with both, the coverage set capped at `top`. Always at least one."""
    ordered = sorted(kernels, key=lambda k: -k.duration_ns)
    if not ordered:
        return []
    if top is not None and coverage is None:
        return ordered[: max(1, top)]
    cov = DEFAULT_COVERAGE if coverage is None else coverage
    total = sum(k.duration_ns for k in ordered)
    if total <= 0:
        chosen = ordered
    else:
        chosen, acc = [], 0.0
        for k in ordered:
            if chosen and acc / total >= cov - 1e-12:
                break
            chosen.append(k)
            acc += k.duration_ns
    return chosen[: max(1, top)] if top is not None else chosen


def window_launch_count(
    launches: Sequence[dict[str, Any]], kernels: Sequence[Any], chosen: Sequence[Any]
) -> int | None:
    """How many launches of the chosen kernels' names (in phase 1's launch order) must be profiled so that every
    chosen kernel (name and launch shape) is among them; None when a chosen kernel never appears."""
    index = {f"k{i}": k for i, k in enumerate(kernels)}
    wanted = {kernel_key(k) for k in chosen}
    names = {k.name for k in chosen}  # the window filters by function name (see two_phase)
    seen: set[tuple[str, str, str]] = set()
    count = 0
    for x in launches:
        k = index.get(x.get("kernel_id"))
        if k is None or k.name not in names:
            continue  # the name filter never lets these through, so they do not count
        count += 1
        if kernel_key(k) in wanted:
            seen.add(kernel_key(k))
            if len(seen) == len(wanted):
                return count
    return None


def config_launch_count(kernels: Sequence[Any], chosen: Sequence[Any]) -> int | None:
    """How many launches the "config" strategy profiles: one per launch shape of every kernel (in phase 1) whose
    mangled name is a chosen kernel's; None when a chosen kernel has no mangled name."""
    names = {k.mangled for k in chosen}
    if not names or not all(names):
        return None
    return sum(1 for k in kernels if k.mangled in names)


def kernel_key(k: Any) -> tuple[str, str, str]:
    """The identity of a kernel across reports: demangled name and launch shape (as group_kernels groups)."""
    if isinstance(k, dict):
        return (str(k.get("demangled")), str(k.get("grid")), str(k.get("block")))
    return (str(k.demangled), str(k.grid), str(k.block))


# -- merging ------------------------------------------------------------------------------------------------------


def phase1_durations(
    phase1: dict[str, Any], launches: Sequence[dict[str, Any]]
) -> dict[str, tuple[list[int], list[float]]]:
    """Phase-1 kernel id -> (result ids, durations) of its launches, in launch order (a kernel of each process has
    an id of its own)."""
    out: dict[str, tuple[list[int], list[float]]] = {k["id"]: ([], []) for k in phase1["kernels"]}
    for x in launches:
        if x.get("kernel_id") in out:
            ids, durs = out[x["kernel_id"]]
            ids.append(int(x["result_id"]))
            durs.append(float(x.get("duration_ns") or 0.0))
    return out


def split_at(ids: list[int], durations: list[float], launch_ns: float | None) -> tuple[int, float, list[Any]]:
    """(launches, ns, variants): the phase-1 launches a profiled launch of `launch_ns` stands for (its size: the
    phase-1 launch nearest in duration, and the launches like it) and the other sizes (model.split_variants)."""
    from ncuadvisor.model import split_variants

    if not ids:
        return 0, 0.0, []
    if launch_ns and launch_ns > 0:
        near = min(range(len(ids)), key=lambda i: abs(math.log(max(durations[i], 1e-9) / launch_ns)))
    else:
        near = sorted(range(len(ids)), key=lambda i: durations[i])[(len(ids) - 1) // 2]
    variants = split_variants(ids, durations, ids[near])
    return (
        len(ids) - sum(v.launches for v in variants),
        sum(durations) - sum(v.duration_ns for v in variants),
        variants,
    )


class Phase1Time:
    """analyze()'s group_time for phase-2 reports: the launches and time phase 1 measured for the size of launch
    that phase 2 profiled, so that rules see each kernel's true share of the program's GPU time. A kernel that
    several processes ran counts as one process's (the mean over them), as the analysis of one process sees it."""

    def __init__(self, phase1: dict[str, Any], launches: Sequence[dict[str, Any]]):
        durations = phase1_durations(phase1, launches)
        self.by_key: dict[tuple[str, str, str], list[tuple[list[int], list[float]]]] = {}
        for k in phase1["kernels"]:
            self.by_key.setdefault(kernel_key(k), []).append(durations[k["id"]])
        self.total_ns = float(phase1["report"]["total_duration_ns"] or 0.0)

    def __call__(self, kernel: Any, launch_ns: float | None) -> tuple[int, float] | None:
        found = [split_at(ids, durs, launch_ns) for ids, durs in self.by_key.get(kernel_key(kernel), []) if ids]
        if not found:
            return None
        return round(sum(f[0] for f in found) / len(found)), sum(f[1] for f in found) / len(found)


_ATEN_RE = re.compile(r"\b((?:aten|c10d?|torchvision|triton|prims|inductor)::[A-Za-z0-9_.]+)")
_MODULE_RE = re.compile(r"\bmodule:([A-Za-z0-9_.]+)")


def torch_context(nvtx: str) -> dict[str, str | None]:
    """The innermost ATen op and nn.Module of a kernel, from its NVTX ranges (--torch-ops)."""
    ops = _ATEN_RE.findall(nvtx or "")
    mods = _MODULE_RE.findall(nvtx or "")
    return {"torch_op": ops[-1] if ops else None, "torch_module": mods[-1] if mods else None}


def _unprofiled(entry: dict[str, Any]) -> dict[str, Any]:
    e = copy.deepcopy(entry)
    e.update(
        bound="unknown",
        bound_reason="not profiled in depth: phase 1 measured its time only (raise --top or --coverage to include it)",
        headroom=None,
        findings=[],
        suppressed=[],
        skipped_rules=[],
        ncu_rules=[],
        sections=[],
        profiled=False,
    )
    e["variants"] = [
        dict(v, profiled=False, bound="unknown", bound_reason=None, headroom=None, findings=[], suppressed=[])
        for v in e.get("variants") or []
    ]
    return e


def merge_results(
    phase1: dict[str, Any],
    deep: Sequence[tuple[str, dict[str, Any]]],
    launches: list[dict[str, Any]] | None = None,
    rules: list[Any] | None = None,
    torch_ops: bool = False,
) -> dict[str, Any]:
    """One result from the phase-1 result (every kernel, its time) and the phase-2 results (deep metrics of a few).

    Every phase-1 kernel appears, in phase-1 order (total time), with phase-1 launches, duration and time share;
    a kernel with a deep entry gets that entry's bound, roofline, findings and launch details, and
    `"profiled": true`; the others `"profiled": false`, `bound: "unknown"`, no findings. Program rules run on the
    merged kernels and the phase-1 launches; top actions are recomputed with phase-1 times.
    `deep` is a list of (report path, result of analyze()).
    """
    from ncuadvisor.analysis.entries import variant_entry as variant_json
    from ncuadvisor.analysis.pipeline import ANALYSIS_SECTIONS, add_program_level
    from ncuadvisor.model import spread_note

    total = float(phase1["report"]["total_duration_ns"] or 0.0)
    p1_durations = phase1_durations(phase1, launches or [])
    deep_by_key: dict[tuple[str, str, str], tuple[str, dict[str, Any]]] = {}
    # multi-process programs: the pids differ from run to run, the ranks do not; a kernel is matched to the deep
    # entry of the same rank when both know it, else to the first deep entry of the same kernel and shape
    deep_by_rank: dict[tuple[tuple[str, str, str], Any], tuple[str, dict[str, Any]]] = {}
    for path, res in deep:
        for d in res["kernels"]:
            deep_by_key.setdefault(kernel_key(d), (path, d))
            rank = (d.get("process") or {}).get("rank")
            if rank is not None:
                deep_by_rank.setdefault((kernel_key(d), rank), (path, d))
    used: set[tuple[str, str, str]] = set()
    merged = []
    for p in phase1["kernels"]:
        key = kernel_key(p)
        if key in deep_by_key:
            rank = (p.get("process") or {}).get("rank")
            path, d = deep_by_rank.get((key, rank)) or deep_by_key[key]
            used.add(key)
            e = copy.deepcopy(d)
            e.pop("process", None)
            e.pop("process_label", None)
            if p.get("process"):
                e["process"], e["process_label"] = p["process"], p.get("process_label", "")
            e.update(
                id=p["id"],
                launches=p["launches"],
                duration_ns=p["duration_ns"],
                per_launch_ns=p["per_launch_ns"],
                launch_range_ns=p.get("launch_range_ns"),
                launch_note=p.get("launch_note"),
                time_share=(p["duration_ns"] / total) if total else 0.0,
                result_ids=p["result_ids"],
                nvtx=d.get("nvtx") or p.get("nvtx", ""),
                profiled=True,
                deep_report=path,
                deep_result_ids=d.get("result_ids", []),
                deep_launches=d.get("launches"),
            )
            # the profiled launch speaks for the phase-1 launches of its size; other sizes were timed only
            found = p1_durations.get(p["id"])
            n, ns, variants = (
                split_at(found[0], found[1], (d.get("roofline") or {}).get("duration_ns"))
                if found and found[0]
                else (p["launches"], p["duration_ns"], [])
            )
            e["analysed_launches"], e["analysed_duration_ns"] = n, ns
            e["variants"] = [variant_json(v, total) for v in variants]
            if variants:
                lo, hi = p.get("launch_range_ns") or (None, None)
                e["launch_note"] = spread_note(
                    lo,
                    hi,
                    f"the launch profiled in depth stands for {n} of the "
                    f"{p['launches']} launches, the other sizes were timed in phase 1 only",
                )
        else:
            e = _unprofiled(p)
            e["time_share"] = (p["duration_ns"] / total) if total else 0.0
        if torch_ops or _ATEN_RE.search(e.get("nvtx") or "") or _MODULE_RE.search(e.get("nvtx") or ""):
            e.update(torch_context(e.get("nvtx") or ""))
        merged.append(e)

    base = copy.deepcopy(deep[0][1]) if deep else copy.deepcopy(phase1)
    rep = base["report"]
    warnings: list[str] = [w for w in phase1["report"]["warnings"] if "lacks sections" not in w]
    sections: set[str] = set()
    for _path, res in deep:
        sections.update(res["report"].get("sections") or [])
        for w in res["report"]["warnings"]:
            if w not in warnings:
                warnings.append(w)
    for key, (_path, d) in deep_by_key.items():
        if key not in used:
            warnings.append(
                f"{d['name']} {d['grid']}x{d['block']} was profiled in phase 2 but not seen in phase 1: left out"
            )
    rep.update(
        processes=phase1["report"].get("processes", []),
        results=phase1["report"]["results"],
        kernels=len(merged),
        total_duration_ns=total,
        sections=sorted(sections),
        missing_sections=[s for s in ANALYSIS_SECTIONS if s not in sections] if deep else list(ANALYSIS_SECTIONS),
        warnings=warnings,
    )
    if not deep:
        rep["device"] = phase1["report"]["device"]
    base["kernels"] = merged

    add_program_level(base, launches or [], rules if rules is not None else [])
    return base


def _analyze_phase1(path: Path, rules: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]], list[Any]]:
    """Phase-1 result (structure only: no kernel rules), its launches for program rules, and its kernel groups."""
    from ncuadvisor import engine
    from ncuadvisor.analysis.entries import launch_list
    from ncuadvisor.analysis.pipeline import build_result
    from ncuadvisor.load import ReportReader, read_results
    from ncuadvisor.model import group_kernels

    metrics = list(dict.fromkeys(PHASE1_METRICS + [m for r in engine.program_rules(rules) for m in r.requires]))
    profile = read_results(ReportReader(path), metrics)
    kernels = group_kernels(profile.results)
    result = build_result(profile, kernels, [])
    return result, launch_list(profile, kernels), kernels


# -- running ncu --------------------------------------------------------------------------------------------------


@dataclass
class PhaseRun:
    label: str
    command: list[str]
    out_base: str
    rc: int | None = None
    wall_s: float = 0.0
    parser: ncu_mod.OutputParser = field(default_factory=ncu_mod.OutputParser)
    report: Path | None = None
    interrupted: bool = False
    processes: dict[int, dict[str, Any]] = field(default_factory=dict)  # pid -> rank fields (ProcessWatcher)


class ProgressUI:
    """The progress bar (stderr) fed by ncu's own output; the program's output goes to stdout as it comes.

    On an interactive terminal the bar is one row that rich redraws in place (and erases at the end of the phase):
    the phase, the bar, the launches profiled so far (`12/31` with ncu's own count, `12/~29` against our estimate,
    `2001` when no total is known), the kernel and its replay, the elapsed time. The phase and the count keep their
    width; the bar and the kernel name share what is left, so a narrow terminal still shows which phase and how far.
    Anywhere else (a pipe, a file, TERM=dumb) there is no bar: one line per phase and its summary, with the program's
    output and ncu's warnings as they come.
    """

    def __init__(self, verbose: bool = False, quiet: bool = False):
        from rich.console import Console

        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self.out = Console(highlight=False, soft_wrap=True)
        self.verbose = verbose
        self.quiet = quiet
        self._progress = None
        self._task = None
        self._label = ""
        self._done = 0
        self._total: int | None = None
        self._exact = False  # the total is ncu's own (`(i/n)` in its progress lines), not our estimate
        # the names ncu prints when it filters by mangled name (`_ZN2at6native…`) -> the function names users know
        self.display_names: dict[str, str] = {}

    def start(self, label: str, total: int | None) -> None:
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column

        self._label, self._done, self._total, self._exact = label, 0, total, False
        if not self.quiet:
            self.err.print(f"[bold]{label}[/bold]")
        if self.err.is_interactive and not self.quiet:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.fields[phase]}"),
                BarColumn(bar_width=None, table_column=Column(ratio=1)),
                TextColumn("{task.fields[count]}"),
                TextColumn("{task.fields[detail]}", table_column=Column(ratio=2, no_wrap=True, overflow="ellipsis")),
                TimeElapsedColumn(),
                console=self.err,
                transient=True,
                expand=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(
                "", total=total, phase=label.split(":")[0], count=self._count(0), detail="starting the program"
            )

    def _count(self, launch: int) -> str:
        if not self._total:
            return str(launch)
        return f"{launch}/{'' if self._exact else '~'}{self._total}"

    def _update(self, detail: str, launch: int) -> None:
        """Show `detail` about `launch` (1-based); an estimated total that turns out short grows with the count."""
        if self._progress is None or self._task is None:
            return
        if self._total is not None and not self._exact and launch > self._total:
            self._total = launch
        self._progress.update(
            self._task, total=self._total, completed=self._done, count=self._count(launch), detail=detail
        )

    def _count_from(self, ev: ncu_mod.Event) -> None:
        if ev.n is not None:
            self._total, self._exact = ev.n, True

    def event(self, ev: ncu_mod.Event) -> None:
        from rich.markup import escape

        name = self.display_names.get(ev.name or "", ev.name or "")
        if ev.kind == "progress":
            self._count_from(ev)
            self._done = ev.i if ev.i is not None else self._done + 1
            passes = f" · {ev.passes} pass{'es' if ev.passes != 1 else ''}" if ev.passes else ""
            self._update(f"{escape(clip(name, 60))}{passes}", self._done)
            if self.verbose:
                self._print_err(ev.text, "dim")
        elif ev.kind == "progress-partial":
            self._count_from(ev)
            self._update(f"{escape(clip(name, 60))} · replay {ev.code}%", ev.i if ev.i is not None else self._done + 1)
        elif ev.kind == "output":
            self._print_out(ev.text)
        elif ev.kind in ("error", "app-exit"):
            self._print_err(ev.text, "red")
        elif ev.kind in ("no-kernels", "available"):
            self._print_err(ev.text, "yellow")
        elif ev.kind == "warning":
            if self.verbose or not any(q in ev.text for q in ncu_mod.QUIET_WARNINGS):
                self._print_err(ev.text, "yellow")
        elif ev.kind == "connected":
            self._update("program started", self._done)
            if self.verbose:
                self._print_err(ev.text, "dim")
        elif self.verbose:
            self._print_err(ev.text, "dim")

    def _print_out(self, text: str) -> None:
        # While the bar is live on the terminal that stdout also writes to, the line goes through the bar's console,
        # which prints it above the bar (as rich's own stdout redirection does): written to stdout directly it would
        # land on the bar's row and leave a stale copy of the bar on screen.
        console = self._progress.console if self._progress is not None and self.out.is_terminal else self.out
        console.print(text, markup=False, highlight=False)

    def _print_err(self, text: str, style: str) -> None:
        console = self._progress.console if self._progress is not None else self.err
        console.print(text, markup=False, highlight=False, style=style)

    def note(self, text: str, style: str = "dim") -> None:
        if not self.quiet:
            self._print_err(text, style)

    def stop(self, summary: str | None = None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        if summary and not self.quiet:
            self.err.print(f"  {summary}", style="dim", markup=False, highlight=False)


def run_ncu(
    command: list[str],
    out_base: str,
    label: str,
    ui: ProgressUI,
    expected: int | None = None,
    env: dict[str, str] | None = None,
) -> PhaseRun:
    """Run one ncu command, feeding its output to the parser and the progress bar; Ctrl-C stops the program, waits
    for ncu to save what it collected (a second Ctrl-C does not wait) and returns with `interrupted` set."""
    run = PhaseRun(label=label, command=command, out_base=out_base)
    splitter = ncu_mod.LineSplitter()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    t0 = time.monotonic()

    def handle(text: str) -> None:
        for line in splitter.feed(text):
            ui.event(run.parser.feed(line))
        partial = ncu_mod.parse_partial(splitter.partial)
        if partial is not None:
            ui.event(partial)

    ui.start(label, expected)
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, bufsize=0)
    except OSError as exc:
        ui.stop()
        raise ProfileError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc
    watcher = ProcessWatcher(proc.pid).start()
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    try:
        try:
            while True:
                data = os.read(fd, 65536)
                if not data:
                    break
                handle(decoder.decode(data))
        except KeyboardInterrupt:
            run.interrupted = True
            ui.note("interrupted: waiting for ncu to save what it collected (Ctrl-C again to stop at once)", "yellow")
            t_int = time.monotonic()
            forwarded = False
            try:
                while True:
                    ready, _, _ = select.select([fd], [], [], 0.5)
                    if ready:
                        data = os.read(fd, 65536)
                        if not data:
                            break
                        handle(decoder.decode(data))
                    elapsed = time.monotonic() - t_int
                    if not forwarded and elapsed > 2.0 and proc.poll() is None:
                        proc.send_signal(signal.SIGINT)  # the terminal's Ctrl-C did not reach it
                        forwarded = True
                    if elapsed > INTERRUPT_GRACE_S:
                        proc.terminate()
                        break
            except KeyboardInterrupt:
                proc.kill()
                proc.wait()
                ui.stop()
                raise
        for line in splitter.flush() + splitter.feed(decoder.decode(b"", final=True)):
            ui.event(run.parser.feed(line))
        try:
            run.rc = proc.wait(timeout=INTERRUPT_GRACE_S if run.interrupted else None)
        except subprocess.TimeoutExpired:
            proc.kill()
            run.rc = proc.wait()
    finally:
        if proc.poll() is None:  # pragma: no cover - only on an unexpected exception above
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        run.processes = watcher.stop()
    run.wall_s = time.monotonic() - t0
    run.report = ncu_mod.produced_report(out_base, run.parser.report)
    if run.report is not None:
        write_sidecar(run.report, run.processes)  # the ranks, for the analysis of this report
    ui.stop(
        f"{run.parser.profiled} launch{'es' if run.parser.profiled != 1 else ''} profiled in {run.wall_s:.1f} s"
        + (f", program exit code {run.parser.app_exit}" if run.parser.app_exit else "")
        + (", interrupted" if run.interrupted else "")
    )
    return run


def check_run(run: PhaseRun, filters: ncu_mod.Filters, target: Target, phase: str) -> None:
    """Turn a failed ncu run into one clear error (raised); return when there is a report to analyze."""
    p = run.parser
    perm = [e for e in p.errors if e.error_kind == "permission"]
    if perm:
        raise ProfileError(ncu_mod.PERM_READING)
    no_exec = [e for e in p.errors if e.error_kind == "no-executable"]
    if no_exec:
        raise InputError(f"{target.display}: ncu could not start it (the path does not exist or is not executable)")
    if run.report is not None:
        return
    if run.interrupted:
        return
    if p.app_exit not in (None, 0) and p.profiled == 0:
        raise NothingProfiledError(
            f"the program exited with code {p.app_exit} before any kernel was profiled ({phase}); its output is above"
        )
    if p.no_kernels or (p.profiled == 0 and not p.errors and run.rc == 0):
        what = []
        if filters.nvtx_include:
            what.append(
                "the NVTX filter " + " ".join(repr(x) for x in filters.nvtx_include) + " (a push/pop range "
                "holds only the kernels of the thread that opened it; a start/end range is selected with "
                "--nvtx-include NAME, without the trailing /)"
            )
        if filters.kernel:
            what.append(f"--kernel {filters.kernel}")
        if filters.launch_skip:
            what.append(f"--launch-skip {filters.launch_skip}")
        avail = ""
        if p.available:
            avail = (
                "; kernels the program did launch: "
                + ", ".join(p.available[:10])
                + (" …" if len(p.available) > 10 else "")
            )
        if what:
            cause = "nothing matched " + " and ".join(what)
        elif p.available:
            cause = "no launch matched"
        else:
            cause = "the program launched no CUDA kernel"
        raise NothingProfiledError(f"no kernel was profiled ({phase}): {cause}{avail}")
    errs = [e for e in p.errors if e.error_kind != "permission"]
    if errs:
        first = errs[0]
        raise ProfileError(f"ncu failed ({phase}): {first.text.strip()} — {first.reading}")
    raise ProfileError(f"ncu exited with code {run.rc} and wrote no report ({phase})")


# -- the command --------------------------------------------------------------------------------------------------


class CacheControl(str, Enum):
    all = "all"
    none = "none"


class ClockControl(str, Enum):
    none = "none"
    base = "base"


class TargetProcesses(str, Enum):
    all = "all"
    application_only = "application-only"


def report_base(output: Path) -> Path:
    """`step.html` -> `step` (reports are `step.phase1.ncu-rep`, `step.ncu-rep`, `step.round2.ncu-rep`)."""
    return output.with_suffix("") if output.suffix else output


def planned_reports(base: Path, full: bool) -> list[Path]:
    names = (
        [f"{base.name}.ncu-rep"]
        if full
        else [f"{base.name}.phase1.ncu-rep", f"{base.name}.ncu-rep"]
        + [f"{base.name}.round{r}.ncu-rep" for r in range(2, MAX_ROUNDS + 1)]
    )
    out = []
    for n in names:
        out += [base.parent / n, base.parent / (n + "z")]
    return out


def place_report(src: Path, dest_stem: Path, force: bool) -> Path:
    """Move ncu's report from the private folder to `<dest_stem><.ncu-rep|.ncu-repz>`; never over a file unless
    --force."""
    dest = dest_stem.parent / (dest_stem.name + src.suffix)
    if dest.exists() and not force:
        raise OutputError(f"{dest}: already exists (pass --force to overwrite it)")
    try:
        os.replace(src, dest)
    except OSError:
        try:
            shutil.move(str(src), str(dest))
        except OSError as exc:
            raise OutputError(f"{dest}: cannot write ({exc.strerror or exc})") from exc
    return dest


def profile(
    target: Annotated[
        list[str] | None,
        typer.Argument(
            help="The program: a Python script (run with this Python) or an executable, then its own arguments. "
            "Options ncuadvisor knows are taken wherever they are: put the program after `--` to pass them to it.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="The report; the extension picks the format (.html .json .md). Default: <program name>.html here.",
        ),
    ] = None,
    nvtx_range: Annotated[
        list[str] | None,
        typer.Option(
            "--nvtx-range",
            help="Only kernels launched inside this NVTX push/pop range, e.g. "
            "torch.cuda.nvtx.range('step') (repeatable; becomes ncu's --nvtx-include 'step/').",
        ),
    ] = None,
    nvtx_include: Annotated[
        list[str] | None,
        typer.Option(
            "--nvtx-include",
            help="An ncu NVTX filter expression passed as it is (repeatable), e.g. "
            "'step_all_threads' for a start/end range, 'Domain@range/' or 'regex:iter_[0-9]+/'.",
        ),
    ] = None,
    kernel: Annotated[
        str | None,
        typer.Option("--kernel", "-k", help="Only kernels matching this ncu filter: a name, or 'regex:EXPR'."),
    ] = None,
    top: Annotated[
        int | None,
        typer.Option("--top", min=1, help="Profile in depth the K kernels with the most GPU time."),
    ] = None,
    coverage: Annotated[
        float | None,
        typer.Option(
            "--coverage",
            min=0.0,
            max=1.0,
            help="Profile in depth the fewest kernels that hold this "
            "share of the GPU time (default 0.9; with --top, capped at K).",
        ),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="ncu's full set on every launch, one pass: the slow, exhaustive way.")
    ] = False,
    launch_skip: Annotated[
        int, typer.Option("--launch-skip", min=0, help="Skip this many launches first (warm-up).")
    ] = 0,
    cache_control: Annotated[
        CacheControl | None,
        typer.Option(
            "--cache-control",
            help="ncu's cache control between replay passes: all (flush; ncu's "
            "default) or none (keep caches warm, as in production).",
        ),
    ] = None,
    clock_control: Annotated[
        ClockControl,
        typer.Option(
            "--clock-control",
            help="none: clocks as in production (peaks come from the measured clocks); base: ncu locks them to base.",
        ),
    ] = ClockControl.none,
    torch_ops: Annotated[
        bool,
        typer.Option(
            "--torch-ops",
            help="Run the script under PyTorch's NVTX emission: each kernel shows "
            "the ATen op and module that launched it (needs PyTorch).",
        ),
    ] = False,
    target_processes: Annotated[
        TargetProcesses | None,
        typer.Option(
            "--target-processes",
            help="all (ncu's default: child processes too, e.g. workers and "
            "torchrun ranks, in the same report) or application-only.",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output and report files.")] = False,
    keep: Annotated[
        bool, typer.Option("--keep/--no-keep", help="Keep the .ncu-rep files next to the output (default).")
    ] = True,
    rules_dir: Annotated[
        list[Path] | None, typer.Option("--rules-dir", help="A folder of your own rule files (repeatable).")
    ] = None,
    ncu_path: Annotated[
        str | None, typer.Option("--ncu", help="The ncu executable (default: PATH, CUDA_HOME, usual folders).")
    ] = None,
    show: Annotated[int, typer.Option("--show", help="Kernels shown in the terminal summary.")] = 10,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no terminal summary.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every line ncu prints.")] = False,
) -> None:
    """Profile a program with ncu and analyze it: a cheap timing pass over every launch, then the full analysis
    sections on one launch of each kernel that matters."""
    from rich.console import Console
    from rich.markup import escape

    from ncuadvisor.cli import Format, check_output, choose_format, render, write_output

    if full and (top is not None or coverage is not None):
        raise InputError("--full profiles every launch in depth; it does not combine with --top or --coverage")
    tgt = resolve_target(target or [], torch_ops=torch_ops)
    out_path = output if output is not None else Path(f"{tgt.stem}.html")
    out_format = choose_format(out_path, None)
    if out_format is Format.terminal:  # pragma: no cover - choose_format never returns terminal for a path
        raise OutputError("the profile report must be written to a file (.html, .json or .md)")
    inputs = [tgt.script] if tgt.script else []
    base = report_base(out_path)
    check_output(out_path, force, inputs)
    for rp in planned_reports(base, full):
        check_output(rp, force, inputs)

    # ncu
    try:
        ncu = ncu_mod.find_ncu(ncu_path)
    except ncu_mod.NcuNotFound as exc:
        where = ", ".join(exc.searched[:6]) + (" …" if len(exc.searched) > 6 else "")
        raise NcuMissingError(f"ncu (Nsight Compute) not found (looked in: {where}): {ncu_mod.DOWNLOAD_HINT}") from None
    try:
        info = ncu_mod.ncu_version(ncu)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NcuMissingError(f"{ncu}: cannot run `ncu --version` ({exc})") from exc
    if info.version is None:
        raise NcuMissingError(f"{ncu}: `ncu --version` printed no version ({info.version_text[:200]!r})")
    if info.version[:2] < ncu_mod.MIN_VERSION:
        raise NcuMissingError(
            f"{ncu}: ncu {info.version_str} is too old (ncuadvisor needs {ncu_mod.MIN_VERSION[0]}."
            f"{ncu_mod.MIN_VERSION[1]} or newer): {ncu_mod.DOWNLOAD_HINT}"
        )

    from ncuadvisor import engine

    rules = engine.discover(rules_dir or [])
    filters = ncu_mod.Filters(
        nvtx_include=[ncu_mod.nvtx_expression(r) for r in (nvtx_range or [])] + list(nvtx_include or []),
        kernel=kernel,
        launch_skip=launch_skip,
        cache_control=cache_control.value if cache_control else None,
        clock_control=clock_control.value,
        target_processes=target_processes.value if target_processes else None,
        record_nvtx=torch_ops,
    )
    env = dict(os.environ)
    if tgt.script is not None:
        env.setdefault("PYTHONUNBUFFERED", "1")
    ui = ProgressUI(verbose=verbose, quiet=quiet)
    try:
        work = Path(tempfile.mkdtemp(prefix=".ncuadvisor-", dir=out_path.resolve().parent))
    except OSError as exc:
        raise OutputError(f"{out_path}: cannot write in its folder ({exc.strerror or exc})") from exc

    session = Session(
        ncu=ncu,
        info=info,
        target=tgt,
        filters=filters,
        ui=ui,
        env=env,
        work=work,
        base=base,
        force=force,
        rules=rules,
        torch_ops=torch_ops,
    )
    t0 = time.monotonic()
    try:
        if full:
            result = session.full()
        else:
            result = session.two_phase(top=top, coverage=coverage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["report"]["profile"]["wall_s"] = round(time.monotonic() - t0, 2)

    write_output(out_path, render(result, out_format))
    if not keep:
        for p in session.placed:
            try:
                p.unlink()
            except OSError:
                pass
    if not quiet:
        from ncuadvisor.render.terminal import render_terminal

        render_terminal(result, top=show)
        con = Console(highlight=False, soft_wrap=True)
        con.print(f"\nwrote {escape(str(out_path))}")
        if keep and session.placed:
            reports = [p for p in session.placed if not str(p).endswith(".processes.json")]
            con.print(
                "reports: "
                + ", ".join(escape(str(p)) for p in session.placed)
                + f" (re-analyse one with `ncuadvisor report {escape(str(reports[-1] if reports else session.placed[-1]))}`)"
            )
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if session.interrupted:
        err.print(f"ncuadvisor: interrupted: wrote what was collected to {escape(str(out_path))} (partial)")
        sys.exit(EXIT_INTERRUPTED)  # not typer.Exit: main() runs the app with standalone_mode=False
    if session.incomplete:
        err.print(f"ncuadvisor: warning: {escape(session.incomplete)}; wrote {escape(str(out_path))} (partial)")
        sys.exit(EXIT_PARTIAL)


@dataclass
class Session:
    """One `ncuadvisor profile`: runs the phases, places the reports, builds the result."""

    ncu: str
    info: ncu_mod.NcuInfo
    target: Target
    filters: ncu_mod.Filters
    ui: ProgressUI
    env: dict[str, str]
    work: Path
    base: Path
    force: bool
    rules: list[Any]
    torch_ops: bool = False
    placed: list[Path] = field(default_factory=list)
    runs: list[PhaseRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    incomplete: str | None = None  # why the result is partial (exit 4)

    runner: Callable[..., PhaseRun] = run_ncu

    def _run(self, command: list[str], out_base: str, label: str, expected: int | None) -> PhaseRun:
        run = self.runner(command, out_base, label, self.ui, expected=expected, env=self.env)
        self.runs.append(run)
        if run.interrupted:
            self.interrupted = True
        for e in run.parser.errors:
            if e.error_kind != "permission":
                self.warnings.append(f"ncu ({label.split(':')[0]}): {e.text.strip()} — {e.reading}")
        if run.parser.app_exit not in (None, 0):
            msg = f"the program exited with code {run.parser.app_exit} during {label.split(':')[0]}: the result is partial"
            self.warnings.append(msg)
            self.incomplete = self.incomplete or f"the program exited with code {run.parser.app_exit}"
        return run

    def _run_saved(self, command: list[str], out_base: str, label: str, phase: str) -> PhaseRun:
        """A run whose report the rest depends on: ncu's failures raised as one clear error, and an interruption
        before ncu saved anything raised too."""
        run = self._run(command, out_base, label, None)
        check_run(run, self.filters, self.target, phase)
        if run.report is None:  # interrupted before ncu saved anything
            raise ProfileInterrupted("interrupted before ncu saved anything: nothing to analyze")
        return run

    def _place(self, run: PhaseRun, stem: str) -> Path | None:
        if run.report is None:
            return None
        dest = place_report(run.report, self.base.parent / stem, self.force)
        self.placed.append(dest)
        kept = write_sidecar(dest, run.processes)
        if kept is not None:
            self.placed.append(kept)
        return dest

    def _meta(self, mode: str, extra: dict[str, Any]) -> dict[str, Any]:
        meta = {
            "mode": mode,
            "target": self.target.argv
            if self.target.script is None or not self.torch_ops
            else [self.target.argv[0], "-c", "<ncuadvisor torch runner>", *self.target.argv[3:]],
            "ncu": self.ncu,
            "ncu_version": self.info.version_str,
            "filters": {
                "nvtx_include": self.filters.nvtx_include,
                "kernel": self.filters.kernel,
                "launch_skip": self.filters.launch_skip,
                "cache_control": self.filters.cache_control or "all",
                "clock_control": self.filters.clock_control,
                "target_processes": self.filters.target_processes or "all",
            },
            "torch_ops": self.torch_ops,
            "phases": [
                {
                    "phase": r.label.split(":")[0],
                    "command": [("<ncuadvisor torch runner>" if a == TORCH_RUNNER else a) for a in r.command],
                    "wall_s": round(r.wall_s, 2),
                    "ncu_exit_code": r.rc,
                    "program_exit_code": r.parser.app_exit,
                    "launches_profiled": r.parser.profiled,
                    "interrupted": r.interrupted,
                }
                for r in self.runs
            ],
            "reports": [str(p) for p in self.placed],
            "partial": bool(self.interrupted or self.incomplete),
        }
        meta.update(extra)
        return meta

    def _finish(self, result: dict[str, Any], mode: str, extra: dict[str, Any]) -> dict[str, Any]:
        warnings = result["report"]["warnings"]
        if self.interrupted:
            warnings.insert(0, "partial: interrupted (Ctrl-C) before ncu finished; this analyses what was collected")
        for w in self.warnings:
            if w not in warnings:
                warnings.append(w)
        result["report"]["profile"] = self._meta(mode, extra)
        return result

    # -- modes ----------------------------------------------------------------------------------------------------
    def full(self) -> dict[str, Any]:
        from ncuadvisor.analysis.pipeline import analyze

        out_base = str(self.work / "full")
        cmd = ncu_mod.full_command(self.ncu, out_base, self.target.argv, self.filters)
        run = self._run_saved(cmd, out_base, "full: every launch, ncu's full set", "full run")
        dest = self._place(run, f"{self.base.name}")
        result = analyze(dest, rules=self.rules)
        for k in result["kernels"]:
            k["profiled"] = True
            if self.torch_ops:
                k.update(torch_context(k.get("nvtx") or ""))
        return self._finish(result, "full", {})

    def two_phase(self, top: int | None, coverage: float | None) -> dict[str, Any]:
        from ncuadvisor.analysis.pipeline import ANALYSIS_SECTIONS, analyze

        out1 = str(self.work / "phase1")
        cmd1 = ncu_mod.phase1_command(self.ncu, out1, self.target.argv, self.filters)
        run1 = self._run_saved(cmd1, out1, "phase 1/2: timing every kernel launch", "phase 1")
        p1_path = self._place(run1, f"{self.base.name}.phase1")
        assert p1_path is not None
        p1_result, launches, kernels = _analyze_phase1(p1_path, self.rules)
        # the deep analysis judges each kernel by the time phase 1 measured for it, not by its one profiled launch
        group_time = Phase1Time(p1_result, launches)
        chosen = select_kernels(kernels, top=top, coverage=coverage)
        total = sum(k.duration_ns for k in kernels)
        covered = sum(k.duration_ns for k in chosen) / total if total else 0.0
        selection: dict[str, Any] = {
            "top": top,
            "coverage": coverage if coverage is not None else (None if top is not None else DEFAULT_COVERAGE),
            "phase1_kernels": len(kernels),
            "phase1_launches": int(len(launches)),
            "chosen": [k.name for k in chosen],
            "chosen_share": covered,
            "rounds": [],
        }
        self.ui.note(
            f"  {len(kernels)} distinct kernels in {len(launches)} launches; profiling {len(chosen)} in depth "
            f"({covered:.0%} of GPU time)"
        )
        deep: list[tuple[str, dict[str, Any]]] = []
        found: set[tuple[str, str, str]] = set()
        missing = list(chosen)
        name_base = "demangled"
        # Round 1 catches every chosen kernel in one run of the program, profiling as few launches as it can: either
        # the first launch of each launch configuration of the chosen mangled names ("config"), or a window of the
        # first N launches of the chosen function names ("window", N from phase 1's launch order), whichever
        # profiles fewer launches; "kernel-id" when the user filters names (ncu takes one name filter).
        window = window_launch_count(launches, kernels, chosen)
        configs = config_launch_count(kernels, chosen)
        if self.filters.kernel:
            first = "kernel-id"
        elif window is not None and (configs is None or window <= configs):
            first = "window"
        elif configs is not None:
            first = "config"
        else:
            first = "kernel-id"
        selection["window_launches"] = window
        selection["config_launches"] = configs
        for rnd in range(1, MAX_ROUNDS + 1):
            if not missing or self.interrupted:
                break
            if rnd == 1:
                strategy = first
            elif rnd == 2 and first != "kernel-id":
                strategy = "kernel-id"
            else:
                strategy = "per-launch-config"
            # The window matches plain function names: measured on an H200, a demangled-name regex missed every cuBLAS
            # nvjet_* kernel (their demangled form in ncu's filter is not the name the report stores).
            base = {"window": "function", "config": "mangled"}.get(strategy, name_base)
            names = [
                k.mangled if base == "mangled" else k.demangled if base == "demangled" else k.name for k in missing
            ]
            out2 = str(self.work / f"phase2_{rnd}")
            cmd2 = ncu_mod.phase2_command(
                self.ncu,
                out2,
                self.target.argv,
                self.filters,
                names,
                ANALYSIS_SECTIONS,
                strategy=strategy,
                name_base=base,
                launch_count=window if strategy == "window" else None,
            )
            label = (
                f"phase 2/2: full analysis sections, one launch per kernel (round {rnd})"
                if rnd > 1
                else "phase 2/2: full analysis sections, one launch per kernel"
            )
            # what the bar counts up to: the launches this round profiles (one per kernel and launch shape, as
            # far as phase 1 saw them), until ncu's own count replaces it
            expected = {"window": window, "config": configs}.get(strategy) or len(missing)
            self.ui.display_names = {k.mangled: k.name for k in missing if k.mangled} if base == "mangled" else {}
            run2 = self._run(cmd2, out2, label, expected)
            self.ui.display_names = {}
            if run2.parser.permission_denied:
                check_run(run2, self.filters, self.target, "phase 2")
            new: set[tuple[str, str, str]] = set()
            if run2.report is not None:
                res = analyze(run2.report, rules=self.rules, group_time=group_time)
                keys = {kernel_key(k) for k in res["kernels"]}
                new = {kernel_key(k) for k in missing} & keys
                if new or not deep:
                    stem = f"{self.base.name}" if not deep else f"{self.base.name}.round{rnd}"
                    dest = self._place(run2, stem)
                    res["report"]["path"] = str(dest)
                    res["report"]["name"] = dest.name if dest else res["report"]["name"]
                    deep.append((str(dest), res))
                found |= keys
            selection["rounds"].append(
                {
                    "round": rnd,
                    "strategy": strategy,
                    "kernel_name_base": base,
                    "asked": len(missing),
                    "found": len(new),
                    "launches_profiled": run2.parser.profiled,
                }
            )
            still = [k for k in missing if kernel_key(k) not in found]
            if not new and name_base == "demangled" and run2.parser.profiled == 0 and rnd >= 2:
                name_base = "function"  # the demangled names did not match at all: try the plain function names
            elif not new and rnd >= 2:
                break
            missing = still
        if missing:
            names = ", ".join(clip(k.name, 40) for k in missing[:5]) + (" …" if len(missing) > 5 else "")
            self.warnings.append(
                f"{len(missing)} of the {len(chosen)} chosen kernels could not be profiled in depth ({names}): "
                "they are listed with their phase-1 time only"
            )
            if len(missing) == len(chosen) and not self.interrupted:
                self.incomplete = self.incomplete or "no chosen kernel could be profiled in depth"
        result = merge_results(p1_result, deep, launches=launches, rules=self.rules, torch_ops=self.torch_ops)
        if not deep:
            result["report"]["path"] = str(p1_path)
            result["report"]["name"] = p1_path.name
        result["report"]["phase1_report"] = str(p1_path)
        return self._finish(result, "two-phase", {"selection": selection})


def register(app: typer.Typer) -> None:
    """Add the `profile` command to the ncuadvisor typer app (idempotent)."""
    for cmd in app.registered_commands:
        if (cmd.name or getattr(cmd.callback, "__name__", "")) == "profile":
            return
    app.command(
        name="profile",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(profile)
