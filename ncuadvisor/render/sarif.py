"""SARIF 2.1.0 renderer: the findings of a result as code-scanning alerts (GitHub code scanning, GitLab, IDEs).

What goes in
    One SARIF result per kernel finding that has a source location (`finding["source"]`: file and line, as ncu
    attributed the instructions with `-lineinfo` and `--import-source yes`):

    - `ruleId` is the rule code (MEM001 ...); `tool.driver.rules` holds each rule used, with its help text: the rule's
      docstring sections (`ncuadvisor rules CODE`) when the rules' documentation is passed in (`rules`, below), else
      the finding's own title and speedup model.
    - the primary location is the finding's first source line (its largest share) inside the source root; a finding
      whose lines are all outside the root (CUDA headers, Triton's generated files in /tmp) keeps its first line. The
      finding's other lines are `relatedLocations`.
    - `level` comes from the finding's value, the time it should save as a share of the whole program's GPU time
      (kernel time × estimated_speedup ÷ program time): >= 10% `error`, >= 2% `warning`, below that `note`
      (LEVEL_ERROR, LEVEL_WARNING).
    - `message.text`: kernel, title, the fix and the estimate; `properties`: estimatedSpeedup (fraction of the kernel's
      time), estimatedSavingNs, programFraction, kernel, category, confidence.
    - `partialFingerprints["ncuadvisorFinding/v1"]`: a hash of rule, kernel and file (not the line), so an alert
      survives edits that move the line; for a kernel whose name several launch shapes share (a model's gemm), the
      shape too (`grid (8, 8, 1)`), so that each shape's finding is its own alert instead of being merged into one.

What is left out
    - `at-roofline` verdicts (a kernel near its bound: nothing to fix).
    - program-level findings (launch overhead, fusion): they have no single source line.
    - a kernel finding without a location of its own (a launch configuration, an occupancy limit) is attached to
      the kernel's first located line, the primary location of the kernel's first finding (in ranking order) that has
      one, else to the kernel's entry (`source_anchor`: the line of its first instruction), with
      `locationInferred: true` and a note in the message; a kernel with no source lines at all (built without
      `-lineinfo`, or a library's) has its findings left out (the HTML, markdown and JSON still show them), and a
      tool notification says how many and on which kernels, so that a log with no results is not silent.
    - a result whose file lies outside the source root keeps an absolute `file://` URI, and a notification says how
      many and that `--source-root` places them.

Everything comes in as data: the renderer runs no command and reads no file
    - `source_root`: the folder paths are relative to (`--source-root`, else the git top level: the caller's
      `ncuadvisor.gitinfo.default_source_root()`), written as `run.originalUriBaseIds["%SRCROOT%"]`.
    - `paths`: each source file of the result (`source_files(result)`) that lies under the root -> its path relative
      to the root (`repository_paths(files, roots)`, where `roots` are the root and the real path it resolves to:
      `ncuadvisor.gitinfo.source_root_forms()`). Those are written relative to `%SRCROOT%`, which is what code
      scanning needs to place an alert on a file; an absolute path outside the root stays absolute, as a `file://`
      URI; a relative path is taken as relative to the root.
    - `rules`: the rules' documentation, one mapping per rule: {"code", "aliases", "slug", "title", "category",
      "sections" (docstring section name -> text)} (`ncuadvisor.rulekit.docs.rule_docs(discover())`). Without it each
      rule's help is its finding's title.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ncuadvisor.render.mdtext import md
from ncuadvisor.render.view import Finding, Kernel, SourceLine, report_view
from ncuadvisor.result.types import Result as ResultRecord
from ncuadvisor.units import fmt_ns, fmt_pct, number

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVEL_ERROR = 0.10  # share of program time the fix saves, at or above which the result is an error
LEVEL_WARNING = 0.02  # ... a warning; below it, a note
DOC_ORDER = ("What it detects", "Why it costs time", "Example", "Use instead", "Speedup estimate", "False positives")
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]")


# -- paths -----------------------------------------------------------------------------------------------------


def _norm(path: str) -> str:
    text = path.replace("\\", "/")
    if _WINDOWS_ABS.match(path):
        return text[:2].upper() + posixpath.normpath(text[2:])
    return posixpath.normpath(text)


def _is_abs(path: str) -> bool:
    return path.startswith("/") or bool(_WINDOWS_ABS.match(path))


def _located(source: Iterable[SourceLine]) -> list[SourceLine]:
    """The lines that name a file and a line number (1 or more)."""
    out = []
    for s in source:
        line = number(s.line)
        if s.file and line is not None and line >= 1:
            out.append(s)
    return out


def _python_source(k: Kernel) -> SourceLine | None:
    """The Python line that launched a kernel (`profile --python-lines`) as a source line, else None."""
    pl = k.python_line
    if pl is None or number(pl.line) is None:
        return None
    return SourceLine(file=pl.file, line=pl.line, code=pl.code, sass=None, share=None, metric=None)


def _launched(k: Kernel) -> str:
    """How a kernel's Python line led to it: it launched it, or replayed the CUDA graph it ran in."""
    pl = k.python_line
    if pl is None or pl.graph_replay is None:
        return "launched the kernel"
    if pl.replayed_here:
        return "replayed the CUDA graph the kernel ran in"
    return f"launched the kernel (replayed from a CUDA graph at {pl.replayed_at})"


def source_files(result: ResultRecord) -> list[str]:
    """Every source file the SARIF of a result may name: its findings' lines and its kernels' entries."""
    files: dict[str, None] = {}
    for k in report_view(result).kernels:
        for findings, _, _ in k.finding_groups:
            for f in findings:
                files.update((str(s.file), None) for s in _located(f.source))
        files.update((str(s.file), None) for s in _located([k.source_anchor]))
        py = _python_source(k)
        if py is not None:
            files[str(py.file)] = None
    return list(files)


def repository_paths(files: Iterable[str], roots: Sequence[str]) -> dict[str, str]:
    """file -> its path relative to the first of `roots` it lies under (a relative path: itself, as it is relative to
    the root already); files outside every root are left out. `roots`: the source root as given and the real path
    it resolves to (the caller looks that up)."""
    prefixes = [_norm(r).rstrip("/") + "/" for r in roots]
    out: dict[str, str] = {}
    for file in files:
        path = _norm(file)
        if not _is_abs(path):
            out[file] = path[2:] if path.startswith("./") else path
            continue
        for prefix in prefixes:
            if path.startswith(prefix) and len(path) > len(prefix):
                out[file] = path[len(prefix) :]
                break
    return out


def file_uri(path: str) -> str:
    """An absolute path as a file URI: /a b/c.cu -> file:///a%20b/c.cu, C:/x/y.cu -> file:///C:/x/y.cu."""
    path = path.replace("\\", "/")
    if _WINDOWS_ABS.match(path):
        return "file:///" + path[:2] + quote(path[2:], safe="/")
    return "file://" + quote(path, safe="/")


def artifact_location(file: str, paths: Mapping[str, str]) -> dict[str, str]:
    """The SARIF artifactLocation of a source path: relative to the root when under it, else an absolute file URI."""
    rel = paths.get(file)
    if rel is None and not _is_abs(_norm(file)):
        rel = repository_paths([file], [])[file]
    if rel is not None:
        return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}
    return {"uri": file_uri(_norm(file))}


# -- rules -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleDoc:
    """A rule's documentation, its fields filled ("" and no sections for what the caller's mapping lacks)."""

    slug: str = ""
    title: str = ""
    category: str = ""
    sections: Mapping[str, str] = field(default_factory=dict)
    # the rule's whole help ({"text", "markdown"}: its fix in every kernel language), when the caller has it
    help: Mapping[str, str] = field(default_factory=dict)


def _rule_index(rules: Iterable[Mapping[str, Any]]) -> dict[str, RuleDoc]:
    """code (and each old code) -> the rule's documentation."""
    out: dict[str, RuleDoc] = {}
    for raw in rules:
        sections = raw.get("sections")
        doc = RuleDoc(
            slug=str(raw.get("slug") or ""),
            title=str(raw.get("title") or ""),
            category=str(raw.get("category") or ""),
            sections={str(k): str(v) for k, v in sections.items()} if isinstance(sections, Mapping) else {},
            help={str(k): str(v) for k, v in raw["help"].items()} if isinstance(raw.get("help"), Mapping) else {},
        )
        aliases = raw.get("aliases")
        for code in (raw.get("code"), *(aliases if isinstance(aliases, (list, tuple)) else ())):
            if code:
                out[str(code)] = doc
    return out


def _reflow(text: str) -> str:
    return "\n\n".join(" ".join(p.split()) for p in str(text).split("\n\n") if p.strip())


def _looks_like_code(text: str) -> bool:
    """Docstring 'Use instead' sections are code or prose; code keeps its lines (fenced in markdown)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return any(ln.endswith((";", "{", "}")) or ln.startswith(("//", "#", "@")) for ln in lines)


def _pascal(slug: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", slug) if p)


def _rule_descriptor(code: str, doc: RuleDoc, finding: Finding) -> dict[str, Any]:
    sections = doc.sections
    title = str(doc.title or finding.title or code)
    category = str(doc.category or finding.category or "")
    summary = _reflow(sections.get("summary") or title)
    # without the rule's documentation the summary is the finding's title, untrusted text (a saved result): escaped
    text_parts, md_parts = [summary], [summary if sections.get("summary") else md(summary)]
    for name in DOC_ORDER:
        body = sections.get(name)
        if not body:
            continue
        if name == "Example" or (name == "Use instead" and _looks_like_code(body)):
            text_parts.append(f"{name}:\n{body}")
            fence = "```"
            while fence in body:
                fence += "`"
            md_parts.append(f"**{name}**\n\n{fence}\n{body}\n{fence}")
        else:
            text_parts.append(f"{name}: {_reflow(body)}")
            md_parts.append(f"**{name}:** {_reflow(body)}")
    if len(text_parts) == 1 and finding.speedup_model:
        text_parts.append(f"Speedup estimate: {finding.speedup_model}")
        md_parts.append(f"**Speedup estimate:** {md(finding.speedup_model)}")
    shown = str(code).replace("`", "'")  # a code from a saved result: a backtick would end the inline code
    md_parts.append(f"`ncuadvisor rules {shown}` explains this rule in full.")
    text_parts.append(f"`ncuadvisor rules {shown}` explains this rule in full.")
    descriptor: dict[str, Any] = {
        "id": code,
        "shortDescription": {"text": title},
        "fullDescription": {"text": summary},
        "help": dict(doc.help) or {"text": "\n\n".join(text_parts), "markdown": "\n\n".join(md_parts)},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["performance", "cuda"] + ([category] if category else []), "category": category},
    }
    if doc.slug:
        descriptor["name"] = _pascal(doc.slug)
    return descriptor


# -- results ---------------------------------------------------------------------------------------------------


def level_for(program_fraction: float) -> str:
    if program_fraction >= LEVEL_ERROR:
        return "error"
    if program_fraction >= LEVEL_WARNING:
        return "warning"
    return "note"


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def _related_text(s: SourceLine) -> str:
    parts = [s.via] if s.via else []
    if s.sass:
        parts.append(f"SASS {_one_line(s.sass)}")
    share = number(s.share)
    if share is not None:
        parts.append(f"{fmt_pct(share)} of {s.metric or 'the metric'}")
    return "; ".join(parts) or "also involved"


class _Log:
    """The run being written: its rule descriptors (each once, in order of first use) and results."""

    def __init__(
        self,
        paths: Mapping[str, str],
        docs: Mapping[str, RuleDoc],
        total: float,
        wall: Mapping[tuple[str, str], tuple[float, int]] | None = None,
    ) -> None:
        self.paths, self.docs, self.total = paths, docs, total
        # (kernel id, rule) -> (wall time its "where to start" entry saves, the kernels that entry fixes at once)
        self.wall = wall or {}
        self.descriptors: list[dict[str, Any]] = []
        self.rule_index: dict[str, int] = {}
        self.results: list[dict[str, Any]] = []
        self.left_out: dict[str, int] = {}  # kernel name -> its findings left out (no source line to show them at)
        self.outside: dict[str, int] = {}  # file outside the source root -> the results placed in it

    def in_root(self, s: SourceLine) -> bool:
        return artifact_location(str(s.file), self.paths).get("uriBaseId") == SRCROOT

    def primary(self, located: list[SourceLine]) -> SourceLine:
        """The first line inside the source root, else the first line."""
        return ([s for s in located if self.in_root(s)] or located)[0]

    def physical(self, s: SourceLine) -> dict[str, Any]:
        region: dict[str, Any] = {"startLine": int(number(s.line) or 1)}
        if s.code and str(s.code).strip():
            region["snippet"] = {"text": str(s.code)}
        return {"artifactLocation": artifact_location(str(s.file), self.paths), "region": region}

    def add_kernel(self, k: Kernel) -> None:
        # one alert per rule and kernel: a variant (launches of another size) adds the problems the kernel's own
        # analysis did not name, over its own time
        pairs: list[tuple[Finding, float]] = []
        named: set[str] = set()
        for findings, ns, variant in k.finding_groups:
            for f in findings:
                if not f.at_roofline and f.rule and (variant is None or f.rule not in named):
                    pairs.append((f, ns))
                    named.add(f.rule)
        anchor = None
        anchor_text = "the kernel's first located line"
        for f, _ in pairs:
            located = _located(f.source)
            if located:
                anchor = self.primary(located)
                break
        if anchor is None and _located([k.source_anchor]):
            anchor, anchor_text = k.source_anchor, "the kernel's entry (its first instruction's line)"
        py = _python_source(k)
        if (
            py is not None
        ):  # profile --python-lines: the user's line that launched the kernel, the kernel's lines related
            for f, duration in pairs:
                self.add_result(k, f, duration, py, _located(f.source), None, python=True)
            return
        for f, duration in pairs:
            located = _located(f.source)
            if located:
                self.add_result(k, f, duration, self.primary(located), located, None)
            elif anchor is not None:
                self.add_result(k, f, duration, anchor, [], anchor_text)
            else:
                name = str(k.label or k.shown_name or "kernel") + (f" · {k.shape_tag}" if k.shape_tag else "")
                self.left_out[name] = self.left_out.get(name, 0) + 1

    def add_result(
        self,
        k: Kernel,
        f: Finding,
        duration: float,
        primary: SourceLine,
        located: list[SourceLine],
        inferred_at: str | None,
        python: bool = False,
    ) -> None:
        """One alert at `primary`, the finding's other lines related; `inferred_at` says where a finding without a
        line of its own was placed."""
        name = str(k.shown_name or "kernel")
        tag = k.shape_tag  # one name, several launch shapes: each its own alert
        code = str(f.rule)
        if code not in self.rule_index:
            self.rule_index[code] = len(self.descriptors)
            self.descriptors.append(_rule_descriptor(code, self.docs.get(code, RuleDoc()), f))
        speedup = number(f.estimated_speedup) or 0.0
        saving = duration * speedup
        fraction = saving / self.total if self.total else 0.0
        text = f"{name}{f' · {tag}' if tag else ''}: {_one_line(f.title)}."
        if python:  # profile --python-lines
            text += f" Shown at the Python line that {_launched(k)}; the kernel's own lines are related."
        if f.fix:
            text += f" Fix: {_one_line(f.fix)}"
            if not text.endswith("."):
                text += "."
        text += (
            f" Estimated saving: {fmt_pct(speedup)} of this kernel's time (~{fmt_ns(saving, seconds=False)}, "
            f"{fmt_pct(fraction, 1)} of the program's GPU time)."
        )
        if inferred_at:
            text += f" (This finding has no source line of its own: shown at {inferred_at}.)"
        elif primary.via:
            text += f" (The line {primary.via}.)"
        location: dict[str, Any] = {"physicalLocation": self.physical(primary)}
        if not self.in_root(primary):
            self.outside[str(primary.file)] = self.outside.get(str(primary.file), 0) + 1
        logical = {"name": name, "kind": "function"}
        if k.demangled:
            logical["fullyQualifiedName"] = str(k.demangled)
        if k.mangled:
            logical["decoratedName"] = str(k.mangled)
        location["logicalLocations"] = [logical]
        entry: dict[str, Any] = {
            "ruleId": code,
            "ruleIndex": self.rule_index[code],
            "level": level_for(fraction),
            "message": {"text": text},
            "locations": [location],
        }
        related = [s for s in located if s is not primary]
        if related:
            entry["relatedLocations"] = [
                {"id": i + 1, "physicalLocation": self.physical(s), "message": {"text": _related_text(s)}}
                for i, s in enumerate(related)
            ]
        uri = location["physicalLocation"]["artifactLocation"]["uri"]
        entry["partialFingerprints"] = {
            "ncuadvisorFinding/v1": _fingerprint(code, k.demangled or name, uri, *([tag] if tag else []))
        }
        entry["properties"] = {
            "kernel": name,
            "kernelDemangled": str(k.demangled or name),
            "grid": k.grid,
            "block": k.block,
            "category": f.category,
            "estimatedSpeedup": round(speedup, 4),
            "estimatedSavingNs": round(saving, 1),
            "programFraction": round(fraction, 4),
            "confidence": f.confidence,
            "locationInferred": inferred_at is not None,
        }
        wall = self.wall.get((str(k.anchor), code))
        if wall is not None:  # a host timeline: the wall time this finding's entry saves, over its kernels
            entry["properties"]["estimatedWallSavingNs"] = round(wall[0], 1)
            entry["properties"]["wallSavingKernels"] = wall[1]
        self.results.append(entry)


def _notifications(log: _Log, source_root: str) -> list[dict[str, Any]]:
    """What the results do not show, said: the findings left out for want of a source line, and the results whose
    file lies outside the source root (an absolute URI, which code scanning cannot place in the repository)."""
    out: list[dict[str, Any]] = []
    if log.left_out:
        n = sum(log.left_out.values())
        names = list(log.left_out)
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        out.append(
            {
                "level": "warning" if not log.results else "note",
                "descriptor": {"id": "findings-without-source-line"},
                "message": {
                    "text": f"{n} finding{'s' * (n != 1)} on {len(names)} kernel{'s' * (len(names) != 1)} "
                    f"left out, with no source line to show {'them' if n != 1 else 'it'} at: {shown}. Build with "
                    "-lineinfo and profile with --import-source yes for lines; library kernels have none. The HTML, "
                    "markdown and JSON reports show every finding."
                },
            }
        )
    if log.outside:
        n = sum(log.outside.values())
        files = sorted(log.outside)
        out.append(
            {
                "level": "warning",
                "descriptor": {"id": "files-outside-source-root"},
                "message": {
                    "text": f"{n} result{'s' * (n != 1)} in {len(files)} file{'s' * (len(files) != 1)} outside the "
                    f"source root {source_root} (e.g. {files[0]}): written as absolute file URIs, which code "
                    "scanning cannot place in the repository. Give --source-root the folder the sources are under."
                },
            }
        )
    return out


def build_sarif(
    result: ResultRecord,
    source_root: str,
    paths: Mapping[str, str],
    rules: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The SARIF log (a dict) of a result (see the module docstring for the arguments)."""
    view = report_view(result)
    rep = view.report
    total = number(rep.total_duration_ns)
    if not total:
        total = sum(number(k.duration_ns) or 0.0 for k in view.kernels)
    wall = {
        (str(kid), a.rule): (float(a.estimated_wall_saving_ns), len(a.kernel_ids or [a.kernel_id]))
        for a in result.top_actions
        if a.estimated_wall_saving_ns is not None
        for kid in (a.kernel_ids or [str(a.kernel_id)])
    }
    log = _Log(paths, _rule_index(rules), total, wall)
    for k in view.kernels:
        log.add_kernel(k)

    gen = view.generator
    driver: dict[str, Any] = {"name": gen.name, "rules": log.descriptors}
    if gen.version:
        driver["version"] = driver["semanticVersion"] = gen.version
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SRCROOT: {"uri": file_uri(_norm(source_root).rstrip("/") + "/")}},
        "results": log.results,
        # the report's warnings (a partial report first: cut short or damaged), as the other formats show them
        "invocations": [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {"level": "warning" if str(w).startswith("partial") else "note", "message": {"text": str(w)}}
                    for w in rep.warnings
                ]
                + _notifications(log, source_root),
            }
        ],
        "columnKind": "unicodeCodePoints",
        "properties": {
            "report": rep.name,
            "ncuVersion": rep.ncu_version,
            "device": rep.device.name,
            "totalDurationNs": total,
            "levels": f"error: saves >= {fmt_pct(LEVEL_ERROR)} of program time; warning: >= {fmt_pct(LEVEL_WARNING)}; "
            "else note",
        },
    }
    if result.host_timeline is not None:  # the measured host timeline's facts, as the JSON has them
        run["properties"]["hostTimeline"] = result.host_timeline.to_dict()
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render_sarif(
    result: ResultRecord,
    source_root: str,
    paths: Mapping[str, str],
    rules: Iterable[Mapping[str, Any]] = (),
) -> str:
    """The SARIF 2.1.0 log of a result, as JSON text (see the module docstring for the arguments)."""
    return json.dumps(build_sarif(result, source_root, paths, rules), indent=2, ensure_ascii=False) + "\n"


def relative_to_root(path: str, source_root: str) -> str:
    """What a source path becomes in the SARIF under `source_root` (as given; for tests and docs)."""
    return artifact_location(path, repository_paths([path], [source_root]))["uri"]


__all__ = [
    "build_sarif",
    "level_for",
    "relative_to_root",
    "render_sarif",
    "repository_paths",
    "source_files",
]
