"""Reading ncu's output: the lines of the pipe ncu and the program share, each read as an `Event`.

Pure functions and small parsers, tested without a GPU on the real outputs kept in `fixtures/ncu_outputs/`:
`profile.runner` feeds every line to `OutputParser` and the unfinished last line to `parse_partial`.

- Progress: `==PROF== Profiling "name" - 3: 0%....50%....100% - 36 passes` (with ` (4/20)` after the index when
  a launch count is known); under `--kernel-id` or per-launch-config there is no index, and with an invocation
  number the name is the kernel id (`"1:7:<demangled name>:1"`).
- Errors start with `==ERROR==`, warnings with `==WARNING==`; the target's exit code comes back as
  `==ERROR== The application returned an error code (3).` and as ncu's own exit code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
        if ev.kind != "output":  # ncu's own lines; text it does not tag is not kept (it can be long)
            self.events.append(ev)
        return ev

    @property
    def permission_denied(self) -> bool:
        return any(e.error_kind == "permission" for e in self.errors)


# Where an ncu tag starts (group 1: the tag): ncu's lines start with one, also when they land after text the program
# left without a line end.
_TAG_AT_RE = re.compile(r"(?=(==(?:PROF|ERROR|WARNING|INFO)==))")
_TAG_MAX = len("==WARNING==")
# An unfinished line longer than this is the program's output, not an ncu progress line (the length of its kernel
# name and a few dozen characters): it is not read for progress, which keeps a long line without an end cheap.
MAX_PROGRESS_CHARS = 1 << 16
_PROGRESS_PREFIX = "==PROF== Profiling"


class LineSplitter:
    """Text from a pipe -> complete lines, plus the unfinished tail (for in-line progress).

    The program and ncu write to the same pipe. A line the program redraws with carriage returns (its own progress
    bar: tqdm writes `\r 10%|#   |` again and again, with no line end until it is done) comes out once, as a
    terminal would end up showing it (its last redraw that is not empty), not as one line per redraw; and an ncu line
    that lands after such an open line (`\r 10%|#   |==PROF== Profiling ...`) is a line of its own, so that it is
    still read as ncu's.

    The work is linear in the text fed, however long a line runs without a line end (a program may write megabytes
    on one line): the current redraw is kept as its pieces (cut before each ncu tag inside it) and the chunks of its
    last piece, which are joined only when a tag, a redraw or the line ends it.
    """

    def __init__(self) -> None:
        self._last: list[str] = []  # the pieces of the line's last redraw that was not empty
        self._reset_redraw()

    def _reset_redraw(self) -> None:
        self._parts: list[str] = []  # finished pieces of the current redraw
        self._piece: list[str] = []  # chunks of its last piece
        self._piece_len = 0
        self._head = ""  # the first characters of the last piece: enough to tell an ncu progress line
        self._tail = ""  # the last characters of the redraw: a tag may straddle two chunks

    def _add(self, text: str) -> None:
        """Append text (no line end, no carriage return) to the current redraw, cut before each ncu tag in it."""
        if not text:
            return
        window = self._tail + text
        start = self._piece_len - len(self._tail)  # the window's offset in the last piece
        cuts = [
            start + m.start()
            for m in _TAG_AT_RE.finditer(window)
            if m.start() + len(m.group(1)) > len(self._tail) and start + m.start() > 0  # new, and not the first
        ]
        if cuts:
            whole = "".join(self._piece) + text  # joined once: what lies before the last cut is finished
            bounds = [0, *cuts]
            self._parts += [whole[a:b] for a, b in zip(bounds, bounds[1:])]
            rest = whole[cuts[-1] :]
            self._piece, self._piece_len, self._head = [rest], len(rest), rest[: len(_PROGRESS_PREFIX)]
        else:
            self._piece.append(text)
            self._piece_len += len(text)
            if len(self._head) < len(_PROGRESS_PREFIX):
                self._head = (self._head + text)[: len(_PROGRESS_PREFIX)]
        self._tail = window[-(_TAG_MAX - 1) :]

    def _redraw(self) -> list[str] | None:
        """The current redraw's pieces, or None while it is empty."""
        return [*self._parts, "".join(self._piece)] if self._piece_len else None

    def _carriage_return(self) -> None:
        self._last = self._redraw() or self._last
        self._reset_redraw()

    def _end_line(self) -> list[str]:
        line = self._redraw() or self._last or [""]
        self._reset_redraw()
        self._last = []
        return line

    def feed(self, data: str) -> list[str]:
        lines: list[str] = []
        for n, chunk in enumerate(data.split("\n")):
            if n:
                lines += self._end_line()
            first, *redraws = chunk.split("\r")
            self._add(first)
            for text in redraws:
                self._carriage_return()
                self._add(text)
        return lines

    @property
    def partial(self) -> str:
        """The unfinished line as a terminal shows it, from its last ncu tag on."""
        if self._piece_len:
            return "".join(self._piece)
        return self._last[-1] if self._last else ""

    def progress(self) -> str | None:
        """`partial` when it may be an unfinished ncu progress line (see `parse_partial`), else None: cheap however
        long the unfinished line."""
        if self._piece_len:
            if not self._head.startswith(_PROGRESS_PREFIX) or self._piece_len > MAX_PROGRESS_CHARS:
                return None
            return "".join(self._piece)
        last = self._last[-1] if self._last else ""
        return last if last.startswith(_PROGRESS_PREFIX) and len(last) <= MAX_PROGRESS_CHARS else None

    def flush(self) -> list[str]:
        return [part for part in self._end_line() if part]


# Lines of ncu that are noise for a user of ncuadvisor (shown with --verbose only).
QUIET_WARNINGS = (
    "Running with unmodified GPU clocks",
    "Unable to access the following",
)
