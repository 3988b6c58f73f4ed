"""`ncuadvisor mcp`'s `profile` tool on the GPU machine, through the MCP SDK's own client over a real stdio pipe:
two kernels of workloads/cuda/flaws.cu profiled by the tool, checked against `ncuadvisor profile` run directly on the
same program (the same kernels, launches and first findings; the tool's digest is the digest of the result it saved).

The GPU machine has no network and no `mcp`: where `import mcp` fails, the wheels carried in `.whl/mcp/` (made here
by `pip download "mcp" --python-version 3.12 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
--only-binary=:all: -d .whl/mcp`) are installed into a folder of the test's own (`pip install --no-index
--find-links .whl/mcp --target DIR mcp`), put on the path after what is installed (before it only when the
installed packages are too old for the SDK). Without a GPU and ncu the test is skipped (tests/conftest.py).

    PARTS="none:0" GPU_TESTS="tests/test_mcp_gpu.py" bash benchmarks/device/all.sh     (carry .whl)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

WHEELS = ROOT / ".whl" / "mcp"
SDK_IMPORTS = "import mcp, mcp.client.stdio, mcp.server.mcpserver"
ONLY = ["--once", "--only", "copy_strided,copy_vec4"]

pytestmark = pytest.mark.gpu


def _imports(path: list[str]) -> bool:
    """Whether a fresh interpreter with `path` on PYTHONPATH imports the SDK's client and server."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    return subprocess.run([sys.executable, "-c", SDK_IMPORTS], env=env, capture_output=True).returncode == 0


def _sdk_path(tmp: Path) -> list[str]:
    """The PYTHONPATH with the SDK importable: as it is when `mcp` is installed, else with the carried wheels."""
    path = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _imports(path):
        return path
    if not any(WHEELS.glob("mcp-*.whl")):
        pytest.skip(f"no mcp here and no wheels in {WHEELS} (pip download, see this module's docstring)")
    site = tmp / "mcp-site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-compile", "--find-links", str(WHEELS)]
    p = subprocess.run([*pip, "--target", str(site), "mcp"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    for candidate in ([*path, str(site)], [str(site), *path]):  # the installed packages first, if the SDK takes them
        if _imports(candidate):
            return candidate
    pytest.fail(f"the SDK installed in {site} does not import")


def _cli(path: list[str], cwd: Path, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    p = subprocess.run(
        [sys.executable, "-m", "ncuadvisor", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout


def test_the_profile_tool_answers_as_profile_does(tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.exists(nvcc):
        pytest.skip("needs nvcc")
    path = _sdk_path(tmp_path)
    site = str(tmp_path / "mcp-site")
    if site in path and site not in sys.path:  # the carried SDK in this process too, where _sdk_path put it
        if path[0] == site:
            sys.path.insert(0, site)
        else:
            sys.path.append(site)
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(
        [nvcc, "-arch=sm_90", "-lineinfo", "-O3", "-o", str(root / "flaws"), str(ROOT / "workloads/cuda/flaws.cu")],
        check=True,
        cwd=ROOT / "workloads/cuda",
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ncuadvisor", "mcp", "--root", str(root)],
        cwd=str(root),
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)),
    )

    async def main():
        async with Client(params) as client:
            return await client.call_tool("profile", {"script": "flaws", "args": ONLY, "top": 2})

    res = anyio.run(main)
    text = "".join(getattr(c, "text", "") for c in res.content)
    assert not res.is_error, text
    digest, _, saved_line = text.rstrip("\n").rpartition("\n")
    assert saved_line.startswith("saved: ")
    saved = Path(saved_line.removeprefix("saved: "))
    assert saved.parent == root / ".ncuadvisor-mcp" and saved.exists()
    # the answer is the digest of the result the tool saved
    assert digest + "\n" == _cli(path, root, "render", str(saved), "--format", "digest", "--top", "2")
    # and that result is what `ncuadvisor profile` finds on the same program: kernels, launches, first findings
    direct = tmp_path / "direct.json"
    _cli(path, root, "profile", "-o", str(direct), "-q", "--", str(root / "flaws"), *ONLY)
    by_tool, by_cli = json.loads(saved.read_text()), json.loads(direct.read_text())

    def launches(res: dict) -> dict:
        return {k["name"]: k["launches"] for k in res["kernels"]}

    def first_rule(res: dict, name: str) -> str:
        return next(k for k in res["kernels"] if k["name"] == name)["findings"][0]["rule"]

    assert launches(by_tool) == launches(by_cli) and set(launches(by_cli)) == {"copy_strided", "copy_vec4"}
    # the strided copy's cause is certain; copy_vec4 is near its floor, where a verdict may move with the timing
    assert first_rule(by_tool, "copy_strided") == first_rule(by_cli, "copy_strided") == "MEM001"
    assert "copy_strided" in digest and "MEM001" in digest
