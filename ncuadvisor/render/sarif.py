"""SARIF 2.1.0 renderer: the findings of a result as code-scanning alerts (GitHub code scanning, GitLab, IDEs).

What goes in
    One SARIF result per kernel finding that has a source location (`finding["source"]`: file and line, as ncu
    attributed the instructions with `-lineinfo` and `--import-source yes`):

    - `ruleId` is the rule code (MEM001 ...); `tool.driver.rules` holds each rule used, with its help text: the rule's
      docstring sections (`ncuadvisor rules CODE`) when the rules are passed in (`rules=`, see below), else the
      finding's own title and speedup model.
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
      `-lineinfo`, or a library's) has its findings left out (the HTML, markdown and JSON still show them).

Paths
    A path under the source root is written relative to it (`uriBaseId` `%SRCROOT%`, with the root itself in
    `run.originalUriBaseIds`), which is what code scanning needs to place the alert on the file. The source root is
    `source_root` when given (`--source-root`), else the git top level of the current directory
    (`git rev-parse --show-toplevel`), else the current directory. An absolute path outside the root stays absolute
    as a `file://` URI; a relative path is taken as relative to the root.

Rules without the engine
    Renderers never import the rule engine (tests/test_architecture.py), so the caller passes the rule objects it
    already discovered (`ncuadvisor.engine.discover()`), or a mapping code -> {"slug", "title", "category", "sections"}:
    `render_sarif(result, source_root, rules=discover(rules_dir))`. Without them each rule's help is its finding's
    title.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from ncuadvisor.result import findings_with_time, shape_tags
from ncuadvisor.units import finite, fmt_ns

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVEL_ERROR = 0.10  # share of program time the fix saves, at or above which the result is an error
LEVEL_WARNING = 0.02  # ... a warning; below it, a note
AT_ROOFLINE = "at-roofline"
DOC_ORDER = ("What it detects", "Why it costs time", "Example", "Use instead", "Speedup estimate", "False positives")
_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]")


# -- source root and paths -------------------------------------------------------------------------------------


def default_source_root(cwd: str | os.PathLike[str] | None = None) -> str:
    """The git top level of `cwd` (default: the current directory), else the directory itself."""
    here = os.fspath(cwd) if cwd is not None else os.getcwd()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True, timeout=10
        )
        top = out.stdout.strip()
        if out.returncode == 0 and top:
            return top
    except (OSError, subprocess.SubprocessError):
        pass
    return here


def _norm(path: str) -> str:
    text = path.replace("\\", "/")
    if _WINDOWS_ABS.match(path):
        return text[:2].upper() + posixpath.normpath(text[2:])
    return posixpath.normpath(text)


def _is_abs(path: str) -> bool:
    return path.startswith("/") or bool(_WINDOWS_ABS.match(path))


def _roots(source_root: str) -> list[str]:
    roots = [_norm(source_root)]
    try:
        real = _norm(os.path.realpath(source_root))
        if real not in roots:
            roots.append(real)
    except OSError:  # pragma: no cover
        pass
    return roots


def artifact_location(file: str, roots: list[str]) -> dict[str, str]:
    """The SARIF artifactLocation of a source path: relative to the root when under it, else an absolute file URI."""
    path = _norm(file)
    if not _is_abs(path):
        rel = path[2:] if path.startswith("./") else path
        return {"uri": quote(rel, safe="/"), "uriBaseId": SRCROOT}
    for root in roots:
        prefix = root.rstrip("/") + "/"
        if path.startswith(prefix) and len(path) > len(prefix):
            return {"uri": quote(path[len(prefix) :], safe="/"), "uriBaseId": SRCROOT}
    return {"uri": file_uri(path)}


def file_uri(path: str) -> str:
    """An absolute path as a file URI: /a b/c.cu -> file:///a%20b/c.cu, C:/x/y.cu -> file:///C:/x/y.cu."""
    path = path.replace("\\", "/")
    if _WINDOWS_ABS.match(path):
        return "file:///" + path[:2] + quote(path[2:], safe="/")
    return "file://" + quote(path, safe="/")


def _root_uri(root: str) -> str:
    return file_uri(_norm(root).rstrip("/") + "/")


# -- rules -----------------------------------------------------------------------------------------------------


def _rule_docs(rules: Iterable[Any] | Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """code -> {"slug", "title", "category", "sections"} from rule objects (duck-typed) or a ready mapping."""
    if rules is None:
        return {}
    if isinstance(rules, Mapping):
        return {str(k): dict(v) for k, v in rules.items()}
    out: dict[str, dict[str, Any]] = {}
    for r in rules:
        code = getattr(r, "code", None)
        if not code:
            continue
        try:
            sections = dict(r.doc_sections())
        except Exception:  # a user rule with an odd docstring must not break the output
            sections = {}
        entry = {
            "slug": getattr(r, "slug", "") or "",
            "title": getattr(r, "title", "") or "",
            "category": getattr(r, "category", "") or "",
            "sections": sections,
        }
        for c in (code, *(getattr(r, "aliases", ()) or ())):
            out[str(c)] = entry
    return out


def _reflow(text: str) -> str:
    return "\n\n".join(" ".join(p.split()) for p in str(text).split("\n\n") if p.strip())


def _looks_like_code(text: str) -> bool:
    """Docstring 'Use instead' sections are code or prose; code keeps its lines (fenced in markdown)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return any(ln.endswith((";", "{", "}")) or ln.startswith(("//", "#", "@")) for ln in lines)


def _pascal(slug: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", slug) if p)


def _rule_descriptor(code: str, doc: dict[str, Any] | None, finding: dict[str, Any]) -> dict[str, Any]:
    doc = doc or {}
    sections: dict[str, str] = dict(doc.get("sections") or {})
    title = str(doc.get("title") or finding.get("title") or code)
    category = str(doc.get("category") or finding.get("category") or "")
    summary = _reflow(sections.get("summary") or title)
    text_parts, md_parts = [summary], [summary]
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
    if len(text_parts) == 1 and finding.get("speedup_model"):
        text_parts.append(f"Speedup estimate: {finding['speedup_model']}")
        md_parts.append(f"**Speedup estimate:** {finding['speedup_model']}")
    md_parts.append(f"`ncuadvisor rules {code}` explains this rule in full.")
    text_parts.append(f"`ncuadvisor rules {code}` explains this rule in full.")
    descriptor: dict[str, Any] = {
        "id": code,
        "shortDescription": {"text": title},
        "fullDescription": {"text": summary},
        "help": {"text": "\n\n".join(text_parts), "markdown": "\n\n".join(md_parts)},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["performance", "cuda"] + ([category] if category else []), "category": category},
    }
    if doc.get("slug"):
        descriptor["name"] = _pascal(str(doc["slug"]))
    return descriptor


# -- results ---------------------------------------------------------------------------------------------------


def level_for(program_fraction: float) -> str:
    if program_fraction >= LEVEL_ERROR:
        return "error"
    if program_fraction >= LEVEL_WARNING:
        return "warning"
    return "note"


_num = finite


def _located(source: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for s in source or []:
        line = _num(s.get("line"))
        if s.get("file") and line is not None and line >= 1:
            out.append(s)
    return out


def _in_root(s: dict[str, Any], roots: list[str]) -> bool:
    return artifact_location(str(s["file"]), roots).get("uriBaseId") == SRCROOT


def _physical(s: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": int(_num(s["line"]) or 1)}
    code = s.get("code")
    if code and str(code).strip():
        region["snippet"] = {"text": str(code)}
    return {"artifactLocation": artifact_location(str(s["file"]), roots), "region": region}


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def build_sarif(
    result: dict[str, Any],
    source_root: str | os.PathLike[str] | None = None,
    rules: Iterable[Any] | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The SARIF log (a dict) of a result dict."""
    root = os.fspath(source_root) if source_root is not None else default_source_root()
    roots = _roots(root)
    docs = _rule_docs(rules)
    rep = result.get("report") or {}
    gen = result.get("generator") or {}
    total = _num(rep.get("total_duration_ns"))
    if not total:
        total = sum(_num(k.get("duration_ns")) or 0.0 for k in result.get("kernels") or [])

    descriptors: list[dict[str, Any]] = []
    rule_index: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    tags = shape_tags(result)
    for k in result.get("kernels") or []:
        # one alert per rule and kernel: a variant (launches of another size) adds the problems the kernel's own
        # analysis did not name, over its own time
        pairs: list[tuple[dict[str, Any], float]] = []
        named: set[str] = set()
        for findings, ns, variant in findings_with_time(k):
            for f in findings:
                if f.get("category") != AT_ROOFLINE and f.get("rule") and (variant is None or f["rule"] not in named):
                    pairs.append((f, ns))
                    named.add(f["rule"])
        kernel_anchor = None
        for f, _ in pairs:
            located = _located(f.get("source") or [])
            if located:
                inside = [s for s in located if _in_root(s, roots)]
                kernel_anchor = (inside or located)[0]
                break
        anchor_text = "the kernel's first located line"
        if kernel_anchor is None and isinstance(k.get("source_anchor"), dict) and _located([k["source_anchor"]]):
            kernel_anchor, anchor_text = k["source_anchor"], "the kernel's entry (its first instruction's line)"
        name = str(k.get("name") or k.get("demangled") or "kernel")
        tag = tags.get(str(k.get("id")), "")  # one name, several launch shapes: each its own alert
        for f, duration in pairs:
            located = _located(f.get("source") or [])
            inferred = False
            if located:
                inside = [s for s in located if _in_root(s, roots)]
                primary = (inside or located)[0]
                related = [s for s in located if s is not primary]
            elif kernel_anchor is not None:
                primary, related, inferred = kernel_anchor, [], True
            else:
                continue
            code = str(f["rule"])
            if code not in rule_index:
                rule_index[code] = len(descriptors)
                descriptors.append(_rule_descriptor(code, docs.get(code), f))
            speedup = _num(f.get("estimated_speedup")) or 0.0
            saving = duration * speedup
            fraction = saving / total if total else 0.0
            text = f"{name}{f' ({tag})' if tag else ''}: {_one_line(f.get('title'))}."
            if f.get("fix"):
                text += f" Fix: {_one_line(f.get('fix'))}"
                if not text.endswith("."):
                    text += "."
            text += (
                f" Estimated saving: {speedup * 100:.0f}% of this kernel's time (~{fmt_ns(saving, seconds=False)}, "
                f"{fraction * 100:.1f}% of the program's GPU time)."
            )
            if inferred:
                text += f" (This finding has no source line of its own: shown at {anchor_text}.)"
            location: dict[str, Any] = {"physicalLocation": _physical(primary, roots)}
            logical = {"name": name, "kind": "function"}
            if k.get("demangled"):
                logical["fullyQualifiedName"] = str(k["demangled"])
            if k.get("mangled"):
                logical["decoratedName"] = str(k["mangled"])
            location["logicalLocations"] = [logical]
            entry: dict[str, Any] = {
                "ruleId": code,
                "ruleIndex": rule_index[code],
                "level": level_for(fraction),
                "message": {"text": text},
                "locations": [location],
            }
            if related:
                entry["relatedLocations"] = [
                    {
                        "id": i + 1,
                        "physicalLocation": _physical(s, roots),
                        "message": {"text": _related_text(s)},
                    }
                    for i, s in enumerate(related)
                ]
            entry["partialFingerprints"] = {
                "ncuadvisorFinding/v1": _fingerprint(
                    code,
                    k.get("demangled") or name,
                    location["physicalLocation"]["artifactLocation"]["uri"],
                    *([tag] if tag else []),
                )
            }
            entry["properties"] = {
                "kernel": name,
                "kernelDemangled": str(k.get("demangled") or name),
                "grid": k.get("grid"),
                "block": k.get("block"),
                "category": f.get("category"),
                "estimatedSpeedup": round(speedup, 4),
                "estimatedSavingNs": round(saving, 1),
                "programFraction": round(fraction, 4),
                "confidence": f.get("confidence"),
                "locationInferred": inferred,
            }
            results.append(entry)

    driver: dict[str, Any] = {"name": str(gen.get("name") or "ncuadvisor"), "rules": descriptors}
    if gen.get("version"):
        driver["version"] = str(gen["version"])
        driver["semanticVersion"] = str(gen["version"])
    dev = rep.get("device") or {}
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SRCROOT: {"uri": _root_uri(root)}},
        "results": results,
        "columnKind": "unicodeCodePoints",
        "properties": {
            "report": rep.get("name"),
            "ncuVersion": rep.get("ncu_version"),
            "device": dev.get("name") if isinstance(dev, dict) else dev,
            "totalDurationNs": total,
            "levels": f"error: saves >= {LEVEL_ERROR:.0%} of program time; warning: >= {LEVEL_WARNING:.0%}; else note",
        },
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _related_text(s: dict[str, Any]) -> str:
    parts = []
    if s.get("sass"):
        parts.append(f"SASS {_one_line(s['sass'])}")
    share = _num(s.get("share"))
    if share is not None:
        metric = s.get("metric") or "the metric"
        parts.append(f"{share * 100:.0f}% of {metric}")
    return "; ".join(parts) or "also involved"


def render_sarif(
    result: dict[str, Any],
    source_root: str | os.PathLike[str] | None = None,
    rules: Iterable[Any] | Mapping[str, Any] | None = None,
) -> str:
    """The SARIF 2.1.0 log of a result, as JSON text (see the module docstring for what goes in)."""
    return json.dumps(build_sarif(result, source_root, rules), indent=2, ensure_ascii=False) + "\n"


def relative_to_root(path: str, source_root: str) -> str:
    """What a source path becomes in the SARIF (for tests and docs)."""
    return artifact_location(path, _roots(source_root))["uri"]


__all__ = ["render_sarif", "build_sarif", "default_source_root", "level_for", "relative_to_root"]
