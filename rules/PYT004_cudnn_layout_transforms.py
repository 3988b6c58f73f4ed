import re
from dataclasses import dataclass, field
from typing import Any

from ncuadvisor.rulekit import (
    PRACTICAL_FRACTION,
    Evidence,
    Fix,
    KernelEntry,
    ProgramContext,
    ProgramFinding,
    ProgramRule,
    SpeedOfLight,
    count,
    fmt_ns,
    latency_split_ns,
    predict,
)

# cuDNN's layout transforms (cudnn::engines_precompiled::nchwToNhwcKernel, cudnn::ops::nhwcToNchwKernel)
TRANSFORM = re.compile(r"\b(nchwToNhwc|nhwcToNchw)Kernel\b")
# cuDNN's own set-up launches between a convolution's transforms and its kernel: no data of the program
HELPER = re.compile(r"\binit_device_workspace_kernel\b")
TO_NHWC, TO_NCHW = "nchwToNhwc", "nhwcToNchw"
# cuDNN's NCHW BatchNorm kernels (cudnn::bn_fw_tr_1C11_kernel_NCHW, bn_bw_1C11_kernel_new, bn_*_1C11_singleread): one
# thread block per channel, so a layer of 64 channels runs 64 blocks on the GPU's 132 SMs; channels_last swaps them
# for NHWC kernels (batchnorm_fwtr_nhwc_semiPersist, batchnorm_bwtr_nhwc_semiPersist) that fill the GPU
NCHW_BATCHNORM = re.compile(r"\bbn_\w*1C11")


@dataclass(frozen=True)
class BatchNormAsNhwc:
    """An NCHW BatchNorm kernel group and the time the same work would take in an NHWC kernel that fills the GPU."""

    kernel: KernelEntry
    now_ns: float  # the group's GPU time (every launch)
    nhwc_ns: float  # the model's time for the same launches
    gain: float  # warps in flight as NHWC ÷ now
    blocks: float  # the grid of its profiled launch: one block per channel
    warps: float  # achieved warps per SM that runs a block
    warps_fit: float  # warps per SM at the kernel's theoretical occupancy
    busy_pct: float  # the busiest unit's share of its time (Speed Of Light %)


def batchnorm_as_nhwc(k: KernelEntry, device: dict[str, Any]) -> BatchNormAsNhwc | None:
    """The NHWC time of an NCHW BatchNorm kernel group, in the latency-plus-throughput model (`parallelism_ns`): of
    the profiled launch's time, the busiest unit's share (Speed Of Light %) stays, the rest (latency: one block per
    channel on as many SMs, a few warps each) divides by the gain in warps in flight once every SM holds the warps
    the kernel's theoretical occupancy allows, against the grid's SMs at its achieved occupancy; never below the
    roofline floor at 85% of peak. The group's time scales by the launch's. None without the roofline, grid or
    occupancy (a launch timed only)."""
    r, launch = k.roofline, k.launch
    sol = r.sol
    duration, floor = r.duration_ns, r.theoretical_ns
    grid, sms = launch.grid_size, device.get("sm_count")
    achieved, theoretical = launch.achieved_occupancy_pct, launch.theoretical_occupancy_pct
    now = float(k.duration_ns or 0.0)
    if not (now and duration and floor and grid and sms and achieved and theoretical):
        return None
    busy = max(float(sol.get("memory_pct") or 0.0), float(sol.get("compute_pct") or 0.0))
    gain = max(1.0, sms * theoretical / (min(grid, sms) * achieved))
    per_launch = max(latency_split_ns(duration, busy, gain), floor / PRACTICAL_FRACTION)
    max_warps = float(device.get("max_warps_per_sm") or 64)
    return BatchNormAsNhwc(
        kernel=k,
        now_ns=now,
        nhwc_ns=now * min(1.0, per_launch / duration),
        gain=gain,
        blocks=float(grid),
        warps=achieved / 100.0 * max_warps,
        warps_fit=theoretical / 100.0 * max_warps,
        busy_pct=busy,
    )


_TORCH = Fix(
    text=(
        "Keep the activations in NHWC: convert the model and its input to channels_last. cuDNN then runs its NHWC "
        "convolution kernels on them directly, and BatchNorm, ReLU, pooling and the residual adds run their "
        "channels_last kernels, so these transforms go away. Under torch.compile, do the same before compiling: "
        "the compiled graph keeps the layout it is given."
    ),
    code=(
        "model = model.to(memory_format=torch.channels_last)\n"
        "x = x.to(memory_format=torch.channels_last)   # every batch, or have the data loader produce NHWC\n"
        "model = torch.compile(model)                  # if compiled: after the conversion"
    ),
)


@dataclass
class _BatchNormPart:
    """The NCHW BatchNorm part of the finding: the kernel groups modelled as NHWC ones, and the others (timed only,
    or no faster as NHWC), named with their time."""

    modelled: list[BatchNormAsNhwc] = field(default_factory=list)
    other: list[KernelEntry] = field(default_factory=list)

    @property
    def now_ns(self) -> float:
        return sum(b.now_ns for b in self.modelled)

    @property
    def nhwc_ns(self) -> float:
        return sum(b.nhwc_ns for b in self.modelled)

    def message(self, p: ProgramContext) -> str:
        kernels = [b.kernel for b in self.modelled] + self.other
        if not kernels:
            return ""
        all_ns = sum(float(k.duration_ns or 0.0) for k in kernels)
        head = (
            f" cuDNN's NCHW BatchNorm kernels ({count(len(kernels), 'kernel')}, {fmt_ns(all_ns)}, "
            f"{all_ns / p.total_ns:.0%} of GPU time) run one thread block per channel"
        )
        if not self.modelled:
            return head + "; channels_last runs NHWC BatchNorm kernels that fill the GPU instead (not counted here)."
        big = max(self.modelled, key=lambda b: b.now_ns)
        name = big.kernel.display_name or big.kernel.name
        text = (
            f": the largest, {name}, runs {big.blocks:.0f} blocks on {p.device.get('sm_count', 0):.0f} SMs with "
            f"{big.warps:.0f} warps each where {big.warps_fit:.0f} fit, its busiest unit at {big.busy_pct:.0f}% of "
            f"peak: latency-bound. As NHWC kernels that spread each channel over the whole GPU, "
            + (f"these {count(len(self.modelled), 'kernel')}" if not self.other else f"{len(self.modelled)} of them")
            + f" ({fmt_ns(self.now_ns)}) would take ~{fmt_ns(self.nhwc_ns)}, "
            f"{fmt_ns(self.now_ns - self.nhwc_ns)} less, counted in the saving."
        )
        if self.other:
            other_ns = sum(float(k.duration_ns or 0.0) for k in self.other)
            text += (
                f" Not counted: the other {count(len(self.other), 'kernel')} ({fmt_ns(other_ns)}), timed only or "
                "no faster in the model."
            )
        return head + text

    def model(self, transforms_ns: float) -> str:
        """The saving model: the transforms' time, and the BatchNorm kernels' as NHWC ones where they were modelled."""
        if not self.modelled:
            return (
                "The transforms disappear: their whole time. The convolutions, BatchNorm and elementwise kernels in "
                "channels_last may take more or less time than now (not estimated); converting the input is one "
                "copy per batch."
            )
        big = max(self.modelled, key=lambda b: b.now_ns)
        return (
            f"The transforms disappear: their whole time ({fmt_ns(transforms_ns)}). "
            f"cuDNN's NCHW BatchNorm kernels ({fmt_ns(self.now_ns)}) would run as NHWC ones: ~{fmt_ns(self.nhwc_ns)}. "
            "Per kernel, its busiest unit's share of its time (Speed Of Light %) stays and the rest, latency, divides "
            "by the gain in warps in flight, every SM at the kernel's theoretical occupancy against the grid's SMs "
            f"at its achieved one (×{big.gain:.1f} for the largest), never below its roofline floor at "
            f"{PRACTICAL_FRACTION:.0%} of peak. The convolutions and elementwise kernels in channels_last may take "
            "more or less time than now (not estimated); converting the input is one copy per batch."
        )


class CudnnLayoutTransforms(ProgramRule):
    """cuDNN converts NCHW tensors to NHWC for its convolution kernels, and back: keep the model in channels_last.

    What it detects:
        cuDNN's `nchwToNhwcKernel` and `nhwcToNchwKernel` launches that exist because the program's tensors are NCHW
        while cuDNN runs NHWC kernels (its tensor-core convolutions, TF32 included): the transforms launched just
        before a kernel convert its inputs (data and filter, `nchwToNhwc`), the one launched just after converts its
        output back (`nhwcToNchw`). Transforms the other way round before a kernel (`nhwcToNchw` pairs: a
        channels_last program whose convolution cuDNN runs with an NCHW-only algorithm, FFT) are not counted.
        Reported when the counted transforms take at least `min_program_fraction` of the program's GPU time; cuDNN's
        NCHW BatchNorm kernels (`bn_*_1C11_*`) of the same program are part of the finding.

    Why it costs time:
        Each transform reads and writes a whole activation or gradient through HBM and computes nothing; an NCHW
        network pays two or three per convolution, forward and backward, on tensors as large as its activations.
        cuDNN's NCHW BatchNorm runs one thread block per channel: a few SMs' worth of warps wait on DRAM latency
        while the rest of the GPU idles.

    Example:
        model = ResNet().cuda()                  # NCHW (torch.contiguous_format), the default
        loss = F.cross_entropy(model(x), y)      # x: NCHW; cuDNN transposes around each convolution

    Use instead:
        `model = model.to(memory_format=torch.channels_last)` and `x = x.to(memory_format=torch.channels_last)`
        (before `torch.compile`, which keeps the layout); in cuDNN code, NHWC tensor and filter descriptors
        (`CUDNN_TENSOR_NHWC`).

    Speedup estimate:
        The counted transforms disappear: their whole time. cuDNN's NCHW BatchNorm kernels (`bn_*_1C11_*`), where the
        transforms show cuDNN converting NCHW tensors for NHWC kernels, become NHWC ones: the NCHW kernels run one
        thread block per channel, so a layer of 64 channels runs 64 blocks on 132 SMs with 16 warps each, latency-bound
        with DRAM 10-25% busy; NHWC kernels spread each channel over the whole GPU. Per kernel group, in the
        latency-plus-throughput model of `parallelism_ns` (LCH001's for a small grid): its profiled launch's busiest
        unit's share of its time (Speed Of Light %) stays and the rest divides by the gain in warps in flight, every
        SM at the kernel's theoretical occupancy against the grid's SMs at its achieved one, never below its roofline
        floor at 85% of peak; a group timed only is named, not counted. On a ResNet-style training step
        (`workloads/torch/cnn_step.py`, H200) the model gives 382 µs for the 938 µs of NCHW BatchNorm kernels, whose
        NHWC counterparts measured 407 µs, and the estimate 1.33 ms for the 1.22 ms of kernels channels_last saved
        (the transforms alone: 0.77 ms). Other kernels may change too: cuDNN may pick other convolution kernels for
        NHWC tensors (for a convolution it ran in NCHW, such as one with 3 input channels), pooling and elementwise
        ops switch to their channels_last kernels, and converting the input is one copy per batch unless the data
        arrives in NHWC (not estimated). An FP32 NCHW convolution on the FMA pipes has no transforms yet: TEN002
        speaks to it and counts the transforms that TF32 would add as part of its new time, so the two rules never
        claim the same kernels.
        The counter the fix moves: the launches of the transform kernels, to 0 (at most half of them left after).

    False positives:
        A network that must stay NCHW (a custom op that assumes contiguous NCHW; `.view` on activations then needs
        `.reshape`) keeps the transforms; the finding then says what they cost.
    """

    code = "PYT004"
    slug = "cudnn-layout-transforms"
    category = "fusion"
    title = "cuDNN layout transforms around NCHW convolutions: use channels_last"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {"min_program_fraction": 0.01}
    fixes = {
        "pytorch": _TORCH,
        "cuda": Fix(
            text=(
                "Keep the tensors in NHWC between layers: describe activations and filters as NHWC "
                "(CUDNN_TENSOR_NHWC) so cuDNN's NHWC convolution kernels read them without transforms."
            ),
            code=(
                "cudnnSetTensor4dDescriptor(xDesc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w);\n"
                "cudnnSetFilter4dDescriptor(wDesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, k, c, r, s);"
            ),
        ),
    }

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        counted = self._counted(p)
        if not counted or not p.total_ns:
            return []
        saving = sum(float(x.get("duration_ns") or 0.0) for x in counted)
        if saving < self.thresholds["min_program_fraction"] * p.total_ns:
            return []
        ids = list(dict.fromkeys(str(x["kernel_id"]) for x in counted))
        to_nhwc = [x for x in counted if self._direction(p, x) == TO_NHWC]
        to_nchw = [x for x in counted if self._direction(p, x) == TO_NCHW]
        ns = lambda xs: sum(float(x.get("duration_ns") or 0.0) for x in xs)  # noqa: E731
        parts = []
        if to_nhwc:
            parts.append(
                f"{len(to_nhwc)} nchwToNhwc ({fmt_ns(ns(to_nhwc))}) convert NCHW inputs, filters and gradients for "
                "cuDNN's NHWC convolution kernels"
            )
        if to_nchw:
            parts.append(f"{len(to_nchw)} nhwcToNchw ({fmt_ns(ns(to_nchw))}) convert their outputs back to NCHW")
        torch = any(k.language in ("pytorch", "triton") for k in p.kernels)
        bn = self._batchnorm(p) if to_nhwc else _BatchNormPart()
        transforms = list(dict.fromkeys(ids))
        launches = sum(p.by_id[kid].launches for kid in transforms)
        ids += [b.kernel.id for b in bn.modelled]
        bn_saving = bn.now_ns - bn.nhwc_ns
        total = saving + bn_saving
        evidence = [
            Evidence("transform_launches", len(counted), None, "counted transform launches"),
            Evidence("transform_share", round(saving / p.total_ns, 3), self.thresholds["min_program_fraction"]),
        ]
        if bn.modelled:
            evidence += [
                Evidence("nchw_batchnorm_ns", round(bn.now_ns), None, "NCHW BatchNorm kernels counted (ns)"),
                Evidence("nhwc_batchnorm_ns", round(bn.nhwc_ns), None, "the same as NHWC kernels, modelled (ns)"),
            ]
        return [
            self.finding(
                title=(
                    f"cuDNN layout transforms: {fmt_ns(saving)} ({saving / p.total_ns:.0%} of GPU time) converting "
                    "NCHW tensors for NHWC convolution kernels"
                    + (f"; NCHW BatchNorm: {fmt_ns(bn.now_ns)} at one block per channel" if bn.modelled else "")
                ),
                message=(
                    f"{count(len(counted), 'launch', 'launches')} of cuDNN's layout transforms take "
                    f"{fmt_ns(saving)}, {saving / p.total_ns:.0%} of the program's GPU time: "
                    + " and ".join(parts)
                    + ". With the model and its input in channels_last they are not needed; "
                    "cuDNN may then also pick other convolution kernels, and BatchNorm, pooling and elementwise ops "
                    "run their channels_last versions." + bn.message(p)
                ),
                fix=self.fix_in("pytorch" if torch else "cuda"),
                kernels=[p.by_id[kid].display_name or p.by_id[kid].name for kid in ids],
                kernel_ids=ids,
                # in channels_last the transforms are not needed: their launches are gone (the BatchNorm kernels
                # become other, NHWC, kernels: not counted)
                predicts=[predict("kernel_launches", launches, 0.0, launches / 2, kernel_ids=transforms)],
                estimated_saving_ns=total,
                saving_model=bn.model(saving),
                confidence="medium",
                evidence=evidence,
            )
        ]

    @staticmethod
    def _batchnorm(p: ProgramContext) -> "_BatchNormPart":
        """cuDNN's NCHW BatchNorm kernels of the program: those the model can time as NHWC ones, and the rest."""
        part = _BatchNormPart()
        for k in p.kernels:
            if not NCHW_BATCHNORM.search(k.name) or k.id in p.owned:
                continue  # not cuDNN's NCHW BatchNorm, or a kernel another program rule owns
            b = batchnorm_as_nhwc(k, p.device)
            if b is not None and b.nhwc_ns < b.now_ns:
                part.modelled.append(b)
            else:
                part.other.append(k)
        return part

    @staticmethod
    def _direction(p: ProgramContext, x: dict[str, Any]) -> str | None:
        k = p.by_id.get(str(x.get("kernel_id")))
        m = TRANSFORM.search((k.demangled or k.name) if k is not None else "")
        return m.group(1) if m else None

    def _counted(self, p: ProgramContext) -> list[dict[str, Any]]:
        """The transform launches an NCHW program causes, stream by stream in launch order. The transforms between
        two other kernels are the output conversions of the first (the leading ones) and the input conversions of
        the second (the trailing run of one direction). nchwToNhwc inputs mean NCHW tensors for an NHWC kernel: they
        and the conversions before them are counted, and from then on a lone nhwcToNchw after a kernel is an output
        converted back. Two or more nhwcToNchw before a kernel are the inputs of a channels_last program to an
        NCHW-only kernel: not counted, and a lone nhwcToNchw is no longer taken for an output."""
        streams: dict[Any, list[dict[str, Any]]] = {}
        for launch in p.launches:
            streams.setdefault(launch.get("stream"), []).append(launch)
        counted: list[dict[str, Any]] = []
        for launches in streams.values():
            nchw = False  # the program's tensors are NCHW, as the last conversion of inputs showed
            pending: list[dict[str, Any]] = []
            for x in [*launches, None]:
                if x is not None:
                    k = p.by_id.get(str(x.get("kernel_id")))
                    name = ((k.demangled or k.name) if k is not None else "") or str(x.get("name") or "")
                    if TRANSFORM.search(name):
                        pending.append(x)
                        continue
                    if HELPER.search(name):
                        continue
                if not pending:
                    continue
                dirs = [self._direction(p, t) for t in pending]
                if dirs[-1] == TO_NHWC:  # NCHW inputs for an NHWC kernel, after earlier outputs converted back
                    counted += pending
                    nchw = True
                elif nchw and len(pending) == 1:  # the last kernel's output converted back to NCHW
                    counted += pending
                else:  # NHWC inputs for an NCHW-only kernel: a channels_last program
                    nchw = False
                pending = []
        return counted
