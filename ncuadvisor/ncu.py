"""Driving Nsight Compute's `ncu`: finding it, its version, the command lines of each phase, and its output.

Everything here is a pure function or a small parser, so that it can be tested without a GPU and without ncu:
`ncuadvisor.profile` runs the commands built here and feeds ncu's output, line by line, to `OutputParser`.

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
- Progress: `==PROF== Profiling "name" - 3: 0%....50%....100% - 36 passes` (with ` (4/20)` after the index when
  a launch count is known); under `--kernel-id` or per-launch-config there is no index, and with an invocation
  number the name is the kernel id (`"1:7:<demangled name>:1"`). Errors start with `==ERROR==`, warnings with
  `==WARNING==`; the target's exit code comes back as `==ERROR== The application returned an error code (3).` and
  as ncu's own exit code.
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


class NcuNotFound(Exception):
    """ncu is nowhere we looked; `searched` lists where."""

    def __init__(self, searched: list[str]):
        super().__init__("ncu not found")
        self.searched = searched


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
    """The ncu executable: `explicit` (--ncu), else PATH, else the candidate folders; raises NcuNotFound."""
    env = os.environ if env is None else env
    if explicit:
        p = shutil.which(explicit) if os.sep not in explicit else explicit
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
        raise NcuNotFound([explicit])
    searched = ["PATH"]
    on_path = shutil.which("ncu", path=env.get("PATH", os.defpath))
    if on_path:
        return on_path
    for cand in candidate_paths(env, standard_dirs):
        searched.append(cand)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise NcuNotFound(searched)


_VERSION_RE = re.compile(r"Version (\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?(?: \(build (\d+)\))?")


def parse_version(text: str) -> tuple[int, ...] | None:
    """`ncu --version` text -> (2025, 3, 1, 0); None when there is no version in it."""
    m = _VERSION_RE.search(text or "")
    if not m:
        return None
    return tuple(int(g) for g in m.groups()[:4] if g is not None)


def ncu_version(path: str, timeout: float = 60.0) -> NcuInfo:
    """Run `ncu --version`; raises OSError/subprocess errors to the caller."""
    proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout)
    text = (proc.stdout or "") + (proc.stderr or "")
    return NcuInfo(path=path, version=parse_version(text), version_text=" ".join(text.split()))


# -- command lines ----------------------------------------------------------------------------------------------

DURATION_METRIC = "gpu__time_duration.sum"


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
    """The cheap pass: duration only, every launch the filters let through."""
    args = [ncu] + _common(f) + ["--metrics", DURATION_METRIC]
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


def section_args(sections: Sequence[str]) -> list[str]:
    args: list[str] = []
    for s in sections:
        args += ["--section", s]
    return args


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
) -> list[str]:
    """The deep pass on one launch of each chosen kernel.

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
    args = [ncu] + _common(f, with_skip=False) + section_args(sections) + ["--import-source", "yes"]
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
    """The report ncu wrote for `-o out_base` (ncu adds .ncu-rep, or .ncu-repz from 2026.3 on)."""
    cands = [announced] if announced else []
    cands += [out_base + ".ncu-rep", out_base + ".ncu-repz", out_base]
    for c in cands:
        if c and os.path.isfile(c) and os.path.getsize(c) > 0:
            return Path(c)
    return None


# -- ncu's output ------------------------------------------------------------------------------------------------

# `"name" - 3: ...`, `"name" - 0 (1/20): ...`, and with --kernel-id or --filter-mode per-launch-config no index:
# `"1:7:<demangled name>:1": ...` (the kernel id context:stream:name:invocation) or `"name": ...`.
_PROFILING_RE = re.compile(
    r'^==PROF== Profiling "(?P<name>.*)"(?: - (?P<index>\d+)(?: \((?P<i>\d+)/(?P<n>\d+)\))?)?:'
    r"(?P<progress>[ 0-9%.]*)(?:- (?P<passes>\d+) pass(?:es)?)?\s*$"
)
_KERNEL_ID_NAME_RE = re.compile(r"^\d+:\d+:(?P<name>.*):(?P<inv>\d+)$")


def _kernel_name(raw: str) -> tuple[str, int | None]:
    """A progress line's kernel: `1:7:name:1` (a kernel id) -> ("name", 1); a plain name as it is."""
    m = _KERNEL_ID_NAME_RE.match(raw)
    return (m["name"], int(m["inv"])) if m else (raw, None)


_CONNECTED_RE = re.compile(r"^==PROF== Connected to process (?P<pid>\d+) \((?P<exe>.*)\)\s*$")
_DISCONNECTED_RE = re.compile(r"^==PROF== Disconnected from process (?P<pid>\d+)")
_REPORT_RE = re.compile(r"^==PROF== Report: (?P<path>.+?)\s*$")
_APP_RC_RE = re.compile(r"The application returned an error code \((?P<code>-?\d+)\)")
_TAG_RE = re.compile(r"^==(?P<tag>PROF|ERROR|WARNING|INFO)== ?(?P<text>.*)$")

PERM_READING = (
    "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): the NVIDIA driver restricts them to "
    "admin users. Run as root (sudo), or let every user profile by setting the nvidia kernel-module option "
    "NVreg_RestrictProfilingToAdminUsers=0 (e.g. `options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "
    "/etc/modprobe.d/, then reload the driver or reboot); in a container, start it with --cap-add=SYS_ADMIN "
    "(see https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)

# (pattern in an ==ERROR== line, kind, our one-line reading)
ERROR_READINGS: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"ERR_NVGPUCTRPERM"), "permission", PERM_READING),
    (
        re.compile(r"does not exist or is not an executable"),
        "no-executable",
        "ncu could not start the program: the path does not exist or is not executable",
    ),
    (
        re.compile(
            r"(no CUDA-capable device|Failed to find any (CUDA|supported) devices?|No supported GPU|"
            r"CUDA_ERROR_NO_DEVICE|cuInit|driver.*(not loaded|insufficient|not found)|"
            r"Failed to initialize (the )?(NVML|driver))",
            re.I,
        ),
        "no-gpu",
        "no usable NVIDIA GPU: ncu found no device it can profile (check `nvidia-smi`, the driver, and that the "
        "GPU is visible here, e.g. CUDA_VISIBLE_DEVICES or the container's --gpus option)",
    ),
    (
        re.compile(
            r"(unrecognised|unrecognized|unknown) option|invalid (option|value|argument)|the argument "
            r"\('.*'\) for option",
            re.I,
        ),
        "usage",
        "this ncu rejected an option ncuadvisor passed it (is it too old? check `ncu --version`)",
    ),
    (
        re.compile(r"Failed to (connect|launch|attach)|Connection .* (failed|refused)|timed out", re.I),
        "connect",
        "ncu could not attach to the program (another profiler running? a sandbox blocking ptrace?)",
    ),
    (
        re.compile(r"out of memory|disk|No space left|Failed to (write|save|create) (the )?report", re.I),
        "write",
        "ncu could not write its report (disk full, or the folder not writable?)",
    ),
]


@dataclass
class Event:
    """One line of ncu's output, read."""

    kind: str  # connected progress disconnected report no-kernels available warning error app-exit output info
    text: str
    name: str | None = None
    index: int | None = None
    i: int | None = None
    n: int | None = None
    passes: int | None = None
    code: int | None = None  # app-exit: the exit code; progress: the invocation (kernel-id lines); partial: percent
    pid: int | None = None
    error_kind: str | None = None  # for kind "error": permission no-executable no-gpu usage connect write other
    reading: str | None = None  # our one-line reading of an error


def read_error(text: str) -> tuple[str, str]:
    """(kind, our reading) of an ==ERROR== line's text."""
    for pattern, kind, reading in ERROR_READINGS:
        if pattern.search(text):
            return kind, reading
    return "other", "ncu reported an error (its message is above)"


def parse_line(line: str) -> Event:
    """Read one complete line of ncu's output (no state: see OutputParser for the lines after 'no kernels')."""
    line = line.rstrip("\r\n")
    m = _PROFILING_RE.match(line)
    if m:
        name, invocation = _kernel_name(m["name"])
        return Event(
            "progress",
            line,
            name=name,
            code=invocation,
            index=int(m["index"]) if m["index"] else None,
            i=int(m["i"]) if m["i"] else None,
            n=int(m["n"]) if m["n"] else None,
            passes=int(m["passes"]) if m["passes"] else None,
        )
    m = _CONNECTED_RE.match(line)
    if m:
        return Event("connected", line, pid=int(m["pid"]), name=m["exe"])
    m = _DISCONNECTED_RE.match(line)
    if m:
        return Event("disconnected", line, pid=int(m["pid"]))
    m = _REPORT_RE.match(line)
    if m:
        return Event("report", line, name=m["path"])
    m = _TAG_RE.match(line)
    if m:
        tag, text = m["tag"], m["text"]
        if tag == "ERROR":
            rc = _APP_RC_RE.search(text)
            if rc:
                return Event("app-exit", line, code=int(rc["code"]))
            kind, reading = read_error(text)
            return Event("error", line, error_kind=kind, reading=reading)
        if tag == "WARNING":
            if "No kernels were profiled" in text:
                return Event("no-kernels", line)
            return Event("warning", line)
        return Event("info", line)
    return Event("output", line)


def parse_partial(buffer: str) -> Event | None:
    """An unfinished progress line (ncu prints `0%....50%....100%` as the replay passes go by)."""
    m = re.match(
        r'^==PROF== Profiling "(?P<name>.*)"(?: - (?P<index>\d+)(?: \((?P<i>\d+)/(?P<n>\d+)\))?)?:'
        r"(?P<p>[ 0-9%.]*)$",
        buffer,
    )
    if not m:
        return None
    pct = re.findall(r"(\d+)%", m["p"])
    return Event(
        "progress-partial",
        buffer,
        name=_kernel_name(m["name"])[0],
        index=int(m["index"]) if m["index"] else None,
        i=int(m["i"]) if m["i"] else None,
        n=int(m["n"]) if m["n"] else None,
        code=int(pct[-1]) if pct else 0,
    )


class OutputParser:
    """Feeds on ncu's output line by line; keeps what the run needs to know at the end."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.profiled = 0
        self.errors: list[Event] = []
        self.warnings: list[str] = []
        self.no_kernels = False
        self.available: list[str] = []  # "Available Kernels" listed after "No kernels were profiled"
        self.app_exit: int | None = None
        self.report: str | None = None
        self.pids: list[int] = []
        self._in_available = False

    def feed(self, line: str) -> Event:
        ev = parse_line(line)
        if self._in_available:
            m = re.match(r"^\s*\d+\.\s+(.*\S)\s*$", ev.text)
            if ev.kind == "output" and m:
                self.available.append(m.group(1))
                ev = Event("available", ev.text, name=m.group(1))
            elif ev.kind == "output" and ev.text.strip() in ("Available Kernels:", ""):
                ev = Event("available", ev.text)
            else:
                self._in_available = False
        elif ev.kind == "output" and self.no_kernels and ev.text.strip() == "Available Kernels:":
            self._in_available = True
            ev = Event("available", ev.text)
        if ev.kind == "progress":
            self.profiled += 1
        elif ev.kind == "error":
            self.errors.append(ev)
        elif ev.kind == "warning":
            self.warnings.append(ev.text)
        elif ev.kind == "no-kernels":
            self.no_kernels = True
        elif ev.kind == "app-exit":
            self.app_exit = ev.code
        elif ev.kind == "report":
            self.report = ev.name
        elif ev.kind == "connected" and ev.pid is not None:
            self.pids.append(ev.pid)
        self.events.append(ev)
        return ev

    @property
    def permission_denied(self) -> bool:
        return any(e.error_kind == "permission" for e in self.errors)


# An ncu tag inside a line: ncu's line written after text the program left without a line end
_TAG_INSIDE_RE = re.compile(r"(?<=.)(?===(?:PROF|ERROR|WARNING|INFO)==)")


def _split(line: str) -> list[str]:
    """One line of the merged output -> the lines it holds: what a terminal is left showing of a line redrawn with
    carriage returns (its last redraw), then cut before each ncu tag that does not start it."""
    return _TAG_INSIDE_RE.split(line.rstrip("\r").rsplit("\r", 1)[-1])


class LineSplitter:
    """Bytes from a pipe -> complete lines, plus the unfinished tail (for in-line progress).

    The program and ncu write to the same pipe. A line the program redraws with carriage returns (its own progress
    bar: tqdm writes `\r 10%|#   |` again and again, with no line end until it is done) comes out once, as a
    terminal would end up showing it, not as one line per redraw; and an ncu line that lands after such an open
    line (`\r 10%|#   |==PROF== Profiling ...`) is a line of its own, so that it is still read as ncu's."""

    def __init__(self) -> None:
        self._buf = ""

    def feed(self, data: str) -> list[str]:
        self._buf = (self._buf + data).replace("\r\n", "\n")
        *lines, self._buf = self._buf.split("\n")
        return [part for line in lines for part in _split(line)]

    @property
    def partial(self) -> str:
        return _split(self._buf)[-1]

    def flush(self) -> list[str]:
        rest, self._buf = self._buf, ""
        return [part for part in _split(rest) if part]


# Lines of ncu that are noise for a user of ncuadvisor (shown with --verbose only).
QUIET_WARNINGS = (
    "Running with unmodified GPU clocks",
    "Unable to access the following",
)
