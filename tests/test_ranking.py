"""Where to start: one entry per kernel, follow-ups costed on the time left, nothing that saves ~0 ns."""

from __future__ import annotations

import pytest

from ncuadvisor.pipeline.ranking import top_actions
from ncuadvisor.result import KernelEntry, Result


def _kernel(kid: str, ns: float, *fixes: tuple[str, float]) -> KernelEntry:
    findings = [
        {"rule": rule, "category": "coalescing", "title": f"{rule} fix", "estimated_speedup": speedup}
        for rule, speedup in fixes
    ]
    entry = {"id": kid, "name": f"kernel_{kid}", "duration_ns": ns, "analysed_duration_ns": ns, "findings": findings}
    return KernelEntry.from_dict(entry)


def test_fixes_on_one_kernel_never_add_up_past_the_kernel():
    # a layout copy (-100%) and index arithmetic (-40%) on the same kernel: 140% if added
    k = _kernel("k0", 1000.0, ("ISU001", 0.4), ("PYT001", 1.0))
    (a,) = top_actions([k], 1000.0)
    assert a.rule == "PYT001" and a.estimated_saving_ns == pytest.approx(1000.0)
    assert "follow_ups" not in a.to_dict()  # nothing is left to save once the kernel is gone


def test_follow_ups_costed_on_the_time_left():
    # LOC001 (-71%) then LAT001 (-71%) on a 2.78 ms kernel: 3.95 ms if added, 2.64 ms compounded
    k = _kernel("k0", 2.78e6, ("LOC001", 0.71), ("LAT001", 0.71), ("ISU001", 0.2))
    other = _kernel("k1", 1e6, ("MEM001", 0.5))
    actions = top_actions([k, other], 3.78e6)
    assert [a.kernel_id for a in actions] == ["k0", "k1"]  # one entry per kernel
    head = actions[0]
    assert head.follow_ups is not None
    steps = [head.estimated_saving_ns] + [u.estimated_saving_ns for u in head.follow_ups]
    assert [u.rule for u in head.follow_ups] == ["LAT001", "ISU001"]
    assert steps[0] == pytest.approx(0.71 * 2.78e6)
    assert steps[1] == pytest.approx(0.71 * 0.29 * 2.78e6)
    assert sum(steps) == pytest.approx((1 - 0.29 * 0.29 * 0.8) * 2.78e6) and sum(steps) < 2.78e6
    data = {"top_actions": [a.to_dict() for a in actions]}
    assert Result.from_dict(data).top_actions == actions  # follow_ups read back through the result's types


def test_no_action_saving_about_nothing():
    big = _kernel("k0", 1e6, ("MEM001", 0.5))
    tiny = _kernel("k1", 500.0, ("MEM003", 0.5))  # 250 ns of a 1 ms program
    zero = _kernel("k2", 1e5, ("DIV001", 0.0))
    assert [a.kernel_id for a in top_actions([big, tiny, zero], 1.1e6)] == ["k0"]


def test_eager_copy_kernel_one_entry(analyzed):
    # torch_eager: the copy kernel has a layout copy (PYT001, -100%) and index arithmetic (ISU001)
    r = analyzed("torch_eager")
    ids = [a["kernel_id"] for a in r["top_actions"] if a["scope"] == "kernel"]
    assert len(ids) == len(set(ids))
    by_id = {k["id"]: k for k in r["kernels"]}
    for a in r["top_actions"]:
        if a["scope"] == "kernel":
            k = by_id[a["kernel_id"]]
            promised = a["estimated_saving_ns"] + sum(u["estimated_saving_ns"] for u in a.get("follow_ups") or [])
            assert promised <= k["duration_ns"] * (1 + 1e-9)
            assert a["estimated_saving_ns"] >= 0.001 * r["report"]["total_duration_ns"]


def test_entry_says_which_launches_its_saving_is_over(analyzed):
    # torch_eager: the copy kernel's layout copy is found on its own 4 launches and on its variant of 2; the entry's
    # saving sums both, so the entry speaks of all 6 launches and their time, and its title names no part's time
    r = analyzed("torch_eager")
    by_id = {k["id"]: k for k in r["kernels"]}
    (a,) = [a for a in r["top_actions"] if a["rule"] == "PYT001"]
    k = by_id[a["kernel_id"]]
    assert k["variants"] and any(f["rule"] == "PYT001" for f in k["variants"][0]["findings"])
    assert a["launches"] == k["launches"] == 6
    assert a["duration_ns"] == pytest.approx(k["duration_ns"])
    assert a["estimated_saving_ns"] == pytest.approx(a["duration_ns"])  # the copy disappears: all of its time
    assert "µs" not in a["title"]
    for a in r["top_actions"]:
        if a["scope"] == "kernel":
            assert a["estimated_saving_ns"] <= a["duration_ns"] * (1 + 1e-9)


def test_entry_on_one_size_covers_that_size_only():
    k = KernelEntry.from_dict(
        {
            "id": "k0",
            "name": "kernel_k0",
            "launches": 5,
            "duration_ns": 5000.0,
            "analysed_launches": 3,
            "analysed_duration_ns": 1000.0,
            "findings": [],
            "variants": [
                {
                    "launches": 2,
                    "duration_ns": 4000.0,
                    "findings": [{"rule": "MEM001", "category": "coalescing", "title": "t", "estimated_speedup": 0.5}],
                }
            ],
        }
    )
    (a,) = top_actions([k], 5000.0)
    assert (a.launches, a.duration_ns, a.estimated_saving_ns) == (2, 4000.0, 2000.0)


def test_a_kernels_time_is_spent_once_across_entries():
    """A cast that a kernel finding removes whole (PYT002, -100% of 95.9 µs) leaves nothing of that kernel for a
    fusion finding (PRG002) to claim; of a kernel a fix removes partly, the program finding gets what is left."""
    from ncuadvisor.result import ProgramFindingEntry

    cast = _kernel("k1", 95_900.0, ("PYT002", 1.0))
    copy = _kernel("k0", 500_000.0, ("PYT001", 0.2))
    fuse = ProgramFindingEntry(
        rule="PRG002",
        category="fusion",
        title="Fuse cast → copy",
        message="",
        fix="",
        kernel_ids=["k1", "k0"],
        estimated_saving_ns=46_300.0,
    )
    actions = {a.rule: a for a in top_actions([cast, copy], 595_900.0, [fuse])}
    assert actions["PYT002"].estimated_saving_ns == pytest.approx(95_900.0)
    assert actions["PYT001"].estimated_saving_ns == pytest.approx(100_000.0)
    # 400 µs of the copy are left: the fusion's 46.3 µs fit, and nothing is claimed twice in total
    assert actions["PRG002"].estimated_saving_ns == pytest.approx(46_300.0)
    assert sum(a.estimated_saving_ns for a in actions.values()) <= 595_900.0
    # the copy removed whole as well: the fusion has nothing left to save and is left out
    gone = _kernel("k0", 500_000.0, ("PYT001", 1.0))
    rules = [a.rule for a in top_actions([cast, gone], 595_900.0, [fuse])]
    assert rules == ["PYT001", "PYT002"]
    # launch overhead lies outside the kernels' GPU time: not capped by it
    launch = ProgramFindingEntry(
        rule="PRG004",
        category="launch-overhead",
        title="tiny launches",
        message="",
        fix="",
        kernel_ids=["k1"],
        estimated_saving_ns=20_000.0,
    )
    kept = {a.rule: a for a in top_actions([cast, gone], 595_900.0, [launch])}
    assert kept["PRG004"].estimated_saving_ns == pytest.approx(20_000.0)


def test_cast_and_copy_fixture_claims_no_kernel_twice(analyzed):
    """torch_cast_copy: PYT001 removes the transpose copy and PYT002 the cast; PRG002's fusion of the two claimed
    49 µs more of the same kernels before their time was spent once."""
    r = analyzed("torch_cast_copy")
    ns = {str(k["id"]): k["duration_ns"] for k in r["kernels"]}
    claimed: dict[str, float] = {}
    for a in r["top_actions"]:
        ids = a.get("kernel_ids") or [str(a["kernel_id"])]
        total = a["estimated_saving_ns"] + sum(f["estimated_saving_ns"] for f in a.get("follow_ups") or [])
        for i in ids:
            claimed[i] = claimed.get(i, 0.0) + total * ns[i] / sum(ns[j] for j in ids)
    assert all(claimed[i] <= ns[i] * 1.001 for i in claimed), (claimed, ns)
    assert "PRG002" not in [a["rule"] for a in r["top_actions"]]


def test_kernel_entries_keep_their_cards_saving_beside_a_larger_program_finding():
    """both.phase1's shape: a fusion over many kernels (PRG002, 24 µs) larger than the casts a kernel finding removes
    whole (PYT002, 15.5 µs): the cast's entry saves what its card says, the fusion gets the time left, and says so."""
    from ncuadvisor.pipeline.ranking import spent_program_findings
    from ncuadvisor.result import ProgramFindingEntry

    cast = _kernel("k1", 15_500.0, ("PYT002", 1.0))
    other = _kernel("k0", 14_000.0)
    fuse = ProgramFindingEntry(
        rule="PRG002",
        category="fusion",
        title="Fuse cast → reduce",
        message="",
        fix="",
        kernel_ids=["k1", "k0"],
        estimated_saving_ns=24_000.0,
    )
    actions = {a.rule: a for a in top_actions([cast, other], 29_500.0, [fuse])}
    assert actions["PYT002"].estimated_saving_ns == pytest.approx(15_500.0)
    assert actions["PRG002"].estimated_saving_ns == pytest.approx(14_000.0)
    (printed,) = spent_program_findings([cast, other], 29_500.0, [fuse])
    assert printed.estimated_saving_ns == pytest.approx(14_000.0)
    assert "Capped at 14.0 µs of the 24.0 µs modelled: PYT002 already claims the rest" in printed.saving_model
