"""Matching the kernels of two results: by identity, then by name alone, then by role, per process when both hold
several (never by position alone; the rules are in the package's docstring)."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from ncuadvisor.result.types import KernelEntry, Result
from ncuadvisor.units import finite

# how a pair was matched: None when it was not (added or removed: one side empty)
MatchHow = Literal["identity", "name", "role"] | None
Pair = tuple[list[KernelEntry], list[KernelEntry], MatchHow]

# Matching by role: a kernel whose name changed (a library that picks another kernel once TF32 is allowed, a rewrite
# under a new name) is the same work when it runs where the other ran (the same NVTX range, the same Python line or
# ATen op where both sides record one) on the same problem: FLOPs executed within ROLE_FLOP_TOLERANCE (cuBLAS's FFMA
# and TF32 GEMMs of one 4096³ product executed 137.4725 and 137.4727 GFLOP, cuDNN's FFMA and TF32 convolutions of
# one layer 7.4116 and 7.4116: fixtures/torch_gemm_conv and tf32-twin-2026-12-01), or, for kernels of less than
# ROLE_MIN_FLOPS, the same grid and block and compulsory bytes within that tolerance. Among several candidates, an
# optimal assignment: as many pairs as can be, then the nearest in FLOPs (or bytes), then in launch order.
ROLE_FLOP_TOLERANCE = 0.02
ROLE_MIN_FLOPS = 1e6


def identity(k: KernelEntry) -> tuple[str, str, str]:
    """The key `ncuadvisor.model.group_kernels` groups launches by: demangled name, grid, block."""
    return (demangled_name(k), k.grid, k.block)


def demangled_name(k: KernelEntry) -> str:
    return k.demangled or k.name


class ProcessKeys(NamedTuple):
    """The process key of every pid of one report (its rank, or its place in start order) and whether they are ranks."""

    by_pid: dict[Any, int]
    ranks: bool

    def of(self, k: KernelEntry) -> int | None:
        return self.by_pid.get(k.process.pid if k.process is not None else None)


def process_keys(result: Result) -> ProcessKeys | None:
    """How a report's kernels are keyed per process (the package's docstring); None when it holds one process.

    Ranks only when every process has one and no two share it: a partial record would mix the two kinds of key."""
    procs = result.report.processes
    if len(procs) < 2:
        return None
    ranks = [p.rank for p in procs if isinstance(p.rank, int) and not isinstance(p.rank, bool)]
    if len(ranks) == len(procs) and len(set(ranks)) == len(ranks):
        return ProcessKeys({p.pid: r for p, r in zip(procs, ranks)}, True)
    started = sorted(procs, key=lambda p: (finite(p.pid) is None, finite(p.pid) or 0.0))
    return ProcessKeys({p.pid: i for i, p in enumerate(started)}, False)


NO_PROCESS = ProcessKeys({}, False)  # every kernel keyed None: one group per kernel across processes


def match_kernels(
    before: list[KernelEntry],
    after: list[KernelEntry],
    before_keys: ProcessKeys = NO_PROCESS,
    after_keys: ProcessKeys = NO_PROCESS,
) -> list[Pair]:
    """Pairs (before group, after group, how), in the order of the before side, then what only the after side has.

    With process keys, a kernel only matches the same kernel of the same process key. Kernels are matched by role
    (`match_roles`) where at least one kernel matched by identity or name, or, in two reports that share no kernel
    name, only inside an NVTX range both name: otherwise they are two programs, and a kernel of one doing the same
    work as a kernel of the other is not the same kernel."""
    pairs: list[Pair] = []
    b_by_id: dict[tuple[Any, ...], list[KernelEntry]] = {}
    a_by_id: dict[tuple[Any, ...], list[KernelEntry]] = {}
    for k in before:
        b_by_id.setdefault((before_keys.of(k), *identity(k)), []).append(k)
    for k in after:
        a_by_id.setdefault((after_keys.of(k), *identity(k)), []).append(k)
    left_b: list[KernelEntry] = []
    left_a: list[KernelEntry] = []
    for key, group in b_by_id.items():
        if key in a_by_id:
            pairs.append((group, a_by_id[key], "identity"))
        else:
            left_b.extend(group)
    for key, group in a_by_id.items():
        if key not in b_by_id:
            left_a.extend(group)
    b_by_name: dict[tuple[Any, ...], list[KernelEntry]] = {}
    a_by_name: dict[tuple[Any, ...], list[KernelEntry]] = {}
    for k in left_b:
        b_by_name.setdefault((before_keys.of(k), demangled_name(k)), []).append(k)
    for k in left_a:
        a_by_name.setdefault((after_keys.of(k), demangled_name(k)), []).append(k)
    only_b = [g for name, g in b_by_name.items() if name not in a_by_name]
    only_a = [g for name, g in a_by_name.items() if name not in b_by_name]
    # a renamed kernel is told by its role only in two versions of one program: some kernel keeps its name, or the
    # place is one the program names (an NVTX range); two reports that share neither are two programs
    role_b, role_a = only_b, only_a
    if not pairs and len(only_b) == len(b_by_name):
        role_b, role_a = [g for g in only_b if g[0].nvtx], [g for g in only_a if g[0].nvtx]
    by_role = match_roles(role_b, role_a, before_keys, after_keys, _positions(before), _positions(after))
    roled_a = {id(a[0]) for _, a in by_role}
    roles = {id(b[0]): a for b, a in by_role}
    for name, group in b_by_name.items():
        if name in a_by_name:
            pairs.append((group, a_by_name[name], "name"))
        elif id(group[0]) in roles:
            pairs.append((group, roles[id(group[0])], "role"))
        else:
            pairs.append((group, [], None))
    for group in only_a:
        if id(group[0]) not in roled_a:
            pairs.append(([], group, None))
    return pairs


def _positions(kernels: list[KernelEntry]) -> dict[str, int]:
    """Each kernel entry's place in launch order (of its first result) on its side."""
    first = sorted(kernels, key=lambda k: min(k.result_ids) if k.result_ids else 1 << 62)
    return {k.id: i for i, k in enumerate(first)}


def _main(group: list[KernelEntry]) -> KernelEntry:
    """A group's entry that speaks for it: the longest-running (as `compare.kernel_side` takes)."""
    return max(group, key=lambda k: float(k.duration_ns))


def _near(a: float | None, b: float | None) -> float | None:
    """|a − b| ÷ the larger, when both are positive; None otherwise."""
    if not a or not b or a <= 0 or b <= 0:
        return None
    return abs(a - b) / max(a, b)


def _where(k: KernelEntry) -> tuple[Any, ...]:
    """Where a kernel ran: its NVTX range, and its Python line and ATen op (None where not recorded)."""
    line = (k.python_line.file, k.python_line.line) if k.python_line is not None else None
    op = k.torch.torch_op if k.torch is not None else None
    return (k.nvtx, line, op)


def same_place(b: KernelEntry, a: KernelEntry) -> bool:
    """The same NVTX range, and the same Python line and ATen op where both sides record them."""
    (bn, bl, bo), (an, al, ao) = _where(b), _where(a)
    return bn == an and (bl is None or al is None or bl == al) and (bo is None or ao is None or bo == ao)


def same_problem(b: KernelEntry, a: KernelEntry) -> float | None:
    """How far apart two kernels' work is (0: the same), None when it is not the same problem (module comment)."""
    fb, fa = finite(b.roofline.flops) or 0.0, finite(a.roofline.flops) or 0.0
    if fb >= ROLE_MIN_FLOPS or fa >= ROLE_MIN_FLOPS:
        d = _near(fb, fa)
        return d if d is not None and d <= ROLE_FLOP_TOLERANCE else None
    if (b.grid, b.block) != (a.grid, a.block):
        return None
    d = _near(finite(b.roofline.compulsory_bytes), finite(a.roofline.compulsory_bytes))
    return d if d is not None and d <= ROLE_FLOP_TOLERANCE else None


def match_roles(
    before: list[list[KernelEntry]],
    after: list[list[KernelEntry]],
    before_keys: ProcessKeys,
    after_keys: ProcessKeys,
    before_pos: dict[str, int],
    after_pos: dict[str, int],
) -> list[tuple[list[KernelEntry], list[KernelEntry]]]:
    """Pairs of the groups left unmatched by name that play the same role (module comment), each group paired once:
    an optimal assignment (`assign`) that pairs as many groups as can be, then the nearest in work, then in launch
    order. Taking the longest-running group's nearest first could leave a group unpaired whose only candidate it
    took while another was free. Pairs in the order of the before side."""
    edges: dict[tuple[int, int], tuple[float, int]] = {}
    for i, bg in enumerate(before):
        b = _main(bg)
        for j, ag in enumerate(after):
            a = _main(ag)
            if before_keys.of(b) != after_keys.of(a) or not same_place(b, a):
                continue
            d = same_problem(b, a)
            if d is not None:
                edges[(i, j)] = (d, abs(before_pos.get(b.id, 0) - after_pos.get(a.id, 0)))
    return [(before[i], after[j]) for i, j in sorted(assign(len(before), len(after), edges))]


DISTANCE_STEPS = 10**9  # a work distance (≤ ROLE_FLOP_TOLERANCE) in integer steps: exact sums, no float ties
# groups on the smaller side of one connected part of the candidate graph up to which the assignment is the exact
# least-cost one (a complete part of 64 takes ~0.1 s, of 200 ~10 s); a larger part (many small kernels of one shape
# renamed at once: Inductor's) is matched nearest first, then completed by augmenting paths: still as many pairs as
# can be, the cost near the least
EXACT_GROUPS = 64

Edges = dict[tuple[int, int], tuple[float, int]]


def assign(n_before: int, n_after: int, edges: Edges) -> list[tuple[int, int]]:
    """A maximum matching of a bipartite graph (before i — after j where `edges` has (i, j)) of least cost among the
    maximum ones: the sum of the work distances first, then of the launch-order distances (each edge's (distance,
    order)). Solved per connected part (`EXACT_GROUPS`), sorted by before index."""
    parent = list(range(n_before + n_after))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in edges:
        parent[root(i)] = root(n_before + j)
    parts: dict[int, Edges] = {}
    for (i, j), e in edges.items():
        parts.setdefault(root(i), {})[(i, j)] = e
    out: list[tuple[int, int]] = []
    for part in parts.values():
        bs = sorted({i for i, _ in part})
        as_ = sorted({j for _, j in part})
        b_at, a_at = {b: n for n, b in enumerate(bs)}, {a: n for n, a in enumerate(as_)}
        local = {(b_at[i], a_at[j]): e for (i, j), e in part.items()}
        solve = _least_cost if min(len(bs), len(as_)) <= EXACT_GROUPS else _nearest_then_augmented
        out += [(bs[i], as_[j]) for i, j in solve(len(bs), len(as_), local)]
    return sorted(out)


def _costs(n_before: int, n_after: int, edges: Edges) -> dict[tuple[int, int], int]:
    """Each edge's cost as one exact integer: the work distance first (one step of it outweighs any sum of
    launch-order distances over a matching), then the launch-order distance."""
    order_span = max(o for _, o in edges.values()) + 1
    weight = order_span * (min(n_before, n_after) + 1)
    return {e: round(d * DISTANCE_STEPS) * weight + o for e, (d, o) in edges.items()}


def _least_cost(n_before: int, n_after: int, edges: Edges) -> list[tuple[int, int]]:
    """The exact assignment: successive shortest augmenting paths (Bellman-Ford on the residual graph, exact integer
    costs, so the order of distance then launch order is kept whole)."""
    cost = _costs(n_before, n_after, edges)
    adjacent: list[list[tuple[int, int]]] = [[] for _ in range(n_before)]
    for (i, j), c in sorted(cost.items()):
        adjacent[i].append((j, c))
    match_b: list[int | None] = [None] * n_before
    match_a: list[int | None] = [None] * n_after
    while True:
        # shortest paths from every free before group, alternating unmatched edges (b -> a) and matched ones (a -> b)
        dist_b: list[int | None] = [0 if match_b[i] is None else None for i in range(n_before)]
        dist_a: list[int | None] = [None] * n_after
        via: list[int] = [-1] * n_after
        changed = True
        while changed:
            changed = False
            for i in range(n_before):
                db = dist_b[i]
                if db is None:
                    continue
                for j, c in adjacent[i]:
                    da = dist_a[j]
                    if match_b[i] != j and (da is None or db + c < da):
                        dist_a[j], via[j] = db + c, i
                        changed = True
            for j in range(n_after):
                i_m, da = match_a[j], dist_a[j]
                if i_m is None or da is None:
                    continue
                back = da - cost[(i_m, j)]
                db = dist_b[i_m]
                if db is None or back < db:
                    dist_b[i_m] = back
                    changed = True
        ends = [(d, j) for j, d in enumerate(dist_a) if d is not None and match_a[j] is None]
        if not ends:
            return [(i, j) for i, j in enumerate(match_b) if j is not None]
        _, j = min(ends)
        _flip(j, via, match_b, match_a)


def _flip(j: int, via: list[int], match_b: list[int | None], match_a: list[int | None]) -> None:
    """Augment along the path that ends at the free after group j: each before group on it takes the after group it
    was reached from."""
    while True:
        i = via[j]
        previous = match_b[i]
        match_b[i], match_a[j] = j, i
        if previous is None:
            return
        j = previous


def _nearest_then_augmented(n_before: int, n_after: int, edges: Edges) -> list[tuple[int, int]]:
    """A large part: the cheapest edges first while both ends are free, then breadth-first augmenting paths until
    none is left (a maximum matching; its cost near the least)."""
    cost = _costs(n_before, n_after, edges)
    adjacent: list[list[int]] = [[] for _ in range(n_before)]
    match_b: list[int | None] = [None] * n_before
    match_a: list[int | None] = [None] * n_after
    for (i, j), _ in sorted(cost.items(), key=lambda e: (e[1], e[0])):
        adjacent[i].append(j)  # each before group's candidates, the cheapest first
        if match_b[i] is None and match_a[j] is None:
            match_b[i], match_a[j] = j, i
    for start in range(n_before):
        if match_b[start] is not None or not adjacent[start]:
            continue
        via = [-1] * n_after
        queue, seen, end = [start], {start}, None
        while queue and end is None:
            i = queue.pop(0)
            for j in adjacent[i]:
                if via[j] != -1:
                    continue
                via[j] = i
                nxt = match_a[j]
                if nxt is None:
                    end = j
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        if end is not None:
            _flip(end, via, match_b, match_a)
    return [(i, j) for i, j in enumerate(match_b) if j is not None]
