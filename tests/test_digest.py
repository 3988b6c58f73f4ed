"""The digest (`--format digest`, `--format digest-json`): within its budget on every report fixture and on the
1,010-result capture, carrying the JSON's first finding and estimate per kernel, saying what it left out."""

import json
import subprocess
import sys

import pytest

from ncuadvisor.render.digest import (
    DIGEST_VERSION,
    KERNEL_BUDGET,
    REPORT_BUDGET,
    digest_data,
    digest_json,
    digest_text,
)
from tests.conftest import FIXTURES

BIG = "model_step_1010"
# every report fixture at the top of fixtures/ (the 1,010-result capture is the slow case below)
REPORTS = sorted(
    p.name.removesuffix(".ncu-rep.xz") for p in FIXTURES.glob("*.ncu-rep.xz") if not p.name.startswith(BIG)
)


def _sizes(data: dict) -> tuple[int, int]:
    return len(digest_text(data)), len(digest_json(data))


def _check(result) -> None:
    """The budget and the first finding of each kernel, in the report's digest and in each kernel's own."""
    as_json = json.loads(json.dumps(result.to_dict()))
    by_id = {k["id"]: k for k in as_json["kernels"]}
    data = digest_data(result)
    assert data["digest_version"] == DIGEST_VERSION
    assert max(_sizes(data)) <= REPORT_BUDGET, _sizes(data)
    shown = data["kernel_digests"]
    assert [d["id"] for d in shown] == [k["id"] for k in as_json["kernels"][: len(shown)]]
    for kd in shown:
        part = {**{k: v for k, v in data.items() if k not in ("where_to_start", "kernel_digests", "left_out")}}
        assert max(_sizes({**part, "kernel_digests": [kd]})) <= KERNEL_BUDGET
    for entry in result.kernels:
        one = digest_data(result, kernel=entry)
        assert max(_sizes(one)) <= KERNEL_BUDGET, (entry.id, _sizes(one))
        kds = [d for d in shown if d["id"] == entry.id] + one["kernel_digests"]
        want = by_id[entry.id]["findings"]
        for kd in kds:
            if not want:
                assert kd["findings"] == []
                continue
            first = kd["findings"][0]
            assert first["rule"] == want[0]["rule"]
            assert first["saving"] == round(want[0]["estimated_speedup"], 3)
    left = data["left_out"]
    assert left["kernels"] == len(result.kernels) - len(shown)
    if left["kernels"]:
        assert "left out:" in digest_text(data) and "--kernel NAME --format digest" in digest_text(data)


@pytest.mark.parametrize("name", REPORTS)
def test_budget_and_first_findings(typed, name):
    _check(typed(name))


@pytest.mark.slow
def test_budget_on_the_1010_result_capture(typed):
    _check(typed(BIG))


def test_where_to_start_entries_carry_the_change_and_the_line(typed):
    result = typed("flaws")
    data = digest_data(result)
    first, action = data["where_to_start"][0], result.top_actions[0]
    assert (first["kernel_id"], first["rule"]) == (action.kernel_id, action.rule)
    assert first["saving_ns"] == round(action.estimated_saving_ns)
    kernel = result.kernel(action.kernel_id)
    finding = next(f for f in kernel.findings if f.rule == action.rule)
    assert first["change"].rstrip("…") in " ".join(finding.fix.split())
    assert first["at"] == finding.location.rsplit("/", 1)[-1]
    assert first["share"] == round(kernel.time_share, 4)
    # the kernel part does not repeat the change the entry gives
    kd = next(d for d in data["kernel_digests"] if d["id"] == action.kernel_id)
    assert kd["findings"][0]["change"] is None and kd["findings"][0]["in_where_to_start"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ncuadvisor", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_command_line_digest_and_one_kernel(report_path):
    path = str(report_path("flaws"))
    p = _cli("report", path, "--format", "digest")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"ncuadvisor digest {DIGEST_VERSION} | ")
    assert len(p.stdout) <= REPORT_BUDGET
    p = _cli("report", path, "--format", "digest-json", "--kernel", "transpose_naive")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert [d["name"] for d in data["kernel_digests"]] == ["transpose_naive"]
    assert data["kernel_digests"][0]["findings"][0]["rule"] == "MEM001"
    p = _cli("report", path, "--format", "digest", "--kernel", "transpose")  # three kernels have it in their name
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "ambiguous" in p.stderr and "k8: transpose_naive" in p.stderr
    p = _cli("report", path, "--format", "html", "--kernel", "k8")
    assert p.returncode == 2 and "--kernel needs --format json, digest, digest-json" in p.stderr


def test_program_findings_say_what_must_move(typed):
    """A program finding's "where to start" entry carries its change and the launches its fix must remove (PRG002's
    chain mul -> masked_fill on the eager step: 4 launches, at most 2 after), and one kernel's digest names the program
    findings of that kernel with the same counters; both forms and their budgets hold them."""
    result = typed("torch_eager")
    chain = next(p for p in result.program_findings if p.rule == "PRG002")
    (p,) = chain.predicts
    data = digest_data(result)
    entry = next(a for a in data["where_to_start"] if a["rule"] == "PRG002")
    assert entry["change"].rstrip("…") in " ".join(chain.fix.split())
    assert entry["must_move"] == [f"launches of the kernels it names {p.current:.0f} -> <= {p.bound:.0f}"]
    assert entry["must_move"] == ["launches of the kernels it names 4 -> <= 2"]
    assert "| must move: launches of the kernels it names 4 -> <= 2" in digest_text(data)
    assert json.loads(digest_json(data))["where_to_start"] == data["where_to_start"]
    # a kernel finding's entry carries no program counters
    assert all("must_move" not in a for a in data["where_to_start"] if a["rule"] != "PRG002")
    for kid in chain.kernel_ids:
        one = digest_data(result, kernel=result.kernel(kid))
        (pf,) = one["kernel_digests"][0]["program_findings"]
        assert (pf["rule"], pf["must_move"]) == ("PRG002", entry["must_move"])
        assert "  program: PRG002 " in digest_text(one) and max(_sizes(one)) <= KERNEL_BUDGET
    # a kernel no program finding names has none
    other = next(k for k in result.kernels if all(k.id not in q.kernel_ids for q in result.program_findings))
    assert digest_data(result, kernel=other)["kernel_digests"][0]["program_findings"] == []


def test_the_foreach_optimizer_predicts_its_launches_in_the_digest(typed):
    """PYT003 on the training step: the optimizer's 8 foreach launches, at most 4 after fused=True."""
    result = typed("torch_train")
    entry = next(a for a in digest_data(result)["where_to_start"] if a["rule"] == "PYT003")
    assert entry["must_move"] == ["launches of the kernels it names 8 -> <= 4"]
    assert entry["change"].startswith("Construct the optimizer with fused=True")
