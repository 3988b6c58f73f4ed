from ncuadvisor.rulekit import (
    Evidence,
    Finding,
    Fix,
    KernelContext,
    Occupancy,
    Rule,
    SpeedOfLight,
    WarpStateStats,
    dram_in_flight,
    fmt_bytes,
    fmt_ns,
    in_flight_fix_ns,
    precision_words,
    time_after,
    unread_fma_ceiling,
)


class AtRoofline(Rule):
    """The kernel already runs close to its roofline floor: leave it alone.

    What it detects:
        Measured time within `max_headroom` times the theoretical minimum: max(FLOPs / FLOP peak, compulsory bytes /
        DRAM bandwidth). The compulsory bytes (`roofline.compulsory_bytes`, the number the card and the roofline
        print) are loads + stores, each the smaller of what the threads needed (ideal L2 sectors × 32) and what moved
        (DRAM's reads; the SMs' writes to L2); a kernel loading through TMA, which the ideal sectors do not count,
        needs what moved. Sectors DRAM moves that no thread used are not compulsory. A library kernel that reads no
        global memory (L2 sends its L1 no sector: a random-number generator such as torch.randn) computes what it
        writes from its index and arguments alone, so the instructions it issues are its algorithm's work and their
        issue time is its floor; user code's instructions, and those of a library kernel that reads its inputs
        (index arithmetic on a non-contiguous tensor), never are.

    Why it costs time:
        It does not: the time is in the work and the bytes the algorithm needs. Tuning the access pattern or the
        launch cannot win more than the small gap that is left.

    Example:
        A float4 copy moving 512 MB at 4.1 TB/s on a 4.8 TB/s part: 125 µs against a floor of 107 µs. The best
        kernels reach about 85% of a peak (headroom 1.18); `max_headroom` 1.6 leaves room for clocks and tails.

    Use instead:
        Leave the kernel. To go faster, change the algorithm's byte or FLOP count: fuse it with its neighbours so
        intermediates skip DRAM, use a narrower data type, or skip work.

    Speedup estimate:
        None is claimed; the message states the most any change that keeps the floor could save (1 - 1/headroom).

    False positives:
        The floor counts the work the kernel needs (FP lanes, FP64, FP16, tensor FLOPs, transcendentals, compulsory
        DRAM bytes, the launch), not its instructions as executed: a kernel at its issue, ALU, LSU or L1 ceiling but
        far above that floor (index arithmetic, untiled loads) is never called near; the report says both floors beside its limiter.
        A kernel limited by work the floor does not count (integer bit operations on the XU, L2-resident data) can
        look further from its floor than it is, never closer. Never said of a kernel whose floor or limiter is FP64
        on a board whose FP64 rate is below `max_fp64_ratio` of its FP32 rate (GeForce, T4, L4, A10, A40: 1/32 to
        1/64) unless the kernel runs no FP32 arithmetic: in float code that double work is nearly always an
        accidental promotion (a `1.0` literal, `pow(float, int)`), and float math would be 10× faster or more. A
        matrix product at its FMA ceiling is near the wrong roof: where a faster unit can do the work (TF32 or BF16
        tensor cores), TEN001's finding lowers the floor and replaces this verdict.
        Never said of a DRAM-limited kernel that is latency-bound on memory (`rulekit.dram_in_flight`): its SMs keep
        fewer bytes in flight (warps × loads in flight × their width, from the SASS) than DRAM's latency × bandwidth
        needs, DRAM moves less of its peak than streams of that load width reach (`achievable_dram_fraction`: 0.757
        at 4 bytes, 0.908 at 16; the H100 scalar copy holds 0.89 of the bytes at 70.5% of DRAM, T4 copies 0.84-0.94
        at 82-83%, where the needed bytes rest on the H200's latency) and at least `min_long_scoreboard_share` of
        the stalls wait on global loads (the SASS the kernel's other rules read, CUDA and Triton; without it the
        verdict stands), when `in_flight_gain` × the bytes in flight (16-byte loads instead of 4-byte ones, or four
        iterations' loads issued together) would save at least `min_in_flight_saving` in the same
        latency-plus-throughput model (capped at the floor at 85% of peak): there the floor is not what holds the
        kernel, and LAT001 (a loop of loads) or MEM003 (narrow accesses) names the fix. 10% is the bar the engine sets
        for a fix to stand beside a near-bound verdict (a floor-changing one): a smaller saving is one "leave it" may
        cover; a 4-byte stream at the median DRAM share such streams reach (`ACHIEVABLE_DRAM_FRACTION`, 0.757) would
        gain 17% from 16-byte loads (0.908), over the bar.
    """

    code = "ROOF001"
    slug = "at-roofline"
    category = "at-roofline"
    title = "Near its roofline bound: leave it"
    requires = (SpeedOfLight.DURATION,)
    # the bytes in flight (`latency_bound_on_dram`): the achieved warps and the stalls; the loads in flight come from
    # the SASS where the kernel's was read for the rules that name that fix (LAT001, MEM003: CUDA and Triton)
    optional = (Occupancy.ACHIEVED_PCT, *(WarpStateStats.stall(s) for s in WarpStateStats.STALL_REASONS))
    # collected only where those rules run: a PyTorch or library kernel's verdict never reads them, and `profile`
    # pays replay passes for every metric it declares
    optional_languages = ("cuda", "triton")
    thresholds = {
        "max_headroom": 1.6,
        "max_fp64_ratio": 0.125,
        "min_long_scoreboard_share": 0.5,
        "in_flight_gain": 4.0,
        "min_in_flight_saving": 0.10,
    }
    languages = ("cuda", "triton", "pytorch", "library")
    fixes = {
        "cuda": Fix(
            text=(
                "Leave it. Only fewer bytes or FLOPs help now: fuse it with neighbouring kernels, use a narrower "
                "data type, or skip work."
            )
        ),
    }

    def slow_fp64_in_float_code(self, k: KernelContext) -> bool:
        """The floor or the limiter is FP64 on a board with a slow FP64 pipe, and the kernel is not double throughout
        (it ran FP32 arithmetic, or the report does not count it)."""
        r = k.roofline
        floor_unit = max(r.floors, key=lambda u: r.floors[u]) if r.floors else None
        if (
            "fp64" not in (floor_unit, r.limiter)
            or not r.fp64_ratio
            or r.fp64_ratio >= self.thresholds["max_fp64_ratio"]
        ):
            return False
        return r.flops_by_precision.get("fp32") != 0.0

    def latency_bound_on_dram(self, k: KernelContext) -> bool:
        """DRAM is the limiter, but the SMs keep too few bytes in flight to cover its latency, and the fix that puts
        `in_flight_gain` × them in flight would save at least `min_in_flight_saving` of the kernel's time."""
        t = self.thresholds
        flight = dram_in_flight(k)
        if flight is None or not flight.latency_bound(t["min_long_scoreboard_share"]):
            return False
        r = k.roofline
        new_ns = in_flight_fix_ns(k, flight, t["in_flight_gain"])
        return (
            new_ns is not None
            and time_after(r.duration_ns or 0.0, new_ns, r.theoretical_ns) >= t["min_in_flight_saving"]
        )

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        if r.headroom is None or r.bound == "launch" or r.headroom > self.thresholds["max_headroom"]:
            return None
        if self.slow_fp64_in_float_code(k):
            return None
        if unread_fma_ceiling(k):  # GEN001 says the tensor roof is the floor if it is a product
            return None
        if self.latency_bound_on_dram(k):  # LAT001 or MEM003 names what holds it: too few bytes in flight
            return None
        if r.floor_reason:
            what = r.floor_reason  # the unit that sets the floor, its work and rate (SFU, FP16, launch, ...)
        elif r.memory_floor_ns and (not r.compute_floor_ns or r.memory_floor_ns >= r.compute_floor_ns):
            what = (
                f"moving {fmt_bytes(r.compulsory_bytes)} at "
                f"{(r.peak_dram_bytes_per_s or 0) / 1e12:.2f} TB/s takes {fmt_ns(r.memory_floor_ns)}"
            )
        else:
            peak = r.peak_flops_per_s.get(r.limiting_precision or "", 0.0)
            prec = precision_words(r.limiting_precision or "")
            what = f"{r.flops / 1e9:.2f} GFLOP of {prec} work at {peak / 1e12:.1f} TFLOP/s takes {fmt_ns(r.compute_floor_ns)}"
        return self.finding(
            message=(
                f"Measured {fmt_ns(r.duration_ns)} per launch against a floor of {fmt_ns(r.theoretical_ns)} "
                f"({what}): {r.headroom:.2f}× the floor. No change that keeps this algorithm can save more than "
                f"{1 - 1 / r.headroom:.0%}."
            ),
            fix=self.fix_for(k),
            estimated_speedup=0.0,
            speedup_model=(
                f"No saving claimed: the kernel runs within {self.thresholds['max_headroom']:g}× of its floor "
                f"({r.headroom:.2f}×)."
            ),
            confidence="high",
            evidence=[Evidence("headroom", round(r.headroom, 3), self.thresholds["max_headroom"], "measured ÷ floor")],
        )

    def at_tensor_ceiling(self, pct: float, language: str, metric: str) -> Finding:
        """The verdict on a kernel `ncuadvisor profile` placed at its tensor ceiling from phase 1 alone
        (`profile.ceiling`): its tensor pipe busy `pct`% or more of each launch's time (`metric`, the lowest over its
        launches) bounds its headroom by 100 ÷ `pct`, within `max_headroom`; `language`: the kernel's, for the fix."""
        headroom = 100.0 / pct
        max_headroom = self.thresholds["max_headroom"]
        return self.finding(
            message=(
                f"Phase 1 measured the tensor pipe busy {pct:.0f}% or more of each launch's time: the tensor cores alone "
                f"need that share of it at their peak, so it runs within {headroom:.2f}× of its floor. No change that "
                f"keeps this algorithm can save more than {1 - 1 / headroom:.0%}; phase 2 did not profile it."
            ),
            fix=self.fix_in(language),
            estimated_speedup=0.0,
            speedup_model=(
                f"No saving claimed: the tensor pipe's busy share bounds the headroom (100 ÷ {pct:.1f}% = "
                f"{headroom:.2f}×, within {max_headroom:g}×)."
            ),
            confidence="high",
            evidence=[
                Evidence(metric, round(pct, 2), round(100.0 / max_headroom, 2), "phase 1, lowest launch"),
                Evidence("headroom", round(headroom, 3), max_headroom, "at most: 100 ÷ tensor %"),
            ],
        )
