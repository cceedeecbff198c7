"""Remote MCP at ``/mcp``: real gateway process, real HTTP on 127.0.0.1, the official SDK's Streamable HTTP
client and the MCP Inspector CLI as the far side; tokens made with the real ``remoteclaw mcp token`` CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import httpx
import pytest

from tests.support import FAKE_CLI, ROOT
from tests.support.gateway_proc import GatewayProcess
from tests.support.requires import require

pytestmark = pytest.mark.timeout(120)

GATEWAY_CONFIG = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
INSPECTOR = ROOT / ".tools" / "mcp" / "node_modules" / ".bin"
OWNER_ONLY = {"cron_status", "gateway_config_get", "node_list", "tts_status"}


def mcp_token(gateway: GatewayProcess, *args: str) -> str:
    """``remoteclaw mcp token create ...`` as a user runs it; the token is the last line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    proc = subprocess.run([sys.executable, "-m", "gateway.cli", "mcp", "token", "create", *args,
                           "--url", gateway.url, "--token", gateway.token or ""],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].startswith("rcm_") and len(lines) >= 2
    return lines[-1]


def url(gateway: GatewayProcess) -> str:
    return f"http://127.0.0.1:{gateway.port}/mcp"


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def initialize(client: httpx.AsyncClient, gateway: GatewayProcess, token: str) -> str:
    r = await client.post(url(gateway), headers={**HEADERS, "authorization": f"Bearer {token}"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}}})
    assert r.status_code == 200, r.text
    assert r.json()["result"]["protocolVersion"] == "2025-06-18"
    return r.headers["mcp-session-id"]


def sse_messages(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]


@pytest.mark.parametrize(("mode", "revision"), [("legacy", "2025-11-25"), ("auto", "2026-07-28"),
                                               ("2026-07-28", "2026-07-28")])
async def test_the_official_sdk_client_lists_and_calls_tools(gateway: GatewayProcess, mode: str,
                                                             revision: str) -> None:
    """``legacy`` opens a session with initialize; ``auto`` asks server/discover and goes stateless; a
    pinned 2026-07-28 client sends its first request with no handshake at all."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    token = mcp_token(gateway, "--name", f"sdk-owner-{mode}", "--owner")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with http, Client(streamable_http_client(url(gateway), http_client=http), mode=mode) as client:
        assert client.protocol_version == revision
        listed = await client.list_tools()
        assert len(listed.tools) == 54 + 6  # and the memory plugin's six
        assert {t.name for t in listed.tools} >= OWNER_ONLY
        by_name = {t.name: t for t in listed.tools}
        assert by_name["sessions_list"].annotations.read_only_hint is True
        ok = await client.call_tool("agents_list", {})
        assert not ok.is_error
        assert json.loads(ok.content[0].text)["defaultAgentId"] == "main"
        assert ok.structured_content == json.loads(ok.content[0].text)  # checked against outputSchema by the SDK
        bad = await client.call_tool("sessions_history", {"limit": "many"})
        assert bad.is_error and "invalid arguments" in bad.content[0].text
        progress: list[tuple[float, str | None]] = []

        async def on_progress(done: float, _total: float | None, message: str | None) -> None:
            progress.append((done, message))

        waited = await client.call_tool("sessions_send", {"sessionKey": "agent:main:main", "message": "sleep:2.2",
                                                          "timeout": 30}, progress_callback=on_progress)
        assert waited.structured_content["status"] == "ok", waited
        assert len(progress) >= 1 and "sessions_send" in (progress[0][1] or "")


async def test_a_baseline_token_gets_neither_the_owner_tools_nor_their_methods(gateway: GatewayProcess) -> None:
    token = mcp_token(gateway, "--name", "guest", "--profile", "full")
    auth = {**HEADERS, "authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30) as client:
        sid = await initialize(client, gateway, token)
        h = {**auth, "mcp-session-id": sid}
        listed = await client.post(url(gateway), headers=h, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        names = {t["name"] for t in listed.json()["result"]["tools"]}
        assert names and not names & OWNER_ONLY
        assert "sessions_list" in names
        call = await client.post(url(gateway), headers={**h, "accept": "application/json"},
                                 json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                       "params": {"name": "cron_status", "arguments": {}}})
        result = call.json()["result"]
        assert result["isError"] and "only for the bot's owner" in result["content"][0]["text"]


async def test_bad_revoked_and_expired_tokens_get_401_and_foreign_origins_403(gateway: GatewayProcess) -> None:
    good = mcp_token(gateway, "--name", "soon-revoked")
    short = mcp_token(gateway, "--name", "short-lived", "--expires", "1s")
    async with httpx.AsyncClient(timeout=30) as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        nobody = await client.post(url(gateway), headers=HEADERS, json=body)
        assert nobody.status_code == 401
        assert "resource_metadata=" in nobody.headers["www-authenticate"]
        meta = await client.get(f"http://127.0.0.1:{gateway.port}/.well-known/oauth-protected-resource/mcp")
        assert meta.json()["resource"].endswith("/mcp") and meta.json()["bearer_methods_supported"] == ["header"]
        wrong = await client.post(url(gateway), headers={**HEADERS, "authorization": "Bearer rcm_nope"}, json=body)
        assert wrong.status_code == 401
        sid = await initialize(client, gateway, good)
        evil = await client.post(url(gateway), json=body, headers={
            **HEADERS, "authorization": f"Bearer {good}", "mcp-session-id": sid, "origin": "http://evil.example"})
        assert evil.status_code == 403
        revoked = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "gateway.cli", "mcp", "token", "revoke", "soon-revoked",
                             "--url", gateway.url, "--token", gateway.token or ""],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert revoked.returncode == 0, revoked.stderr
        after = await client.post(url(gateway), json=body, headers={
            **HEADERS, "authorization": f"Bearer {good}", "mcp-session-id": sid})
        assert after.status_code == 401
        await asyncio.sleep(1.2)
        expired = await client.post(url(gateway), headers={**HEADERS, "authorization": f"Bearer {short}"}, json=body)
        assert expired.status_code == 401
        big = await client.post(url(gateway), headers={**HEADERS, "authorization": f"Bearer {short}"},
                                content=b"x" * (5 * 1024 * 1024))
        assert big.status_code in (401, 413)  # refused either way, and the gateway lives on
        assert (await client.get(f"http://127.0.0.1:{gateway.port}/healthz")).status_code == 200


async def test_a_long_call_streams_progress_and_sessions_end(gateway: GatewayProcess) -> None:
    token = mcp_token(gateway, "--name", "streamer", "--owner")
    auth = {**HEADERS, "authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=60) as client:
        sid = await initialize(client, gateway, token)
        h = {**auth, "mcp-session-id": sid}
        r = await client.post(url(gateway), headers=h, json={
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "sessions_send", "_meta": {"progressToken": "p1"},
                       "arguments": {"sessionKey": "agent:main:main", "message": "sleep:2.5", "timeout": 30}}})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        messages = sse_messages(r.text)
        progress = [m for m in messages if m.get("method") == "notifications/progress"]
        assert progress and all(m["params"]["progressToken"] == "p1" for m in progress)
        final = messages[-1]
        assert final["id"] == 7 and not final["result"].get("isError"), final
        ended = await client.delete(url(gateway), headers=h)
        assert ended.status_code == 204
        gone = await client.post(url(gateway), headers=h, json={"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert gone.status_code == 404


MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def modern(method: str, req_id: Any, **params: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """Headers and body of a 2026-07-28 request: no session, the envelope in _meta, routing headers."""
    meta = {**MODERN_META, **params.pop("meta", {})}
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if method == "tools/call":
        headers["mcp-name"] = params["name"]
    return headers, {"jsonrpc": "2.0", "id": req_id, "method": method, "params": {**params, "_meta": meta}}


async def test_stateless_requests_need_no_session(gateway: GatewayProcess) -> None:
    token = mcp_token(gateway, "--name", "stateless", "--owner")
    auth = {**HEADERS, "authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=60) as client:
        async def post(method: str, req_id: Any, extra: dict[str, str] | None = None, **params: Any) -> httpx.Response:
            headers, body = modern(method, req_id, **params)
            return await client.post(url(gateway), headers={**auth, **headers, **(extra or {})}, json=body)

        found = await post("server/discover", 1)
        assert found.status_code == 200 and "mcp-session-id" not in found.headers
        result = found.json()["result"]
        assert result["supportedVersions"] == ["2026-07-28"] and result["resultType"] == "complete"
        listed = (await post("tools/list", 2, {"accept": "application/json"})).json()["result"]
        assert len(listed["tools"]) == 54 + 6 and listed["cacheScope"] == "private" and listed["ttlMs"] > 0
        call = await post("tools/call", 3, {"accept": "application/json"}, name="agents_list", arguments={})
        answer = call.json()["result"]
        assert answer["resultType"] == "complete" and answer["structuredContent"]["defaultAgentId"] == "main"
        # A stateless call that waits streams progress, then its result.
        slow = await post("tools/call", 4, name="sessions_send", meta={"progressToken": 9},
                          arguments={"sessionKey": "agent:main:main", "message": "sleep:2.2", "timeout": 30})
        messages = sse_messages(slow.text)
        assert [m["params"]["progressToken"] for m in messages[:-1]] and all(
            m["params"]["progressToken"] == 9 for m in messages[:-1])
        assert messages[-1]["id"] == 4 and messages[-1]["result"]["structuredContent"]["status"] == "ok"
        # The spec's errors, with the spec's HTTP statuses.
        mismatch = await post("tools/list", 5, {"mcp-method": "tools/call"})
        assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
        wrong_name = await post("tools/call", 6, {"mcp-name": "cron_status"}, name="agents_list", arguments={})
        assert wrong_name.status_code == 400 and wrong_name.json()["error"]["code"] == -32020
        headers, body = modern("tools/list", 7)
        body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
        unknown = await client.post(url(gateway), headers={**auth, **headers, "mcp-protocol-version": "2099-01-01"},
                                    json=body)
        assert unknown.status_code == 400 and unknown.json()["error"]["code"] == -32022
        assert unknown.json()["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2099-01-01"}
        no_envelope = await client.post(url(gateway), headers={**auth, "mcp-protocol-version": "2026-07-28"},
                                        json={"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}})
        assert no_envelope.status_code == 400 and no_envelope.json()["error"]["code"] == -32602
        missing = await post("resources/list", 9)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == -32601
        assert (await post("ping", 10)).status_code == 404  # no ping at 2026-07-28
        no_tool = await post("tools/call", 13, {"accept": "application/json"}, name="no_such_tool", arguments={})
        assert no_tool.status_code == 400 and no_tool.json()["error"]["code"] == -32602
        # Still behind the token.
        headers, body = modern("server/discover", 11)
        assert (await client.post(url(gateway), headers={**HEADERS, **headers}, json=body)).status_code == 401
        # Handshake-era clients are told discover does not exist for them.
        sid = await initialize(client, gateway, token)
        old = await client.post(url(gateway), headers={**auth, "mcp-session-id": sid},
                                json={"jsonrpc": "2.0", "id": 12, "method": "server/discover"})
        assert old.json()["error"]["code"] == -32601


async def test_idle_sessions_expire(tmp_path: Any) -> None:
    config = {"gateway": {"mcp": {"sessionIdleMinutes": 0.01}}}  # 0.6 s
    with GatewayProcess(tmp_path / "gw", config=config, env={"REMOTECLAW_MCP_SWEEP_S": "0.2"}) as gw:
        token = mcp_token(gw, "--name", "idle")
        async with httpx.AsyncClient(timeout=30) as client:
            sid = await initialize(client, gw, token)
            await asyncio.sleep(1.5)
            r = await client.post(url(gw), json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                  headers={**HEADERS, "authorization": f"Bearer {token}", "mcp-session-id": sid})
            assert r.status_code == 404


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_inspector_lists_and_calls_over_http(gateway: GatewayProcess, era: str) -> None:
    """``legacy``: initialize and a session; ``modern``: 2026-07-28 requests with no session."""
    require((INSPECTOR / "mcp-inspector").exists(), "MCP Inspector not installed: run scripts/install-mcp-inspector")
    token = mcp_token(gateway, "--name", f"inspector-{era}", "--owner")
    env = {**os.environ, "PATH": f"{INSPECTOR}:{os.environ.get('PATH', '')}"}
    base = [str(INSPECTOR / "mcp-inspector"), "--cli", url(gateway), "--transport", "http", "--protocol-era", era,
            "--header", f"Authorization: Bearer {token}"]
    listed = subprocess.run([*base, "--method", "tools/list", "--strict"], env=env, capture_output=True,
                            text=True, timeout=90)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert len(json.loads(listed.stdout)["tools"]) == 54 + 6  # and the memory plugin's six
    called = subprocess.run([*base, "--method", "tools/call", "--tool-name", "agents_list"], env=env,
                            capture_output=True, text=True, timeout=90)
    assert called.returncode == 0, called.stdout + called.stderr
    assert json.loads(json.loads(called.stdout)["content"][0]["text"])["defaultAgentId"] == "main"


@pytest.mark.slow
async def test_real_claude_code_uses_the_tools_over_http(gateway: GatewayProcess, tmp_path: Any) -> None:
    """Claude Code with a ``"type": "http"`` MCP server and a bearer header (it opens the GET stream while it
    initializes): the fake model asks for ``agents_list``, the call crosses /mcp, the answer comes back."""
    from tests.gateway.agents.runtimes.conftest import cli
    from tests.gateway.agents.runtimes.test_claude import offline_env
    from tests.support.fake_anthropic import FakeAnthropic

    claude = cli("claude")
    token = mcp_token(gateway, "--name", "claude-code", "--owner")
    (tmp_path / "home").mkdir()
    config = {"mcpServers": {"gw": {"type": "http", "url": url(gateway),
                                    "headers": {"Authorization": "Bearer ${REMOTECLAW_TEST_MCP_TOKEN}"}}}}
    (tmp_path / "mcp.json").write_text(json.dumps(config))
    with FakeAnthropic() as api:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")},
               **offline_env(api.url, tmp_path / "home"), "REMOTECLAW_TEST_MCP_TOKEN": token}
        proc = await asyncio.create_subprocess_exec(
            claude, "-p", "CALL agents_list {}", "--mcp-config", str(tmp_path / "mcp.json"), "--strict-mcp-config",
            "--allowedTools", "mcp__gw", "--permission-mode", "dontAsk", "--output-format", "stream-json",
            "--verbose", "--no-session-persistence", cwd=tmp_path, env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 90)
        offered = [t["name"] for t in api.requests[0].get("tools", [])]
    assert "mcp__gw__agents_list" in offered, (offered, err.decode()[-2000:])
    results = [line for line in out.decode().splitlines() if '"tool_result"' in line]
    assert results and "defaultAgentId" in results[0], out.decode()[-3000:]
