"""The JSON Schemas (draft 2020-12) of a saved result and a saved diff, shipped in `schema/` beside this module for other
tools to read, and generated from the dataclasses (`Result`, `DiffResult`) they describe.

After a change to the dataclasses, write the files again (a test checks that they equal what is generated):

    python3 -m ncuadvisor.saved.schemas
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ncuadvisor.result.record import Record, json_schema

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
REPORT_KIND = "report"
DIFF_KIND = "diff"
FILES = {REPORT_KIND: "result-v1.schema.json", DIFF_KIND: "diff-v1.schema.json"}
_TITLES = {
    REPORT_KIND: "ncuadvisor result (the JSON of `ncuadvisor report`), schema_version 1",
    DIFF_KIND: "ncuadvisor diff (the JSON of `ncuadvisor diff`), schema_version 1",
}


def record_class(kind: str) -> type[Record]:
    """The dataclass of a saved result's kind ("report" or "diff")."""
    if kind == DIFF_KIND:
        from ncuadvisor.comparison.types import DiffResult  # the diff is built on the result's records, not the reverse

        return DiffResult
    from ncuadvisor.result.types import Result

    return Result


def generate(kind: str) -> dict[str, Any]:
    """The schema of a kind, generated from its dataclass."""
    name = FILES[kind].removesuffix(".schema.json")
    return json_schema(record_class(kind), f"urn:ncuadvisor:schema:{name}", _TITLES[kind])


def shipped(kind: str) -> dict[str, Any]:
    """The schema of a kind as shipped in the package."""
    return json.loads((SCHEMA_DIR / FILES[kind]).read_text(encoding="utf-8"))


def text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write() -> list[Path]:
    """Write every generated schema into the package's schema/ folder."""
    SCHEMA_DIR.mkdir(exist_ok=True)
    paths = []
    for kind, name in FILES.items():
        path = SCHEMA_DIR / name
        path.write_text(text(generate(kind)), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write():
        print(f"wrote {p}")
    sys.exit(0)
