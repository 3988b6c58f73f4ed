"""The package's one layer contract, read from the source with `ast`: no import cycle among ncuadvisor's modules
(imports inside functions included), every module imports only from its own layer or the layers below it, and only
`load/native.py` imports NVIDIA's `ncu_report`.

The layers, bottom to top, are the package's folders: errors, units, metrics, version < reportfile < model < load < analysis <
result < rulekit < pipeline < comparison (two results compared) < saved < render < api (the Python API) < profile < cli; the package's own __init__ (its public names, loaded from api on first use) sits on top. Data flows load -> model, but load builds model's
plain dataclasses, so in import order model sits below load. The result's types are plain data that the rules emit
(a rule's finding is the result's `FindingEntry`), so result sits below the rule kit. `pipeline/` composes the stages
(load, analysis, rules) and runs what comes after the rules (locating findings in the source, the entries, the
ranking, the wall-time replays). `saved/` reads a saved result or diff back. Beyond the order: render never imports
reportfile, load, analysis, the rule kit or the pipeline (renderers format, they never compute), and nothing but cli
imports cli.

Modules are named relative to the package ("render.html"); a module's layer is that of the longest prefix in LAYER
(a prefix matches a whole dotted part: "load" matches "load" and "load.workers", not "loader"). Every entry of LAYER
names a module or package that exists (`test_the_table_names_no_stale_module`), and a module missing from the table
fails `test_every_module_has_a_layer`: place it when adding it.
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
    "comparison",
    "saved",
    "render",
    "api",
    "profile",
    "cli",
]

# module-name prefix -> layer
LAYER = {
    # the package itself: its public names (`ncuadvisor.analyze`...), loaded from api on first use; nothing imports it
    "__init__": "cli",
    "version": "base",  # __version__, which every layer may name
    "errors": "base",
    "units": "base",
    "metrics": "base",
    "reportfile": "reportfile",
    "model": "model",
    "load": "load",
    "analysis": "analysis",
    "result": "result",
    "rulekit": "rules",
    "pipeline": "pipeline",
    "comparison": "comparison",
    "saved": "saved",
    "render": "render",
    "api": "api",  # the Python API: analyze, diff, Result
    "profile": "profile",
    "cli": "cli",
    "gitinfo": "cli",  # the git top level of the current directory (SARIF paths)
    "__main__": "cli",
}

# layer -> layers it may never import, although they sit below it
FORBIDDEN = {
    "render": {"reportfile", "load", "analysis", "rules", "pipeline"},
}

# the one module that imports NVIDIA's ncu_report
NCU_REPORT_IMPORTER = "load.native"


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


def test_the_table_names_no_stale_module():
    modules = all_modules()
    stale = sorted(prefix for prefix in LAYER if prefix not in modules)
    assert not stale, f"LAYER names modules that do not exist (remove them from tests/test_layers.py): {stale}"
    assert set(LAYER.values()) <= set(ORDER) and set(FORBIDDEN) <= set(ORDER)
    assert (PKG / (NCU_REPORT_IMPORTER.replace(".", "/") + ".py")).is_file()


def test_the_contract_sees_imports_everywhere():
    """The reader finds imports at module level, in functions, relative ones and `from ncuadvisor import module`."""
    modules = all_modules()
    assert layer_of("render.html") == "render" and layer_of("pipeline.analyze") == "pipeline"
    assert layer_of("analysis.roofline") == "analysis" and layer_of("loader") is None
    assert layer_of("rulekit.engine") == "rules" and layer_of("rulekit") == "rules"
    assert "errors" in {i.target for i in imports_of("cli.app", modules)}
    assert "rulekit.engine" in {i.target for i in imports_of("pipeline.analyze", modules)}
    assert "rulekit" in {i.target for i in imports_of("pipeline.analyze", modules)}  # the package runs first


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


def test_only_load_imports_ncu_report():
    """NVIDIA's module is imported in one place, so a report is read one way (and a machine without it fails there)."""
    importers = []
    for name, path in all_modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "ncu_report" for a in node.names):
                importers.append(name)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ncu_report":
                importers.append(name)
    assert set(importers) == {NCU_REPORT_IMPORTER}, importers


MAX_FUNCTION_LINES = 80  # from `def` to its last line: longer ones are split into named steps


def test_functions_stay_short():
    """Every function of the package and of the built-in rules is at most MAX_FUNCTION_LINES long."""
    long = []
    for path in sorted([*PKG.rglob("*.py"), *(PKG.parent / "rules").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PKG.parent)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over the limit:\n" + "\n".join(long)
