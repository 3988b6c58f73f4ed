"""What `ncuadvisor profile` costs against a naive `ncu --set full` on every launch, and whether it finds the same things.

Side by side, measured (since 2026-12-05; what the cost figures are quoted from):

    python3 benchmarks/profile_cost.py measure --name NAME --out OUT [--nvtx-include RANGE] -- PROGRAM [ARGS]
    python3 benchmarks/profile_cost.py table OUT/cost_NAME.json [more]

`measure` runs, one after the other and all for real, the plain program, `ncuadvisor profile`, `ncu --clock-control
none --set full --import-source yes` on EVERY launch of the range, and `ncuadvisor report` on that capture; it writes
OUT/cost_NAME.json (wall seconds of each, the range's launches, launches profiled and replay passes per launch from
ncu's log, GPU, driver, ncu version, date), both results (profile_NAME.json.xz, full_NAME.json.xz) and the logs. A
full set that cannot fit the budget is skipped, never estimated. `table` prints the times, launches, passes and
ratios, and the agreement (first finding per kernel on those holding 90% of the time; the program findings); it
refuses, in one line and exit code 2, a run whose full set did not profile every launch of the range.
The device scripts benchmarks/device/cost_*.sh run `measure` on one program each, in one device call.

The older run below (no subcommand) extrapolates the full set when it does not fit; its figures are superseded:

One run on the GPU machine, on the PyTorch eager forward step (workloads/torch/transformer_step.py --mode eager
--steps 3, the measured step inside the NVTX range "step"), the training step (--train: the process-wide range
"step_all_threads", since autograd launches the backward from another thread), or a CUDA program (--binary: the
executable and --binary-args, every launch, no NVTX range):

1. the plain run (no profiler);
2. `ncuadvisor profile` with its defaults (phase 1 on every launch in the range, phase 2 on the kernels covering 90%
   of the GPU time), `--nvtx-range step`;
3. the naive way: `ncu --clock-control none --set full --import-source yes --nvtx --nvtx-include step/` on every
   launch in the range, when that fits in the time budget (--budget-s). When it does not (`--naive auto`), the full
   set runs on the launches phase 2 profiled (`--naive same-launches`: the chosen kernels' mangled names, the first
   launch of each launch configuration), and that report is analysed exactly as phase 2's is (merged with our
   phase-1 report: the same time shares, program rules on every launch), so the two collections are compared on
   the same launches; the cost of every launch is extrapolated from its seconds per launch (the median gap between
   ncu's progress lines) plus the plain run for the program's start-up. When the full run fails or is skipped
   (`--naive none`), it is estimated from phase 2's seconds per launch × (the full set's passes ÷ phase 2's), which
   underestimates (2026-12-01 training step: 372 s against 494–509 s from measured full-set launches: a pass of the
   full set costs more than one of the declared collection). `--naive first` keeps the older way: the first C
   launches (`--launch-count C`), extrapolated.

Then, for the kernels that hold 90% of the GPU time (phase 1's ranking), the first finding of each kernel in the two
reports. Prints a table and writes JSON (--json).

    python3 benchmarks/profile_cost.py --out /tmp/pc --json /tmp/pc/profile_cost.json [--budget-s 420] [--train]
    python3 benchmarks/profile_cost.py --binary /tmp/model_step --binary-args "--steps 2" --out /tmp/pcc  # CUDA
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ROOT / "workloads" / "torch" / "transformer_step.py"
WORKLOAD_ARGS = ["--mode", "eager", "--steps", "3"]
NVTX = "step"
CLI = "from ncuadvisor.cli import main; main()"
FULL_S_PER_KERNEL = 2.4  # estimate for planning only (NCU-FACTS: ~2 s per kernel with the full set)


def sh(cmd: list[str], timeout: float | None = None, env: dict | None = None, log: Path | None = None) -> dict:
    """Run; wall time, exit code, output; progress-line timestamps (for ncu)."""
    t0 = time.monotonic()
    stamps: list[float] = []
    lines: list[str] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1)
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(timeout, kill) if timeout else None
    if timer:
        timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("==PROF== Profiling"):
                stamps.append(time.monotonic() - t0)
            lines.append(line)
        rc = proc.wait()
    finally:
        if timer:
            timer.cancel()
    timed_out = killed.is_set()
    wall = time.monotonic() - t0
    if log:
        log.write_text("".join(lines))
    return {
        "cmd": cmd,
        "rc": rc,
        "wall_s": round(wall, 2),
        "timed_out": timed_out,
        "stamps": stamps,
        "tail": "".join(lines[-15:]),
    }


def versions() -> dict:
    def out(cmd):
        try:
            return " ".join(subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.split())
        except Exception as exc:  # noqa: BLE001
            return f"unavailable ({exc})"

    info = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": out(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"]
        ),
        "ncu": out(["ncu", "--version"]),
        "python": sys.version.split()[0],
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except Exception as exc:  # noqa: BLE001
        info["torch"] = f"unavailable ({exc})"
    return info


def first_rule(k: dict | None) -> str:
    if not k:
        return "(absent)"
    f = k.get("findings") or []
    return f[0]["rule"] if f else "(none)"


def top_findings(k: dict | None, n: int = 3) -> list[str]:
    """'RULE −NN%' for the first n findings: how close the first one was to the second."""
    return [f"{f['rule']} −{f.get('estimated_speedup') or 0:.0%}" for f in ((k or {}).get("findings") or [])[:n]]


def compare(
    ours: dict, naive: dict | None, share: float = 0.9, naive_first: dict | None = None, launches: dict | None = None
) -> list[dict]:
    """The first finding of each kernel holding `share` of the GPU time: ours against the naive report's, analysed
    on its median launch (what `ncuadvisor report` does) and, when given, on its first launch (the launch `profile`
    analyses: same launch, so a difference there is run-to-run noise, not the choice of launch); `launches`
    (launch_choice.summarize of the naive report) adds how the first finding spreads over all launches."""

    def index(result: dict | None) -> tuple[dict, dict]:
        by_key: dict = {}
        by_name: dict = {}
        for k in (result or {}).get("kernels", []):
            by_key.setdefault((k["demangled"], k["grid"], k["block"]), k)
            by_name.setdefault(k["demangled"], k)
        return by_key, by_name

    def same_size(nk: dict | None, launch_ns: float | None) -> dict | None:
        """The naive report's analysis of the launches of the size ours profiled: the kernel's own, or one of its
        variants (launches of another size, analysed on their own), the nearest in duration."""
        if not nk or not launch_ns or not nk.get("variants"):
            return nk
        own = (nk.get("roofline") or {}).get("duration_ns")
        options = [(own, nk)] + [(v.get("launch_ns"), v) for v in nk["variants"] if v.get("profiled")]
        return min((o for o in options if o[0]), key=lambda o: abs(math.log(o[0] / launch_ns)), default=(None, nk))[1]

    naive_idx, first_idx = index(naive), index(naive_first)
    spread = {(r["demangled"], r["grid"], r["block"]): r for r in (launches or {}).get("rows", []) if "demangled" in r}
    rows, acc = [], 0.0
    for k in ours["kernels"]:
        if acc >= share - 1e-12:
            break
        acc += k["time_share"]
        key = (k["demangled"], k["grid"], k["block"])
        ours_ns = (k.get("roofline") or {}).get("duration_ns")
        nk = same_size(naive_idx[0].get(key) or naive_idx[1].get(k["demangled"]), ours_ns)
        fk = same_size(first_idx[0].get(key) or first_idx[1].get(k["demangled"]), ours_ns)
        row = {
            "kernel": k["name"],
            "grid": k["grid"],
            "block": k["block"],
            "time_share": round(k["time_share"], 4),
            "profiled": k.get("profiled"),
            "ours": first_rule(k),
            "naive": first_rule(nk) if naive else "(no report)",
            "ours_bound": k.get("bound"),
            "naive_bound": (nk or {}).get("bound"),
            "agree": naive is not None and nk is not None and first_rule(k) == first_rule(nk),
            "ours_top": top_findings(k),
            "naive_top": top_findings(nk),
            "ours_launch_ns": ours_ns,
            "naive_launch_ns": ((nk or {}).get("roofline") or {}).get("duration_ns") or (nk or {}).get("launch_ns"),
            "launch_range_ns": (nk or {}).get("launch_range_ns"),
            "ours_variants_timed_only": [
                round(v["duration_ns"] / (ours["report"]["total_duration_ns"] or 1), 4)
                for v in k.get("variants") or []
                if not v.get("profiled")
            ],
        }
        if naive_first is not None:
            row.update(
                naive_first=first_rule(fk),
                naive_first_top=top_findings(fk),
                agree_same_launch=fk is not None and first_rule(k) == first_rule(fk),
            )
        if key in spread:
            # how the naive report's own launches of this kernel spread over first findings (by time): ours agrees
            # "within the naive report's launch-to-launch variation" when its first finding is the first finding of
            # at least a quarter of that time (a threshold straddled by launches of one size, as LIB001's headroom
            # of 2.0 by two nvjet launches at 1.96x and 2.07x in fixtures/torch_compile)
            row["naive_findings_by_time"] = spread[key]["findings_by_time"]
            row["agree_within_launches"] = row["agree"] or row["naive_findings_by_time"].get(row["ours"], 0) >= 0.25
        rows.append(row)
    return rows


FULL_PASSES = (
    38  # replay passes per launch of `--set full` (H200, ncu 2025.3.1, 2026-12-01): used when no full run says
)


def as_profile(phase1_report: Path, deep_report: Path) -> dict:
    """A deep report analysed as `ncuadvisor profile` analyses its phase 2: against its phase-1 report (time shares,
    program rules on every launch), so that two collections of the same launches are compared on equal terms."""
    sys.path.insert(0, str(ROOT))
    from ncuadvisor.pipeline.analyze import analyze
    from ncuadvisor.profile.launchbytes import fill_launch_bytes, profiled_bytes
    from ncuadvisor.profile.merge import Phase1Time, analyze_phase1, merge_results
    from ncuadvisor.rulekit import engine

    rules = engine.discover([])
    p1, launches, _ = analyze_phase1(phase1_report, rules)
    deep = analyze(deep_report, rules=rules, group_time=Phase1Time(p1, launches))
    # as `profile` does: phase-1 launches without DRAM bytes of their own (an older phase 1) get those their
    # kernel's profiled launch measured
    if any(x.get("dram_read_bytes") is None for x in launches):
        fill_launch_bytes(launches, p1.kernels, profiled_bytes([str(deep_report)]))
    return merge_results(p1, [(str(deep_report), deep)], launches=launches, rules=rules).to_dict()


def program_rules(result: dict | None) -> list[str]:
    return sorted({f["rule"] for f in (result or {}).get("program_findings") or []})


def same_launches_command(ours: dict, program: list[str], nvtx: str | None, base: Path) -> list[str] | None:
    """`ncu --set full` on the launches phase 2 profiled: the chosen kernels' mangled names, the first launch of each
    launch configuration (phase 2's "config" strategy)."""
    sys.path.insert(0, str(ROOT))
    from ncuadvisor.profile import ncu as ncu_mod

    # the kernels phase 2 profiled, and those phase 1 placed at their tensor ceiling (not profiled, with a verdict:
    # the only unprofiled kernels with findings), so that the full set checks that verdict too
    names = [k["mangled"] for k in ours["kernels"] if (k.get("profiled") or k.get("findings")) and k.get("mangled")]
    if not names:
        return None
    f = ncu_mod.Filters(nvtx_include=[nvtx] if nvtx else [])
    cmd = ncu_mod.phase2_command("ncu", str(base), program, f, names, [], strategy="config", name_base="mangled")
    return cmd[:1] + ["--set", "full"] + cmd[1:]


def estimate_every_launch(
    n_launches: int, plain_s: float, naive: dict | None, phase2: dict | None, full_passes: int | None
) -> dict:
    """`ncu --set full` on every launch, estimated two ways: from the full run's own seconds per launch (the median
    gap between its progress lines) and from phase 2's seconds per launch scaled by the ratio of replay passes (for
    when the full run failed or did not run). Both add the plain run for the program's own start-up."""
    out: dict = {"launches": n_launches, "full_passes": full_passes or FULL_PASSES}
    gaps = [b - a for a, b in zip((naive or {}).get("stamps", []), (naive or {}).get("stamps", [])[1:])]
    if gaps:
        out["full_s_per_launch"] = round(statistics.median(gaps), 3)
        out["from_full_run"] = round(plain_s + n_launches * out["full_s_per_launch"], 1)
    if phase2 and phase2.get("launches_profiled") and phase2.get("replay_passes"):
        per = max(0.0, phase2["wall_s"] - plain_s) / phase2["launches_profiled"]
        out["phase2_s_per_launch"] = round(per, 3)
        out["phase2_passes"] = phase2["replay_passes"]
        out["from_passes"] = round(plain_s + n_launches * per * out["full_passes"] / phase2["replay_passes"], 1)
    out["used"] = "from_full_run" if "from_full_run" in out else ("from_passes" if "from_passes" in out else None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/profile_cost"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall-time budget for the whole benchmark")
    ap.add_argument("--naive-count", type=int, default=None, help="force --launch-count C on the naive run")
    ap.add_argument(
        "--naive",
        choices=("auto", "every", "first", "same-launches", "none"),
        default="auto",
        help="the full-set run: every launch; the first C launches (extrapolated); the launches phase 2 profiled "
        "(--set full on them, compared in the same merged view; every launch extrapolated); none (estimated from "
        "the replay passes). auto: every launch if it fits the budget, else the same launches",
    )
    ap.add_argument(
        "--train",
        action="store_true",
        help="the training step instead (--train, 229 launches in the process-wide NVTX range step_all_threads)",
    )
    ap.add_argument(
        "--binary",
        default=None,
        help="an executable instead of the Python workload (a CUDA program: "
        "every launch is measured, no NVTX range), with --binary-args",
    )
    ap.add_argument("--binary-args", default="", help="the executable's arguments, one string")
    ap.add_argument("--workload", default=str(WORKLOAD), help=argparse.SUPPRESS)  # tests: another program
    ap.add_argument("--workload-args", default=" ".join(WORKLOAD_ARGS), help=argparse.SUPPRESS)
    args = ap.parse_args()
    t_start = time.monotonic()
    out = args.out
    workload, wargs = Path(args.workload), args.workload_args.split()
    # what selects the measured step: the push/pop range "step" (forward), or for --train the process-wide start/end
    # range "step_all_threads" (autograd launches the backward kernels from another thread)
    if args.binary:
        # a CUDA program: the executable and its arguments, every launch (no NVTX range)
        workload, wargs = Path(args.binary).resolve(), args.binary_args.split()
        ours_nvtx, naive_nvtx = [], None
    elif args.train:
        wargs = wargs + ["--train"]
        ours_nvtx, naive_nvtx = ["--nvtx-include", "step_all_threads"], "step_all_threads"
    else:
        ours_nvtx, naive_nvtx = ["--nvtx-range", NVTX], f"{NVTX}/"
    # how the program runs without ncuadvisor (a Python workload with this Python)
    program = [str(workload), *wargs] if args.binary else [sys.executable, str(workload), *wargs]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    res: dict = {"versions": versions(), "workload": [str(workload), *wargs], "nvtx": naive_nvtx}
    print(json.dumps(res["versions"], indent=1), flush=True)
    json_path = args.json or out / "profile_cost.json"

    def save() -> None:  # after every step: a run cut short still leaves what it measured
        json_path.write_text(json.dumps(res, indent=1, default=str))

    def left() -> float:
        return args.budget_s - (time.monotonic() - t_start)

    # 1. plain
    plain = sh(program, timeout=120, env=env, log=out / "plain.log")
    res["plain"] = {k: plain[k] for k in ("cmd", "rc", "wall_s")}
    print(f"plain: {plain['wall_s']} s rc={plain['rc']}", flush=True)
    save()

    # 2. ncuadvisor profile, defaults
    pjson = out / "profile.json"
    # the program after `--`, so that its own arguments reach it untouched
    # (`profile` runs a script with its own Python: it is given the script, not this interpreter)
    prof = sh(
        [
            sys.executable,
            "-c",
            CLI,
            "profile",
            *ours_nvtx,
            "-o",
            str(pjson),
            "--force",
            "-v",
            "--",
            str(workload),
            *wargs,
        ],
        timeout=max(60.0, min(240.0, left() - 60)),
        env=env,
        log=out / "profile.log",
    )
    res["profile"] = {k: prof[k] for k in ("cmd", "rc", "wall_s", "timed_out")}
    ours = json.loads(pjson.read_text()) if pjson.exists() else None
    if ours:
        meta = ours["report"]["profile"]
        res["profile"].update(
            phases=[
                {k: p.get(k) for k in ("phase", "wall_s", "launches_profiled", "ncu_exit_code", "replay_passes")}
                for p in meta["phases"]
            ],
            selection=meta["selection"],
            reports=meta["reports"],
        )
    print(f"ncuadvisor profile: {prof['wall_s']} s rc={prof['rc']}\n{prof['tail'] if prof['rc'] else ''}", flush=True)
    for p in res["profile"].get("phases") or []:
        print(f"  {p['phase']}: {p['launches_profiled']} launches, {p['replay_passes']} passes each, {p['wall_s']} s")
    placed = (res["profile"].get("selection") or {}).get("at_tensor_ceiling") or []
    print(f"  placed at their tensor ceiling by phase 1 (no phase 2): {len(placed)} kernels {placed}", flush=True)
    save()

    # 3. naive full: every launch when it fits; else the launches phase 2 profiled, or the first C launches
    n_launches = (ours or {}).get("report", {}).get("results") or 100
    room = left() - 40.0  # analysis and writing
    mode = args.naive
    fits = 25.0 + n_launches * FULL_S_PER_KERNEL <= room
    if mode == "auto":
        mode = "every" if fits or args.naive_count else ("same-launches" if ours else "first")
    count = args.naive_count
    if mode == "first" and count is None:
        count = max(10, int((room - 25.0) / FULL_S_PER_KERNEL))
    naive_base = out / "naive"
    cmd: list[str] | None = ["ncu", "--clock-control", "none", "--set", "full", "--import-source", "yes"]
    if naive_nvtx and cmd is not None:
        cmd += ["--nvtx", "--nvtx-include", naive_nvtx]
    if mode in ("every", "first") and cmd is not None:
        if count is not None and count < n_launches:
            cmd += ["--launch-count", str(count)]
        else:
            count = None
        cmd += ["-o", str(naive_base), *program]
    elif mode == "same-launches" and ours:
        cmd = same_launches_command(ours, program, naive_nvtx, naive_base)
    else:
        cmd = None
    naive = sh(cmd, timeout=max(30.0, left() - 30.0), env=env, log=out / "naive.log") if cmd else None
    phase2 = next((p for p in res.get("profile", {}).get("phases", []) if p["phase"].startswith("phase 2")), None)
    full_passes = None
    if naive:
        sys.path.insert(0, str(ROOT))
        from ncuadvisor.profile.output import parse_line

        passes = [e.passes for e in map(parse_line, (out / "naive.log").read_text().splitlines()) if e.passes]
        full_passes = max(passes) if passes else None
    est = estimate_every_launch(n_launches, plain["wall_s"], naive, phase2, full_passes)
    profiled = len(naive["stamps"]) if naive else 0
    every = naive is not None and mode == "every" and count is None and not naive["timed_out"] and naive["rc"] == 0
    res["naive"] = {
        "mode": mode,
        "cmd": cmd,
        "rc": naive["rc"] if naive else None,
        "wall_s": naive["wall_s"] if naive else None,
        "timed_out": naive["timed_out"] if naive else None,
        "tail": naive["tail"] if naive and naive["rc"] else None,
        "launch_count": count,
        "launches_in_range": n_launches,
        "launches_profiled": profiled,
        "passes_per_launch": full_passes,
        "median_s_per_kernel": est.get("full_s_per_launch"),
        "estimate": est,
        "wall_s_every_launch": naive["wall_s"] if every else est.get(est["used"] or "", None),
        "extrapolated": not every,
    }
    print(
        f"naive full ({mode}): {res['naive']['wall_s']} s for {profiled} launches, {full_passes} passes each "
        f"(every launch: {res['naive']['wall_s_every_launch']} s"
        f"{', extrapolated ' + str(est['used']) if res['naive']['extrapolated'] else ''}; {est})",
        flush=True,
    )
    save()

    naive_result = naive_first = launches = None
    rep = next(
        (p for p in (naive_base.with_suffix(".ncu-rep"), Path(str(naive_base) + ".ncu-repz")) if p.exists()), None
    )
    if rep is not None and mode == "same-launches" and ours:
        # the full set on the same launches, merged with ours' phase 1 exactly as phase 2 is: the collections compared
        t0 = time.monotonic()
        try:
            naive_result = as_profile(Path(ours["report"]["phase1_report"]), rep)
            naive_first = naive_result
        except Exception as exc:  # noqa: BLE001 - recorded, the timings stand
            res["naive_analysis_error"] = f"{type(exc).__name__}: {exc}"
        res["naive_analysis_s"] = round(time.monotonic() - t0, 1)
    elif rep is not None:
        sys.path.insert(0, str(ROOT))

        sys.path.insert(0, str(ROOT / "benchmarks"))
        from launch_choice import analyses, summarize

        t0 = time.monotonic()
        naive_result, naive_first, naive_each = analyses(rep)
        launches = summarize(naive_result, naive_first, naive_each)
        res["naive_launch_choice"] = {k: v for k, v in launches.items() if k != "rows"}
        res["naive_analysis_s"] = round(time.monotonic() - t0, 1)
    res["comparison"] = compare(ours, naive_result, naive_first=naive_first, launches=launches) if ours else []
    if ours and res["naive"]["wall_s_every_launch"]:
        res["speedup_vs_naive"] = round(res["naive"]["wall_s_every_launch"] / prof["wall_s"], 2)
    res["profile_over_plain"] = round(prof["wall_s"] / plain["wall_s"], 2) if plain["wall_s"] else None
    res["agreement"] = (sum(r["agree"] for r in res["comparison"]), len(res["comparison"]))
    res["program_findings"] = {"ours": program_rules(ours), "naive": program_rules(naive_result)}
    res["program_findings_same"] = naive_result is not None and program_rules(ours) == program_rules(naive_result)
    if launches is not None:
        res["agreement_within_launches"] = (
            sum(r.get("agree_within_launches", r["agree"]) for r in res["comparison"]),
            len(res["comparison"]),
        )
    if naive_first is not None:
        res["agreement_same_launch"] = (
            sum(r.get("agree_same_launch", False) for r in res["comparison"]),
            len(res["comparison"]),
        )

    # table
    print("\n| run | wall time |\n|---|---|")
    print(f"| plain run | {plain['wall_s']:.1f} s |")
    print(f"| `ncuadvisor profile` (defaults) | {prof['wall_s']:.1f} s |")
    nv = res["naive"]
    label = (
        f"{nv['wall_s'] or 0:.1f} s for {nv['launches_profiled']} of {n_launches} launches ({nv['mode']})"
        if nv["extrapolated"]
        else f"{nv['wall_s']:.1f} s"
    )
    print(
        f"| naive `ncu --set full`, every launch | {label}"
        + (
            f" → {nv['wall_s_every_launch']:.0f} s extrapolated |"
            if nv["extrapolated"] and nv["wall_s_every_launch"]
            else " |"
        )
    )
    print(
        f"\nspeed-up vs naive: {res.get('speedup_vs_naive')}x; first findings agree on "
        f"{res['agreement'][0]} of {res['agreement'][1]} kernels holding 90% of GPU time; program findings "
        f"{'the same' if res['program_findings_same'] else 'differ'}: {res['program_findings']}\n"
    )
    if "agreement_same_launch" in res:
        print(
            f"on the same (first) launch of each kernel in the naive report: {res['agreement_same_launch'][0]} of "
            f"{res['agreement_same_launch'][1]}\n"
        )
    print(
        "| kernel | grid | share | ours | naive, median launch | naive, first launch | naive, all launches "
        "(share of time) | agree |\n|---|---|---|---|---|---|---|---|"
    )
    for r in res["comparison"]:
        spread = ", ".join(f"{k} {v:.0%}" for k, v in (r.get("naive_findings_by_time") or {}).items())
        print(
            f"| {r['kernel']} | {r['grid']} | {r['time_share']:.1%} | {' · '.join(r['ours_top']) or r['ours']} | "
            f"{' · '.join(r['naive_top']) or r['naive']} | {' · '.join(r.get('naive_first_top') or []) or r.get('naive_first', '–')} | "
            f"{spread or '–'} | {'yes' if r['agree'] else 'no'} |"
        )
    res["total_wall_s"] = round(time.monotonic() - t_start, 1)
    save()
    return 0


# ---------------------------------------------------------------------------------------------------------------------
# Side by side, measured (2026-12-05): `measure` runs one program four ways in one call, all for real; `table` reads
# what `measure` wrote. No time here is extrapolated: a run whose full set did not profile every launch is refused.

SIDE_BY_SIDE = "profile-cost-side-by-side/1"
FULL_S_PER_LAUNCH = 2.4  # planning only, to skip a full set that cannot fit (NCU-FACTS: 2.07-2.35 s a launch)
# planning only: `ncuadvisor report` on a full-set capture, per result (0.8 s for 96 on the H100, 2026-12-06; 1.4 s and
# 2.0 s for 218), plus start-up (REPORT_BASE_S: the logs' tar and the results' xz too). Their sum is kept back from
# the full set's deadline: at 15 s + 0.05 s a result (26 s for 218) the GPT-2 step's full set was stopped while ncu
# exited, its report already written (16:00 UTC, `fixtures/profile-cost-2026-12-06-sourcecounters/`)
REPORT_S_PER_RESULT = 0.02
REPORT_BASE_S = 8.0


class Refused(Exception):
    """A side-by-side JSON that cannot be tabled honestly; its message is the one line said."""


def gpu_facts() -> dict:
    """The GPU's name and driver, ncu's version, the date: what a timing is worth only with."""

    def out(cmd: list[str]) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            return f"unavailable ({type(exc).__name__})"

    smi = out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).splitlines()
    name, _, driver = (smi[0] if smi else "").partition(",")
    info = versions()
    ncu_version = next((w for w in info["ncu"].split() if w[:1].isdigit() and "." in w), info["ncu"])
    return {
        "date_utc": info["date_utc"],
        "gpu": name.strip() or "unavailable",
        "driver": driver.strip() or "unavailable",
        "ncu": ncu_version,
        "python": info["python"],
        "torch": info["torch"],
    }


def passes_of(log: Path) -> list[int]:
    """Replay passes of each profiled launch, from ncu's progress lines (`- 38 passes`)."""
    sys.path.insert(0, str(ROOT))
    from ncuadvisor.profile.output import parse_line

    if not log.exists():
        return []
    return [e.passes for e in map(parse_line, log.read_text(errors="replace").splitlines()) if e.passes]


def passes_summary(passes: list[int]) -> dict | None:
    if not passes:
        return None
    return {"min": min(passes), "median": statistics.median(passes), "max": max(passes), "launches": len(passes)}


def measure_main(argv: list[str]) -> int:
    """Plain run, `ncuadvisor profile`, `ncu --set full` on every launch of the range and `ncuadvisor report` on that
    capture, one after the other in this process's call; the timings to OUT/cost_NAME.json, both results (xz) and
    the logs (one .tar.xz) beside it."""
    import lzma
    import tarfile

    ap = argparse.ArgumentParser(prog="profile_cost.py measure", description=measure_main.__doc__)
    ap.add_argument("--name", required=True, help="the program's short name: cost_NAME.json")
    ap.add_argument("--out", type=Path, required=True, help="where the four files go ($OUT of the device call)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder for the reports (default /tmp/cost_NAME)")
    ap.add_argument("--budget-s", type=float, default=560.0, help="the whole call's seconds")
    ap.add_argument(
        "--nvtx-include", default=None, help="the range, as ncu's --nvtx-include takes it (none: every launch)"
    )
    ap.add_argument("--full-s-per-launch", type=float, default=FULL_S_PER_LAUNCH, help="planning estimate only")
    ap.add_argument("program", nargs=argparse.REMAINDER, help="-- the program and its arguments (a .py: with Python)")
    args = ap.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        ap.error("give the program after --")
    t_start = time.monotonic()
    out, work = args.out, args.work or Path(f"/tmp/cost_{args.name}")
    out.mkdir(parents=True, exist_ok=True)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), PYTHONUNBUFFERED="1")
    run_program = [sys.executable, *program] if program[0].endswith(".py") else program
    ncu_range = ["--nvtx", "--nvtx-include", args.nvtx_include] if args.nvtx_include else []
    res: dict = {
        "schema": SIDE_BY_SIDE,
        "name": args.name,
        "program": run_program,
        "nvtx_include": args.nvtx_include,
        "machine": gpu_facts(),
        "results": {"profile": f"profile_{args.name}.json.xz", "full": f"full_{args.name}.json.xz"},
    }
    json_path = out / f"cost_{args.name}.json"

    def save() -> None:  # after every step: a call cut short still leaves what it measured
        json_path.write_text(json.dumps(res, indent=1, default=str))

    def left() -> float:
        return args.budget_s - (time.monotonic() - t_start)

    def say(text: str) -> None:
        print(f"[{time.monotonic() - t_start:6.1f} s] {args.name}: {text}", flush=True)

    def keep(run: dict) -> dict:
        return {k: run[k] for k in ("cmd", "rc", "wall_s", "timed_out")}

    say(json.dumps(res["machine"]))
    plain = sh(run_program, timeout=max(30.0, left() / 4), env=env, log=work / "plain.log")
    res["plain"] = keep(plain)
    say(f"plain: {plain['wall_s']} s rc={plain['rc']}")
    save()

    pjson = work / "profile.json"
    cli = [sys.executable, "-c", CLI, "profile", *(["--nvtx-include", args.nvtx_include] if args.nvtx_include else [])]
    prof = sh(
        [*cli, "-o", str(pjson), "--force", "-v", "--", *program],
        timeout=max(30.0, left() / 2),
        env=env,
        log=work / "profile.log",
    )
    res["profile"] = keep(prof)
    ours = json.loads(pjson.read_text()) if pjson.exists() else None
    phases = ((ours or {}).get("report") or {}).get("profile", {}).get("phases") or []
    res["profile"]["phases"] = [
        {k: p.get(k) for k in ("phase", "wall_s", "launches_profiled", "replay_passes", "ncu_exit_code")}
        for p in phases
    ]
    res["profile"]["passes"] = passes_summary(passes_of(work / "profile.log"))
    # the range's launches: phase 1 times every one of them
    res["launches_in_range"] = phases[0].get("launches_profiled") if phases else None
    say(f"profile: {prof['wall_s']} s rc={prof['rc']}; {res['profile']['phases']}")
    save()

    n = res["launches_in_range"]
    full_base = work / "full"
    full_cmd = ["ncu", "--clock-control", "none", "--set", "full", "--import-source", "yes", *ncu_range]
    full_cmd += ["-o", str(full_base), *run_program]
    need = plain["wall_s"] + (n or 0) * args.full_s_per_launch
    reserve = REPORT_BASE_S + (n or 0) * REPORT_S_PER_RESULT
    if not n or prof["rc"] != 0:
        res["full"] = {"cmd": full_cmd, "skipped": "`ncuadvisor profile` failed: the range's launches are unknown"}
    elif need + reserve > left():
        res["full"] = {
            "cmd": full_cmd,
            "skipped": f"the full set on {n} launches needs about {need:.0f} s (+{reserve:.0f} s for the report), "
            f"{left():.0f} s are left: make the range smaller",
        }
    else:
        full = sh(full_cmd, timeout=max(30.0, left() - reserve), env=env, log=work / "full.log")
        passes = passes_of(work / "full.log")
        res["full"] = {**keep(full), "launches_profiled": len(full["stamps"]), "passes": passes_summary(passes)}
        say(f"full set: {full['wall_s']} s rc={full['rc']}, {len(full['stamps'])} of {n} launches")
    save()
    if "skipped" in res["full"]:
        say(f"full set skipped: {res['full']['skipped']}")

    rep = next((p for p in (work / "full.ncu-rep", work / "full.ncu-repz") if p.exists()), None)
    fjson = work / "full_report.json"
    if rep is not None:
        report = sh(
            [sys.executable, "-c", CLI, "report", str(rep), "-o", str(fjson), "--force", "-q"],
            timeout=max(10.0, left() - 5),
            env=env,
            log=work / "report.log",
        )
        res["report"] = keep(report)
        full_result = json.loads(fjson.read_text()) if fjson.exists() else None
        res["full"]["report_results"] = ((full_result or {}).get("report") or {}).get("results")
        say(f"report on the full capture: {report['wall_s']} s rc={report['rc']}")
    for src, name in ((pjson, res["results"]["profile"]), (fjson, res["results"]["full"])):
        if src.exists():
            with lzma.open(out / name, "wb", preset=6) as fh:
                fh.write(src.read_bytes())
    with tarfile.open(out / f"logs_{args.name}.tar.xz", "w:xz") as tar:
        for log in sorted(work.glob("*.log")):
            tar.add(log, arcname=f"{args.name}/{log.name}")
    res["total_wall_s"] = round(time.monotonic() - t_start, 1)
    save()
    say(f"done in {res['total_wall_s']} s: {json_path}")
    try:
        checked(json_path)
    except Refused as exc:  # measured and kept, but not a side-by-side that `table` divides by
        say(f"incomplete: {exc}")
        return 1
    return 0


def checked(path: Path) -> dict:
    """The side-by-side JSON at `path`, or Refused: it must hold a full-set run on every launch of the range."""
    try:
        res = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(f"{path}: not a readable JSON file ({type(exc).__name__})") from None
    if not isinstance(res, dict) or res.get("schema") != SIDE_BY_SIDE:
        raise Refused(
            f"{path}: not a side-by-side run of `profile_cost.py measure` (an older run's full-set time was "
            "extrapolated from some launches): refusing to divide by it"
        )
    n, full = res.get("launches_in_range"), res.get("full") or {}
    if full.get("skipped"):
        raise Refused(f"{path}: the full set did not run ({full['skipped']}): refusing to divide by an estimate")
    counts = [full.get("launches_profiled"), full.get("report_results")]
    # stopped at its deadline after it had profiled every launch and written a report holding every one of them
    # (ncu still exiting): its time is at least the time measured, `table` says so (≥), nothing is extrapolated
    full["at_least"] = bool(n and full.get("timed_out") and all(c == n for c in counts))
    if not n or (full.get("rc") != 0 and not full["at_least"]) or any(c != n for c in counts):
        raise Refused(
            f"{path}: the full set profiled {counts[0]} of {n} launches of the range (report: {counts[1]} results, "
            f"rc={full.get('rc')}): refusing to divide by an extrapolated time"
        )
    for part in ("plain", "profile", "report"):
        if (res.get(part) or {}).get("rc") != 0:
            raise Refused(f"{path}: the {part} run failed (rc={(res.get(part) or {}).get('rc')})")
    return res


def load_results(path: Path, res: dict) -> tuple[dict, dict]:
    import lzma

    out = []
    for side in ("profile", "full"):
        f = path.parent / res["results"][side]
        try:
            with lzma.open(f) as fh:
                out.append(json.loads(fh.read()))
        except (OSError, lzma.LZMAError, json.JSONDecodeError) as exc:
            raise Refused(f"{f}: the {side} result is missing or unreadable ({type(exc).__name__})") from None
    return out[0], out[1]


def passes_text(p: dict | None) -> str:
    if not p:
        return "–"
    return str(p["min"]) if p["min"] == p["max"] else f"{p['min']}–{p['max']} (median {p['median']:g})"


def table_main(argv: list[str]) -> int:
    """Print the cost table and the agreement of side-by-side runs (`measure`'s cost_NAME.json, its results beside)."""
    ap = argparse.ArgumentParser(prog="profile_cost.py table", description=table_main.__doc__)
    ap.add_argument("runs", nargs="+", type=Path, help="cost_NAME.json files")
    ap.add_argument("--share", type=float, default=0.9, help="the kernels holding this share of the GPU time")
    args = ap.parse_args(argv)
    try:
        runs = [(p, checked(p)) for p in args.runs]
        results = [load_results(p, r) for p, r in runs]
    except Refused as exc:
        print(f"profile_cost: {exc}", file=sys.stderr)
        return 2
    print(
        "| program | GPU, driver, ncu, date | launches in range | plain (s) | `ncuadvisor profile` (s) | profile: "
        "launches × passes per phase | `ncu --set full`, every launch (s) | full: passes per launch | report on "
        "the full capture (s) | profile ÷ plain | full ÷ plain | full ÷ profile | (full + report) ÷ profile |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for _, r in runs:
        m, prof, full = r["machine"], r["profile"]["wall_s"], r["full"]["wall_s"]
        ge = "≥ " if r["full"]["at_least"] else ""  # the full set stopped at its deadline, its report whole
        phases = "; ".join(f"{p['launches_profiled']} × {p['replay_passes']}" for p in r["profile"]["phases"])
        print(
            f"| {r['name']} | {m['gpu']}, {m['driver']}, ncu {m['ncu']}, {m['date_utc']} | {r['launches_in_range']} | "
            f"{r['plain']['wall_s']:.1f} | {prof:.1f} | {phases} | {ge}{full:.1f} | {passes_text(r['full']['passes'])} "
            f"| {r['report']['wall_s']:.1f} | {prof / r['plain']['wall_s']:.2f}× | {ge}{full / r['plain']['wall_s']:.2f}× "
            f"| {ge}{full / prof:.2f}× | {ge}{(full + r['report']['wall_s']) / prof:.2f}× |"
        )
        if ge:
            print(
                f"\n{r['name']}: the full set was stopped at its deadline ({full:.1f} s) after it had profiled every "
                f"launch and written its report ({r['full']['report_results']} results): its time is at least that"
            )
    for (_, r), (ours, full_result) in zip(runs, results):
        rows = compare(ours, full_result, share=args.share)
        same = sum(x["agree"] for x in rows)
        print(
            f"\n{r['name']}: the first finding agrees on {same} of {len(rows)} kernels holding {args.share:.0%} of the "
            f"GPU time; program findings: profile {program_rules(ours)}, full {program_rules(full_result)} "
            f"({'the same' if program_rules(ours) == program_rules(full_result) else 'they differ'})\n"
        )
        print("| kernel | grid | block | share | profile | full set | agree |\n|---|---|---|---|---|---|---|")
        for x in rows:
            print(
                f"| {x['kernel']} | {x['grid']} | {x['block']} | {x['time_share']:.1%} | "
                f"{' · '.join(x['ours_top']) or x['ours']} | {' · '.join(x['naive_top']) or x['naive']} | "
                f"{'yes' if x['agree'] else 'no'} |"
            )
    return 0


def dispatch() -> int:
    """`measure` and `table` (side by side, measured); without either, the older run above (extrapolating)."""
    if sys.argv[1:2] == ["measure"]:
        return measure_main(sys.argv[2:])
    if sys.argv[1:2] == ["table"]:
        return table_main(sys.argv[2:])
    return main()


if __name__ == "__main__":
    sys.exit(dispatch())
