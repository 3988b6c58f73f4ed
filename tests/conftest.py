"""Shared test helpers: the real reports in fixtures/ (kept xz-compressed), read through the real ncu_report."""

from __future__ import annotations

import lzma
import pickle
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _has_gpu() -> bool:
    return shutil.which("nvidia-smi") is not None and shutil.which("ncu") is not None


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU and ncu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def report_path(tmp_path_factory):
    """report_path("probe") -> a decompressed copy of fixtures/probe.ncu-rep.xz (made once per test run); a name may
    hold a folder: report_path("tf32-twin-2026-12-01/torch_conv_fixes")."""
    cache: dict[str, Path] = {}
    folder = tmp_path_factory.mktemp("reports")

    def get(name: str) -> Path:
        if name not in cache:
            src = FIXTURES / f"{name}.ncu-rep.xz"
            if not src.exists():
                pytest.fail(f"fixture {src} is missing")
            dst = folder / f"{name}.ncu-rep"  # a name may hold a folder of fixtures/: "profile-cost-2026-11-30/x"
            dst.parent.mkdir(parents=True, exist_ok=True)
            with lzma.open(src, "rb") as fin, dst.open("wb") as fout:
                shutil.copyfileobj(fin, fout)
            cache[name] = dst
        return cache[name]

    return get


@pytest.fixture(scope="session")
def typed(report_path):
    """typed("probe") -> the result (`ncuadvisor.result.Result`) of that fixture, analyzed once per test run with the
    default rules.

    Every call returns a deep copy of its own (unpickled from the one analysis: ~5x faster than copy.deepcopy), so a
    test may change what it gets without another test seeing the change."""
    from ncuadvisor.pipeline.analyze import analyze

    cache: dict[str, bytes] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = pickle.dumps(analyze(report_path(name)), protocol=pickle.HIGHEST_PROTOCOL)
        return pickle.loads(cache[name])

    return get


@pytest.fixture(scope="session")
def analyzed(typed):
    """analyzed("probe") -> the result of that fixture as its JSON dict (`Result.to_dict()`), a copy of its own."""
    return lambda name: typed(name).to_dict()


def kernel(result: dict, name: str) -> dict:
    matches = [k for k in result["kernels"] if k["name"] == name]
    assert matches, f"no kernel {name} in {[k['name'] for k in result['kernels']]}"
    return matches[0]
