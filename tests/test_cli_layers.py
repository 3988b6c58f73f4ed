"""The command line and the profile package keep to their layers: no import cycle among their modules, a command
module imports `cli.common` and the layers below it (never another command nor the app), the profile package never
imports the command line, nothing below the command line imports it, and no module runs past ~500 lines.

Imports are read with `ast`, at module level and inside functions alike (an import inside a function is still a
dependency, only a later one)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ncuadvisor"
COMMANDS = {"report", "rules", "diff", "render", "profile"}
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").is_file() or (PKG.parent / rel / "__init__.py").is_file()


def imports(path: Path) -> set[str]:
    """The ncuadvisor modules a file imports (`from pkg import module` counts as the module)."""
    out: set[str] = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("ncuadvisor"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if not base.startswith("ncuadvisor"):
                continue
            subs = {f"{base}.{a.name}" for a in node.names if is_module(f"{base}.{a.name}")}
            out.update(subs or {base})
            if len(subs) < len(node.names):
                out.add(base)
    return out


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in PKG.rglob("*.py")}


def in_layer(name: str) -> bool:
    return name.startswith(("ncuadvisor.cli", "ncuadvisor.profile"))


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as a list of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_among_the_command_line_and_profile_modules():
    g = graph()
    sub = {m: {x for x in deps if in_layer(x)} for m, deps in g.items() if in_layer(m)}
    assert find_cycle(sub) is None, find_cycle(sub)


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_commands_import_only_common_and_lower_layers():
    g = graph()
    for cmd in COMMANDS:
        mine = {m for m in g[f"ncuadvisor.cli.{cmd}"] if m.startswith("ncuadvisor.cli")}
        assert mine <= {"ncuadvisor.cli.common"}, (cmd, mine)
    assert {f"ncuadvisor.cli.{c}" for c in COMMANDS} <= g["ncuadvisor.cli.app"]  # registered there, once
    assert not {m for m in g["ncuadvisor.cli.common"] if m.startswith("ncuadvisor.cli")}


def test_nothing_below_the_command_line_imports_it():
    for mod, deps in graph().items():
        if not mod.startswith("ncuadvisor.cli") and mod != "ncuadvisor.__main__":
            assert not {d for d in deps if d.startswith("ncuadvisor.cli")}, mod
        if not in_layer(mod):
            assert not {d for d in deps if d.startswith("ncuadvisor.profile")}, mod


def test_modules_stay_small():
    for folder in ("cli", "profile"):
        for path in (PKG / folder).glob("*.py"):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            assert lines <= MAX_LINES, (path.name, lines)
