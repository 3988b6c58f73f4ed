"""Rules firing and not firing on the probe fixture (three planted kernels and a compute-bound one)."""

from tests.conftest import kernel


def first(k):
    return k["findings"][0] if k["findings"] else None


def codes(k):
    return [f["rule"] for f in k["findings"]]


def test_uncoalesced_copy_gets_coalescing_first(analyzed):
    k = kernel(analyzed("probe"), "copy_strided")
    f = first(k)
    assert f["category"] == "coalescing" and f["rule"] == "MEM001"
    assert 0.5 < f["estimated_speedup"] < 1
    assert f["source"] and f["source"][0]["file"].endswith("probe.cu") and f["source"][0]["line"] == 14
    assert "in[r * cols + c]" in f["source"][0]["code"]


def test_bank_conflicts_named_with_line_and_nway(analyzed):
    k = kernel(analyzed("probe"), "transpose_conflict")
    f = first(k)
    assert f["category"] == "bank-conflicts"
    assert "32-way" in f["title"]
    assert f["source"][0]["line"] == 23 and f["source"][0]["sass"].startswith("LDS")
    assert "tile[32][33]" in f["fix_code"]
    assert "MEM003" not in codes(k)  # the low bandwidth is explained by the conflicts


def test_near_bound_kernels_are_left_alone(analyzed):
    for name in ("copy_vec4", "fma_loop"):
        k = kernel(analyzed("probe"), name)
        assert codes(k) == ["ROOF001"], (name, codes(k))
        assert k["findings"][0]["category"] == "at-roofline"


def test_rules_that_must_not_fire_on_a_good_copy(analyzed):
    k = kernel(analyzed("probe"), "copy_vec4")
    silent = {s["rule"] for s in k["suppressed"]} | set(codes(k))
    assert not silent & {"MEM001", "MEM002", "LCH001", "DIV001", "LOC001", "OCC001"}


def test_ncu_guidance_is_kept_separately(analyzed):
    k = kernel(analyzed("probe"), "transpose_conflict")
    ids = [r["rule"] for r in k["ncu_rules"]]
    assert "SharedMemoryConflicts" in ids
    assert all("@section:" not in r["message"] for r in k["ncu_rules"])
