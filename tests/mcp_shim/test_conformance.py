"""Conformance with MCP clients we did not write: the official Python SDK client and the MCP Inspector CLI.

Both drive the real shim process; tool calls go to a real gateway process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp_shim.shim import shim_env
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.requires import require

pytestmark = pytest.mark.timeout(120)

INSPECTOR = ROOT / ".tools" / "mcp" / "node_modules" / ".bin"


@pytest.mark.parametrize(("mode", "revision"), [("legacy", "2025-11-25"), ("auto", "2026-07-28"),
                                               ("2026-07-28", "2026-07-28")])
async def test_official_python_sdk_client(agent_gateway: GatewayProcess, tmp_path: Path, mode: str,
                                          revision: str) -> None:
    """``legacy`` sends initialize; ``auto`` probes server/discover and goes stateless on its answer; a
    client pinned to 2026-07-28 sends no handshake at all. The SDK checks structuredContent against each
    tool's outputSchema itself."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = shim_env(agent_gateway, tmp_path, plugin_manifest={"tools": []})
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_shim"], env=env, cwd=str(ROOT))
    async with Client(params, mode=mode) as client:
        assert client.protocol_version == revision
        listed = await client.list_tools()
        assert len(listed.tools) == 54
        by_name = {t.name: t for t in listed.tools}
        assert by_name["cron_remove"].annotations.destructive_hint is True
        assert by_name["sessions_list"].annotations.read_only_hint is True
        ok = await client.call_tool("agents_list", {})
        assert not ok.is_error
        assert json.loads(ok.content[0].text)["defaultAgentId"] == "main"
        assert ok.structured_content == json.loads(ok.content[0].text)
        assert by_name["agents_list"].output_schema["required"] == ["agents", "defaultAgentId"]
        failed = await client.call_tool("browser_request", {"method": "GET", "path": "/tabs"})
        assert failed.is_error and failed.content[0].text.startswith("Tool error (browser_request): UNAVAILABLE")


async def test_a_client_that_lists_once_gets_the_plugin_tools_with_their_output_schemas(
        agent_gateway: GatewayProcess, tmp_path: Path) -> None:
    """Standalone (no plugin tools file): the first ``tools/list`` already holds the memory plugin's tools, each
    with an ``outputSchema`` its ``structuredContent`` matches (the SDK checks), and so does ``ask_user``."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = shim_env(agent_gateway, tmp_path)
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_shim"], env=env, cwd=str(ROOT))
    async with Client(params, mode="legacy") as client:
        by_name = {t.name: t for t in (await client.list_tools()).tools}  # listed once, right after the handshake
        memory = {n for n in by_name if n.startswith("memory_")}
        assert memory == {"memory_search", "memory_get", "memory_remember", "memory_forget", "memory_stats",
                          "memory_flush"} and len(by_name) == 60
        assert all(by_name[n].output_schema is not None for n in memory)
        assert by_name["ask_user"].output_schema is not None
        stored = await client.call_tool("memory_remember", {"content": "The build runs on Fridays", "tier": "core"})
        assert not stored.is_error and stored.structured_content["tier"] == "core", stored
        assert json.loads(stored.content[0].text) == stored.structured_content  # the text copy says the same
        found = await client.call_tool("memory_search", {"query": "build Fridays"})
        assert [r["id"] for r in found.structured_content["results"]] == [stored.structured_content["id"]]
        got = await client.call_tool("memory_get", {"id": stored.structured_content["id"]})
        assert got.structured_content["content"] == "The build runs on Fridays"
        stats = await client.call_tool("memory_stats", {})
        assert stats.structured_content["byTier"]["core"] >= 1
        asked = await client.call_tool("ask_user", {"timeoutSeconds": 1, "questions": [{
            "id": "day", "header": "Day", "question": "Which day?", "options": [{"label": "Mon"}, {"label": "Fri"}]}]})
        assert not asked.is_error and asked.structured_content["status"] == "no_answer", asked
        gone = await client.call_tool("memory_forget", {"content_or_id": stored.structured_content["id"],
                                                        "confirmed": True})
        assert gone.structured_content == {"forgotten": 1, "ids": [stored.structured_content["id"]]}


def _inspector(env: dict[str, str], *args: str, era: str = "legacy") -> subprocess.CompletedProcess[str]:
    """``era``: ``legacy`` (initialize) or ``modern`` (2026-07-28 per-request envelopes, no handshake)."""
    node_env = {**env, "PATH": f"{INSPECTOR}:{env.get('PATH', '')}"}
    # Like the agent CLIs, the Inspector passes the server only the variables it is told to.
    passed = [arg for k, v in env.items() if k.startswith(("REMOTECLAW_", "PYTHON")) for arg in ("-e", f"{k}={v}")]
    cmd = [str(INSPECTOR / "mcp-inspector"), "--cli", "--protocol-era", era, *passed, *args, "--",
           sys.executable, "-m", "mcp_shim"]
    return subprocess.run(cmd, cwd=ROOT, env=node_env, capture_output=True, text=True, timeout=90)


@pytest.fixture
def needs_inspector_installed() -> None:
    require((INSPECTOR / "mcp-inspector").exists(), "MCP Inspector not installed: run scripts/install-mcp-inspector")


needs_inspector = pytest.mark.usefixtures("needs_inspector_installed")


ERAS = pytest.mark.parametrize("era", ["legacy", "modern"])


@needs_inspector
@ERAS
def test_inspector_lists_tools_strictly(agent_gateway: GatewayProcess, tmp_path: Path, era: str) -> None:
    env = shim_env(agent_gateway, tmp_path, plugin_manifest={"tools": []})
    proc = _inspector(env, "--method", "tools/list", "--strict", era=era)
    assert proc.returncode == 0, proc.stderr
    tools = json.loads(proc.stdout)["tools"]
    assert len(tools) == 54  # the Inspector drops tools whose schema it cannot use


@needs_inspector
@ERAS
def test_inspector_calls_tools(agent_gateway: GatewayProcess, tmp_path: Path, era: str) -> None:
    env = shim_env(agent_gateway, tmp_path, plugin_manifest={"tools": []})
    proc = _inspector(env, "--method", "tools/call", "--tool-name", "heartbeat_report",
                      "--tool-args-json", '{"anything_done": false, "summary": "nothing new"}', era=era)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(json.loads(proc.stdout)["content"][0]["text"])["anythingDone"] is False
    record = json.loads((tmp_path / "side-effects.ndjson").read_text())
    assert record["type"] == "heartbeat_report" and record["summary"] == "nothing new"
    failed = _inspector(env, "--method", "tools/call", "--tool-name", "browser_request", "--tool-args-json",
                        '{"method": "GET", "path": "/tabs"}', era=era)
    assert failed.returncode == 5  # the Inspector's exit code for an isError result
    assert "no browser-capable node" in failed.stdout + failed.stderr
