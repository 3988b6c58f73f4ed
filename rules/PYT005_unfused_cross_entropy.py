import math
from dataclasses import dataclass, field
from typing import Any

from ncuadvisor.rulekit import (
    ELEMENT_BYTES,
    PRACTICAL_FRACTION,
    Evidence,
    Fix,
    KernelEntry,
    ProgramContext,
    ProgramFinding,
    ProgramRule,
    SoftmaxKernel,
    SpeedOfLight,
    aten_generic_kernel,
    cast_types,
    copy_kind,
    count,
    dim3_of,
    fmt_bytes,
    fmt_ns,
    nll_loss_kernel,
    predict,
    softmax_kernel,
)

DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}

_FIX = Fix(
    text=(
        "Compute the loss fused: torch.compile the function that computes it. Inductor fuses the upcast, the "
        "log-sum-exp and the gather of each row's target forward, and the softmax gradient with its downcast "
        "backward, reading the {dtype} logits without writing an fp32 copy of them. The fp32 upcast is autocast's "
        "choice for numerical safety (a log-sum-exp over {classes:,} classes in bf16 loses precision); the fused "
        "kernel keeps it, accumulating in fp32 in registers. For very large vocabularies or long sequences, a "
        "chunked or fused linear + cross-entropy (Liger Kernel's LigerFusedLinearCrossEntropyLoss) never "
        "materialises the logits at all. A compiled function costs host time of its own on every call (its "
        "guards, the wrapper): on a step whose GPU already waits on the host, time the step's wall clock too."
    ),
    code=(
        "loss_fn = torch.compile(F.cross_entropy)   # or @torch.compile on the function that computes the loss\n"
        "loss = loss_fn(logits.view(-1, logits.size(-1)), targets.view(-1))\n"
        "\n"
        "# very large vocabularies: the LM head and the loss in chunks, the logits never in HBM (liger-kernel)\n"
        "from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss\n"
        "loss = LigerFusedLinearCrossEntropyLoss()(lm_head.weight, hidden.view(-1, hidden.size(-1)), "
        "targets.view(-1))"
    ),
)


@dataclass
class Chain:
    """One cross-entropy in launch order: the indices of its launches in `p.launches`, its elements (rows ×
    classes), the log-softmax forward's kernel and what it computes."""

    launches: list[int]
    elements: float  # rows × classes; for a log-softmax timed only, the most its launch shape allows
    exact: bool  # the elements from stored bytes, not from the launch shape
    forward: KernelEntry
    softmax: SoftmaxKernel
    logits: str  # the logits' element type (a leading upcast's source type, else the log-softmax's input)
    kernel_ids: list[str] = field(default_factory=list)


def _dims(text: Any) -> tuple[int, int, int]:
    """A launch dimension's three numbers; (0, 0, 0) where the result has none."""
    return dim3_of(text) or (0, 0, 0)


def _line(k: KernelEntry) -> tuple[Any, Any] | None:
    """The Python line that launched a kernel in forward (`profile --python-lines`); None in backward or without."""
    pl = k.python_line
    if pl is None or pl.backward_of:
        return None
    return pl.file, pl.line


class UnfusedCrossEntropy(ProgramRule):
    """Cross-entropy over a large vocabulary computed by eager ATen kernels: log-softmax, nll_loss, autocast's fp32
    casts and the gradient's fill each stream the whole logits tensor through HBM; a fused loss reads it a few times.

    What it detects:
        On one stream, ATen's log-softmax forward (`cunn_SoftMaxForward`, `cunn_SoftMaxForwardSmem`,
        `cunn_SpatialSoftMaxForward` with a `LogSoftMaxForwardEpilogue`; `softmax_warp_forward` with is_log_softmax
        for rows of up to 1,024 classes) with what ATen launches around it for `F.cross_entropy`: the nll_loss
        kernels (`nll_loss_forward_*`, `nll_loss_backward_*`: at least one is required: log-softmax alone is not a
        loss), the log-softmax backward (`cunn_SoftMaxBackward`, `softmax_warp_backward`) and every ATen
        elementwise or reduction kernel of the same element count in between or right next to them (autocast's
        upcast of the log-probabilities or logits to fp32, the zero-fill of the fp32 gradient, its cast back to the
        logits' dtype). The element count (rows × classes) is the log-softmax forward's stored bytes over its output
        element size (rows: its grid, one block per row); a neighbour matches when its load or store bytes are that
        count times 1, 2, 4 or 8 bytes (within `size_tolerance`), or, timed only, when its grid × block × a power of
        two up to 16 rounds up to it. With Python lines (`profile --python-lines`) the forward kernels must come from
        the log-softmax's line; without them, adjacency in launch order decides, at most `max_between` launches from
        the forward to the backward log-softmax (kernels of other sizes in between are skipped, not counted). The
        rule owns these kernels: PYT002 gives their casts no entry of their own and PRG002 does not chain them.
        Reported when the saving is at least `min_program_fraction` of the program's GPU time.

    Why it costs time:
        Each kernel of the chain streams the rows × classes tensor through HBM: the log-softmax reads the logits and
        writes log-probabilities, autocast (which runs nll_loss in fp32 for numerical safety) writes them again in
        fp32, backward zero-fills an fp32 gradient of the same size, scatters into it, casts it back to the logits'
        dtype and the log-softmax backward reads it with the saved output to write the gradient of the logits. With
        a vocabulary of 50,304 and 8,192 tokens that is 412 M elements: 0.8 GB in bf16, 1.6 GB in fp32, per copy.

    Example:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(idx)                                  # bf16, (8, 1024, 50304)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        loss.backward()

    Use instead:
        `torch.compile` the loss (`torch.compile(F.cross_entropy)`, or the function computing it): Inductor fuses
        the upcast, the log-sum-exp and the gather of the target forward, and the softmax gradient with its
        downcast backward, reading the logits in their own dtype (fp32 accumulation kept, in registers). For very
        large vocabularies, a chunked / fused linear + cross-entropy (Liger Kernel's
        `LigerFusedLinearCrossEntropyLoss`) computes the LM head and the loss chunk by chunk and never materialises
        the logits.

    Speedup estimate:
        Saving = the chain's measured time − the fused loss's floor, where the floor is what a fused forward and
        backward must move at `practical` × the DRAM peak: N × s × (`forward_reads` + 1) + N × s bytes, N = rows ×
        classes, s = the logits' element size: the logits read `forward_reads` times forward (a max then a sum of
        exponentials; an online log-sum-exp reads them once, so the floor is generous), read once more backward,
        and the gradient written once in the logits' dtype. On the GPT step (8,192 × 50,304 bf16 logits, 3.41 ms of
        loss kernels on an H200): floor 3.3 GB at 4.1 TB/s = 0.81 ms, saving 2.6 ms.
        The counter the fix moves: the launches of the loss's eager kernels, to 0 (at most half of them left after).

    False positives:
        A chain whose saving is below `min_program_fraction` of the GPU time is not reported: a classifier's
        cross-entropy over 1,000 classes and a batch of 64 (the ResNet step, `workloads/torch/cnn_step.py`) holds
        64,000 elements, 256 KB that stay in L2, and its four loss kernels take 0.4% of that step: fusing them saves
        launches, not bytes. The threshold is on the time the fix saves, not on the class count: a large batch of
        short rows streams as many bytes as a few long ones. A kernel group is owned whole: if the same cast kernel
        (same name and launch shape) also runs elsewhere, those launches lose their PYT002 finding too. A loss
        computed in a chunked or Triton kernel already is not matched (no ATen log-softmax).
    """

    code = "PYT005"
    slug = "unfused-cross-entropy"
    category = "fusion"
    title = "Cross-entropy in eager kernels over a large vocabulary: compute it fused"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {
        "min_program_fraction": 0.01,
        "forward_reads": 2,
        "max_between": 16,
        "size_tolerance": 0.02,
        "practical": PRACTICAL_FRACTION,
    }
    fixes = {"pytorch": _FIX}
    owns = True

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        if not p.total_ns:
            return []
        grouped: dict[tuple[str, ...], list[Chain]] = {}
        for chain in self._chains(p):
            grouped.setdefault(tuple(chain.kernel_ids), []).append(chain)
        findings = []
        for key, chains in grouped.items():
            f = self._finding(p, list(key), chains)
            if f is not None:
                findings.append(f)
        return findings

    def _finding(self, p: ProgramContext, key: list[str], chains: list[Chain]) -> ProgramFinding | None:
        first = chains[0]
        bw = self._bandwidth(p)
        size = ELEMENT_BYTES.get(first.logits)
        if not bw or not size:
            return None
        n = first.elements
        time_ns = sum(float(p.launches[i].get("duration_ns") or 0.0) for c in chains for i in c.launches)
        launches = sum(p.by_id[kid].launches for kid in dict.fromkeys(key))  # what `diff` counts after the change
        reads = self.thresholds["forward_reads"] + 1
        floor_bytes = n * size * (reads + 1)
        floor_ns = floor_bytes / bw * 1e9 * len(chains)
        saving = time_ns - floor_ns
        if saving < self.thresholds["min_program_fraction"] * p.total_ns:
            return None
        rows = self._rows(first.forward, first.softmax, n)
        classes = round(n / rows) if rows else None
        upto = "" if first.exact else "up to "
        shape = f"{rows:,} rows × {upto}{classes:,} classes" if rows and classes else f"{upto}{n:,.0f} logits"
        dtype = DTYPES.get(first.logits, first.logits)
        members = [p.by_id[kid] for kid in key]
        fp32 = self._fp32_copies(members, n)
        logits = f"{dtype} logits upcast to fp32" if fp32 else f"{dtype} logits"
        moved = sum(self._bytes(k) or 0.0 for k in members)
        names = [k.display_name or k.name for k in members]
        what = self._roles(members)
        occurrences = f", {count(len(chains), 'occurrence')}" if len(chains) > 1 else ""
        evidence = [Evidence("elements", round(n), None, "rows × classes of the log-softmax")]
        if rows and classes:
            evidence += [
                Evidence("rows", rows, None, "rows of the log-softmax (its grid)"),
                Evidence("classes", classes, None, "elements ÷ rows"),
            ]
        evidence += [
            Evidence("chain_ns", round(time_ns), None, "GPU time of the loss's kernels"),
            Evidence("fused_floor_ns", round(floor_ns), None, "what a fused loss must move, at practical DRAM"),
        ]
        return self.finding(
            title=f"Cross-entropy over {shape} in {count(len(key), 'eager kernel')}: compute it fused",
            message=(
                f"The loss over {shape}, {logits}, runs as {what}: {fmt_ns(time_ns)}, "
                f"{time_ns / p.total_ns:.0%} of GPU time{occurrences}. Each kernel streams the whole "
                f"{n / 1e6:.0f} M-element tensor through HBM"
                if n >= 1e6
                else f"{time_ns / p.total_ns:.0%} of GPU time{occurrences}. Each kernel streams the {n:,.0f} elements"
                + (
                    f" ({fmt_bytes(moved * len(chains))} moved in all, {count(fp32, 'fp32 copy', 'fp32 copies')} "
                    "written or read)"
                    if moved
                    else ""
                )
                + f"; a fused loss reads the {dtype} logits {count(reads, 'time')} and writes their gradient once: "
                f"{fmt_bytes(floor_bytes * len(chains))}."
            ),
            fix=self.fix_in("pytorch", dtype=dtype, classes=classes or 0),
            kernels=names,
            kernel_ids=key,
            # fused, the loss runs in kernels of its own: the eager kernels' launches are gone
            predicts=[predict("kernel_launches", launches, 0.0, launches / 2)],
            estimated_saving_ns=saving,
            saving_model=(
                f"The chain's time ({fmt_ns(time_ns)}) − a fused loss's floor: N × {size} B × "
                f"({self.thresholds['forward_reads']:.0f} reads forward + 1 backward) + N × {size} B of gradient, N = "
                f"{n:,.0f}, at {bw / 1e12:.2f} TB/s ({self.thresholds['practical']:.0%} of the DRAM peak): "
                f"{fmt_ns(floor_ns)}."
            ),
            confidence="medium",
            evidence=evidence,
        )

    # the chains

    def _chains(self, p: ProgramContext) -> list[Chain]:
        out: list[Chain] = []
        launches = p.launches
        for i, x in enumerate(launches):
            k = p.by_id.get(str(x.get("kernel_id")))
            sk = softmax_kernel(k.demangled) if k else None
            if k is None or sk is None or not sk.log or sk.direction != "forward":
                continue
            span = self._elements(k, sk, x)
            if span is None:
                continue
            n = span
            line, stream = _line(k), x.get("stream")
            members = [i]
            j = i - 1  # a leading upcast of the logits (a log-softmax run in fp32)
            while j >= 0 and self._member(p, launches[j], n, line, stream):
                members.insert(0, j)
                j -= 1
            backward: int | None = None
            between: list[int] = []
            for j in range(i + 1, min(len(launches), i + 1 + int(self.thresholds["max_between"]))):
                y = launches[j]
                ky = p.by_id.get(str(y.get("kernel_id")))
                if ky is None or y.get("stream") != stream:
                    continue
                sy = softmax_kernel(ky.demangled)
                if sy is not None and sy.log and sy.direction == "forward":
                    break  # the next loss
                if sy is not None and sy.log and sy.direction == "backward" and self._same_rows(ky, sy, y, n):
                    backward = j
                    break
                if self._member(p, y, n, line, stream):
                    between.append(j)
            if backward is None:  # forward only: the kernels right after the log-softmax
                j = i + 1
                while j < len(launches) and self._member(p, launches[j], n, line, stream):
                    members.append(j)
                    j += 1
            else:
                members += between + [backward]
                j = backward + 1  # the downcast of a gradient computed in fp32
                while j < len(launches) and self._member(p, launches[j], n, None, stream):
                    members.append(j)
                    j += 1
            ids = [str(launches[m]["kernel_id"]) for m in members]
            if not any(nll_loss_kernel(p.by_id[kid].demangled) for kid in ids):
                continue
            out.append(
                Chain(
                    launches=members,
                    elements=span[1],
                    exact=span[0] == span[1],
                    forward=k,
                    softmax=sk,
                    logits=self._logits(p, launches[members[0]], sk, i == members[0]),
                    kernel_ids=list(dict.fromkeys(ids)),
                )
            )
        return out

    def _member(self, p: ProgramContext, x: dict[str, Any], n: tuple[float, float], line: Any, stream: Any) -> bool:
        """Whether a launch belongs to the loss: an nll_loss kernel, or an ATen elementwise or reduction kernel of
        the loss's element count, on the stream, from the log-softmax's line when it runs in forward."""
        k = p.by_id.get(str(x.get("kernel_id")))
        if k is None or x.get("stream") != stream or k.language != "pytorch":
            return False
        own = _line(k)
        if line is not None and own is not None and own != line:
            return False
        demangled = k.demangled
        if nll_loss_kernel(demangled):
            return True
        return aten_generic_kernel(demangled) and self._size_ok(k, n, x)

    def _same_rows(self, k: KernelEntry, sk: SoftmaxKernel, x: dict[str, Any], n: tuple[float, float]) -> bool:
        """Whether a log-softmax backward works on the forward's elements (its own, by the same measure)."""
        own = self._elements(k, sk, x)
        tol = self.thresholds["size_tolerance"]
        return own is not None and own[0] <= n[1] * (1 + tol) and n[0] <= own[1] * (1 + tol)

    def _size_ok(self, k: KernelEntry, n: tuple[float, float], x: dict[str, Any]) -> bool:
        """Whether a kernel works on the loss's elements (between n[0] and n[1]): its load or store bytes are that
        many elements of 1, 2, 4 or 8 bytes; timed only, its grid × block × a power of two up to 16 rounds up to
        that many (ATen launches whole blocks)."""
        tol = self.thresholds["size_tolerance"]
        lo, hi = n
        moved = [b for b in self._load_store(k, x) if b]
        if moved:
            return any(lo * s * (1 - tol) <= b <= hi * s * (1 + tol) for b in moved for s in (1, 2, 4, 8))
        block = math.prod(_dims(k.block))
        threads = math.prod(_dims(k.grid)) * block
        return bool(threads) and any(threads * w - block * w < hi and threads * w >= lo for w in (1, 2, 4, 8, 16))

    @staticmethod
    def _load_store(k: KernelEntry, x: dict[str, Any] | None = None) -> tuple[float | None, float | None]:
        """A kernel's load and store bytes: its profiled launch's, else the DRAM bytes of the launch."""
        load, store = k.roofline.load_bytes, k.roofline.store_bytes
        if k.profiled is not False and isinstance(load, (int, float)) and isinstance(store, (int, float)):
            return float(load), float(store)
        if x is not None:
            return x.get("dram_read_bytes"), x.get("dram_write_bytes")
        return None, None

    def _bytes(self, k: KernelEntry) -> float | None:
        load, store = self._load_store(k)
        return (load or 0.0) + (store or 0.0) if load is not None or store is not None else None

    def _elements(self, k: KernelEntry, sk: SoftmaxKernel, x: dict[str, Any]) -> tuple[float, float] | None:
        """Rows × classes, as (least, most): the log-softmax forward's stored bytes over its output's element size;
        timed only, the warp kernel's rows (`_rows`) × more than half of and at most its 2**log2_elements classes.
        None when neither is known (a block-per-row kernel timed only: its rows are known, its classes not)."""
        _, store = self._load_store(k, x)
        size = sk.write_bytes
        if store and size:
            return store / size, store / size
        if sk.kind == "warp" and sk.log2_elements is not None:
            rows = self._rows(k, sk, float("inf")) or 0
            most = 2**sk.log2_elements
            return (rows * (most // 2 + 1), rows * most) if rows else None
        return None

    @staticmethod
    def _rows(k: KernelEntry, sk: SoftmaxKernel, n: float) -> int | None:
        """The log-softmax's rows from its grid: one block per row (`cunn_SoftMaxForward`), or per block its warps
        (block y) × rows per warp (two for rows of up to 128 elements) for the warp kernels; None for the spatial
        kernel."""
        grid, block = _dims(k.grid), _dims(k.block)
        if sk.kind == "block":
            return grid[0] or None
        if sk.kind == "warp":
            per_warp = 2 if sk.log2_elements is not None and 2**sk.log2_elements <= 128 else 1
            rows = grid[0] * block[1] * per_warp
            return int(min(rows, n)) or None
        return None

    def _logits(self, p: ProgramContext, x: dict[str, Any], sk: SoftmaxKernel, softmax_first: bool) -> str:
        """The logits' element type: the log-softmax's input, or the source of an upcast launched before it."""
        if softmax_first:
            return sk.reads
        k = p.by_id[x["kernel_id"]]
        named = cast_types(k.demangled)
        if named:
            return {"float32": "float", "bfloat16": "c10::BFloat16", "float16": "c10::Half"}.get(named[0], sk.reads)
        load, store = self._load_store(k, x)
        if load and store and store > 1.4 * load:  # read 2 bytes, wrote 4: the logits were 16-bit
            return "c10::BFloat16" if sk.reads == "float" else sk.reads
        return sk.reads

    def _fp32_copies(self, members: list[KernelEntry], n: float) -> int:
        """How many of the chain's kernels write or read an fp32 tensor of n elements besides the log-softmax's own
        input and output: casts and fills (4 bytes an element)."""
        found = 0
        for k in members:
            demangled = k.demangled
            if softmax_kernel(demangled) is not None or nll_loss_kernel(demangled):
                continue
            load, store = self._load_store(k)
            found += sum(1 for b in (load, store) if b and abs(b / (4 * n) - 1) <= self.thresholds["size_tolerance"])
        return found

    @staticmethod
    def _roles(members: list[KernelEntry]) -> str:
        """The chain's kernels in words: 'log-softmax forward and backward, 2 nll_loss kernels, 2 casts, 1 fill'."""
        parts: dict[str, int] = {}
        for k in members:
            demangled = k.demangled
            sk = softmax_kernel(demangled)
            if sk is not None:
                role = f"log-softmax {sk.direction}"
            elif nll_loss_kernel(demangled):
                role = "nll_loss kernel"
            elif copy_kind(demangled) == "cast":
                role = "cast"
            elif "FillFunctor" in demangled:
                role = "fill"
            else:
                role = "elementwise kernel"
            parts[role] = parts.get(role, 0) + 1
        words = [role if c == 1 and role.startswith("log-softmax") else count(c, role) for role, c in parts.items()]
        return ", ".join(words)

    def _bandwidth(self, p: ProgramContext) -> float | None:
        peak = (p.device or {}).get("peak_dram_bytes_per_s")
        if not peak:
            peak = max((k.roofline.peak_dram_bytes_per_s or 0 for k in p.kernels), default=0)
        return float(peak) * self.thresholds["practical"] if peak else None
