"""SARIF 2.1.0 output: golden files of real fixtures, validated against the official schema (tests/data), levels,
paths relative to the source root, findings without a location, rule help texts from the rule docstrings, and a
renderer that takes all of that as data (no command run, no file read)."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from ncuadvisor.gitinfo import default_source_root, source_root_forms
from ncuadvisor.render import sarif as sarif_renderer
from ncuadvisor.render.sarif import LEVEL_ERROR, LEVEL_WARNING, level_for, relative_to_root, repository_paths
from ncuadvisor.rulekit.docs import rule_docs
from ncuadvisor.rulekit.engine import discover
from tests.conftest import FIXTURES, ROOT
from tests.golden import FIXTURE_SOURCE_ROOT, check_golden, run_cli, scrub_result
from tests.synthetic import typed_result


def build_sarif(result, *args, **kw):
    return sarif_renderer.build_sarif(typed_result(result), *args, **kw)


def render_sarif(result, *args, **kw):
    return sarif_renderer.render_sarif(typed_result(result), *args, **kw)


def source_files(result, *args, **kw):
    return sarif_renderer.source_files(typed_result(result), *args, **kw)


SCHEMA_PATH = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json") and schema["properties"]["version"]["enum"] == ["2.1.0"]
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


@pytest.fixture(scope="module")
def rules():
    return discover()


@pytest.fixture(scope="module")
def docs(rules):
    return rule_docs(rules)


def validate(validator, log: dict) -> None:
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def paths_of(result: dict, root: str = FIXTURE_SOURCE_ROOT) -> dict[str, str]:
    return repository_paths(source_files(result), [root])


def sarif_of(result: dict, docs, root: str = FIXTURE_SOURCE_ROOT) -> dict:
    return build_sarif(result, root, paths_of(result, root), docs)


def results_of(log: dict) -> list[dict]:
    return log["runs"][0]["results"]


# -- golden files, schema ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pipeline_v1", "pipeline_v2", "flaws"])
def test_sarif_golden_and_valid(analyzed, docs, validator, name):
    result = scrub_result(analyzed(name))
    text = render_sarif(result, FIXTURE_SOURCE_ROOT, paths_of(result), docs)
    log = json.loads(text)
    validate(validator, log)
    check_golden(f"{name}.sarif", text)


def test_flaws_results_one_per_located_finding(analyzed, docs):
    result = analyzed("flaws")
    log = sarif_of(result, docs)
    res = results_of(log)
    located = [
        (k["name"], f["rule"])
        for k in result["kernels"]
        for f in k["findings"]
        if f["category"] != "at-roofline" and any(s.get("file") and s.get("line") for s in f["source"])
    ]
    got = [(r["properties"]["kernel"], r["ruleId"]) for r in res if not r["properties"]["locationInferred"]]
    assert got == located and len(located) >= 15
    assert all(r["ruleId"] != "ROOF001" for r in res)  # at-roofline: nothing to fix
    ids = [d["id"] for d in log["runs"][0]["tool"]["driver"]["rules"]]
    assert len(ids) == len(set(ids)) and all(ids[r["ruleIndex"]] == r["ruleId"] for r in res)


def _header_first(result: dict, name: str) -> dict:
    """The result with a kernel's first finding placed as a report without the module's line tables places it: on
    the CUDA header line its instructions are in (kept in `inlined`), before the user's line."""
    k = next(k for k in result["kernels"] if k["name"] == name)
    src = k["findings"][0]["source"]
    inl = src[0].pop("inlined")
    src.insert(0, {**src[0], "file": inl["file"], "line": inl["line"], "code": inl["code"]})
    return result


def test_paths_relative_to_the_source_root(analyzed, docs):
    log = sarif_of(_header_first(analyzed("flaws"), "hist_global_atomic"), docs)
    run = log["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///work/main/"}}
    locs = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in results_of(log)]
    locs += [r["physicalLocation"]["artifactLocation"] for x in results_of(log) for r in x.get("relatedLocations", [])]
    inside = [a for a in locs if a.get("uriBaseId") == "%SRCROOT%"]
    assert inside and all(a["uri"] == "workloads/cuda/flaws.cu" for a in inside)
    outside = [a for a in locs if "uriBaseId" not in a]  # a CUDA header: outside the repository, absolute
    assert outside and all(a["uri"].startswith("file:///usr/local/cuda/") for a in outside)


def test_primary_location_prefers_the_repository(analyzed, docs):
    log = sarif_of(_header_first(analyzed("flaws"), "chase_pointer"), docs)
    chase = next(r for r in results_of(log) if r["properties"]["kernel"] == "chase_pointer")
    primary = chase["locations"][0]["physicalLocation"]
    assert primary["artifactLocation"]["uri"] == "workloads/cuda/flaws.cu" and primary["region"]["startLine"] == 447
    related = chase["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert related.endswith("sm_30_intrinsics.hpp")


def test_header_line_named_beside_the_callers_line(analyzed, docs):
    """With the module's line tables, the alert sits on the user's line and its text names the header's function."""
    log = sarif_of(analyzed("flaws"), docs)
    atm = next(r for r in results_of(log) if r["ruleId"] == "ATM001")
    assert atm["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "workloads/cuda/flaws.cu"
    assert "calls atomicAdd (device_atomic_functions.hpp:112)" in atm["message"]["text"]


def test_finding_without_location_attached_to_the_kernels_first_line(analyzed, docs):
    log = sarif_of(analyzed("flaws"), docs)
    res = results_of(log)
    wmma = [r for r in res if r["properties"]["kernel"] == "matmul_half_wmma"]
    assert [r["ruleId"] for r in wmma] == ["MEM001", "LCH001"]
    mem, lch = wmma
    assert lch["properties"]["locationInferred"] is True and "no source line of its own" in lch["message"]["text"]
    assert lch["locations"][0]["physicalLocation"] == mem["locations"][0]["physicalLocation"]
    # stream_small_grid has only a location-less finding (LCH001): shown at the kernel's entry, its signature's line
    small = [r for r in res if r["properties"]["kernel"] == "stream_small_grid"]
    assert [r["ruleId"] for r in small] == ["LCH001"] and small[0]["properties"]["locationInferred"] is True
    assert "the kernel's entry" in small[0]["message"]["text"]
    where = small[0]["locations"][0]["physicalLocation"]
    src = (ROOT / "workloads/cuda/flaws.cu").read_text().splitlines()
    assert where["artifactLocation"]["uri"] == "workloads/cuda/flaws.cu"
    assert "stream_small_grid(" in src[where["region"]["startLine"] - 1]


def test_kernels_with_one_name_and_several_shapes_are_separate_alerts(analyzed, docs):
    """The model step's gemm_tiled: four launch shapes with LCH001, none with a source line of its own. Each is an
    alert at the kernel's signature, its message naming the grid, its fingerprint its own (code scanning merges
    alerts with one fingerprint). softmax_causal's WRP001 points at the __syncthreads() tree reduction."""
    res = results_of(sarif_of(analyzed("model_step_315"), docs))
    every = [r for r in res if r["properties"]["kernel"] == "gemm_tiled"]
    # four shapes with LCH001; a fifth, latency-bound without a specific rule, gets GEN001's named mechanism
    gemm = [r for r in every if r["ruleId"] == "LCH001"]
    assert len(gemm) >= 4 and {r["ruleId"] for r in every} == {"LCH001", "GEN001"}
    assert len({r["partialFingerprints"]["ncuadvisorFinding/v1"] for r in gemm}) == len(gemm)
    assert all(r["message"]["text"].startswith("gemm_tiled · grid (") for r in gemm)
    src = (ROOT / "workloads/cuda/model_step.cu").read_text().splitlines()
    for r in gemm:
        line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
        assert "__global__ void gemm_tiled(" in src[line - 1]
    wrp = next(r for r in res if r["ruleId"] == "WRP001")
    line = wrp["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert "__syncthreads()" in src[line - 1] and "red[tid]" in src[line - 1]


def test_levels_follow_the_share_of_program_time(analyzed, docs):
    result = analyzed("flaws")
    total = result["report"]["total_duration_ns"]
    for r in results_of(sarif_of(result, docs)):
        p = r["properties"]
        k = next(k for k in result["kernels"] if k["name"] == p["kernel"])
        f = next(f for f in k["findings"] if f["rule"] == r["ruleId"])
        fraction = k["duration_ns"] * f["estimated_speedup"] / total
        assert p["programFraction"] == pytest.approx(fraction, abs=1e-4)
        assert p["estimatedSpeedup"] == pytest.approx(f["estimated_speedup"], abs=1e-4)
        assert r["level"] == level_for(fraction)
        assert r["message"]["text"].startswith(p["kernel"] + ": ") and "Fix:" in r["message"]["text"]
    levels = {r["level"] for r in results_of(sarif_of(result, docs))}
    assert levels == {"error", "warning", "note"}


@pytest.mark.parametrize(
    "fraction, level",
    [
        (0.5, "error"),
        (LEVEL_ERROR, "error"),
        (0.0999, "warning"),
        (LEVEL_WARNING, "warning"),
        (0.0199, "note"),
        (0, "note"),
    ],
)
def test_level_boundaries(fraction, level):
    assert level_for(fraction) == level


def test_rule_help_comes_from_the_rule_docstrings(analyzed, rules, docs):
    log = sarif_of(analyzed("pipeline_v2"), docs)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    doc = next(r for r in rules if r.code == "MEM001").doc_sections()
    assert rule["id"] == "MEM001" and rule["name"] and rule["shortDescription"]["text"]
    assert "## What it detects" in rule["help"]["markdown"] and "\nWhat it detects\n" in rule["help"]["text"]
    assert " ".join(doc["What it detects"].split())[:60] in rule["help"]["text"]
    # the fix in every language the rule speaks, not only the one of this report's kernels (CUDA)
    mem001 = next(r for r in rules if r.code == "MEM001")
    for fix in mem001.fixes.values():
        assert fix.plain().text[:60] in rule["help"]["markdown"] and fix.plain().text[:60] in rule["help"]["text"]
    (res,) = results_of(log)
    assert res["ruleId"] == "MEM001" and res["level"] == "error"  # saves ~57% of the program
    loc = res["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "workloads/cuda/pipeline.cu", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == 68


def test_without_rules_the_help_falls_back_to_the_finding(analyzed, validator):
    result = analyzed("pipeline_v2")
    log = build_sarif(result, FIXTURE_SOURCE_ROOT, paths_of(result))
    validate(validator, log)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["shortDescription"]["text"] and rule["help"]["text"]


def test_no_locations_at_all_gives_a_valid_empty_run(analyzed, docs, validator):
    log = sarif_of(analyzed("pipeline_v1"), docs)  # every kernel at its roofline
    validate(validator, log)
    assert results_of(log) == [] and log["runs"][0]["tool"]["driver"]["rules"] == []


def test_hostile_strings_stay_valid(analyzed, docs, validator):
    result = copy.deepcopy(analyzed("pipeline_v2"))
    k = next(k for k in result["kernels"] if k["name"] == "scale_add")
    k["name"] = 'evil"\n\t<kernel>\\u0000\x00'
    f = k["findings"][0]
    f["fix"] = f["title"] = 'fix "quoted" ```` `code` <b>'
    f["source"][0]["file"] = "/work/main/dir with space/ü#?.cu"
    f["source"].append({"file": "C:\\src\\k.cu", "line": 3, "code": None, "sass": None, "share": None})
    f["source"].append({"file": "/work/main/x.cu", "line": 0})  # not a line: ignored
    log = sarif_of(result, docs)
    validate(validator, log)
    (res,) = results_of(log)
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "dir%20with%20space/%C3%BC%23%3F.cu"
    assert res["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "file:///C:/src/k.cu"


@pytest.mark.parametrize(
    "path, root, uri",
    [
        ("/work/main/a/b.cu", "/work/main", "a/b.cu"),
        ("/work/main/a/b.cu", "/work/main/", "a/b.cu"),
        ("/work/main/./a/../a/b.cu", "/work/main", "a/b.cu"),
        ("/work/mainline/b.cu", "/work/main", "file:///work/mainline/b.cu"),
        ("/usr/include/x.h", "/work/main", "file:///usr/include/x.h"),
        ("src/k.cu", "/work/main", "src/k.cu"),
        ("./src/k.cu", "/work/main", "src/k.cu"),
        ("C:\\proj\\k.cu", "C:\\proj", "k.cu"),
    ],
)
def test_relative_to_root(path, root, uri):
    assert relative_to_root(path, root) == uri


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_default_source_root_is_the_git_top_level(tmp_path):
    repo = tmp_path / "repo"
    (repo / "sub" / "dir").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert Path(default_source_root(repo / "sub" / "dir")).resolve() == repo.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert default_source_root(plain) == str(plain)  # not in a repository: the directory itself


def test_source_root_forms_add_the_real_path_of_a_symlinked_root(tmp_path):
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    forms = source_root_forms(link)
    assert forms == [str(link), str(real.resolve())]
    files = [f"{real.resolve()}/src/k.cu", f"{link}/src/j.cu", "/elsewhere/x.cu", "./rel/y.cu"]
    assert repository_paths(files, forms) == {files[0]: "src/k.cu", files[1]: "src/j.cu", files[3]: "rel/y.cu"}
    assert source_root_forms(real) == [str(real)]


def test_rule_documentation_is_plain_data(analyzed, validator):
    """The renderer needs no rule object: a mapping per rule, found by its code or an old code (alias)."""
    result = analyzed("pipeline_v2")
    doc = {"code": "MEM999", "aliases": ["MEM001"], "slug": "uncoalesced-loads", "title": "Plain title"}
    doc["sections"] = {"summary": "Plain summary.", "What it detects": "Loads that waste sectors."}
    log = build_sarif(result, FIXTURE_SOURCE_ROOT, paths_of(result), [doc])
    validate(validator, log)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "MEM001" and rule["name"] == "UncoalescedLoads"
    assert rule["shortDescription"]["text"] == "Plain title"
    assert rule["help"]["text"].startswith("Plain summary.\n\nWhat it detects: Loads that waste sectors.")


def test_the_renderer_runs_no_command_and_reads_no_file():
    """Everything SARIF needs from the machine (the git top level, real paths) is looked up by the caller."""
    import ast

    from tests.test_layers import PKG

    for path in (PKG / "render").glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        modules |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not modules & {"os", "subprocess", "ncuadvisor.gitinfo", "ncuadvisor.rulekit.engine"}, path


@pytest.mark.slow
def test_cli_render_sarif_with_source_root(tmp_path, analyzed, validator):
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(analyzed("flaws")))
    out = tmp_path / "ncu.sarif"
    p = run_cli("render", saved, "-o", out, "--source-root", FIXTURE_SOURCE_ROOT, "-q")
    assert p.returncode == 0, p.stderr
    log = json.loads(out.read_text())
    validate(validator, log)
    assert any(
        r["locations"][0]["physicalLocation"]["artifactLocation"].get("uri") == "workloads/cuda/flaws.cu"
        for r in results_of(log)
    )
    p = run_cli("render", saved, "--format", "sarif", cwd=tmp_path)  # default root: tmp_path (no git): all absolute
    assert p.returncode == 0, p.stderr
    log = json.loads(p.stdout)
    validate(validator, log)
    assert all("uriBaseId" not in r["locations"][0]["physicalLocation"]["artifactLocation"] for r in results_of(log))


def test_a_relative_source_root_is_written_as_the_absolute_folder_it_names(tmp_path, analyzed, validator):
    """`--source-root .` once gave %SRCROOT% the URI "file://./" (a host named "."): it is the folder "." names."""
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(analyzed("flaws")))
    p = run_cli("render", saved, "--format", "sarif", "--source-root", ".", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    log = json.loads(p.stdout)
    validate(validator, log)
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_fixture_sources_exist_where_the_sarif_points():
    # the golden SARIF's relative paths name real files of this repository
    root = FIXTURES.parent
    for name in ("flaws.cu", "pipeline.cu"):
        assert (root / "workloads" / "cuda" / name).is_file()


def notifications_of(log: dict) -> list[dict]:
    return log["runs"][0]["invocations"][0]["toolExecutionNotifications"]


def test_findings_without_a_source_line_are_said_left_out(analyzed, docs, validator):
    """A training step's cuBLAS and ATen kernels carry no line tables: no result can be placed, and the log says
    how many findings it left out and on which kernels instead of giving 0 results silently."""
    result = analyzed("torch_train")
    log = sarif_of(result, docs)
    validate(validator, log)
    assert results_of(log) == []
    note = next(n for n in notifications_of(log) if n["descriptor"]["id"] == "findings-without-source-line")
    expected = sum(len({f["rule"] for f in k["findings"] if f["category"] != "at-roofline"}) for k in result["kernels"])
    assert expected > 0 and note["message"]["text"].startswith(f"{expected} findings on ")
    assert note["level"] == "warning" and "-lineinfo" in note["message"]["text"]
    # a log with results placed for every finding has no such note
    assert not [n for n in notifications_of(sarif_of(analyzed("pipeline_v1"), docs)) if "descriptor" in n]


def test_files_outside_the_source_root_are_said(analyzed, docs, validator):
    """Under the root the fixtures' sources were captured in, every result is relative to %SRCROOT%; under another
    root they stay absolute file URIs, and a notification says so and names --source-root."""
    result = analyzed("flaws")
    inside = sarif_of(result, docs)
    assert all(
        r["locations"][0]["physicalLocation"]["artifactLocation"].get("uriBaseId") == "%SRCROOT%"
        for r in results_of(inside)
    )
    assert not [n for n in notifications_of(inside) if n.get("descriptor", {}).get("id") == "files-outside-source-root"]
    elsewhere = sarif_of(result, docs, root="/srv/other")
    validate(validator, elsewhere)
    assert elsewhere["runs"][0]["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///srv/other/"}}
    note = next(n for n in notifications_of(elsewhere) if n["descriptor"]["id"] == "files-outside-source-root")
    n = len(results_of(elsewhere))
    assert note["message"]["text"].startswith(f"{n} results in 1 file outside the source root /srv/other")
    assert (
        "/work/main/workloads/cuda/flaws.cu" in note["message"]["text"] and "--source-root" in note["message"]["text"]
    )
