from ncuadvisor.rulekit import (
    STACK_SIZE_BEFORE,
    Evidence,
    Finding,
    Fix,
    KernelContext,
    LaunchStats,
    MemoryTables,
    Rule,
    SourceCounters,
    count,
    cut,
    fmt_ns,
    global_loads_in_flight,
    limiter_side,
    predict,
    streaming_ns,
    time_after,
)


class LocalMemoryTraffic(Rule):
    """Per-thread data lives in local memory (a dynamically indexed array, or register spills).

    What it detects:
        Local-memory sectors (`l1tex__t_sectors_pipe_lsu_mem_local_op_ld/st.sum`) above `min_local_share` of all
        L1 load/store sectors, and the LDL/STL instructions with their source lines.

    Why it costs time:
        Local memory is per-thread memory in DRAM, cached in L1/L2: an array indexed with a run-time value, or a
        register spill, turns register accesses (0 cycles extra) into memory accesses (tens to hundreds of cycles),
        and its traffic competes with the kernel's real data.

    Example:
        float bins[64];  bins[key & 63] += v;   // run-time index: bins cannot stay in registers

    Use instead:
        Index per-thread arrays only with compile-time constants (`#pragma unroll` loops), or keep the array in
        shared memory laid out `[64][blockDim]` so each thread owns a column; for spills, relax
        `__launch_bounds__`/`-maxrregcount`.

    Speedup estimate:
        A kernel limited by a memory level (`roofline.limiter`) or latency-bound, once its per-thread data stays on
        chip, streams its compulsory global bytes with the global loads it has in flight (SASS dataflow): latency plus
        throughput, read bytes per SM × DRAM latency ÷ (warps × loads in flight per warp × 32 × access bytes) + the
        roofline floor (`DRAM_LATENCY_CYCLES` in ncuadvisor/rulekit/models.py). A local access costs a round trip
        through L1, L2 and often DRAM on the kernel's critical path, far more than its share of sectors says. A kernel a
        pipe limits: time × (1 - 0.5 × local share of L1 sectors). Never below the roofline floor.

        On the weakest evidence (ncu's basic set: no local-memory sectors, no SASS), the per-thread stack limit of the
        launch (`launch__stack_size`, ncu 2025.1 on) above CUDA's 1024-byte default and above the limit of the launch
        before the kernel's first one (the driver raised it for this kernel's larger per-thread frame); the traffic it
        causes is not counted, so the kernel after the fix is held by its busiest unit as busy as it is now: time ×
        busiest unit's share of peak, low confidence.

    False positives:
        A few spills in a cold path; `-Xptxas -v` tells spills (spill stores) from arrays (stack frame). On the basic
        set: the stack limit is the context's, raised by the first kernel that needed it and never lowered (a kernel
        launched after it at the same limit is not taken for it), or set by the program
        (`cudaDeviceSetLimit(cudaLimitStackSize, ...)`), and a kernel ncu did not profile may have raised it before
        the first one it did; a frame within the default 1024 bytes (a 64-float array) is not seen at all.
    """

    code = "LOC001"
    slug = "local-memory"
    category = "local-memory"
    title = "Local-memory traffic (dynamically indexed array or spills)"
    requires = (MemoryTables.LOCAL_LOAD_SECTORS, MemoryTables.LOCAL_STORE_SECTORS)
    optional = (MemoryTables.GLOBAL_LOAD_SECTORS, MemoryTables.GLOBAL_STORE_SECTORS)
    per_instruction = (SourceCounters.INST_EXECUTED, SourceCounters.MEMORY_TYPE)
    weak_evidence = (LaunchStats.STACK_SIZE,)
    # default_stack_bytes: CUDA's per-thread stack limit until a launch needs more (cudaLimitStackSize);
    # max_weak_busiest_pct: on the stack limit alone, a kernel this close to a unit's peak is held by that unit
    thresholds = {"min_local_share": 0.1, "default_stack_bytes": 1024.0, "max_weak_busiest_pct": 80.0}
    fixes = {
        "cuda": Fix(
            text=(
                "Per-thread data goes through local memory at the lines below (LDL/STL). If it is an array indexed "
                "at run time, index it only with constants (unrolled loops) or move it to shared memory with a "
                "thread-major layout; if `-Xptxas -v` shows spill stores, relax the register cap."
            ),
            code=(
                "__shared__ float bins[64][BLOCK];          // was: float bins[64]; in registers/local\n"
                "bins[key & 63][threadIdx.x] += v;           // each thread owns a column: no bank conflicts"
            ),
        ),
        "julia": Fix(
            text=(
                "Per-thread data goes through local memory at the lines below (LDL/STL). If it is an MVector, MArray "
                "or tuple indexed at run time, index it only with constants (`ntuple(f, Val(N))`, "
                "`Base.Cartesian.@nexprs`) or move it to a `CuStaticSharedArray` with the thread index first (Julia "
                "arrays are column-major); if `CUDA.memory(k).local` is not 0 for `k = @cuda launch=false ...` and "
                "`CUDA.registers(k)` sits at the cap the block size leaves (65536 ÷ threads), the registers spill: "
                "launch fewer threads per block or keep less live per thread."
            ),
            code=(
                "bins = CuStaticSharedArray(Float32, (BLOCK, 64))   # was: bins = MVector{64,Float32}(...): local\n"
                "@inbounds bins[threadIdx().x, (key & 63) + 1] += v  # thread index first: consecutive threads, "
                "consecutive words"
            ),
        ),
        "triton": Fix(
            text=(
                "The Triton kernel spills registers to local memory: use smaller BLOCK sizes or fewer elements per "
                "thread, or more num_warps for the same tile; check the compiled kernel's `n_spills`."
            ),
            code="triton.Config({'BLOCK_SIZE': 256}, num_warps=8)",
        ),
    }

    fixes_when = {
        # the basic set: no SASS lines to point at, only the frame the launch needed
        "stack": {
            "cuda": Fix(
                text=(
                    "A per-thread frame above the 1 KiB default ({stack:,.0f} bytes of stack) is a per-thread array "
                    "indexed at run time, or register spills. `nvcc -Xptxas -v` prints each kernel's stack frame "
                    "and spill stores; index the array only with constants (unrolled loops) or move it to shared "
                    "memory with a thread-major layout; relax the register cap for spills. `ncu --section "
                    "MemoryWorkloadAnalysis_Tables --section SourceCounters` counts the local traffic and its lines."
                ),
                code=(
                    "__shared__ unsigned bins[NBINS][BLOCK];      // was: unsigned bins[NBINS]; per thread, in local\n"
                    "bins[key][threadIdx.x]++;                     // each thread owns a column"
                ),
            ),
        },
    }

    def check(self, k: KernelContext) -> Finding | None:
        if k.weak:
            return self._from_stack_limit(k)
        r = k.roofline
        local = (k.m(MemoryTables.LOCAL_LOAD_SECTORS) or 0) + (k.m(MemoryTables.LOCAL_STORE_SECTORS) or 0)
        glob = (k.m(MemoryTables.GLOBAL_LOAD_SECTORS) or 0) + (k.m(MemoryTables.GLOBAL_STORE_SECTORS) or 0)
        if local <= 0:
            return None
        share = local / (local + glob)
        if share < self.thresholds["min_local_share"]:
            return None
        side = limiter_side(r)
        weight = 0.5 if side == "compute" else 1.0
        new_ns = (r.duration_ns or 0) * (1 - weight * share)
        loads, inflight = global_loads_in_flight(k)
        stream_ns = streaming_ns(k, inflight) if side in ("memory", "latency") else None
        if stream_ns:
            new_ns = stream_ns
            model = (
                f"Without local memory the kernel streams its compulsory bytes with {count(loads, 'global load')} in "
                f"flight per warp in {fmt_ns(stream_ns)} (latency + throughput), not below the roofline floor."
            )
        else:
            model = f"Without the local-memory traffic ({share:.0%} of it), {cut(weight, share, r)}, not below the roofline floor."
        lines = k.top_lines(
            SourceCounters.INST_EXECUTED,
            limit=3,
            min_share=0.0,
            sass_filter=lambda s: s.startswith(("LDL", "STL")),
            memory_only=True,
        )
        return self.finding(
            title=f"Local memory: {share:.0%} of L1 traffic is per-thread spills/arrays",
            message=(
                f"{local:,.0f} local-memory sectors ({share:.0%} of load/store sectors): per-thread data that "
                "should be in registers travels through the memory hierarchy."
            ),
            fix=self.fix_for(k),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=model,
            confidence="high" if share >= 0.3 else "medium",
            # the data kept in registers or shared memory: the local traffic gone (the rule is silent below its share)
            predicts=[predict("local_sector_share", share, 0.0, self.thresholds["min_local_share"])],
            evidence=[
                Evidence(
                    "local_sector_share",
                    round(share, 3),
                    self.thresholds["min_local_share"],
                    "local / (local + global) L1 sectors",
                ),
                Evidence(
                    MemoryTables.LOCAL_LOAD_SECTORS, k.m(MemoryTables.LOCAL_LOAD_SECTORS), None, "local load sectors"
                ),
            ],
            source=lines,
        )

    def _from_stack_limit(self, k: KernelContext) -> Finding | None:
        """The weakest evidence (no local-memory sectors): the launch's per-thread stack limit above CUDA's default,
        on a kernel no unit of which is near its peak."""
        t, r = self.thresholds, k.roofline
        stack = k.m(LaunchStats.STACK_SIZE)
        # the limit is the context's, never lowered: it says something of this kernel only where it rose at its first
        # launch, above the launch before it in the process (CUDA's default for a process's first launch)
        before = max(t["default_stack_bytes"], k.m(STACK_SIZE_BEFORE) or 0.0)
        if stack is None or stack <= before:
            return None
        busiest = max(r.sol.get("memory_pct") or 0.0, r.sol.get("compute_pct") or 0.0)
        if busiest <= 0 or busiest >= t["max_weak_busiest_pct"]:
            return None
        new_ns = (r.duration_ns or 0) * busiest / 100
        ratio = stack / t["default_stack_bytes"]
        return self.finding(
            title=f"Local memory: a per-thread stack of {stack:,.0f} bytes, {ratio:.0f}× CUDA's default",
            message=(
                f"The launch ran with a per-thread stack limit of {stack:,.0f} bytes, {ratio:.0f}× the "
                f"{t['default_stack_bytes']:,.0f}-byte default: the driver raises it when a kernel's per-thread "
                "frame (an array indexed at run time, or register spills) needs more, and each thread's frame "
                f"lives in local memory. No unit of the kernel is busier than {busiest:.0f}% of its peak."
            ),
            fix=self.fix_for(k, "stack", stack=stack),
            estimated_speedup=time_after(r.duration_ns or 0, new_ns, r.theoretical_ns),
            speedup_model=(
                "The local traffic is not counted: with the per-thread data on chip, the kernel is held by its "
                f"busiest unit as busy as it is now ({busiest:.0f}% of its peak): at most {1 - busiest / 100:.0%} saved."
            ),
            evidence=[
                Evidence(LaunchStats.STACK_SIZE, stack, t["default_stack_bytes"], "per-thread stack limit", "B"),
                Evidence(
                    "busiest_unit_pct", round(busiest, 1), t["max_weak_busiest_pct"], "busiest unit (at most)", "%"
                ),
            ],
        )
