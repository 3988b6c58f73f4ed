"""Nsight Compute's `ncu`: finding it, its version, and the command line of each phase.

Pure functions apart from `ncu_version` (which runs `ncu --version`), so that they can be tested without a GPU and
without ncu: `profile.runner` runs the commands built here, `profile.output` reads what ncu prints.

Facts this module relies on (Nsight Compute CLI documentation, and the real outputs kept in `fixtures/ncu_outputs/`):

- ncu parses its own options up to the first word that is not an option (the program); everything after it is the
  program's command line, so no `--` separator is passed.
- `--kernel-id context:stream:[regex:]name:invocation` with the context and stream left empty counts the invocations
  of each kernel name *and launch configuration* (grid, block, shared memory) separately (ncu's documentation), so
  `--kernel-id ::regex:^(a|b)$:1` asks for the first launch of each configuration of `a` and of `b`. Measured with
  an NVTX filter after warm-up launches: PyTorch's ATen kernels were matched at invocation 1 inside the range, the
  cuBLAS `nvjet_*` kernels not at all (tests/fake_ncu/outputs/README.md), hence the fallback below.
- `--filter-mode per-launch-config` applies `--launch-count` to each launch configuration separately; the kernel
  name is not part of that key (two kernels launched with the same configuration: only the first is profiled).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ncuadvisor.errors import NcuMissingError, NcuNotFound

# -- finding ncu ------------------------------------------------------------------------------------------------

DOWNLOAD_HINT = (
    "install the CUDA toolkit (it ships ncu in its bin folder) or Nsight Compute "
    "(https://developer.nvidia.com/nsight-compute), then put ncu on PATH, set CUDA_HOME, or pass --ncu PATH"
)
# Folders searched after PATH, $NCUADVISOR_NCU, $CUDA_HOME/bin and $CUDA_PATH/bin (globs: newest version first).
STANDARD_DIRS = ["/usr/local/cuda/bin", "/opt/nvidia/nsight-compute/*", "/usr/local/cuda-*/bin"]
MIN_VERSION = (2022, 1)  # --kernel-id regex invocations, --nvtx-include, --import-source, --cache-control


@dataclass
class NcuInfo:
    path: str
    version: tuple[int, ...] | None
    version_text: str

    @property
    def version_str(self) -> str:
        return ".".join(str(v) for v in self.version) if self.version else "unknown"


def candidate_paths(env: Mapping[str, str] | None = None, standard_dirs: Sequence[str] | None = None) -> list[str]:
    """Where ncu may be, in the order searched (PATH is searched by `find_ncu` before these)."""
    env = os.environ if env is None else env
    out: list[str] = []
    if env.get("NCUADVISOR_NCU"):
        out.append(env["NCUADVISOR_NCU"])
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if env.get(var):
            out.append(os.path.join(env[var], "bin", "ncu"))
    for pattern in STANDARD_DIRS if standard_dirs is None else standard_dirs:
        if any(ch in pattern for ch in "*?["):
            for folder in sorted(glob.glob(pattern), reverse=True):
                out.append(os.path.join(folder, "ncu"))
        else:
            out.append(os.path.join(pattern, "ncu"))
    return out


def find_ncu(
    explicit: str | None = None,
    env: Mapping[str, str] | None = None,
    standard_dirs: Sequence[str] | None = None,
) -> str:
    """The ncu executable: `explicit` (--ncu), else PATH, else the candidate folders; raises NcuNotFound (exit code 5)."""
    env = os.environ if env is None else env
    if explicit:
        p = shutil.which(explicit) if os.sep not in explicit else explicit
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
        raise NcuNotFound([explicit], DOWNLOAD_HINT)
    searched = ["PATH"]
    on_path = shutil.which("ncu", path=env.get("PATH", os.defpath))
    if on_path:
        return on_path
    for cand in candidate_paths(env, standard_dirs):
        searched.append(cand)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise NcuNotFound(searched, DOWNLOAD_HINT)


_VERSION_RE = re.compile(r"Version (\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?: \(build (\d+)\))?")


def parse_version(text: str) -> tuple[int, ...] | None:
    """`ncu --version` text -> (2025, 3, 1, 0); None when there is no version in it."""
    m = _VERSION_RE.search(text or "")
    if not m:
        return None
    return tuple(int(g) for g in m.groups()[:4] if g is not None)


def ncu_version(path: str, timeout: float = 60.0) -> NcuInfo:
    """Run `ncu --version`; raises OSError/subprocess errors to the caller."""
    proc = subprocess.run([path, "--version"], capture_output=True, timeout=timeout)
    # bytes, decoded leniently: an ncu (or a wrapper) printing non-UTF-8 is a missing ncu, not an internal error
    text = (proc.stdout or b"").decode("utf-8", "replace") + (proc.stderr or b"").decode("utf-8", "replace")
    return NcuInfo(path=path, version=parse_version(text), version_text=" ".join(text.split()))


def require_ncu(explicit: str | None = None) -> NcuInfo:
    """The ncu to profile with (`find_ncu`) and its version, checked; NcuMissingError (exit code 5) otherwise."""
    ncu = find_ncu(explicit)
    try:
        info = ncu_version(ncu)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NcuMissingError(f"{ncu}: cannot run `ncu --version` ({exc})") from exc
    if info.version is None:
        raise NcuMissingError(f"{ncu}: `ncu --version` printed no version ({info.version_text[:200]!r})")
    if info.version[:2] < MIN_VERSION:
        raise NcuMissingError(
            f"{ncu}: ncu {info.version_str} is too old (ncuadvisor needs {MIN_VERSION[0]}.{MIN_VERSION[1]} or "
            f"newer): {DOWNLOAD_HINT}"
        )
    return info


# -- command lines ----------------------------------------------------------------------------------------------

DURATION_METRIC = "gpu__time_duration.sum"
# Phase 1 collects, with the duration, the DRAM bytes of every launch (the program rules weigh what moves between
# kernels) and the tensor pipe's busy share (what places a matrix kernel at its tensor ceiling without phase 2): on
# the H200 with ncu 2025.3.1 the duration with either pair took one replay pass, as the duration alone
# (fixtures/profile-cost-2026-12-01/collection_cost.json, "group_passes"); the Speed Of Light percentages took 10.
TENSOR_PIPE_PCT = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"
PHASE1_COLLECTED = [DURATION_METRIC, "dram__bytes_read.sum", "dram__bytes_write.sum", TENSOR_PIPE_PCT]


@dataclass
class Filters:
    """What the user asked to profile, common to every phase."""

    nvtx_include: list[str] = field(default_factory=list)  # ncu --nvtx-include expressions
    kernel: str | None = None  # ncu -k value ("name" or "regex:...")
    launch_skip: int = 0
    cache_control: str | None = None  # all | none (ncu's default: all)
    clock_control: str = "none"
    target_processes: str | None = None  # all | application-only (ncu's default: all)
    record_nvtx: bool = False  # --nvtx without a filter (e.g. --torch-ops: keep the ATen op ranges)


def nvtx_expression(range_name: str) -> str:
    """`--nvtx-range step` -> ncu's `step/` (a push/pop range); ncu expressions (with / @ [ ] or regex:) as given."""
    if range_name.startswith("regex:") or any(ch in range_name for ch in "/@[]"):
        return range_name
    return range_name + "/"


def _common(f: Filters, with_skip: bool = True) -> list[str]:
    args = ["--clock-control", f.clock_control]
    if f.cache_control:
        args += ["--cache-control", f.cache_control]
    if f.target_processes:
        args += ["--target-processes", f.target_processes]
    if f.nvtx_include or f.record_nvtx:
        args.append("--nvtx")
    for expr in f.nvtx_include:
        args += ["--nvtx-include", expr]
    if with_skip and f.launch_skip:
        args += ["--launch-skip", str(f.launch_skip)]
    return args


def phase1_command(ncu: str, out_base: str, target: Sequence[str], f: Filters) -> list[str]:
    """The cheap pass over every launch the filters let through: the duration, DRAM bytes and tensor pipe share
    (`PHASE1_COLLECTED`)."""
    args = [ncu] + _common(f) + ["--metrics", ",".join(PHASE1_COLLECTED)]
    if f.kernel:
        args += ["-k", f.kernel]
    return args + ["-o", out_base] + list(target)


def escape_regex(text: str) -> str:
    """Escape a kernel name for ncu's regular expressions (ECMAScript-like); `:` becomes `.`, because ncu splits
    `--kernel-id` at colons (a `.` matches the colon, so demangled names with `::` still match)."""
    out = []
    for ch in text:
        if ch == ":":
            out.append(".")
        elif ch in "\\.^$|?*+()[]{}":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def names_regex(names: Iterable[str]) -> str:
    """`^(a|b)$` over the escaped names, each once, in order."""
    uniq = list(dict.fromkeys(names))
    return "^(" + "|".join(escape_regex(n) for n in uniq) + ")$"


def section_args(sections: Sequence[str], metrics: Sequence[str] = ()) -> list[str]:
    """`--section S` for each section, and one `--metrics a,b,...` for the metrics named one by one."""
    args: list[str] = []
    for s in sections:
        args += ["--section", s]
    if metrics:
        args += ["--metrics", ",".join(dict.fromkeys(metrics))]
    return args


# The sections of the declared collection (`declared_metrics`): SourceCounters carries the per-instruction metrics
# (with their correlation ids: the instructions a finding shows); SpeedOfLight is the root of NCU's own rules, which
# derive the excessive-sector and -wavefront metrics (derived__*) of those instructions, and is collected only for
# rules that read those (`session.declared_collection`: its two percentages alone cost 9 replay passes); LaunchStats
# and Occupancy hold the launch shape and occupancy limits of every kernel card (no replay pass of their own).
DECLARED_SECTIONS = ["SpeedOfLight", "LaunchStats", "Occupancy", "SourceCounters"]


def declared_metrics(names: Iterable[str]) -> list[str]:
    """The metrics the analysis reads that `--metrics` can collect by name: every name but NCU's rule-derived metrics
    (`derived__*`, computed by the rules of the sections above) and the device attributes (in every report)."""
    return [
        n for n in dict.fromkeys(names) if n and not n.startswith("derived__") and not n.startswith("device__attribute")
    ]


def phase2_command(
    ncu: str,
    out_base: str,
    target: Sequence[str],
    f: Filters,
    names: Sequence[str],
    sections: Sequence[str],
    strategy: str = "kernel-id",
    name_base: str = "demangled",
    launch_count: int | None = None,
    metrics: Sequence[str] = (),
) -> list[str]:
    """The deep pass on one launch of each chosen kernel: the `sections`, plus the `metrics` named one by one (the
    declared collection: `DECLARED_SECTIONS` and `declared_metrics`; on the H200 with ncu 2025.3.1, the metrics with
    SourceCounters alone took 24 replay passes per launch, the 13 analysis sections 36).

    strategy "kernel-id": `--kernel-id ::regex:^(names)$:1`, the first launch of each name and launch configuration
    (the invocation count is per name, grid, block and shared memory). strategy "per-launch-config": every launch
    of the names, `--filter-mode per-launch-config --launch-count 1`, one per launch configuration (the fallback
    for kernels the first strategy missed). `name_base` is ncu's --kernel-name-base for the names (demangled names
    tell template instances apart; function names are the plain identifiers).
    strategy "config": `--kernel-name regex:^(names)$ --filter-mode per-launch-config --launch-count 1`, with the
    mangled names (one per template instance, matched by ncu exactly as the report stores them): the first launch of
    each launch configuration of the chosen kernels, in one run, whatever phase 1's launch order.
    strategy "window": `--kernel-name regex:^(names)$ --launch-count N`, the first N launches of those names that pass
    the filters, N computed from phase 1's launch order so that every chosen kernel is among them: one run of the
    program catches every kernel whatever its invocation numbering (cuBLAS kernels launched during warm-up outside an
    NVTX range are missed by "kernel-id").
    A --launch-skip of the user becomes `--launch-skip-before-match` (it counts every launch, whatever the filter).
    """
    args = [ncu] + _common(f, with_skip=False) + section_args(sections, metrics) + ["--import-source", "yes"]
    if f.launch_skip:
        args += ["--launch-skip-before-match", str(f.launch_skip)]
    args += ["--kernel-name-base", name_base]
    regex = names_regex(names)
    if strategy == "window":
        if not launch_count or launch_count < 1:
            raise ValueError("the window strategy needs a launch count")
        args += ["--kernel-name", f"regex:{regex}", "--launch-count", str(launch_count)]
    elif strategy == "config":
        args += ["--kernel-name", f"regex:{regex}", "--filter-mode", "per-launch-config", "--launch-count", "1"]
    elif strategy == "kernel-id":
        args += ["--kernel-id", f"::regex:{regex}:1"]
    elif strategy == "per-launch-config":
        args += ["--kernel-id", f"::regex:{regex}:", "--filter-mode", "per-launch-config", "--launch-count", "1"]
    else:  # pragma: no cover - programming error
        raise ValueError(f"unknown phase-2 strategy {strategy!r}")
    return args + ["-o", out_base] + list(target)


def full_command(ncu: str, out_base: str, target: Sequence[str], f: Filters) -> list[str]:
    """`--full`: ncu's full set on every launch the filters let through (the slow, exhaustive way)."""
    args = [ncu] + _common(f) + ["--set", "full", "--import-source", "yes"]
    if f.kernel:
        args += ["-k", f.kernel]
    return args + ["-o", out_base] + list(target)


def produced_report(out_base: str, announced: str | None = None) -> Path | None:
    """The report ncu wrote for `-o out_base` (ncu adds .ncu-rep, or .ncu-repz from 2026.3 on): only a file of those
    names in the run's private folder. A `==PROF== Report: PATH` line elsewhere (the profiled program can print one)
    is never taken: profile moves and may delete the report it finds, so it must be the one ncu wrote for it."""
    ours = [out_base + ".ncu-rep", out_base + ".ncu-repz", out_base]
    allowed = {os.path.realpath(c) for c in ours}
    cands = [announced] if announced and os.path.realpath(announced) in allowed else []
    for c in cands + ours:
        if os.path.isfile(c) and not os.path.islink(c) and os.path.getsize(c) > 0:
            return Path(c)
    return None
