import re
from typing import Any

from ncuadvisor.rulekit import Evidence, Fix, ProgramContext, ProgramFinding, ProgramRule, SpeedOfLight, count, fmt_ns

# CUB's device-wide radix sort as ATen vendors it (histogram, exclusive sum, onesweep passes; older CUBs upsweep,
# scan, downsweep, single tile)
SORT = re.compile(r"\bDeviceRadixSort\w*Kernel\b")
# the sort's values: ATen sorts (index, position) pairs, the positions from an arange launched just before
ARANGE = re.compile(r"\barange_cuda_out\b")
# what ATen accumulates the sorted segments with: index_put_with_sort_kernel (Indexing.cu) and
# embedding_backward_cuda_kernel (EmbeddingBackwardKernel.cu)
INDEX_PUT = re.compile(r"\bindexing_backward_kernel\w*\b")
EMBEDDING = re.compile(
    r"\bat::native::(?:<unnamed>|\(anonymous namespace\))::(?:compute_grad_weight|sum_and_scatter)\b"
)

_INDEX_PUT_FIX = Fix(
    text=(
        "{op} sorts its indices before it adds so that the sum comes out in the same order every run. Where that "
        "order need not be reproducible, out.index_add_(0, idx, src) adds in one kernel of atomics with no sort; "
        "with many rows per index those atomics contend and can cost as much as the sort (ATM002 judges that "
        "kernel once it runs). What it saves is mostly the sorted path's ten or so launches: on an H200, 65,536 rows "
        "of 256 floats into 1,024 rows took 229 µs a call sorted and 127 µs with index_add_, in about equal kernel "
        "time. Under torch.use_deterministic_algorithms(True) index_add_ takes this sorted path (358 µs there)."
    ),
    code=(
        "# instead of out.index_put_((idx,), src, accumulate=True), where a fixed summation order is not needed:\n"
        "out.index_add_(0, idx, src)   # one atomic pass, no sort; float sums may differ in the last bits"
    ),
)
_EMBEDDING_FIX = Fix(
    text=(
        "The dense gradient of an embedding sorts every looked-up index, zero-fills a gradient the size of the "
        "whole table and sums the segments into it; a dense optimizer then updates every row of the table. "
        "nn.Embedding(..., sparse=True) (or nn.EmbeddingBag(..., sparse=True)) returns the looked-up rows as a "
        "sparse gradient instead: no sort and no full-table gradient in backward, and the optimizer updates only "
        "those rows. Time the whole step before keeping it: the sparse gradient keeps one row per lookup, repeats "
        "included; SGD adds it into the table with atomics (index_add_) and SparseAdam coalesces it first (a sort "
        "again). On an H200, 65,536 lookups of 1,024 distinct rows in a 50,000 × 256 table: backward 507 → 248 "
        "µs, but backward and an SGD step 707 → 813 µs a call, although its kernels took less. The optimizer must "
        "accept sparse gradients (optim.SGD, optim.SparseAdam; optim.Adagrad on CPU). Backward calls over 3,072 "
        "indices or fewer (without scale_grad_by_freq) already skip the sort."
    ),
    code=(
        "emb = torch.nn.Embedding(num_rows, dim, sparse=True)\n"
        "opt = torch.optim.SparseAdam(emb.parameters())       # or SGD; dense parameters keep their own optimizer"
    ),
)


class SortBasedAccumulation(ProgramRule):
    """An ATen accumulation that sorts its indices first (`index_put_(accumulate=True)`, the backward of `x[idx]`,
    the dense gradient of `nn.Embedding`): what the sort and the segment kernels cost, and the unsorted alternative.

    What it detects:
        In launch order on one stream, a CUB radix sort as ATen runs it (`DeviceRadixSort*Kernel`, with the
        `arange` of the positions it sorts alongside when launched just before) followed, within `max_chain`
        launches, by the kernel that accumulates the sorted segments: `indexing_backward_kernel*`
        (`index_put_with_sort_kernel`: `index_put_(accumulate=True)`, the backward of advanced indexing `x[idx]`,
        and `index_add_` or `index_put_` under `torch.use_deterministic_algorithms(True)`), or `compute_grad_weight`
        / `sum_and_scatter` (`embedding_backward_cuda_kernel`: the dense gradient of `nn.Embedding` and
        `nn.EmbeddingBag`). The chain, from the sort to the last accumulating kernel, is reported when it holds at
        least `min_program_fraction` of the program's GPU time.

    Why it costs time:
        To add rows that share an index in a fixed order, ATen sorts (index, position) pairs with a device-wide
        radix sort (a histogram, a scan and one onesweep pass per 8 bits of key: 8 passes for the 64-bit keys of
        embedding backward, fewer where `index_put_` bounds the key bits), then finds the segments and sums each in
        order. Each pass is a launch of a few microseconds over the whole index on a grid far smaller than the GPU;
        embedding backward also zero-fills a gradient the size of the whole table.

    Example:
        out.index_put_((idx,), src, accumulate=True)      # 65,536 rows of 256 floats into 1,024 rows
        emb = nn.Embedding(50_000, 256); emb(idx).sum().backward()

    Use instead:
        Where the order of the float additions need not be reproducible, `out.index_add_(0, idx, src)`: one kernel
        of atomics, no sort (ATM002 then judges its contention). For an embedding, `nn.Embedding(..., sparse=True)`
        (or `nn.EmbeddingBag(..., sparse=True)`): a sparse gradient of the looked-up rows with no sort and no
        full-table gradient (time the whole step: the sparse path has host-side costs), if the optimizer accepts
        sparse gradients (`optim.SGD`, `optim.SparseAdam`;
        `optim.Adagrad` on CPU). Backward calls over at most 3,072 indices without `scale_grad_by_freq` already skip
        the sort (`embedding_backward_feature_kernel`).

    Speedup estimate:
        None claimed: the report measures the sorted path only. The finding states what the chain and its sort
        passes take as measured. The alternatives, timed on an H200 (CUDA events, median of 25 calls,
        `workloads/torch/scatter_ops.py --time 25`, fixtures/scatter-twins-2026-12-01): `index_put_(accumulate=True)`
        of 65,536 × 256 floats into 1,024 rows 228.8 µs a call, `index_add_` 126.7 µs; their kernel time is about
        equal (116 µs sorted, 117 µs of contended atomics), so the call's saving is the sorted path's launches,
        which a kernel profile does not time. Deterministic, both sort: 341.1 and 357.6 µs. Embedding of 65,536
        lookups into a 50,000 × 256 table: backward 507.0 µs dense, 247.9 µs with `sparse=True`; with an SGD step
        707.4 and 812.5 µs, although the sparse step's kernels took less (SGD's `index_add_` of the 65,536 rows,
        118 µs, against ~240 µs of sort, segment sums and dense update): its host-side work outweighed them.

    False positives:
        A program that needs bitwise-reproducible sums (the sort is the price of determinism); a radix sort of the
        user's own (`torch.sort`, `torch.unique`) followed by an unrelated accumulation within `max_chain`
        launches, whose time the chain would then include.
    """

    code = "ATM004"
    slug = "sort-based-accumulation"
    category = "atomics"
    title = "Sort-based accumulation: the indices are sorted before they are added"
    requires = (SpeedOfLight.DURATION,)
    thresholds = {"max_chain": 32, "min_program_fraction": 0.03}
    languages = ("pytorch",)
    fixes = {"pytorch": _INDEX_PUT_FIX}
    fixes_when = {"embedding": {"pytorch": _EMBEDDING_FIX}}

    def _demangled(self, p: ProgramContext, x: dict[str, Any]) -> str:
        k = p.by_id.get(x["kernel_id"])
        return (k.demangled or k.name) if k is not None else ""

    def _chains(self, p: ProgramContext) -> list[tuple[str, list[dict[str, Any]]]]:
        """(kind, the chain's launches from its sort to its last accumulating kernel), in launch order."""
        chains: list[tuple[str, list[dict[str, Any]]]] = []
        launches = p.launches
        sorts = [bool(SORT.search(self._demangled(p, x))) for x in launches]
        start: int | None = None  # the chain's first launch: the arange of the positions, else the first sort pass
        end: int | None = None  # its last accumulating launch so far
        kind = ""
        for i, x in enumerate(launches):
            if start is not None and (
                x["stream"] != launches[start]["stream"] or i - start >= self.thresholds["max_chain"]
            ):
                if end is not None:
                    chains.append((kind, launches[start : end + 1]))
                start, end = None, None
            if sorts[i]:
                if start is None or end is not None or not sorts[i - 1]:  # a new sort: a chain may start here
                    if start is not None and end is not None:
                        chains.append((kind, launches[start : end + 1]))
                    before = launches[i - 1] if i > 0 else None
                    arange = (
                        before is not None
                        and before["stream"] == x["stream"]
                        and bool(ARANGE.search(self._demangled(p, before)))
                    )
                    start, end = (i - 1 if arange else i), None
                continue
            if start is None:
                continue
            name = self._demangled(p, x)
            found = "index_put" if INDEX_PUT.search(name) else "embedding" if EMBEDDING.search(name) else ""
            if found and (end is None or found == kind):
                kind, end = found, i
            elif end is not None:  # the accumulation is over
                chains.append((kind, launches[start : end + 1]))
                start, end = None, None
        if start is not None and end is not None:
            chains.append((kind, launches[start : end + 1]))
        return chains

    def check_program(self, p: ProgramContext) -> list[ProgramFinding]:
        t = self.thresholds
        if not p.total_ns:
            return []
        found: list[ProgramFinding] = []
        for kind, chain in self._chains(p):
            chain_ns = sum(x["duration_ns"] or 0.0 for x in chain)
            if chain_ns < t["min_program_fraction"] * p.total_ns:
                continue
            sort = [x for x in chain if SORT.search(self._demangled(p, x))]
            sort_ns = sum(x["duration_ns"] or 0.0 for x in sort)
            ids = list(dict.fromkeys(x["kernel_id"] for x in chain))
            names = [p.by_id[kid].name for kid in ids if kid in p.by_id]
            share = chain_ns / p.total_ns
            if kind == "embedding":
                op = "the dense gradient of nn.Embedding"
                who = "The dense gradient of nn.Embedding (nn.EmbeddingBag's too)"
                fix = self.fix_in("pytorch", "embedding")
                tail = "sort, segment offsets, compute_grad_weight, sum_and_scatter"
            else:
                op = "index_put_(accumulate=True)"
                who = (
                    "index_put_(accumulate=True) (also the backward of x[idx], and index_add_ under "
                    "torch.use_deterministic_algorithms(True))"
                )
                fix = self.fix_in("pytorch", op=op)
                tail = "sort, indexing_backward_kernel"
            found.append(
                self.finding(
                    title=(
                        f"Sort-based accumulation in {op}: {fmt_ns(chain_ns)} ({share:.0%} of the program), "
                        f"{fmt_ns(sort_ns)} of it sorting"
                    ),
                    message=(
                        f"{who} sorts its indices with a CUB radix sort ({count(len(sort), 'launch', 'launches')}, "
                        f"{fmt_ns(sort_ns)}) and then adds the segments in order: {count(len(chain), 'launch', 'launches')} "
                        f"({tail}) take {fmt_ns(chain_ns)}, {share:.0%} of the program's GPU time. The sort buys a "
                        "summation order that is the same every run; the report measures no unsorted alternative, so "
                        "no saving is claimed."
                    ),
                    fix=fix,
                    kernels=names,
                    kernel_ids=ids,
                    estimated_saving_ns=0.0,
                    saving_model=(
                        "No saving claimed: the report measures the sorted path only, and the unsorted one has costs "
                        "of its own (contended atomics; a sparse gradient coalesced by the optimizer)."
                    ),
                    confidence="low",
                    evidence=[
                        Evidence("chain_ns", round(chain_ns), None, "sort through accumulation, as measured (ns)"),
                        Evidence("sort_ns", round(sort_ns), None, "radix sort passes (ns)"),
                        Evidence("program_fraction", round(share, 3), t["min_program_fraction"]),
                    ],
                )
            )
        return found
