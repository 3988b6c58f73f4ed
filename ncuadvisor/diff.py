"""Compare two analysis results (before, after): what got faster or slower, and which findings appeared or went away.

The diff is its own versioned, JSON-ready dict (`{"schema_version": 1, "kind": "diff", ...}`, shape below), computed
here from two result dicts (`ncuadvisor.analysis.pipeline.analyze`) and formatted by `ncuadvisor.render.diff_render`.

Matching kernels (never by position)
    1. by identity: demangled name + grid + block (the key `ncuadvisor.model.group_kernels` groups launches by);
    2. what is left, by demangled name alone; the entry says so (`"match": "name"` and a `match_note` naming the launch
       shapes on each side). When several launch shapes of one name are left on a side, they are compared as one
       (their times summed; bound and headroom of the largest).
    Everything else is `added` (only after) or `removed` (only before).

Several processes (`report.processes` of a report of `ncu --target-processes all`: torchrun ranks, workers)
    When both reports hold several processes, kernels are matched per process: the key above gets the process's
    rank when the report knows the rank of each of its processes (recorded by `ncuadvisor profile`), else the
    process's place in start order, 0 first: ascending pid, as Linux hands pids out in increasing order to the
    workers a launcher starts one after another (a pid wrap-around between two of them would swap them). Not the
    order of their first results: in fixtures/multigpu.ncu-rep.xz rank 1 was profiled first. Pids themselves differ
    from run to run and never match. Each entry then has `process` (its key, label "rank 1" or "process 1", and the
    pid on each side). When only one report has several processes, each kernel's results of all processes are
    compared as one (summed), and a warning says so.

Noise: what counts as a change
    A kernel (or the program total) is `regressed` or `improved` only when its time changed by more than
    max(threshold × time before, MIN_CHANGE_NS); otherwise it is `unchanged`, whatever the sign.

    The default threshold comes from ncu's run-to-run spread, measured on the fixtures (one H200, clocks not locked,
    `--clock-control none`; see fixtures/README.md):

    - `pipeline_v0` vs `pipeline_v0_rerun` (the same binary profiled twice): transpose_tile 328.19 → 327.33 µs
      (−0.26%), scale_add 231.74 → 232.54 µs (+0.35%), normalize_rows 128.58 → 128.83 µs (+0.20%); program total
      688.51 → 688.70 µs (+0.03%).
    - the kernels that no version changed, across `pipeline_v0`, `_v1` and `_v2` (separate runs): at most 0.62%
      (normalize_rows 128.58 → 129.38 µs, v0 → v1).
    - `tiny_phase1` (2000 launches of one 2.3 µs kernel): per launch 2.05 to 2.75 µs, p5–p95 2.18–2.50 µs, i.e. a
      short kernel moves by up to ~0.45 µs (+19%) between launches of the same run.

    DEFAULT_THRESHOLD = 5%: eight times the largest spread of the pipeline kernels (0.62%) and fourteen times the
    same-binary spread (0.35%), which leaves room for runs on other days, other machines of the same kind and
    thermals; real changes worth a review (the fixtures' 2.3× fix and 5.3× regression) are far above it.
    MIN_CHANGE_NS = 1 µs: an absolute floor, so that one launch of a few-µs kernel (±0.45 µs measured) is not called
    a regression for a 10% jitter.

Captures of different lengths: totals or per launch
    A kernel's time is the sum over its launches in the report, so a report of 1,010 launches of a model step is
    "slower" than one of 314 launches of the same binary. When the reports hold different numbers of results (by more
    than the threshold) and every kernel matched by identity has its launches scaled by about the same factor
    (within ±`COVERAGE_TOLERANCE` of the ratio of the results, or one launch on either side of where a capture was
    cut), and both hold at least `COVERAGE_MIN_RESULTS` results, the captures cover different lengths of one program:
    every matched kernel is then compared per launch (its time before × its launches after ÷ its launches before,
    against its time after) and the program total per result (before × results after ÷ results before), and a
    warning says so (`comparison.mode` "per-launch", `comparison.launch_scale` the ratio). Otherwise totals are
    compared (`comparison.mode` "total"), and a kernel whose launch count changed says so in its `launches_note`,
    with both per-launch times: a kernel launched twice as often by a change is a real regression.

Findings are compared by rule code per matched kernel: `new` (only after), `resolved` (only before), `unchanged`
(both). `at-roofline` verdicts are not findings here (a kernel reaching its bound is good news, shown as the kernel's
`at_roofline` flag). An added kernel's findings are new, a removed kernel's resolved. Program-level findings are
compared the same way.

Gate (`ncuadvisor diff --fail-on`): `regression` fails when any matched kernel or the program total regressed;
`findings` fails when any finding is new. `gate()` returns the reasons, empty when the gate passes.

Shape (schema_version 1):

    {"schema_version": 1, "kind": "diff", "generator", "created",
     "noise": {"threshold", "min_change_ns", "threshold_source": "default"|"option"},
     "before"/"after": {"name", "path", "ncu_version", "device", "kernels", "results", "total_duration_ns", "created"},
     "total": {"before_ns", "after_ns", "change_ns", "change", "status"},
     "process_match": "per-process"|"summed"|null (null: neither report has several processes),
     "kernels": [{"name", "demangled", "status": "regressed"|"improved"|"unchanged"|"added"|"removed",
                  "match": "identity"|"name"|null, "match_note", "change_ns", "change",
                  "process": {"key", "label", "before"/"after": {"pid", "rank"?} | null} (per-process matching only),
                  "before"/"after": {"ids", "launches", "grid", "block", "duration_ns", "per_launch_ns", "time_share",
                                     "bound", "headroom", "at_roofline"} | null,
                  "findings": {"new", "resolved", "unchanged": [{"rule", "category", "title", "estimated_speedup",
                               "estimated_saving_ns", "before_saving_ns", "fix", "location"}]}}],
     "program_findings": {"new", "resolved", "unchanged"},
     "summary": {"regressed", "improved", "unchanged", "added", "removed", "new_findings", "resolved_findings"},
     "comparison": {"mode": "total"|"per-launch", "launch_scale": float|null},
     "verdict": "regressed"|"improved"|"unchanged", "first_fix": {...}|null, "warnings": [...]}
    Kernel entries also have "launches_note" (str|null) and, in per-launch mode, "before_scaled_ns" (the time before
    at the launch count after, which change_ns and change are measured from)."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from ncuadvisor import __version__
from ncuadvisor.errors import InputError
from ncuadvisor.result import savings_by_rule, shape_tags
from ncuadvisor.units import finite, fmt_ns

SCHEMA_VERSION = 1
KIND = "diff"
DEFAULT_THRESHOLD = 0.05
MIN_CHANGE_NS = 1000.0
AT_ROOFLINE = "at-roofline"
STATUSES = ("regressed", "improved", "unchanged", "added", "removed")
FAIL_ON = ("regression", "findings")
COVERAGE_TOLERANCE = 0.25
COVERAGE_MIN_RESULTS = 20  # below, a launch more or less cannot tell a longer capture from a changed program


def parse_threshold(text: str | float | None) -> float:
    """'5%' -> 0.05, '0.05' -> 0.05, '2.5%' -> 0.025. A bare number above 1 is refused (write '5%')."""
    if text is None:
        return DEFAULT_THRESHOLD
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        raw = str(text).strip()
        m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*(%?)", raw)
        if not m:
            raise InputError(f"--threshold {raw!r}: write a percentage such as 5% (or a fraction such as 0.05)")
        value = float(m.group(1))
        if m.group(2):
            value /= 100.0
        elif value > 1:
            raise InputError(f"--threshold {raw!r}: a bare number is a fraction (0.05 = 5%); write {raw}% for percent")
    if not 0 <= value <= 10:
        raise InputError(f"--threshold {text!r}: out of range (0% to 1000%)")
    return value


# -- matching ----------------------------------------------------------------------------------------------------


def _identity(k: dict[str, Any]) -> tuple[str, str, str]:
    return (str(k.get("demangled") or k.get("name") or ""), str(k.get("grid") or ""), str(k.get("block") or ""))


def _dname(k: dict[str, Any]) -> str:
    return str(k.get("demangled") or k.get("name") or "")


class ProcessKeys(NamedTuple):
    """The process key of every pid of one report (its rank, or its place in start order) and whether they are ranks."""

    by_pid: dict[Any, int]
    ranks: bool

    def of(self, k: dict[str, Any]) -> int | None:
        return self.by_pid.get((k.get("process") or {}).get("pid"))


def process_keys(result: dict[str, Any]) -> ProcessKeys | None:
    """How a report's kernels are keyed per process (module docstring); None when it holds one process.

    Ranks only when every process has one and no two share it: a partial record would mix the two kinds of key."""
    procs = [p for p in (result.get("report") or {}).get("processes") or [] if isinstance(p, dict)]
    if len(procs) < 2:
        return None
    ranks = [p.get("rank") for p in procs]
    if all(isinstance(r, int) and not isinstance(r, bool) for r in ranks) and len(set(ranks)) == len(ranks):
        return ProcessKeys({p.get("pid"): p["rank"] for p in procs}, True)
    started = sorted(procs, key=lambda p: (finite(p.get("pid")) is None, finite(p.get("pid")) or 0.0))
    return ProcessKeys({p.get("pid"): i for i, p in enumerate(started)}, False)


_NO_PROCESS = ProcessKeys({}, False)  # every kernel keyed None: one group per kernel across processes


def match_kernels(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    before_keys: ProcessKeys = _NO_PROCESS,
    after_keys: ProcessKeys = _NO_PROCESS,
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]]:
    """Pairs (before group, after group, how): how is 'identity', 'name', or None (added or removed: one side empty).

    With process keys, a kernel only matches the same kernel of the same process key."""
    pairs: list[tuple[list[dict], list[dict], str | None]] = []
    b_by_id: dict[tuple, list[dict]] = {}
    a_by_id: dict[tuple, list[dict]] = {}
    for k in before:
        b_by_id.setdefault((before_keys.of(k), *_identity(k)), []).append(k)
    for k in after:
        a_by_id.setdefault((after_keys.of(k), *_identity(k)), []).append(k)
    left_b: list[dict] = []
    left_a: list[dict] = []
    for key, group in b_by_id.items():
        if key in a_by_id:
            pairs.append((group, a_by_id[key], "identity"))
        else:
            left_b.extend(group)
    for key, group in a_by_id.items():
        if key not in b_by_id:
            left_a.extend(group)
    b_by_name: dict[tuple, list[dict]] = {}
    a_by_name: dict[tuple, list[dict]] = {}
    for k in left_b:
        b_by_name.setdefault((before_keys.of(k), _dname(k)), []).append(k)
    for k in left_a:
        a_by_name.setdefault((after_keys.of(k), _dname(k)), []).append(k)
    for name, group in b_by_name.items():
        if name in a_by_name:
            pairs.append((group, a_by_name[name], "name"))
        else:
            pairs.append((group, [], None))
    for name, group in a_by_name.items():
        if name not in b_by_name:
            pairs.append(([], group, None))
    return pairs


# -- one side of a kernel entry -------------------------------------------------------------------------------------


_num = finite


def _is_at_roofline(k: dict[str, Any]) -> bool:
    return any(f.get("category") == AT_ROOFLINE for f in k.get("findings") or [])


def _side(group: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not group:
        return None
    main = max(group, key=lambda k: _num(k.get("duration_ns")) or 0.0)
    duration = sum(_num(k.get("duration_ns")) or 0.0 for k in group)
    launches = sum(int(_num(k.get("launches")) or 0) for k in group)
    return {
        "ids": [k.get("id") for k in group],
        "launches": launches,
        "grid": main.get("grid"),
        "block": main.get("block"),
        "shapes": [f"grid {k.get('grid')} block {k.get('block')}" for k in group] if len(group) > 1 else [],
        "duration_ns": duration,
        "per_launch_ns": duration / launches if launches else None,
        "time_share": sum(_num(k.get("time_share")) or 0.0 for k in group),
        "bound": main.get("bound"),
        "headroom": _num(main.get("headroom")),
        "at_roofline": all(_is_at_roofline(k) for k in group),
    }


def _location(f: dict[str, Any]) -> str | None:
    for s in f.get("source") or []:
        if s.get("file") and s.get("line") is not None:
            return f"{s['file']}:{s['line']}"
    return None


def _brief(f: dict[str, Any], saving_ns: float) -> dict[str, Any]:
    return {
        "rule": f.get("rule"),
        "category": f.get("category"),
        "title": f.get("title"),
        "estimated_speedup": _num(f.get("estimated_speedup")) or 0.0,
        "estimated_saving_ns": saving_ns,
        "fix": f.get("fix"),
        "location": _location(f),
    }


def _findings_of(group: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rule code -> brief (the largest saving where a rule fires on several shapes), at-roofline left out."""
    out: dict[str, dict[str, Any]] = {}
    for k in group:
        # one rule's savings over the sizes of one kernel (its own launches and its variants') add up
        for code, (f, saving, _) in savings_by_rule(k).items():
            prev = out.get(code)
            if prev is None or saving > prev["estimated_saving_ns"]:
                out[code] = _brief(f, saving)
    return out


def _compare_findings(before: dict[str, dict], after: dict[str, dict]) -> dict[str, list[dict[str, Any]]]:
    new = [after[c] for c in after if c not in before]
    resolved = [before[c] for c in before if c not in after]
    unchanged = [dict(after[c], before_saving_ns=before[c]["estimated_saving_ns"]) for c in after if c in before]
    key = lambda b: -(b.get("estimated_saving_ns") or 0.0)  # noqa: E731
    return {"new": sorted(new, key=key), "resolved": sorted(resolved, key=key), "unchanged": sorted(unchanged, key=key)}


def classify(before_ns: float | None, after_ns: float | None, threshold: float, min_change_ns: float) -> str:
    if before_ns is None and after_ns is None:
        return "unchanged"
    if before_ns is None:
        return "added"
    if after_ns is None:
        return "removed"
    delta = after_ns - before_ns
    if abs(delta) <= max(threshold * before_ns, min_change_ns):
        return "unchanged"
    return "regressed" if delta > 0 else "improved"


def _shape(side: dict[str, Any] | None) -> str:
    if not side:
        return "–"
    if side["shapes"]:
        return "; ".join(side["shapes"])
    return f"grid {side['grid']} block {side['block']}"


def _process_entry(bgroup: list[dict], agroup: list[dict], bkeys: ProcessKeys, akeys: ProcessKeys) -> dict[str, Any]:
    """The process of a per-process entry: its key, its label ("rank 1" when a side knows the rank, else "process 1",
    the place in start order) and the pid (and rank) on each side."""
    key = bkeys.of(bgroup[0]) if bgroup else akeys.of(agroup[0])
    ranked = bool(bgroup and bkeys.ranks) or bool(agroup and akeys.ranks)
    entry: dict[str, Any] = {"key": key, "label": f"{'rank' if ranked else 'process'} {'?' if key is None else key}"}
    for side, group in (("before", bgroup), ("after", agroup)):
        proc = (group[0].get("process") or {}) if group else None
        entry[side] = None if proc is None else {f: proc[f] for f in ("pid", "rank") if f in proc}
    return entry


def _kernel_entry(
    bgroup: list[dict],
    agroup: list[dict],
    how: str | None,
    threshold: float,
    min_change_ns: float,
    process: dict[str, Any] | None = None,
    per_launch: bool = False,
) -> dict[str, Any]:
    b, a = _side(bgroup), _side(agroup)
    ref = (agroup or bgroup)[0]
    b_ns = b["duration_ns"] if b else None
    a_ns = a["duration_ns"] if a else None
    launches_note, scaled = None, None
    if b and a and b["launches"] and a["launches"] and b["launches"] != a["launches"]:
        launches_note = (
            f"launches {b['launches']} → {a['launches']}; per launch {_ns(b['per_launch_ns'])} → "
            f"{_ns(a['per_launch_ns'])} ({_pct(a['per_launch_ns'] / b['per_launch_ns'] - 1)})"
            if b["per_launch_ns"]
            else f"launches {b['launches']} → {a['launches']}"
        )
        if per_launch and b_ns is not None:
            scaled = b_ns * a["launches"] / b["launches"]
            launches_note += ": compared per launch"
        else:
            launches_note += ": the times above are totals over each side's launches"
    ref_ns = scaled if scaled is not None else b_ns
    status = classify(ref_ns, a_ns, threshold, min_change_ns)
    note = None
    if how == "name":
        note = f"matched by name alone: the launch shape changed ({_shape(b)} before, {_shape(a)} after)"
    elif how == "identity" and (len(bgroup) > 1 or len(agroup) > 1):
        note = "several results share this name and launch shape; compared as one"
    change_ns = (a_ns or 0.0) - (ref_ns or 0.0)
    entry = {
        "name": ref.get("name") or ref.get("demangled"),
        "demangled": _dname(ref),
        "status": status,
        "match": how,
        "match_note": note,
        "change_ns": change_ns,
        "change": change_ns / ref_ns if (ref_ns and a_ns is not None) else None,
        "launches_note": launches_note,
        "before": b,
        "after": a,
        "findings": _compare_findings(_findings_of(bgroup), _findings_of(agroup)),
    }
    if scaled is not None:
        entry["before_scaled_ns"] = scaled
    if process is not None:
        entry["process"] = process
    return entry


def coverage_scale(
    pairs: list[tuple[list[dict], list[dict], str | None]],
    before: dict[str, Any],
    after: dict[str, Any],
    threshold: float,
) -> float | None:
    """results after ÷ results before when the two captures cover different lengths of one program (every kernel
    matched by identity has its launches scaled by that ratio, within ±COVERAGE_TOLERANCE or one launch on each side
    of the capture's cut); None otherwise."""
    rb, ra = _num(before.get("results")), _num(after.get("results"))
    if not rb or not ra or min(rb, ra) < COVERAGE_MIN_RESULTS or abs(ra / rb - 1) <= threshold:
        return None
    ratio = ra / rb
    seen = 0
    for bg, ag, how in pairs:
        if how != "identity":
            continue
        b, a = _side(bg), _side(ag)
        if not b or not a or not b["launches"] or not a["launches"]:
            return None
        expected = b["launches"] * ratio  # a capture cut mid-step can miss one launch of a kernel on either side
        if abs(a["launches"] - expected) > max(COVERAGE_TOLERANCE * expected, ratio + 1):
            return None
        seen += 1
    return ratio if seen else None


# -- the diff ----------------------------------------------------------------------------------------------------


def _meta(result: dict[str, Any]) -> dict[str, Any]:
    rep = result.get("report") or {}
    dev = rep.get("device") or {}
    return {
        "name": rep.get("name"),
        "path": rep.get("path"),
        "ncu_version": rep.get("ncu_version"),
        "device": dev.get("name") if isinstance(dev, dict) else dev,
        "kernels": len(result.get("kernels") or []),
        "results": rep.get("results"),
        "total_duration_ns": _total(result),
        "created": result.get("created"),
        "warnings": list(rep.get("warnings") or []),
    }


def _total(result: dict[str, Any]) -> float:
    total = _num((result.get("report") or {}).get("total_duration_ns"))
    if total is None:
        total = sum(_num(k.get("duration_ns")) or 0.0 for k in result.get("kernels") or [])
    return total


def _process_count(result: dict[str, Any]) -> int:
    """The processes of a report: `report.processes` lists them only when there are several."""
    return max(1, len((result.get("report") or {}).get("processes") or []))


def _program_findings(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for p in result.get("program_findings") or []:
        code = p.get("rule")
        if not code:
            continue
        saving = _num(p.get("estimated_saving_ns")) or 0.0
        if code not in out or saving > out[code]["estimated_saving_ns"]:
            out[code] = {
                "rule": code,
                "category": p.get("category"),
                "title": p.get("title"),
                "estimated_speedup": None,
                "estimated_saving_ns": saving,
                "fix": p.get("fix"),
                "location": None,
                "kernels": list(p.get("kernels") or [])[:5],
            }
    return out


def _sort_key(e: dict[str, Any]) -> tuple:
    size = max((e["before"] or {}).get("duration_ns") or 0.0, (e["after"] or {}).get("duration_ns") or 0.0)
    if e["status"] == "unchanged":
        return (1, -size)
    return (0, -abs(e["change_ns"]), -size)


def diff_results(
    before: dict[str, Any],
    after: dict[str, Any],
    threshold: float | None = None,
    min_change_ns: float = MIN_CHANGE_NS,
) -> dict[str, Any]:
    """The diff dict of two result dicts (see the module docstring)."""
    source = "default" if threshold is None else "option"
    threshold = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    bkeys, akeys = process_keys(before), process_keys(after)
    per_process = bkeys is not None and akeys is not None
    b_kernels, a_kernels = list(before.get("kernels") or []), list(after.get("kernels") or [])
    pairs = match_kernels(b_kernels, a_kernels, bkeys, akeys) if per_process else match_kernels(b_kernels, a_kernels)
    mb, ma = _meta(before), _meta(after)
    scale = coverage_scale(pairs, mb, ma, threshold)
    kernels = [
        _kernel_entry(
            bg,
            ag,
            how,
            threshold,
            min_change_ns,
            _process_entry(bg, ag, bkeys, akeys) if per_process else None,
            per_launch=scale is not None,
        )
        for bg, ag, how in pairs
    ]
    kernels.sort(key=_sort_key)
    b_total, a_total = _total(before), _total(after)
    b_ref = b_total * scale if scale is not None else b_total
    total_change = a_total - b_ref
    total_status = classify(b_ref, a_total, threshold, min_change_ns)
    summary = {s: sum(1 for k in kernels if k["status"] == s) for s in STATUSES}
    program = _compare_findings(_program_findings(before), _program_findings(after))
    summary["new_findings"] = sum(len(k["findings"]["new"]) for k in kernels) + len(program["new"])
    summary["resolved_findings"] = sum(len(k["findings"]["resolved"]) for k in kernels) + len(program["resolved"])
    summary["name_matches"] = sum(1 for k in kernels if k["match"] == "name")

    warnings: list[str] = []
    if scale is not None:
        warnings.append(
            f"before holds {mb['results']} results, after {ma['results']}, and every kernel's launches scale alike "
            f"(×{scale:.2f}): the captures cover different lengths of the same program, so kernels are compared per "
            "launch and the program total per result"
        )
    elif (
        mb["results"] and ma["results"] and mb["results"] != ma["results"] and any(k["launches_note"] for k in kernels)
    ):
        warnings.append(
            f"before holds {mb['results']} results, after {ma['results']}: kernels whose launch count changed are "
            "compared on their total time (a change that launches a kernel more often costs time); their per-launch "
            "times are in the details"
        )
    if mb["device"] and ma["device"] and mb["device"] != ma["device"]:
        warnings.append(
            f"the reports come from different GPUs ({mb['device']} before, {ma['device']} after): "
            "their times are not comparable"
        )
    if per_process:
        process_match = "per-process"
        unranked = [side for side, keys in (("before", bkeys), ("after", akeys)) if not keys.ranks]
        if unranked:
            warnings.append(
                f"ranks not recorded for {' and '.join(unranked)} (`ncuadvisor profile` records them): processes "
                "matched by start order, lowest pid first (process 0, 1, …)"
            )
    elif bkeys is not None or akeys is not None:
        process_match = "summed"
        n_before, n_after = _process_count(before), _process_count(after)
        warnings.append(
            f"{n_before} process{'es' if n_before != 1 else ''} before, {n_after} after: each kernel's time is summed "
            "over all processes, not compared per rank"
        )
    else:
        process_match = None
    if summary["name_matches"]:
        warnings.append(
            f"{summary['name_matches']} kernel(s) matched by name alone because their launch shape changed: "
            "a different grid or block changes the work per launch"
        )
    if kernels and all(k["status"] in ("added", "removed") for k in kernels):
        warnings.append("no kernel of one report appears in the other: are these two versions of the same program?")

    regressed = summary["regressed"] > 0 or total_status == "regressed"
    if regressed:
        verdict = "regressed"
    elif total_status == "improved" or summary["improved"] > 0:
        verdict = "improved"
    else:
        verdict = "unchanged"

    actions = after.get("top_actions") or []
    first_fix = dict(actions[0]) if actions else None
    if first_fix is not None and first_fix.get("scope") != "program":
        first_fix["kernel_shape"] = shape_tags(after).get(str(first_fix.get("kernel_id"))) or None
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "generator": {"name": "ncuadvisor", "version": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "noise": {"threshold": threshold, "min_change_ns": min_change_ns, "threshold_source": source},
        "before": mb,
        "after": ma,
        "total": {
            "before_ns": b_total,
            "after_ns": a_total,
            "change_ns": total_change,
            "change": total_change / b_ref if b_ref else None,
            "status": total_status,
            **({"before_scaled_ns": b_ref} if scale is not None else {}),
        },
        "comparison": {"mode": "per-launch" if scale is not None else "total", "launch_scale": scale},
        "process_match": process_match,
        "kernels": kernels,
        "program_findings": program,
        "summary": summary,
        "verdict": verdict,
        "first_fix": first_fix,
        "warnings": warnings,
    }


def gate(diff: dict[str, Any], fail_on: str | None) -> list[str]:
    """Why `--fail-on` fails (one short reason per offender, worst first); empty when it passes or fail_on is None."""
    if not fail_on:
        return []
    if fail_on not in FAIL_ON:
        raise InputError(f"--fail-on {fail_on!r}: one of {', '.join(FAIL_ON)}")
    reasons: list[str] = []
    if fail_on == "regression":
        t = diff.get("total") or {}
        if t.get("status") == "regressed":
            before_after = f"{_ns(t.get('before_ns'))} → {_ns(t.get('after_ns'))}"
            reasons.append(f"program total {_pct(t.get('change'))} ({before_after})")
        for k in diff.get("kernels") or []:
            if k.get("status") == "regressed":
                b_ns = (k.get("before") or {}).get("duration_ns")
                a_ns = (k.get("after") or {}).get("duration_ns")
                reasons.append(f"{_kernel_label(k)} {_pct(k.get('change'))} ({_ns(b_ns)} → {_ns(a_ns)})")
    else:
        for k in diff.get("kernels") or []:
            for f in (k.get("findings") or {}).get("new") or []:
                reasons.append(f"new {f.get('rule')} in {_kernel_label(k)}: {f.get('title')}")
        for f in (diff.get("program_findings") or {}).get("new") or []:
            reasons.append(f"new {f.get('rule')} (program-wide): {f.get('title')}")
    return reasons


def _kernel_label(k: dict[str, Any]) -> str:
    """A diff entry's kernel name, with its process when matched per process: "scale_add (rank 1)"."""
    label = (k.get("process") or {}).get("label")
    return f"{k.get('name')} ({label})" if label else str(k.get("name"))


def _ns(ns: Any) -> str:
    return fmt_ns(_num(ns), seconds=False)


def _pct(x: Any) -> str:
    x = _num(x)
    return "–" if x is None else f"{x * 100:+.1f}%"


def kernels_with_status(diff: dict[str, Any], statuses: Iterable[str]) -> list[dict[str, Any]]:
    wanted = set(statuses)
    return [k for k in diff.get("kernels") or [] if k.get("status") in wanted]
