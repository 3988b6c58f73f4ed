"""The only importer of `ncu_report`, and the plain values read from its objects (metrics, names, NVTX ranges)."""

from __future__ import annotations

import os
import platform
from typing import Any

from ncuadvisor.errors import InputError

# Device attributes copied into Profile.device (read from the first result).
DEVICE_METRICS = {
    "name": "device__attribute_display_name",
    "chip": "device__attribute_chip",
    "cc_major": "device__attribute_compute_capability_major",
    "cc_minor": "device__attribute_compute_capability_minor",
    "sm_count": "device__attribute_multiprocessor_count",
    "l2_bytes": "device__attribute_l2_cache_size",
    "max_warps_per_sm": "device__attribute_max_warps_per_multiprocessor",
    "max_threads_per_sm": "device__attribute_max_threads_per_multiprocessor",
    "max_blocks_per_sm": "device__attribute_max_blocks_per_multiprocessor",
    "max_registers_per_sm": "device__attribute_max_registers_per_multiprocessor",
    "max_shared_mem_per_sm": "device__attribute_max_shared_memory_per_multiprocessor",
    "max_shared_mem_per_block_optin": "device__attribute_max_shared_memory_per_block_optin",
    "memory_bus_width": "device__attribute_global_memory_bus_width",
    "max_gpu_frequency_khz": "device__attribute_max_gpu_frequency_khz",
    "max_mem_frequency_khz": "device__attribute_max_mem_frequency_khz",
}


def device_of(action: Any) -> dict[str, Any]:
    """The device attributes of a result (`DEVICE_METRICS`), with its compute capability as text."""
    dev = {k: value(action.metric_by_name(v)) for k, v in DEVICE_METRICS.items()}
    if dev.get("cc_major") is not None and dev.get("cc_minor") is not None:
        dev["compute_capability"] = f"{int(dev['cc_major'])}.{int(dev['cc_minor'])}"
    return dev


def import_ncu_report():
    try:
        import ncu_report  # noqa: PLC0415 - imported lazily so `ncuadvisor --help` works without it
    except ImportError as exc:  # pragma: no cover - the dependency is declared; this is a broken install
        raise InputError(f"cannot import ncu_report ({exc}); install it with: pip install ncu-report") from exc
    return ncu_report


def preload_library() -> None:
    """Load the library `ncu_report` loads when it first opens a result (libnvperf_host, ~170 MB: ~0.07 s, several
    times that on a busy machine), here and now rather than then: called while this process waits for workers, it
    takes that time off the first result opened. The report itself is not touched. Nothing happens where the library
    is not beside the module (ncu_report then finds it its own way, as before)."""
    import ctypes

    library = {"Linux": "libnvperf_host.so", "Darwin": "libnvperf_host.dylib", "Windows": "nvperf_host.dll"}
    try:
        name = library.get(platform.system())
        path = os.path.join(os.path.dirname(import_ncu_report().__file__), name or "")
        if name and os.path.isfile(path):
            ctypes.CDLL(path)
    except (OSError, InputError):
        pass


class native_stderr_silenced:
    """Keep the native library's own log lines (protobuf's "Can't parse message ..." on a cut-short header) off the
    user's terminal: file descriptor 2 points at /dev/null while it runs; our one-line error says what went wrong."""

    _saved: int | None

    def __enter__(self) -> None:
        try:
            self._saved = os.dup(2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        except OSError:  # no fd 2 to redirect: nothing to silence
            self._saved = None

    def __exit__(self, *exc: Any) -> None:
        if self._saved is not None:
            os.dup2(self._saved, 2)
            os.close(self._saved)


def value(metric: Any) -> Any:
    if metric is None:
        return None
    try:
        if metric.kind() == metric.ValueKind_STRING:
            return metric.as_string()
        return metric.as_double()
    except Exception:
        return None


def nvtx(action: Any) -> str:
    try:
        state = action.nvtx_state()
        if state is None:
            return ""
        names: list[str] = []
        for dom_id in state.domains():
            dom = state.domain_by_id(dom_id)
            names.extend(str(n) for n in dom.push_pop_ranges())
            names.extend(str(n) for n in dom.start_end_ranges())
        return " > ".join(names)
    except Exception:
        return ""


def row(ncu: Any, action: Any, rid: int, r: int, a: int, metrics: list[str]) -> dict[str, Any]:
    """One result as a row: identity columns and the requested metrics (None where absent)."""
    row: dict[str, Any] = {
        "result_id": rid,
        "range_idx": r,
        "action_idx": a,
        "name": action.name(ncu.IAction.NameBase_FUNCTION) or action.name(),
        "demangled": action.name(ncu.IAction.NameBase_DEMANGLED) or action.name(),
        "mangled": action.name(ncu.IAction.NameBase_MANGLED) or "",
        "nvtx": nvtx(action),
        "process": "",
    }
    by = action.metric_by_name
    row["grid"] = dim3(*(value(by(f"launch__grid_dim_{c}")) for c in "xyz"))
    row["block"] = dim3(*(value(by(f"launch__block_dim_{c}")) for c in "xyz"))
    row["device_id"] = value(by("launch__device_id"))
    for m in metrics:
        row[m] = value(by(m))
    return row


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def dim3(x: Any, y: Any, z: Any) -> str:
    vals = [int(v) if isinstance(v, (int, float)) and v == v else None for v in (x, y, z)]
    if vals[0] is None:
        return ""
    return "(" + ", ".join(str(v if v is not None else 1) for v in vals) + ")"
