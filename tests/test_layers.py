"""The package's layer contract, read from the source with `ast`: no import cycle among ncuadvisor's modules (imports
inside functions included), and every module imports only from its own layer or the layers below it.

The layers, bottom to top: errors, units, metrics < reportfile < model < load < analysis < result < rules_api,
engine < pipeline < diff < render < profile < cli. Data flows load -> model, but load builds model's plain
dataclasses, so in import order model sits below load: load may import model, model never imports load. Likewise
the result's types are plain data that the rules emit (a rule's finding is the result's `FindingEntry`), so result
sits below the rules: the rules and the engine may import result, result never imports them. The
pipeline (analysis/pipeline.py) is the one place the stages are composed (load, analysis, rules, result), so it sits
above result although it lives in analysis/. Beyond the order: render never imports reportfile, load, analysis,
the pipeline or the rules (renderers format, they never compute), and nothing but cli imports cli.

Modules are named relative to the package ("render.html"); a module's layer is that of the longest prefix in LAYER
(a prefix matches a whole dotted part: "load" matches "load" and "load.workers", not "loader"). Module names that
predate the package folders (analyze, roofline, fastread, processes, commands_pr, ncu, ...) are in the table too.
A module missing from the table fails `test_every_module_has_a_layer`: place it when adding it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ncuadvisor"

ORDER = [
    "base",
    "reportfile",
    "model",
    "load",
    "analysis",
    "result",
    "rules",
    "pipeline",
    "diff",
    "render",
    "profile",
    "cli",
]

# module-name prefix -> layer
LAYER = {
    "__init__": "base",  # the package itself: __version__
    "errors": "base",
    "units": "base",
    "metrics": "base",
    "reportfile": "reportfile",
    "fastread": "reportfile",  # scalar rows straight from the report file
    "processes": "reportfile",  # the report file's process blocks (its rank watcher belongs to profile)
    "model": "model",
    "load": "load",
    "analysis": "analysis",
    "roofline": "analysis",
    "analysis.pipeline": "pipeline",
    "analysis.locate": "pipeline",  # places the rules' findings in the source, after the rules ran
    "analysis.entries": "pipeline",  # the result's entries, from the model and the rules' verdicts
    "analysis.ranking": "pipeline",  # where to start: ranks the findings of kernel and program rules
    "analysis.hostwall": "pipeline",  # where to start, in wall time: the host timeline replayed for each entry
    "analyze": "pipeline",  # composes load, analysis, rules and result
    "rules_api": "rules",
    "engine": "rules",
    "rule_sandbox": "rules",  # user rules loaded and run contained (their exits, output, time, returns)
    "ruledoc": "rules",
    "config": "rules",  # [tool.ncuadvisor]: which rules run, with which thresholds  # a rule's documentation, built from the rule
    "result": "result",
    "result.schemas": "diff",  # the JSON Schemas of both saved kinds, a result and a diff
    "result.validate": "diff",  # reads a saved result or diff
    "diff": "diff",
    "render": "render",
    "profile": "profile",
    "ncu": "profile",  # ncu command lines and output parsing
    "cli": "cli",
    "commands_pr": "cli",
    "options": "cli",
    "gitinfo": "cli",  # the git top level of the current directory (SARIF paths)
    "__main__": "cli",
}

# layer -> layers it may never import, although they sit below it
FORBIDDEN = {
    "render": {"reportfile", "load", "analysis", "rules", "pipeline"},
}


@dataclass(frozen=True)
class Import:
    target: str  # module name relative to the package
    line: int
    runtime: bool  # False inside `if TYPE_CHECKING:` (never executed)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, runtime: bool = True) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under `node`, with whether it runs at import or call time (False under `if TYPE_CHECKING:`)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.body:
                yield sub, False
                yield from _walk(sub, False)
            for sub in child.orelse:
                yield sub, runtime
                yield from _walk(sub, runtime)
            continue
        yield child, runtime
        yield from _walk(child, runtime)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The package module an absolute dotted name refers to (the longest existing prefix), relative to the package."""
    if name != "ncuadvisor" and not name.startswith("ncuadvisor."):
        return None
    parts = name.split(".")[1:]
    while parts:
        rel = ".".join(parts)
        if rel in modules:
            return rel
        parts.pop()
    return "__init__"


def imports_of(name: str, modules: dict[str, Path]) -> list[Import]:
    """The package modules `name` imports, wherever the import sits (module level, functions, try blocks), including
    `from ncuadvisor import x` where x is a module, relative imports and importlib.import_module("ncuadvisor....")."""
    path = modules[name]
    is_pkg = path.name == "__init__.py"
    here = ["ncuadvisor", *([] if name == "__init__" else name.split("."))]
    package = here if is_pkg else here[:-1]
    found: list[Import] = []

    def add(absolute: str, line: int, runtime: bool) -> None:
        target = _resolve(absolute, modules)
        if target is not None and target != name:
            found.append(Import(target, line, runtime))

    for node, runtime in _walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, runtime)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                absolute = ".".join(base + ([node.module] if node.module else []))
            else:
                absolute = node.module or ""
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                if _resolve(f"{absolute}.{alias.name}", modules) == ".".join(f"{absolute}.{alias.name}".split(".")[1:]):
                    add(f"{absolute}.{alias.name}", node.lineno, runtime)
                else:
                    add(absolute, node.lineno, runtime)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__") and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    add(arg.value, node.lineno, runtime)
    # importing a.b.c runs the packages a and a.b first (those that do not hold the importer)
    for imp in list(found):
        parts = imp.target.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent in modules and not (name == parent or name.startswith(parent + ".")):
                found.append(Import(parent, imp.line, imp.runtime))
    return found


def layer_of(name: str) -> str | None:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        layer = LAYER.get(".".join(parts[:i]))
        if layer is not None:
            return layer
    return None


def graph(runtime_only: bool) -> dict[str, dict[str, int]]:
    """module -> {imported module: first line}"""
    modules = all_modules()
    out: dict[str, dict[str, int]] = {}
    for name in modules:
        edges: dict[str, int] = {}
        for imp in imports_of(name, modules):
            if imp.runtime or not runtime_only:
                edges.setdefault(imp.target, imp.line)
        out[name] = edges
    return out


def cycles(edges: dict[str, dict[str, int]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan): each holds at least one import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return components


def _one_cycle(comp: set[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A path start -> ... -> start inside the component (breadth-first from its first module), to show in a failure."""
    start = min(comp)
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [*reversed(path), start]
            if w in comp and w not in prev:
                prev[w] = v
                queue.append(w)
    return sorted(comp)


def describe(path: list[str], edges: dict[str, dict[str, int]]) -> str:
    return " -> ".join(f"{a} (line {edges[a][b]})" for a, b in zip(path, path[1:])) + f" -> {path[-1]}"


def test_every_module_has_a_layer():
    missing = sorted(name for name in all_modules() if layer_of(name) is None)
    assert not missing, f"modules without a layer (add them to LAYER in tests/test_layers.py): {missing}"


def test_the_contract_sees_imports_everywhere():
    """The reader finds imports at module level, in functions, relative ones and `from ncuadvisor import module`."""
    modules = all_modules()
    assert layer_of("render.html") == "render" and layer_of("analysis.pipeline") == "pipeline"
    assert layer_of("analysis.roofline") == "analysis" and layer_of("loader") is None
    assert "errors" in {i.target for i in imports_of("cli.app", modules)}
    assert "engine" in {i.target for i in imports_of("analysis.pipeline", modules)}  # from ncuadvisor import engine


def test_no_import_cycle():
    edges = graph(runtime_only=True)
    found = [describe(_one_cycle(c, edges), edges) for c in cycles(edges)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_modules_import_only_their_layer_or_below():
    rank = {layer: i for i, layer in enumerate(ORDER)}
    edges = graph(runtime_only=False)
    violations: list[tuple[str, str, str]] = []  # (importer's layer, imported layer, where)
    for name, targets in sorted(edges.items()):
        mine = layer_of(name)
        for target, line in sorted(targets.items()):
            theirs = layer_of(target)
            if mine is None or theirs is None or mine == theirs:
                continue
            if rank[theirs] > rank[mine] or theirs in FORBIDDEN.get(mine, set()):
                violations.append((mine, theirs, f"{name} ({mine}) imports {target} ({theirs}) at line {line}"))
    assert not violations, "imports against the layer order:\n" + "\n".join(where for _, _, where in violations)
