"""The shim's own stdio JSON-RPC core, against the real process: handshake, ids, errors, exit, imports."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp_shim.conftest import ShimFactory
from tests.mcp_shim.shim import SHIM_CMD, shim_env
from tests.support.gateway_proc import ROOT

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("missing", ["REMOTECLAW_GATEWAY_URL", "REMOTECLAW_GATEWAY_TOKEN", "REMOTECLAW_SESSION_KEY",
                                     "REMOTECLAW_SIDE_EFFECTS_FILE"])
def test_missing_required_env_exits_1_naming_it(tmp_path: Path, missing: str) -> None:
    env = shim_env(None, tmp_path)
    del env[missing]
    proc = subprocess.run(SHIM_CMD, cwd=ROOT, env=env, input=b"", capture_output=True, timeout=20)
    assert proc.returncode == 1
    assert missing in proc.stderr.decode()
    assert proc.stdout == b""


def test_unknown_profile_exits_1(tmp_path: Path) -> None:
    env = shim_env(None, tmp_path, profile="everything")
    proc = subprocess.run(SHIM_CMD, cwd=ROOT, env=env, input=b"", capture_output=True, timeout=20)
    assert proc.returncode == 1
    assert "REMOTECLAW_TOOL_PROFILE" in proc.stderr.decode() and "everything" in proc.stderr.decode()


async def test_initialize_negotiates_version(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, initialize=False)
    res = await shim.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}}, id=0)
    assert res["id"] == 0
    assert res["result"]["protocolVersion"] == "2025-06-18"
    assert res["result"]["capabilities"]["tools"] == {"listChanged": True}
    assert res["result"]["serverInfo"]["name"] == "remoteclaw"
    # A version we do not know gets our newest one back.
    res = await shim.request("initialize", {"protocolVersion": "2099-01-01"}, id="again")
    assert res["id"] == "again" and res["result"]["protocolVersion"] == "2025-11-25"


async def test_discover_is_method_not_found_and_notifications_get_no_answer(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, initialize=False)
    res = await shim.request("server/discover", {"protocolVersion": "2026-07-28"}, id="d")
    assert res["error"]["code"] == -32601
    await shim.notify("notifications/initialized")
    await shim.notify("notifications/cancelled", {"requestId": 12345})
    await shim.notify("notifications/whatever")
    assert (await shim.request("ping", id=0))["result"] == {}
    res = await shim.request("resources/list", id="r")
    assert res["error"]["code"] == -32601 and "resources/list" in res["error"]["message"]
    await shim.close()
    assert shim.unmatched == []  # nothing was answered that we did not ask


async def test_parse_error_and_bad_requests(start_shim: ShimFactory) -> None:
    shim = await start_shim(None)
    await shim.send(b"{not json")
    await shim.send({"jsonrpc": "2.0", "id": True, "method": "ping"})
    res = await shim.request("tools/call", {"arguments": {}})
    assert res["error"]["code"] == -32602
    res = await shim.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    assert res["error"]["code"] == -32602 and "no_such_tool" in res["error"]["message"]
    await shim.close()
    codes = sorted(m["error"]["code"] for m in shim.unmatched)
    assert codes == [-32700, -32600]
    assert all(m["id"] is None for m in shim.unmatched)


async def test_tools_list_is_stable_and_complete(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, plugin_manifest={"tools": []})
    first = await shim.tools()
    assert len(first) == 54
    assert first == await shim.tools()


async def test_exits_promptly_on_eof(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, plugin_manifest={"tools": []})
    await shim.tools()
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await shim.close() == 0
    assert loop.time() - started < 2.0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_exits_promptly_on_signal(start_shim: ShimFactory, sig: int) -> None:
    shim = await start_shim(None, plugin_manifest={"tools": []})
    await shim.tools()
    loop = asyncio.get_running_loop()
    started = loop.time()
    shim.proc.send_signal(sig)
    await asyncio.wait_for(shim.proc.wait(), 2)
    assert loop.time() - started < 1.0


async def test_stray_output_goes_to_stderr_not_the_protocol(start_shim: ShimFactory, tmp_path: Path) -> None:
    # A broken plugin manifest makes the shim print a warning at start: it must land on stderr.
    (tmp_path / "bad.json").write_text("{broken")
    shim = await start_shim(None, REMOTECLAW_PLUGIN_TOOLS_FILE=str(tmp_path / "bad.json"))
    assert len(await shim.tools()) == 54
    await shim.close()
    assert "REMOTECLAW_PLUGIN_TOOLS_FILE" in await shim.stderr()
    assert shim.junk == []


def test_heavy_modules_are_not_imported_to_list_tools(tmp_path: Path) -> None:
    """Spawn → initialize → tools/list → EOF imports no web framework, ORM, validation or SDK. websockets is
    imported too, but only after the tools/list answer went out: the engine thread opens the gateway
    connection ahead of the first call (``Runner.warm``)."""
    env = shim_env(None, tmp_path, plugin_manifest={"tools": []}, PYTHONPROFILEIMPORTTIME="1")
    lines = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}\n'
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
             b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    proc = subprocess.run(SHIM_CMD, cwd=ROOT, env=env, input=lines, capture_output=True, timeout=20)
    assert proc.returncode == 0
    assert proc.stdout.count(b"\n") == 2
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "mcp_shim.server" in imported
    heavy = {m for m in imported if m.split(".")[0] in {"pydantic", "sqlalchemy", "starlette", "uvicorn", "mcp",
                                                        "structlog", "alembic", "httpx"}}
    assert heavy == set()


async def test_cancelled_call_gets_no_answer(start_shim: ShimFactory) -> None:
    # A gateway that accepts TCP but never answers the WebSocket handshake keeps the call pending.
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        shim = await start_shim(None, plugin_manifest={"tools": []},
                                REMOTECLAW_GATEWAY_URL=f"ws://127.0.0.1:{port}/")
        await shim.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                         "params": {"name": "agents_list", "arguments": {}}})
        await asyncio.sleep(0.5)
        await shim.notify("notifications/cancelled", {"requestId": "slow", "reason": "user"})
        assert (await shim.request("ping"))["result"] == {}
        await asyncio.sleep(0.3)
        assert shim.unmatched == []
    finally:
        server.close()


def test_python_m_and_console_script_are_the_same_program() -> None:
    script = Path(sys.executable).parent / "remoteclaw-mcp"
    assert script.exists()
    proc = subprocess.run([str(script)], env={k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW")},
                          input=b"", capture_output=True, timeout=20)
    assert proc.returncode == 1 and b"REMOTECLAW_GATEWAY_URL" in proc.stderr
