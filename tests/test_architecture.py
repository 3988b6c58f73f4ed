"""Data flows one way: ncu -> reportfile/load -> model -> analysis (roofline) -> rules -> locate -> result -> renderers
(the rules emit the result's finding type, so they import the result's types)."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ncuadvisor"

# stage (a module or a package) -> the ncuadvisor stages it may import; the full layer contract is tests/test_layers.py
ALLOWED = {
    "errors": set(),
    "units": set(),
    "reportfile": {"errors", "reportfile"},
    "model": {"units", "model"},
    "load": {"errors", "model", "reportfile", "load"},
    "metrics": set(),
    "rules_api": {"model", "analysis", "units", "metrics", "result"},
    "engine": {"errors", "rules_api", "model", "analysis", "result"},
    "result": {"units", "errors", "result", "__init__", "diff"},
    "diff": {"diff", "result", "errors", "units", "__init__"},
    "render": {"errors", "units", "result", "diff", "render"},  # the diff view reads the typed diff
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ncuadvisor"):
            parts = node.module.split(".")
            out.add(parts[1] if len(parts) > 1 else "__init__")
            if len(parts) == 1:
                out.update(a.name for a in node.names if (PKG / f"{a.name}.py").exists() or (PKG / a.name).is_dir())
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ncuadvisor."):
                    out.add(a.name.split(".")[1])
    return out


def test_only_load_imports_ncu_report():
    for path in PKG.rglob("*.py"):
        text = path.read_text()
        if "import ncu_report" in text:
            assert path.relative_to(PKG).as_posix() == "load/native.py", path


def test_stages_import_only_earlier_stages():
    for name, allowed in ALLOWED.items():
        paths = [PKG / f"{name}.py"] if (PKG / f"{name}.py").exists() else sorted((PKG / name).rglob("*.py"))
        for path in paths:
            assert imports_of(path) <= allowed, (path, imports_of(path) - allowed)


def test_renderers_never_compute():
    for path in (PKG / "render").glob("*.py"):
        assert not imports_of(path) & {"load", "roofline", "engine", "analyze", "rules_api"}, path
