"""Compare two analysis results (before, after): what got faster or slower, and which findings appeared or went away.

The diff is its own versioned result (`DiffResult`, `{"schema_version": 1, "kind": "diff", ...}` as JSON, shape below),
computed from two results (`ncuadvisor.result.Result`) by `compare` and formatted by `ncuadvisor.render.diff_render`:
`match` pairs the kernels of the two sides, `compare` measures each pair and the total, `gate` is `--fail-on`.
The package is `comparison`, not `diff`: `ncuadvisor.diff` is the Python API's function (`ncuadvisor.api.diff`), and a
submodule of that name would take its place on the package once imported.

Matching kernels (never by position)
    1. by identity: demangled name + grid + block (the key `ncuadvisor.model.group_kernels` groups launches by);
    2. what is left, by demangled name alone; the entry says so (`"match": "name"` and a `match_note` naming the launch
       shapes on each side). When several launch shapes of one name are left on a side, they are compared as one
       (their times summed; bound and headroom of the largest).
    3. what is still left, by role: a kernel whose name changed (a library that picks another kernel once TF32 is
       allowed, a rewrite under a new name) pairs with one that ran in the same place (the same NVTX range; the same
       Python line and ATen op where both sides record them) on the same problem (FLOPs executed within
       `match.ROLE_FLOP_TOLERANCE`; below `match.ROLE_MIN_FLOPS`, the same grid and block and compulsory bytes);
       each kernel pairs once, as many as can be, then the nearest in work, then in launch order (an optimal
       assignment: `match.assign`). The entry
       says so (`"match": "role"`, a `match_note` naming the old name, the place and the work) and its findings'
       predictions are checked as for any pair.
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

Shape (schema_version 1; the dataclasses of `ncuadvisor.comparison.types`, the JSON Schema
`ncuadvisor/saved/schema/diff-v1.schema.json`):

    {"schema_version": 1, "kind": "diff", "generator", "created",
     "noise": {"threshold", "min_change_ns", "threshold_source": "default"|"option"},
     "before"/"after": {"name", "path", "ncu_version", "device", "kernels", "results", "total_duration_ns", "created"},
     "total": {"before_ns", "after_ns", "change_ns", "change", "status"},
     "process_match": "per-process"|"summed"|null (null: neither report has several processes),
     "kernels": [{"name", "demangled", "status": "regressed"|"improved"|"unchanged"|"added"|"removed",
                  "match": "identity"|"name"|"role"|null, "match_note", "change_ns", "change",
                  "process": {"key", "label", "before"/"after": {"pid", "rank"?} | null} (per-process matching only),
                  "before"/"after": {"ids", "launches", "grid", "block", "duration_ns", "per_launch_ns", "time_share",
                                     "bound", "headroom", "at_roofline"} | null,
                  "findings": {"new", "resolved", "unchanged": [{"rule", "category", "title", "estimated_speedup",
                               "estimated_saving_ns", "before_saving_ns", "fix", "location"}]}}],
     "program_findings": {"new", "resolved", "unchanged"},
     "summary": {"regressed", "improved", "unchanged", "added", "removed", "new_findings", "resolved_findings"},
     "comparison": {"mode": "total"|"per-launch", "launch_scale": float|null},
     "verdict": "regressed"|"improved"|"unchanged", "first_fix": {...}|null, "warnings": [...]}
    Each matched or removed kernel has "counter_checks" (its findings' predictions checked after the change:
    `diff.checks`), and the diff "program_counter_checks" (the program findings' `kernel_launches`), when any.
    Kernel entries also have "launches_note" (str|null) and, in per-launch mode, "before_scaled_ns" (the time before
    at the launch count after, which change_ns and change are measured from)."""

from ncuadvisor.comparison.compare import (
    AT_ROOFLINE,
    COVERAGE_MIN_RESULTS,
    COVERAGE_TOLERANCE,
    DEFAULT_THRESHOLD,
    MIN_CHANGE_NS,
    STATUSES,
    classify,
    compare,
    diff_results,
)
from ncuadvisor.comparison.gate import FAIL_ON, gate, parse_threshold
from ncuadvisor.comparison.match import match_kernels, process_keys
from ncuadvisor.comparison.types import KIND, SCHEMA_VERSION, DiffResult

__all__ = [
    "AT_ROOFLINE",
    "COVERAGE_MIN_RESULTS",
    "COVERAGE_TOLERANCE",
    "DEFAULT_THRESHOLD",
    "FAIL_ON",
    "KIND",
    "MIN_CHANGE_NS",
    "SCHEMA_VERSION",
    "STATUSES",
    "DiffResult",
    "classify",
    "compare",
    "diff_results",
    "gate",
    "match_kernels",
    "parse_threshold",
    "process_keys",
]
