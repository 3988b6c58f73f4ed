"""The DRAM bytes of every phase-1 launch, for the program rules of `ncuadvisor profile`, where phase 1 lacks them.

Phase 1 collects each launch's DRAM bytes itself (`ncu.PHASE1_COLLECTED`); a phase-1 report of an earlier
ncuadvisor timed the launches only. For those, the program rules that weigh data movement between kernels (PRG002,
fusion) get the bytes phase 2 measured on the launch it profiled of each chosen kernel: every phase-1 launch of that
kernel (same demangled name and launch shape) is given those bytes, scaled by its duration over the profiled launch's
(a launch of another size moves proportionally more or fewer bytes; same-size launches differ by their timing noise
only). Launches of kernels phase 2 did not profile keep no bytes, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ncuadvisor.profile.selection import kernel_key
from ncuadvisor.result.types import KernelEntry

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
DURATION = "gpu__time_duration.sum"


def profiled_bytes(paths: Iterable[str]) -> dict[tuple[str, str, str], tuple[float, float, float]]:
    """Kernel key -> (DRAM bytes read, written, duration ns) of its first profiled launch in the phase-2 reports; a
    report that cannot be read again gives none (its analysis already said what is wrong with it)."""
    from ncuadvisor.errors import AdvisorError
    from ncuadvisor.load import ReportReader
    from ncuadvisor.model import num

    out: dict[tuple[str, str, str], tuple[float, float, float]] = {}
    for path in paths:
        try:
            wanted = [DRAM_READ, DRAM_WRITE, DURATION]
            table = ReportReader(path, wanted).results(wanted)
        except (AdvisorError, OSError, ValueError):
            continue
        for row in table:
            read, write, dur = num(row.get(DRAM_READ)), num(row.get(DRAM_WRITE)), num(row.get(DURATION))
            if read is None or write is None or not dur:
                continue
            out.setdefault(kernel_key(row), (float(read), float(write), float(dur)))
    return out


def fill_launch_bytes(
    launches: Sequence[dict[str, Any]],
    phase1_kernels: Iterable[KernelEntry],
    profiled: dict[tuple[str, str, str], tuple[float, float, float]],
) -> int:
    """Give the phase-1 launches without DRAM bytes those of their kernel's profiled launch (scaled by duration);
    returns how many launches got them."""
    key_of = {str(k.id): kernel_key(k) for k in phase1_kernels}
    filled = 0
    for x in launches:
        if x.get("dram_read_bytes") is not None and x.get("dram_write_bytes") is not None:
            continue
        got = profiled.get(key_of.get(str(x.get("kernel_id")), ("", "", "")))
        if got is None:
            continue
        read, write, dur = got
        scale = float(x["duration_ns"]) / dur if x.get("duration_ns") else 1.0
        x["dram_read_bytes"], x["dram_write_bytes"] = read * scale, write * scale
        filled += 1
    return filled
