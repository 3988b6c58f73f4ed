from ncuadvisor.rulekit import (
    PRACTICAL_FRACTION,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    Occupancy,
    Rule,
    SchedulerStats,
    SpeedOfLight,
    fmt_ns,
    sm_active_share,
)

_LIMITS = {
    Occupancy.LIMIT_REGISTERS: "registers",
    Occupancy.LIMIT_SHARED_MEM: "shared memory",
    Occupancy.LIMIT_WARPS: "warps",
    Occupancy.LIMIT_BLOCKS: "blocks",
}
_CALL = (
    "Leave the kernel: its code is the library's, and no edit of yours makes it faster at this shape. The levers are "
    "the call: fewer, larger calls (batch them, or one call over the concatenated tensors); compute or draw less (only "
    "the values used, in the dtype used); fuse the op into the kernel that consumes its output, which saves this "
    "kernel's stores and its consumer's loads (random numbers generated inside the consuming kernel: Triton tl.rand / "
    "tl.randn from a seed and the element's offset, or torch.compile of the region); or a different op."
)


class LibraryKernelAtItsShape(Rule):
    """A library kernel a modest multiple above its floor that no rule explains: the library's code at this shape.

    What it detects:
        A kernel of a library binary (cuBLAS, cuDNN, ATen's own kernels: the `library` and `pytorch` languages) at
        least `min_headroom` times its roofline floor (ROOF001's bar: below it, ROOF001 says "leave it"), at least
        `min_duration_ns` long, on which no specific rule fired and the fallback that names a mechanism (GEN001)
        named none: it runs last (`fallback`, a verdict: the engine runs it only where the fallbacks that name a
        mechanism stayed silent). It fires only where the headroom is no more than what the library's compiled kernel
        and the size of the call account for: 1 ÷ (`PRACTICAL_FRACTION` × O × A), where O is the theoretical
        occupancy the kernel's registers, shared memory and block size allow (the library's compiled choice; 1 where
        the report lacks it or it is full) and A the share of the elapsed cycles the SMs were active, credited no lower
        than 1 − (an empty kernel's duration, the roofline's launch floor) ÷ the kernel's duration: the ramp-up and
        drain of a launch cost about what an empty kernel takes, and SMs idle beyond that (a grid that leaves them
        idle, a tail of one slow block) are a mechanism, not the call's fixed cost (1 where the report lacks the cycle
        counters). By Little's law a kernel limited by latency issues in proportion to its resident warps, so at
        occupancy O it runs at most 1/O slower than at full occupancy, and the idle SMs add 1/A: a kernel at full
        occupancy with every SM active for the whole launch would run at its floor's rate at 85% of peak. Headroom
        beyond that bound is more than the library's occupancy and the launch's fixed cost can explain: something else
        holds the kernel, and it stays a gap in the rule set.

    Why it costs time:
        The time is the library's code at the shape it was called with: the kernel's registers cap the warps that
        hide its latency, and a launch of a few microseconds spends part of it ramping up and draining. Neither is
        the user's to change inside the kernel; the call decides how much work each launch carries.

    Example:
        x = torch.rand(1024, 1024, device="cuda")    # ATen's Philox generator: 6.9 µs, 2.3× its issue floor,
        y = rms_norm(x)                                # 50% occupancy (56 registers), SMs active 75% of the launch

    Use instead:
        Change the call, not the kernel: fewer, larger calls; compute or draw less; fuse the op into its consumer
        (random numbers drawn inside the consuming kernel with Triton `tl.rand`/`tl.randn`, or `torch.compile` of the
        region); or a different op.

    Speedup estimate:
        None is claimed: a verdict, like ROOF001's. The message states the limiter the counters show as the reason,
        not as a fix, and the bound the headroom is within.

    False positives:
        The bound is an upper bound (pure latency, Little's law): a library kernel with a mechanism no rule of this
        set names yet, below the bound, is called the library's shape. Never said of a tensor-core product (tensor
        FLOPs counted): its asynchronous pipeline, not its resident warps, hides its latency, so its occupancy bounds
        nothing; GEN001 names its waves, K and epilogue. A program finding that covers the kernel
        (a fusion chain, launch overhead) replaces this verdict, as it replaces GEN001's finding. Never said of user
        code (CUDA, Triton), nor where any specific rule or GEN001 names a mechanism.
    """

    code = "LIB002"
    slug = "library-kernel-at-its-shape"
    category = "at-roofline"
    title = "Library code at this shape: leave the kernel, change the call"
    requires = (SpeedOfLight.DURATION,)
    optional = (
        Occupancy.THEORETICAL_PCT,
        Occupancy.LIMIT_REGISTERS,
        Occupancy.LIMIT_SHARED_MEM,
        Occupancy.LIMIT_WARPS,
        Occupancy.LIMIT_BLOCKS,
        LaunchStats.REGISTERS_PER_THREAD,
        LaunchStats.WAVES_PER_SM,
    )
    thresholds = {"min_headroom": 1.6, "min_duration_ns": 1_000.0}
    languages = ("library", "pytorch")
    fallback = True
    fixes = {"library": Fix(text=_CALL), "pytorch": Fix(text=_CALL)}

    def occupancy(self, k: KernelContext) -> tuple[float, str]:
        """The theoretical occupancy as a fraction (1 where unknown or full) and its limiter in words."""
        theo = k.m(Occupancy.THEORETICAL_PCT)
        if theo is None or not 0.0 < theo < 100.0:
            return 1.0, ""
        limits = {name: v for m, name in _LIMITS.items() if (v := k.m(m)) is not None}
        words = f"occupancy {theo:.0f}%"
        if limits:
            name = min(limits, key=lambda n: limits[n])
            regs = k.m(LaunchStats.REGISTERS_PER_THREAD)
            per = f", {regs:.0f} registers per thread" if name == "registers" and regs else ""
            blocks = limits[name]
            words += (
                f", limited by {name} ({blocks:.0f} block{'' if blocks == 1 else 's'}/SM{per}: the library's choice)"
            )
        return theo / 100.0, words

    def active(self, k: KernelContext) -> tuple[float, str]:
        """The SMs' active share of the elapsed cycles the verdict credits (1 where unknown) and it in words: the idle
        share is credited up to the launch's own fixed cost (an empty kernel's duration ÷ this one's), never more."""
        share = sm_active_share(k)
        r = k.roofline
        launch_ns = r.floors.get("launch", 0.0)
        if share is None or share >= 1.0 or not r.duration_ns or not launch_ns:
            return 1.0, ""
        credited = max(share, 1.0 - launch_ns / r.duration_ns)
        words = f"the SMs active {share:.0%} of the launch (its ramp-up and drain"
        if credited > share:
            words += f"; credited up to an empty kernel's {fmt_ns(launch_ns)}: {credited:.0%}"
        return credited, words + ")"

    def check(self, k: KernelContext) -> Finding | None:
        r = k.roofline
        t = self.thresholds
        if not r.duration_ns or r.duration_ns < t["min_duration_ns"] or r.headroom is None:
            return None
        if r.headroom < t["min_headroom"]:
            return None
        if any(v for p, v in r.flops_by_precision.items() if p.startswith("tensor")):
            return None  # a tensor-core product's pipeline, not its warps, hides its latency: GEN001 names its waves
        occ, occ_words = self.occupancy(k)
        act, act_words = self.active(k)
        explained = 1.0 / (PRACTICAL_FRACTION * occ * act)
        if r.headroom > explained:
            return None  # more than the library's occupancy and the idle SMs account for: not the shape alone
        issue = k.m(SchedulerStats.ISSUE_ACTIVE_PCT)
        reasons = [w for w in (r.limiter_reason or r.bound_reason, occ_words, act_words) if w]
        if issue is not None:
            reasons.append(f"the schedulers issue on {issue:.0f}% of the active cycles")
        return self.finding(
            message=(
                f"{fmt_ns(r.duration_ns)} against a floor of {fmt_ns(r.theoretical_ns)} ({r.headroom:.2f}×), and no "
                f"rule names a mechanism a change of yours reaches. What holds it is the library's compiled kernel and "
                f"the size of the call: {'; '.join(reasons)}. Together these account for up to {explained:.2f}× "
                f"(1 ÷ ({PRACTICAL_FRACTION:.2f} × occupancy {occ:.2f} × SMs active {act:.2f}), Little's law), so "
                "nothing else is wrong: the kernel will not go faster by your edits."
            ),
            fix=self.fix_for(k),
            estimated_speedup=0.0,
            speedup_model=(
                f"No saving claimed: library code, {r.headroom:.2f}× its floor, within the {explained:.2f}× its "
                "occupancy and the SMs' active share account for."
            ),
            confidence="medium",
            evidence=[
                Evidence("headroom", round(r.headroom, 3), t["min_headroom"], "measured ÷ floor"),
                Evidence("explained_headroom", round(explained, 3), None, "1 ÷ (0.85 × occupancy × SMs active)"),
                Evidence(Occupancy.THEORETICAL_PCT, round(occ * 100.0, 1), None, "occupancy", "%"),
                Evidence("sm_active_share", round(act, 3), None, "SM active ÷ elapsed cycles"),
            ],
        )
