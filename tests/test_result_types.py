"""The typed result and diff: `to_dict()` is exactly the JSON the commands write (keys and their order), `from_dict()`
reads it back checking types, and the shipped JSON Schemas are generated from the same dataclasses and accept every
fixture's output."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from ncuadvisor.comparison import DiffResult, compare, diff_results
from ncuadvisor.errors import InputError
from ncuadvisor.render import to_json
from ncuadvisor.result import (
    Device,
    Generator,
    KernelEntry,
    Launch,
    ReportInfo,
    Result,
    Roofline,
    TopAction,
)
from ncuadvisor.saved import schemas
from tests.conftest import FIXTURES, ROOT

# every report fixture (profile-cost-2026-11-30/train_naive_full, a minute of analysis, is left out; its output has the same shape)
REPORTS = sorted(p.name.removesuffix(".ncu-rep.xz") for p in FIXTURES.glob("*.ncu-rep.xz"))


@pytest.fixture(scope="module")
def validator():
    """validator(kind) -> a jsonschema validator of the shipped schema of that kind."""

    def get(kind: str) -> jsonschema.Draft202012Validator:
        schema = schemas.shipped(kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        return jsonschema.Draft202012Validator(schema)

    return get


def errors(validator, kind: str, data: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validator(kind).iter_errors(data)]


def as_json(result: dict) -> dict:
    """The result as `ncuadvisor report -f json` writes it and a reader reads it back."""
    return json.loads(to_json(result))


# -- the result ----------------------------------------------------------------------------------------------------


# the biggest reports take 5-20 s each to analyse: they run with the slow tests
BIG_REPORTS = {"model_step_1010", "model_step_315", "torch_train", "torch_scatter", "torch_eager"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in BIG_REPORTS else n for n in REPORTS])
def test_every_fixture_round_trips_and_fits_the_schema(analyzed, validator, name):
    data = as_json(analyzed(name))
    back = Result.from_dict(data, complete=True).to_dict()
    assert back == data
    assert json.dumps(back) == json.dumps(data)  # the same keys in the same order
    assert errors(validator, "report", data) == []


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """The JSON of `ncuadvisor profile` with the fake ncu: two phases on two processes (phase 1's kernels merged with
    phase 2's deep analysis, per process), and one --full run."""
    folder = tmp_path_factory.mktemp("profiled")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env["PATH"] = str(ROOT / "tests" / "fake_ncu") + os.pathsep + env.get("PATH", "")
    target = str(ROOT / "tests" / "fake_ncu" / "target.py")
    runs = {
        "two-phase": (["-o", "mp.json"], {"FAKE_NCU_PHASE1": "multiproc_phase1", "FAKE_NCU_PHASE2": "multiproc"}),
        "full": (["--full", "-o", "full.json"], {}),
    }
    out = {}
    for mode, (args, extra) in runs.items():
        cmd = [sys.executable, "-m", "ncuadvisor", "profile", *args, "-q", target]
        p = subprocess.run(cmd, cwd=folder, env={**env, **extra}, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        out[mode] = json.loads((folder / args[-1]).read_text())
    return out


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["two-phase", "full"])
def test_profile_results_round_trip_and_fit_the_schema(profiled, validator, mode):
    data = profiled[mode]
    assert data["report"]["profile"]["mode"] == mode
    result = Result.from_dict(data, complete=True)
    assert result.to_dict() == data  # a merged kernel's process fields come after its result_ids: same keys
    assert errors(validator, "report", data) == []
    assert all(k.profiled is not None for k in result.kernels)
    if mode == "two-phase":
        assert result.report.profile and result.report.profile.selection and result.report.phase1_report
        assert {k.process.pid for k in result.kernels if k.process} == {p.pid for p in result.report.processes}


def test_optional_fields_are_written_only_when_present(analyzed, validator):
    data = as_json(analyzed("pipeline_v2"))
    plain = Result.from_dict(data)
    assert "torch_op" not in plain.kernels[0].to_dict() and "variant" not in plain.top_actions[0].to_dict()
    data["kernels"][0].update(torch_op=None, torch_module="model.mlp")  # --torch-ops: the pair, nulls kept
    data["top_actions"][0]["variant"] = 0
    back = Result.from_dict(data, complete=True)
    assert back.kernels[0].torch is not None and back.kernels[0].torch.torch_module == "model.mlp"
    assert back.to_dict() == data and json.dumps(back.to_dict()) == json.dumps(data)
    assert errors(validator, "report", data) == []
    data["kernels"][1]["torch_op"] = "aten::add"  # one of the pair: the other is missing
    assert errors(validator, "report", data) == ["kernels/1: 'torch_module' is a dependency of 'torch_op'"]
    with pytest.raises(InputError, match=r"^kernels\[1\]: `torch_module` is missing$"):
        Result.from_dict(data, complete=True)
    assert Result.from_dict(data).kernels[1].to_dict()["torch_module"] is None


def test_a_result_built_by_keyword_fits_the_schema(validator):
    """What the pipeline builds: keyword arguments, no dict in between."""
    roofline = Roofline(duration_ns=2000.0, bound="launch", bound_reason="2.0 µs per launch")
    kernel = KernelEntry(
        id="k0",
        name="add",
        demangled="add(float *)",
        language="cuda",
        launches=1,
        grid="(1, 1, 1)",
        block="(32, 1, 1)",
        duration_ns=2000.0,
        per_launch_ns=2000.0,
        launch_range_ns=[2000.0, 2000.0],
        analysed_launches=1,
        analysed_duration_ns=2000.0,
        time_share=1.0,
        bound="launch",
        bound_reason=roofline.bound_reason,
        roofline=roofline,
        launch=Launch(grid_size=1.0, block_size=32.0),
    )
    report = ReportInfo(path="/x/a.ncu-rep", name="a.ncu-rep", device=Device(name="H200"), results=1, kernels=1,
                        total_duration_ns=2000.0)  # fmt: skip
    result = Result(
        generator=Generator(version="0.0.0"), created="2000-01-01T00:00:00Z", report=report, kernels=[kernel]
    )
    data = result.to_dict()
    assert errors(validator, "report", data) == []
    assert Result.from_dict(data, complete=True) == result
    assert list(data) == [
        "schema_version",
        "generator",
        "created",
        "report",
        "kernels",
        "program_findings",
        "top_actions",
    ]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["kernels"][1].update(duration_ns="fast"), "kernels[1].duration_ns: expected a number"),
        (lambda d: d.update(kernels=[1, 2]), "kernels[0]: expected an object"),
        (lambda d: d["kernels"][0].update(headroom=float("nan")), "kernels[0].headroom: expected a finite number"),
        (lambda d: d["kernels"][0].update(launches=True), "kernels[0].launches: expected an integer"),
        (
            lambda d: d["kernels"][0].update(launches=2**70),
            "kernels[0].launches: expected an integer of at most 64 bits",
        ),
        (lambda d: d["kernels"][0].update(bound="slow"), "kernels[0].bound: expected one of 'memory', 'compute'"),
        (lambda d: d["report"]["device"].update(peak_flops_per_s={"fp32": "x"}), "report.device.peak_flops_per_s.fp32"),
        (lambda d: d["top_actions"][0].update(scope=None), "top_actions[0].scope: expected one of 'kernel', 'program'"),
        (lambda d: d.update(schema_version=2), "schema_version: expected one of 1"),
    ],
)
def test_a_wrong_type_is_named_by_its_place(analyzed, change, message):
    data = as_json(analyzed("pipeline_v2"))
    change(data)
    with pytest.raises(InputError) as exc:
        Result.from_dict(data)
    assert str(exc.value).startswith(message), str(exc.value)


def test_missing_keys_are_refused_only_when_complete(analyzed):
    data = as_json(analyzed("pipeline_v2"))
    del data["kernels"][0]["roofline"]["bound"]
    del data["report"]["devices"]
    assert Result.from_dict(data).report.devices == []  # a partial dict reads with empty values
    with pytest.raises(InputError, match=r"^report: `devices` is missing$"):
        Result.from_dict(data, complete=True)
    del data["report"]
    with pytest.raises(InputError, match=r"^the result: `report` is missing$"):
        Result.from_dict(data, complete=True)


# -- the diff ------------------------------------------------------------------------------------------------------

DIFF_PAIRS = [
    ("pipeline_v0", "pipeline_v1"),  # a fix: resolved findings, first fix of the after side
    ("pipeline_v1", "pipeline_v2"),  # a regression: new findings
    ("flaws", "pipeline_v0"),  # nothing in common: added and removed
    ("multiproc", "multigpu"),  # matched per process
    pytest.param(
        ("model_step_315", "model_step_1010"), marks=pytest.mark.slow
    ),  # per launch: before_scaled_ns, shape tags of the first fix
]


@pytest.mark.parametrize("pair", DIFF_PAIRS, ids="→".join)
def test_diffs_round_trip_and_fit_the_schema(analyzed, validator, pair):
    before, after = (analyzed(n) for n in pair)
    data = json.loads(json.dumps(diff_results(before, after)))
    back = DiffResult.from_dict(data, complete=True).to_dict()
    assert back == data and json.dumps(back) == json.dumps(data)
    assert errors(validator, "diff", data) == []
    typed = compare(Result.from_dict(before), Result.from_dict(after)).to_dict()
    assert {**typed, "created": ""} == {**data, "created": ""}


def test_a_diff_of_recorded_ranks_fits_the_schema(analyzed, validator):
    ranked = copy.deepcopy(analyzed("multiproc"))
    rank_of = {p["pid"]: i for i, p in enumerate(sorted(ranked["report"]["processes"], key=lambda p: p["pid"]))}
    for p in ranked["report"]["processes"]:
        p.update(rank=rank_of[p["pid"]], local_rank=rank_of[p["pid"]], world_size=2)
    for k in ranked["kernels"]:
        k["process"].update(rank=rank_of[k["process"]["pid"]], local_rank=rank_of[k["process"]["pid"]], world_size=2)
    assert Result.from_dict(ranked, complete=True).to_dict() == ranked
    data = diff_results(ranked, ranked)
    assert {k["process"]["label"] for k in data["kernels"]} == {"rank 0", "rank 1"}
    assert DiffResult.from_dict(data, complete=True).to_dict() == data
    assert errors(validator, "diff", data) == []


def test_first_fix_has_a_shape_only_for_kernel_actions(analyzed):
    after = Result.from_dict(analyzed("pipeline_v2"))
    program = TopAction(kernel="a, b", rule="PRG001", category="fusion", title="t", estimated_saving_ns=1.0,
                        program_fraction=0.1, scope="program")  # fmt: skip
    after.top_actions.insert(0, program)
    assert "kernel_shape" not in compare(after, after).to_dict()["first_fix"]
    after.top_actions.pop(0)
    assert compare(after, after).to_dict()["first_fix"]["kernel_shape"] is None  # its name is its own


# -- the shipped schemas -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["report", "diff"])
def test_shipped_schemas_are_generated_from_the_dataclasses(kind):
    shipped = Path(schemas.SCHEMA_DIR / schemas.FILES[kind]).read_text(encoding="utf-8")
    assert shipped == schemas.text(schemas.generate(kind)), "run: python3 -m ncuadvisor.saved.schemas"
    jsonschema.Draft202012Validator.check_schema(json.loads(shipped))
