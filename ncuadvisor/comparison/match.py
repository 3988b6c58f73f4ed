"""Matching the kernels of two results: by identity, then by name alone, per process when both hold several (never by
position; the rules are in the package's docstring)."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

from ncuadvisor.result.types import KernelEntry, Result
from ncuadvisor.units import finite

# how a pair was matched: None when it was not (added or removed: one side empty)
MatchHow = Literal["identity", "name"] | None
Pair = tuple[list[KernelEntry], list[KernelEntry], MatchHow]


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

    With process keys, a kernel only matches the same kernel of the same process key."""
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
    for name, group in b_by_name.items():
        if name in a_by_name:
            pairs.append((group, a_by_name[name], "name"))
        else:
            pairs.append((group, [], None))
    for name, group in a_by_name.items():
        if name not in b_by_name:
            pairs.append(([], group, None))
    return pairs
