"""`ncuadvisor mcp`: a Model Context Protocol server over stdio (the official Python SDK, the optional extra
`ncuadvisor[mcp]`), so that a coding agent can ask for advice in its write-profile-change loop.

Tools: `report` (a report -> its digest), `kernel` (a report and a kernel name -> the kernel's digest as JSON),
`explain_rule` (a rule code -> the rule's page), `diff` (two reports -> the verdict, the changes per kernel, the
findings resolved and new) and `profile` (a script and its arguments -> the two-phase profile's digest, where a GPU
and ncu are present). Every path is resolved (symlinks followed) and must lie in one of the `--root` folders (default
the working directory): the server reads and writes nothing outside them. A report that cannot be read, a kernel
that is not there, a path outside the roots: each is a tool error of one line, and the server keeps serving.
docs/agents.md says how to register it with agent clients.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any

import typer

from ncuadvisor.errors import AdvisorError, InputError

CACHED_RESULTS = 4  # analysed reports kept in memory (by path, size and modification time): `kernel` after `report`
PROFILE_TIMEOUT_S = 3600  # the longest a `profile` call may run
PROFILE_FOLDER = ".ncuadvisor-mcp"  # where `profile` writes its results, inside the script's root
INSTRUCTIONS = (
    "ncuadvisor turns Nsight Compute (ncu) reports into roofline-grounded, ranked advice. Start with `report` on a "
    ".ncu-rep file: it gives where to start (kernel, mechanism, the change to make, the saving, the source line) and "
    "each top kernel's bound, limiter, headroom and findings. Ask `kernel` for one kernel in full, `explain_rule` for "
    "a rule code, `diff` to check a change (before, after), and `profile` to profile a script when a GPU is present."
)


class Roots:
    """The folders the server may read and write in, resolved once."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = [f.resolve() for f in folders]

    def check(self, path: str, what: str = "path") -> Path:
        """`path` resolved (relative to the first root, symlinks followed); InputError when it is outside every
        root or does not exist."""
        raw = Path(path).expanduser()
        resolved = (raw if raw.is_absolute() else self.folders[0] / raw).resolve()
        if not any(resolved == f or resolved.is_relative_to(f) for f in self.folders):
            roots = ", ".join(str(f) for f in self.folders)
            raise InputError(f"{path}: outside the folders this server may read ({roots}); start it with --root")
        if not resolved.exists():
            raise InputError(f"{path}: no such file")
        return resolved


class Results:
    """The analysed reports, the latest CACHED_RESULTS of them, keyed by path, size and modification time."""

    def __init__(self) -> None:
        self.cache: OrderedDict[tuple[str, int, int], Any] = OrderedDict()

    def get(self, path: Path) -> Any:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self.cache:
            self.cache[key] = _analysed(path)
            while len(self.cache) > CACHED_RESULTS:
                self.cache.popitem(last=False)
        self.cache.move_to_end(key)
        return self.cache[key]


def _analysed(path: Path) -> Any:
    """The typed result of a report, analysed by `ncuadvisor report` in a child process and read back as a saved
    result: NVIDIA's ncu_report keeps every report it loaded until its process ends (about 200 MB for a PyTorch
    report), so the long-lived server never opens one itself. A saved result (.json) is read here."""
    import tempfile

    from ncuadvisor.api import result_record

    if path.suffix.lower() == ".json":
        return result_record(path)
    with tempfile.TemporaryDirectory(prefix="ncuadvisor-mcp-") as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.run(
            [sys.executable, "-m", "ncuadvisor", "report", str(path), "--format", "json", "-o", str(out)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
        )
        if not out.exists():
            lines = [x for x in proc.stderr.splitlines() if x.strip()]
            raise InputError(lines[-1].removeprefix("ncuadvisor: error: ") if lines else f"{path}: not analysed")
        return result_record(out)


def _diff_summary(d: Any) -> dict[str, Any]:
    """What an agent needs of a diff: the verdict, the total, each kernel's change, its findings resolved/new and
    the counter checks of the findings' predictions."""
    data = d.to_dict()
    kernels = []
    for k in data["kernels"]:
        f = k.get("findings") or {}
        kernels.append(
            {
                "kernel": k.get("name"),
                "status": k.get("status"),
                "before_ns": (k.get("before") or {}).get("duration_ns"),
                "after_ns": (k.get("after") or {}).get("duration_ns"),
                "change": k.get("change"),
                "resolved": [x.get("rule") for x in f.get("resolved", [])],
                "new": [x.get("rule") for x in f.get("new", [])],
                "counter_checks": [c["text"] for c in k.get("counter_checks") or []],
            }
        )
    return {
        "verdict": data["verdict"],
        "summary": data["summary"],
        "total": data["total"],
        "kernels": kernels,
        "program_counter_checks": [c["text"] for c in data.get("program_counter_checks") or []],
        "warnings": data["warnings"],
    }


def _guarded(fn: Any) -> Any:
    """A tool whose every failure is a tool error of one line (the server keeps serving)."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)  # the SDK reads the tool's name, description and parameters through it
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except AdvisorError as exc:
            raise ToolError(f"{exc.label}: {exc}") from exc
        except (OSError, ValueError, KeyError) as exc:  # anything else a hostile file may raise while read
            raise ToolError(f"error: {type(exc).__name__}: {exc}") from exc

    return call


def _rule_page(code: str) -> str:
    """A rule's help text (by code, alias or slug) and its documentation page, as `ncuadvisor rules CODE` prints it."""
    from ncuadvisor.rulekit.config import configured_rules, resolve_config
    from ncuadvisor.rulekit.docs import rule_help

    loaded = configured_rules(resolve_config(None, None, None, None), filter_rules=False)
    match = [r for r in loaded if code.upper() in (r.code, *r.aliases) or code == r.slug]
    if not match:
        raise InputError(f"no rule {code!r}; the rules: {', '.join(sorted(r.code for r in loaded))}")
    from ncuadvisor.cli.rules import docs_page

    page = docs_page(match[0])  # as `ncuadvisor rules CODE` prints it
    return str(rule_help(match[0])) + (f"\nDocumentation: {page}" if page else "")


def _profiled(target: Path, args: list[str]) -> Path:
    """`ncuadvisor profile` of a script (or an executable) in a child process: the result's JSON, written in
    PROFILE_FOLDER beside it."""
    from ncuadvisor.profile.ncu import find_ncu

    find_ncu()  # NcuNotFound: the hint says where to get it
    if shutil.which("nvidia-smi") is None:
        raise InputError("no NVIDIA GPU here (nvidia-smi is not on the PATH): profile on a machine with one")
    folder = target.parent / PROFILE_FOLDER
    folder.mkdir(exist_ok=True)
    out = folder / f"{target.stem}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    cmd = [sys.executable, "-m", "ncuadvisor", "profile", "-o", str(out), "-q", "--", str(target), *args]
    p = subprocess.run(cmd, cwd=target.parent, capture_output=True, text=True, timeout=PROFILE_TIMEOUT_S)
    if p.returncode != 0 or not out.exists():
        last = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise InputError(f"the profile failed (exit {p.returncode}): {last}")
    return out


def build_server(roots: Roots) -> Any:
    """The MCP server with its five tools (the SDK's MCPServer)."""
    from mcp.server.mcpserver import MCPServer

    from ncuadvisor.version import __version__

    server = MCPServer(name="ncuadvisor", version=__version__, instructions=INSTRUCTIONS)
    results = Results()

    @server.tool()
    @_guarded
    def report(path: str, top: int = 10) -> str:
        """The digest of an Nsight Compute report (.ncu-rep, .ncu-repz, .xz) or a saved result (.json): where to
        start (kernel, share, mechanism, the change, the saving, the source line) and the top kernels' bound,
        limiter, headroom and findings with evidence, in at most 6,000 characters."""
        from ncuadvisor.render.digest import render_digest

        return render_digest(results.get(roots.check(path)), top=max(0, top))

    @server.tool()
    @_guarded
    def kernel(path: str, name: str) -> str:
        """One kernel of a report (by id such as k3, name, demangled name, or a part only it has) in full, as
        digest JSON: bound, limiter, headroom, every finding with evidence, the change and the source line."""
        from ncuadvisor.render.digest import digest_data, digest_json
        from ncuadvisor.result.lookup import find_kernel

        result = results.get(roots.check(path))
        return digest_json(digest_data(result, kernel=find_kernel(result, name)))

    @server.tool()
    @_guarded
    def explain_rule(code: str) -> str:
        """A rule's page (e.g. MEM001): what it detects, why it costs time, an example, the fix, how the saving is
        estimated and its known false positives."""
        return _rule_page(code)

    @server.tool()
    @_guarded
    def diff(before: str, after: str) -> str:
        """Compare two reports (or saved results) of the same program: the verdict, the total time, and per kernel
        the change and the findings resolved or new, as JSON."""
        from ncuadvisor.api import Diff
        from ncuadvisor.comparison import compare

        d = Diff(compare(results.get(roots.check(before)), results.get(roots.check(after))))
        return json.dumps(_diff_summary(d), ensure_ascii=False)

    @server.tool()
    @_guarded
    def profile(script: str, args: list[str] | None = None, top: int = 10) -> str:
        """Profile a Python script (or an executable) with ncu in two phases (time every kernel, then the top ones
        in depth) and return the digest. Needs an NVIDIA GPU and ncu on this machine; the result is written in
        .ncuadvisor-mcp/ beside the script."""
        from ncuadvisor.render.digest import render_digest

        out = _profiled(roots.check(script, "script"), args or [])
        return render_digest(results.get(out), top=max(0, top)) + f"saved: {out}\n"

    return server


def mcp(
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="A folder the server may read reports from (repeatable; default: the working directory).",
        ),
    ] = None,
) -> None:
    """Serve the Model Context Protocol over stdio for coding agents (tools: report, kernel, explain_rule, diff,
    profile); needs the extra: pip install 'ncuadvisor\\[mcp]'."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError as exc:
        raise InputError(
            "`ncuadvisor mcp` needs the MCP SDK, an optional extra: pip install 'ncuadvisor[mcp]'"
        ) from exc
    for folder in root or []:
        if not folder.is_dir():
            raise InputError(f"--root {folder}: not a folder")
    roots = Roots(root or [Path(os.getcwd())])
    build_server(roots).run("stdio")
