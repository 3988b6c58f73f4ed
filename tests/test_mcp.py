"""`ncuadvisor mcp` through the MCP SDK's own client over a real stdio pipe: the tools listed, each called on shipped
reports and checked against `ncuadvisor report --format json` (and the digest, the diff), and the failures a client
can cause (a path outside the root, a damaged report, an unknown kernel or rule) each a tool error, the server serving
on."""

import json
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402  (a dependency of mcp)
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from tests.conftest import FIXTURES, ROOT  # noqa: E402

pytestmark = pytest.mark.slow

TOOLS = {"report", "kernel", "explain_rule", "diff", "profile"}


def _cli(*args):
    p = subprocess.run([sys.executable, "-m", "ncuadvisor", *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A root folder with two reports of one program, a damaged copy and a link that leads out of it."""
    folder = tmp_path_factory.mktemp("root")
    for name in ("pipeline_v0", "pipeline_v1", "flaws"):
        shutil.copy(FIXTURES / f"{name}.ncu-rep.xz", folder)
    data = bytearray((FIXTURES / "probe.ncu-repz").read_bytes())
    data[len(data) // 2] ^= 0x40  # a flipped bit: the zstd checksum fails
    (folder / "damaged.ncu-repz").write_bytes(bytes(data))
    (folder / "cut.ncu-rep.xz").write_bytes((FIXTURES / "probe.ncu-rep.xz").read_bytes()[:5000])
    (folder / "escape.ncu-rep.xz").symlink_to(FIXTURES / "probe.ncu-rep.xz")  # resolves outside the root
    return folder


def _session(root, calls):
    """Start `python -m ncuadvisor mcp --root ROOT` and run `calls(client)` on it; the results of the calls."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ncuadvisor", "mcp", "--root", str(root)],
        cwd=str(root),
        env={"PYTHONPATH": str(ROOT)},
    )

    async def main():
        async with Client(params) as client:
            return await calls(client)

    return anyio.run(main)


def test_tools_answer_as_the_command_line_does(root):
    async def calls(client):
        tools = await client.list_tools()
        out = {"tools": {t.name for t in tools.tools}}
        out["report"] = await client.call_tool("report", {"path": "flaws.ncu-rep.xz"})
        out["kernel"] = await client.call_tool("kernel", {"path": str(root / "flaws.ncu-rep.xz"), "name": "k8"})
        out["rule"] = await client.call_tool("explain_rule", {"code": "MEM001"})
        out["diff"] = await client.call_tool(
            "diff", {"before": "pipeline_v0.ncu-rep.xz", "after": "pipeline_v1.ncu-rep.xz"}
        )
        return out

    out = _session(root, calls)
    assert out["tools"] == TOOLS
    for name in ("report", "kernel", "rule", "diff"):
        assert not out[name].is_error, _text(out[name])
    path = str(root / "flaws.ncu-rep.xz")
    want = json.loads(_cli("report", path, "--format", "json"))
    digest = _text(out["report"])
    assert digest.splitlines()[1:] == _cli("report", path, "--format", "digest").splitlines()[1:]
    assert len(digest) <= 6000
    first = want["top_actions"][0]
    assert f"1. {first['kernel']} [{first['kernel_id']}" in digest
    kd = json.loads(_text(out["kernel"]))["kernel_digests"][0]
    k8 = next(k for k in want["kernels"] if k["id"] == "k8")
    assert (kd["name"], kd["bound"]) == (k8["name"], k8["bound"])
    assert [f["rule"] for f in kd["findings"]] == [f["rule"] for f in k8["findings"]][: len(kd["findings"])]
    assert kd["findings"][0]["saving"] == round(k8["findings"][0]["estimated_speedup"], 3)
    assert _text(out["rule"]).strip() == _cli("rules", "MEM001").strip()
    assert _text(out["rule"]).startswith("MEM001 uncoalesced-global")
    d = json.loads(_text(out["diff"]))
    cli_diff = json.loads(
        _cli("diff", str(root / "pipeline_v0.ncu-rep.xz"), str(root / "pipeline_v1.ncu-rep.xz"), "--format", "json")
    )
    assert d["verdict"] == cli_diff["verdict"] and d["total"] == cli_diff["total"]


def test_refusals_are_tool_errors_and_the_server_serves_on(root):
    async def calls(client):
        asks = [
            ("report", {"path": str(FIXTURES / "probe.ncu-rep.xz")}),  # outside the root
            ("report", {"path": "../" * 12 + "etc/passwd"}),  # outside, by ..
            ("report", {"path": "escape.ncu-rep.xz"}),  # a link inside that leads outside
            ("report", {"path": "damaged.ncu-repz"}),
            ("report", {"path": "cut.ncu-rep.xz"}),
            ("kernel", {"path": "flaws.ncu-rep.xz", "name": "no_such_kernel"}),
            ("explain_rule", {"code": "XYZ999"}),
            ("report", {"path": "pipeline_v0.ncu-rep.xz"}),  # still serving
        ]
        return [await client.call_tool(name, args) for name, args in asks]

    *errors, last = _session(root, calls)
    assert all(e.is_error for e in errors), [_text(e) for e in errors]
    texts = [_text(e) for e in errors]
    assert all("outside the folders this server may read" in t for t in texts[:3]), texts[:3]
    assert "damaged compressed report" in texts[3]
    assert "no kernel 'no_such_kernel'" in texts[5] and "no rule 'XYZ999'" in texts[6]
    assert all("\n" not in t.strip() for t in texts)  # one line each, no traceback
    assert not last.is_error and _text(last).startswith("ncuadvisor digest 2 | pipeline_v0")


@pytest.mark.skipif(shutil.which("ncu") is not None, reason="ncu is here: the profile would run")
def test_profile_without_ncu_is_a_clear_tool_error(root):
    script = root / "step.py"
    script.write_text("print('hello')\n")

    async def calls(client):
        return await client.call_tool("profile", {"script": "step.py", "args": []})

    res = _session(root, calls)
    assert res.is_error and "ncu" in _text(res)
