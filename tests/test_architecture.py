"""Data flows one way: ncu -> load -> model -> roofline -> rules -> result -> renderers."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "ncuadvisor"

# module -> the ncuadvisor modules it may import
ALLOWED = {
    "errors": set(),
    "units": set(),
    "model": {"units"},
    "processes": set(),  # part of the load stage: the report file's process blocks (no ncu_report)
    "fastread": {"processes"},  # part of the load stage: scalar metrics straight from the report file (its blocks)
    "load": {"errors", "model", "processes", "fastread"},
    "roofline": {"model"},
    "rules_api": {"model", "roofline", "units"},
    "engine": {"errors", "rules_api", "model", "roofline"},
    "result": {"result", "units"},
    "diff": {"diff"},
    "analyze": {
        "__init__",
        "engine",
        "roofline",
        "load",
        "model",
        "processes",
        "result",
        "rules_api",
        "errors",
        "units",
    },
    "render": {"errors", "units", "result"},
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
            assert path.name == "load.py", path


def test_stages_import_only_earlier_stages():
    for name, allowed in ALLOWED.items():
        path = PKG / f"{name}.py"
        if not path.exists():
            path = PKG / name / "__init__.py"
        assert imports_of(path) <= allowed, (name, imports_of(path) - allowed)


def test_renderers_never_compute():
    for path in (PKG / "render").glob("*.py"):
        assert not imports_of(path) & {"load", "roofline", "engine", "analyze", "rules_api"}, path
