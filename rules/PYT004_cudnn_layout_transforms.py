import re
from typing import Any

from ncuadvisor.analysis.perfmodels import count
from ncuadvisor.metrics import SpeedOfLight
from ncuadvisor.rules_api import Evidence, Fix, ProgramContext, ProgramFinding, ProgramRule, fmt_ns

# cuDNN's layout transforms (cudnn::engines_precompiled::nchwToNhwcKernel, cudnn::ops::nhwcToNchwKernel)
TRANSFORM = re.compile(r"\b(nchwToNhwc|nhwcToNchw)Kernel\b")
# cuDNN's own set-up launches between a convolution's transforms and its kernel: no data of the program
HELPER = re.compile(r"\binit_device_workspace_kernel\b")
TO_NHWC, TO_NCHW = "nchwToNhwc", "nhwcToNchw"
# cuDNN's NCHW BatchNorm kernels (cudnn::bn_fw_tr_1C11_kernel_NCHW, bn_bw_1C11_kernel_new, bn_*_1C11_singleread): one
# thread block per channel, so a layer of 64 channels runs 64 blocks on the GPU's 132 SMs; channels_last swaps them
# for NHWC kernels that fill the GPU
NCHW_BATCHNORM = re.compile(r"\bbn_\w*1C11")

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


class CudnnLayoutTransforms(ProgramRule):
    """cuDNN converts NCHW tensors to NHWC for its convolution kernels, and back: keep the model in channels_last.

    What it detects:
        cuDNN's `nchwToNhwcKernel` and `nhwcToNchwKernel` launches that exist because the program's tensors are NCHW
        while cuDNN runs NHWC kernels (its tensor-core convolutions, TF32 included): the transforms launched just
        before a kernel convert its inputs (data and filter, `nchwToNhwc`), the one launched just after converts its
        output back (`nhwcToNchw`). Transforms the other way round before a kernel (`nhwcToNchw` pairs: a
        channels_last program whose convolution cuDNN runs with an NCHW-only algorithm, FFT) are not counted.
        Reported when the counted transforms take at least `min_program_fraction` of the program's GPU time.

    Why it costs time:
        Each transform reads and writes a whole activation or gradient through HBM and computes nothing; an NCHW
        network pays two or three per convolution, forward and backward, on tensors as large as its activations.

    Example:
        model = ResNet().cuda()                  # NCHW (torch.contiguous_format), the default
        loss = F.cross_entropy(model(x), y)      # x: NCHW; cuDNN transposes around each convolution

    Use instead:
        `model = model.to(memory_format=torch.channels_last)` and `x = x.to(memory_format=torch.channels_last)`
        (before `torch.compile`, which keeps the layout); in cuDNN code, NHWC tensor and filter descriptors
        (`CUDNN_TENSOR_NHWC`).

    Speedup estimate:
        The counted transforms disappear: their whole time. Other kernels may change too: cuDNN may pick other
        convolution kernels for NHWC tensors (for a convolution it ran in NCHW, such as one with 3 input channels),
        BatchNorm, pooling and elementwise ops switch to their channels_last kernels, and converting the input is one
        copy per batch unless the data arrives in NHWC. cuDNN's NCHW BatchNorm kernels (`bn_*_1C11_*`: one thread
        block per channel) are named with their time, not counted: on a ResNet-style training step
        (`workloads/torch/cnn_step.py`, H200) the transforms were 0.77 ms of the 1.22 ms of kernels channels_last
        saved, and the NHWC BatchNorm kernels took 407 µs a step where the NCHW ones took 938 µs, so the estimate
        is a lower bound in a network with BatchNorm. An FP32 NCHW convolution on the FMA pipes has no transforms
        yet: TEN002 speaks to it and counts the transforms that TF32 would add as part of its new time, so the two
        rules never claim the same kernels.

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
        torch = any((k.get("language") in ("pytorch", "triton")) for k in p.kernels)
        bn = [k for k in p.kernels if NCHW_BATCHNORM.search(str(k.get("name") or ""))]
        bn_ns = sum(float(k.get("duration_ns") or 0.0) for k in bn)
        also = (
            f" cuDNN's NCHW BatchNorm kernels ({count(len(bn), 'kernel')}, {fmt_ns(bn_ns)}, "
            f"{bn_ns / p.total_ns:.0%} of GPU time) run one thread block per channel; channels_last runs NHWC "
            "BatchNorm kernels that fill the GPU instead (not counted here)."
            if bn_ns
            else ""
        )
        return [
            self.finding(
                title=(
                    f"cuDNN layout transforms: {fmt_ns(saving)} ({saving / p.total_ns:.0%} of GPU time) converting "
                    "NCHW tensors for NHWC convolution kernels"
                ),
                message=(
                    f"{count(len(counted), 'launch', 'launches')} of cuDNN's layout transforms take "
                    f"{fmt_ns(saving)}, {saving / p.total_ns:.0%} of the program's GPU time: "
                    + " and ".join(parts)
                    + ". With the model and its input in channels_last they are not needed; "
                    "cuDNN may then also pick other convolution kernels, and BatchNorm, pooling and elementwise ops "
                    "run their channels_last versions." + also
                ),
                fix=self.fix_in("pytorch" if torch else "cuda"),
                kernels=[str(p.by_id[kid].get("display_name") or p.by_id[kid]["name"]) for kid in ids],
                kernel_ids=ids,
                estimated_saving_ns=saving,
                saving_model=(
                    "The transforms disappear: their whole time. The convolutions, BatchNorm and elementwise kernels "
                    "in channels_last may take more or less time than now (not estimated); converting the input is "
                    "one copy per batch."
                ),
                confidence="medium",
                evidence=[
                    Evidence("transform_launches", len(counted), None, "counted transform launches"),
                    Evidence("transform_share", round(saving / p.total_ns, 3), self.thresholds["min_program_fraction"]),
                ],
            )
        ]

    @staticmethod
    def _direction(p: ProgramContext, x: dict[str, Any]) -> str | None:
        k = p.by_id.get(x.get("kernel_id")) or {}
        m = TRANSFORM.search(str(k.get("demangled") or k.get("name") or ""))
        return m.group(1) if m else None

    def _counted(self, p: ProgramContext) -> list[dict[str, Any]]:
        """The transform launches an NCHW program causes, stream by stream in launch order. The transforms between
        two other kernels are the output conversions of the first (the leading ones) and the input conversions of
        the second (the trailing run of one direction). nchwToNhwc inputs mean NCHW tensors for an NHWC kernel: they
        and the conversions before them are counted, and from then on a lone nhwcToNchw after a kernel is an output
        converted back. Two or more nhwcToNchw before a kernel are the inputs of a channels_last program to an
        NCHW-only kernel: not counted, and a lone nhwcToNchw is no longer taken for an output."""
        streams: dict[Any, list[dict[str, Any]]] = {}
        for x in p.launches:
            streams.setdefault(x.get("stream"), []).append(x)
        counted: list[dict[str, Any]] = []
        for launches in streams.values():
            nchw = False  # the program's tensors are NCHW, as the last conversion of inputs showed
            pending: list[dict[str, Any]] = []
            for x in [*launches, None]:
                if x is not None:
                    k = p.by_id.get(x.get("kernel_id")) or {}
                    name = str(k.get("demangled") or k.get("name") or x.get("name") or "")
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
