from typing import Any

from ncuadvisor.rulekit import Evidence, Fix, ProgramContext, ProgramFinding, ProgramRule, SpeedOfLight, count, fmt_ns

_TORCH = Fix(
    text=(
        "These launches each run a few microseconds, no longer than launching them: fuse the ops (torch.compile "
        "the code that issues them) or capture them once in a CUDA Graph "
        '(torch.compile(mode="reduce-overhead"), torch.cuda.CUDAGraph) so they cost one launch.'
    ),
    code='step = torch.compile(step, mode="reduce-overhead")   # fused kernels, replayed as one graph',
)


def _demangled(p: ProgramContext, kernel_id: str) -> str:
    """The demangled name of a launch's kernel, "" when the context has no entry of it."""
    k = p.by_id.get(kernel_id)
    return k.demangled if k is not None else ""


class FewTinyLaunches(ProgramRule):
    """A handful of consecutive launches too short to pay for their launch: fuse them or replay them as a graph.

    What it detects:
        Runs of at least `min_run` consecutive launches on one stream, each shorter than `short_ns`
        (`gpu__time_duration.sum`), in a program with fewer than `max_short_launches` such launches in all (above
        that PRG001 speaks for the whole program): a few small updates, a short tail of a step. Runs saving less than
        `min_program_fraction` of the program in all are not reported.

    Why it costs time:
        A launch costs a few microseconds of host, driver and front-end work, and a kernel of a few microseconds is
        mostly its own ramp-up and drain: four launches of a 2 µs kernel take four launch costs and four ramps where
        one fused kernel takes one.

    Example:
        for (int k = 0; k < 4; ++k) small_update<<<8, 256>>>(x + k * n, n);   // four tiny launches in a row

    Use instead:
        Fuse the launches into one kernel (one grid covers the four problems, or one kernel loops over them), or
        capture the sequence once in a CUDA Graph and replay it; in PyTorch, torch.compile the code that issues them
        (mode="reduce-overhead" adds the graph).

    Speedup estimate:
        Launches are asynchronous: the host issues the next launch while the GPU runs the previous kernel, so each
        launch of a run costs the longer of its kernel's time and the host's launch interval (CPU and driver time to
        issue one launch), not their sum. With the interval known (`ncuadvisor profile` measures it where the program
        runs, before phase 1; `ncuadvisor report --launch-interval-us` gives it), a run saves, per launch removed,
        max(that launch's GPU time, the interval): every fusable launch but the longest (a fused kernel of such tiny
        work runs about as long as one of them) is removed; passes of a device-wide CUB sort or scan keep their
        kernel, a graph saves only max(0, interval - their time) each. Measured on the planted four launches of a
        2-3 µs kernel (against one fused launch): on the H100 machine each extra launch added the kernel's own time
        (2.74 µs; saving 8.5 µs, the model with an interval under that: 3 × 2.74 = 8.2 µs), on the H200 machine
        4.7 µs, twice the kernel (saving 14.2 µs; with an interval of 4.7 µs: 3 × 4.7 = 14.1 µs); on another H100
        machine the interval measured 4.6 µs and the saving 11.9 µs, estimated 13.8 µs (+16%): the host, not the GPU
        model, sets it. The interval measured is the driver's (`cuLaunchKernel`); a PyTorch op adds its own dispatch
        time on the host, so for PyTorch launches the estimate is a lower bound (`--host-time` records the real gaps).
        Without the interval (a report alone: no ncu report holds it, ncu serialises the launches) the estimate is
        every fusable launch's GPU time but the longest plus `overhead_ns` of assumed launch cost per launch removed
        (the earlier model, kept so that such reports keep their estimates): it overstates where the host is ahead
        of the GPU (H100 above: 19.0 µs estimated) and can understate a slow host. The card names the model used and
        where the interval came from.
        Predicts no counter: one of its two fixes, a CUDA Graph, keeps every launch in an ncu report (ncu profiles
        each node) and saves host time the report does not hold; fused, the launches fall, but a prediction that one
        fix meets and the other fails would say nothing about either.

    False positives:
        Launches that must wait for the host in between (a value read back, a host decision) cannot be fused or
        captured; kernels on other streams may overlap these gaps.
    """

    code = "PRG004"
    slug = "few-tiny-launches"
    category = "launch-overhead"
    title = "A few tiny launches in a row: fuse them or replay a graph"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {
        "short_ns": 5000.0,
        "min_run": 2,
        "max_short_launches": 50,
        "overhead_ns": 2000.0,
        "min_program_fraction": 0.005,  # of the program's GPU time: below it, not worth a change
    }
    fixes = {
        "cuda": Fix(
            text=(
                "These launches each run a few microseconds, no longer than launching them: fuse them into one "
                "kernel (one grid over all the problems, blockIdx.y picking the problem) or capture the sequence "
                "in a CUDA Graph and launch it once."
            ),
            code=(
                "// one launch for the four updates: blockIdx.y selects the problem\n"
                "small_update_all<<<dim3(8, 4), 256>>>(x, n);"
            ),
        ),
        "pytorch": _TORCH,
        "triton": _TORCH,
    }

    def _runs(self, p: ProgramContext) -> list[list[dict[str, Any]]]:
        runs: list[list[dict[str, Any]]] = []
        current: list[dict[str, Any]] = []
        for x in p.launches:
            short = x["duration_ns"] is not None and x["duration_ns"] < self.thresholds["short_ns"]
            if short and current and x["stream"] == current[-1]["stream"]:
                current.append(x)
                continue
            if len(current) >= self.thresholds["min_run"]:
                runs.append(current)
            current = [x] if short else []
        if len(current) >= self.thresholds["min_run"]:
            runs.append(current)
        return runs

    def _saving(self, p: ProgramContext, run: list[dict[str, Any]]) -> float:
        """What fusing the run (or replaying it as a graph) saves. A pass of a device-wide CUB sort or scan keeps its
        own kernel: a graph saves its launch, not its time. With the host's launch interval known: max(GPU time,
        interval) of each fusable launch but the longest, and max(0, interval - its time) of each CUB pass (all but
        the first, when no launch of the run is fusable); without it: the GPU time of the fusable launches but the
        longest, plus `overhead_ns` per launch but one."""
        cub = ["cub::" in _demangled(p, x["kernel_id"]) for x in run]
        fusable = [x["duration_ns"] for x, c in zip(run, cub) if not c]
        if p.launch_interval is None:
            gpu = sum(fusable) - max(fusable) if len(fusable) >= 2 else 0.0
            return gpu + (len(run) - 1) * self.thresholds["overhead_ns"]
        interval = p.launch_interval.interval_ns
        removed = sorted(fusable)[:-1]  # the longest fusable launch stays: the fused kernel
        passes = [x["duration_ns"] for x, c in zip(run, cub) if c]
        graphed = passes if fusable else passes[1:]  # a graph of CUB passes alone still launches once
        return sum(max(d, interval) for d in removed) + sum(max(0.0, interval - d) for d in graphed)

    def _model(self, p: ProgramContext) -> str:
        """The card's words on the saving's model and where the launch interval came from."""
        if p.launch_interval is None:
            return (
                "Per run: the GPU time of every fusable launch but the longest (not CUB sort/scan passes), plus "
                f"{self.thresholds['overhead_ns'] / 1000:.0f} µs of launch cost per launch removed: an assumed host "
                "cost the report does not measure, hidden where the host issues launches faster than the GPU runs "
                "them (the host's launch interval is unknown: `ncuadvisor profile` measures it, "
                "`--launch-interval-us` gives it)."
            )
        li = p.launch_interval
        return (
            "Per run: each launch removed (every fusable launch but the longest) saves the longer of its GPU time and "
            f"the host's launch interval, {li.interval_ns / 1000:.2f} µs ({li.source}): launches overlap the kernel "
            "before them, so a launch costs whichever is longer; a CUB sort/scan pass keeps its kernel and saves "
            "only what its launch exceeds its time by."
        )

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        t = self.thresholds
        short = sum(1 for x in p.launches if x["duration_ns"] is not None and x["duration_ns"] < t["short_ns"])
        if short >= t["max_short_launches"]:
            return []  # PRG001: launch overhead across the program
        runs = self._runs(p)
        if not runs:
            return []
        saving = sum(self._saving(p, run) for run in runs)
        if saving < t["min_program_fraction"] * p.total_ns:
            return []
        biggest = max(runs, key=len)
        ids = list(dict.fromkeys(x["kernel_id"] for run in runs for x in run))
        names = [p.by_id[kid].name for kid in ids if kid in p.by_id]
        counts: dict[str, int] = {}
        for x in biggest:
            counts[x["kernel_id"]] = counts.get(x["kernel_id"], 0) + 1
        what = ", ".join(f"{p.by_id[k].name} ×{c}" if c > 1 else p.by_id[k].name for k, c in counts.items())
        langs = {(p.by_id[kid].language if kid in p.by_id else None) or "cuda" for kid in ids}
        gpu_ns = sum(x["duration_ns"] for run in runs for x in run)
        return [
            self.finding(
                title=f"{len(biggest)} tiny launches in a row ({what}): launch-bound",
                message=(
                    f"{count(sum(len(r) for r in runs), 'launch', 'launches')} in {count(len(runs), 'run')} each take under "
                    f"{t['short_ns'] / 1000:.0f} µs ({fmt_ns(gpu_ns)} of GPU time in all): each costs about as "
                    "much to launch as to run."
                ),
                fix=self.fix_in("pytorch" if langs & {"pytorch", "triton"} else "cuda"),
                kernels=names,
                kernel_ids=ids,
                estimated_saving_ns=saving,
                saving_model=self._model(p),
                confidence="medium",
                evidence=[
                    Evidence("runs", len(runs), None, "runs of tiny launches"),
                    Evidence("longest_run", len(biggest), t["min_run"], "launches in the longest run"),
                    *(
                        [Evidence("launch_interval", li.interval_ns, None, f"host launch interval ({li.source})", "ns")]
                        if (li := p.launch_interval) is not None
                        else []
                    ),
                ],
            )
        ]
