"""A saved result that was edited, cut or forged is refused before anything renders it: one line naming the file and
the place, exit code 2 (never an internal error), and the JSON Schema refuses the same files."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from ncuadvisor.comparison import DiffResult, diff_results
from ncuadvisor.errors import InputError
from ncuadvisor.render import to_json
from ncuadvisor.result import Result
from ncuadvisor.saved import schemas
from ncuadvisor.saved.validate import load_saved
from tests.golden import run_cli


@pytest.fixture(scope="module")
def report(analyzed) -> dict:
    return json.loads(to_json(analyzed("pipeline_v2")))


@pytest.fixture(scope="module")
def diff(analyzed) -> dict:
    return json.loads(json.dumps(diff_results(analyzed("pipeline_v1"), analyzed("pipeline_v2"))))


def edited(data: dict, change) -> dict:
    out = copy.deepcopy(data)
    change(out)
    return out


# (what is wrong, the change, the words of the error after the file's name)
REPORT_CASES = [
    ("kernels as numbers", lambda d: d.update(kernels=[1, 2]), "kernels[0]: expected an object"),
    (
        "a string speedup",
        lambda d: d["kernels"][0]["findings"][0].update(estimated_speedup="0.5"),
        "kernels[0].findings[0].estimated_speedup: expected a number",
    ),
    ("a string for the device", lambda d: d["report"].update(device="H200"), "report.device: expected an object"),
    (
        "variants as an object",
        lambda d: d["kernels"][0].update(variants={"a": 1}),
        "kernels[0].variants: expected an array",
    ),
    ("a number for a name", lambda d: d["kernels"][2].update(name=5), "kernels[2].name: expected a string"),
    ("no device", lambda d: d["report"].pop("device"), "report: `device` is missing"),
    (
        "a null saving",
        lambda d: d["top_actions"][0].update(estimated_saving_ns=None),
        "top_actions[0].estimated_saving_ns",
    ),
]


@pytest.mark.parametrize("what, change, message", REPORT_CASES, ids=[c[0] for c in REPORT_CASES])
def test_a_malformed_saved_result_is_refused_and_the_schema_agrees(tmp_path, report, what, change, message):
    data = edited(report, change)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as exc:
        load_saved(path)
    assert str(exc.value).startswith(f"{path}: not a valid saved report: {message}"), str(exc.value)
    assert not jsonschema.Draft202012Validator(schemas.shipped("report")).is_valid(data)


def test_a_malformed_saved_diff_is_refused_and_the_schema_agrees(tmp_path, diff):
    data = edited(diff, lambda d: d["kernels"][0].update(change="+430%"))
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"d\.json: not a valid saved diff: kernels\[0\]\.change: expected a number"):
        load_saved(path)
    assert not jsonschema.Draft202012Validator(schemas.shipped("diff")).is_valid(data)


def test_saved_results_are_read_into_their_types(tmp_path, report, diff):
    for name, data, typ in (("r.json", report, Result), ("d.json", diff, DiffResult)):
        path = tmp_path / name
        path.write_text(json.dumps(data))
        saved = load_saved(path)
        assert isinstance(saved, typ) and saved.to_dict() == data


def _text(report: dict, what: str) -> str:
    text = json.dumps(report)
    if what == "deep":
        return text[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    if what == "digits":
        return text.replace('"results": ', '"results": ' + "1" * 5000 + ', "was": ', 1)
    if what == "float digits":
        return text.replace('"total_duration_ns": ', '"total_duration_ns": ' + "1" * 5000 + '.5, "was": ', 1)
    if what == "NaN":
        return text.replace('"headroom": ', '"headroom": NaN, "was": ', 1)
    return text.replace('"headroom": ', '"headroom": -Infinity, "was": ', 1)


# what the JSON parser itself cannot take, through the command: one line, exit 2
@pytest.mark.parametrize(
    "what, message",
    [
        ("deep", "nested too deeply"),
        ("digits", "holds a number too long to read"),
        ("float digits", "report.total_duration_ns: expected a finite number"),
        ("NaN", "not valid JSON (NaN is not a number JSON knows"),
        ("-Infinity", "not valid JSON (-Infinity is not a number JSON knows"),
    ],
)
def test_what_json_cannot_hold_is_refused_with_one_line(tmp_path, report, what, message):
    path = tmp_path / "x.json"
    path.write_text(_text(report, what))
    with pytest.raises(InputError, match="x.json: .*" + message.replace("(", r"\(")):
        load_saved(path)
    formats = {"deep": ("md", "sarif"), "NaN": ("html", "terminal")}.get(what, ())
    for fmt in formats:  # and through the command
        p = run_cli("render", path, "--format", fmt)
        assert p.returncode == 2, (fmt, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ncuadvisor: error: {path}: ") and message in lines[0]


def test_render_refuses_a_wrong_type_with_exit_2(tmp_path, report):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(edited(report, lambda d: d.update(kernels=[1, 2]))))
    p = run_cli("render", path, "--format", "html")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == f"ncuadvisor: error: {path}: not a valid saved report: kernels[0]: expected an object"


def test_a_kind_that_is_not_a_name_is_refused(tmp_path, report):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({**report, "kind": ["diff"]}))
    with pytest.raises(InputError, match=r"unknown result kind \['diff'\]"):
        load_saved(path)
