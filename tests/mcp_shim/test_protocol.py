"""The MCP revisions on the real shim process: 2026-07-28 (stateless, ``server/discover``) beside the handshake
revisions, ``outputSchema``/``structuredContent``, and progress for calls that wait.

Results are checked twice: by our own assertions and against the ``mcp`` SDK's per-revision wire schemas
(``mcp_types.methods.validate_server_result``), which is what an SDK client parses.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp_types import methods as wire

from tests.mcp_shim.conftest import ShimFactory
from tests.mcp_shim.shim import Shim
from tests.support import FAKE_CLI
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.node_host import NodeHostProcess
from tests.support.waiting import until
from tests.support.ws import RawClient

pytestmark = pytest.mark.timeout(120)

GATEWAY_CONFIG = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]}}
MAIN = "agent:main:main"
MODERN = "2026-07-28"
EXAMPLES = ROOT / "gateway" / "canvas" / "examples"


def envelope(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    """The ``_meta`` a 2026-07-28 client puts on every request."""
    return {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"}, **extra}


async def modern(shim: Shim, method: str, params: dict[str, Any] | None = None, *, timeout: float = 40,
                 **meta: Any) -> dict[str, Any]:
    return await shim.request(method, {**(params or {}), "_meta": envelope(**meta)}, timeout=timeout)


async def modern_call(shim: Shim, name: str, arguments: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """A stateless ``tools/call`` that must succeed; checked against the 2026-07-28 schema; its payload."""
    res = await modern(shim, "tools/call", {"name": name, "arguments": arguments or {}}, **meta)
    result = res["result"]
    assert not result.get("isError"), result
    wire.validate_server_result("tools/call", MODERN, result)
    assert result["resultType"] == "complete"
    payload = json.loads(result["content"][0]["text"])
    if isinstance(payload, dict):
        assert result["structuredContent"] == payload  # the same value twice: text for old clients
    return payload


async def test_server_discover_and_a_stateless_call_need_no_initialize(gateway: GatewayProcess,
                                                                       start_shim: ShimFactory) -> None:
    shim = await start_shim(gateway, initialize=False, plugin_manifest={"tools": []})
    found = (await modern(shim, "server/discover"))["result"]
    wire.validate_server_result("server/discover", MODERN, found)
    assert found["supportedVersions"] == [MODERN] and found["resultType"] == "complete"
    assert found["capabilities"] == {"tools": {}} and found["cacheScope"] == "private"
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "remoteclaw"
    listed = (await modern(shim, "tools/list"))["result"]
    wire.validate_server_result("tools/list", MODERN, listed)
    assert len(listed["tools"]) == 54 and listed["ttlMs"] > 0 and listed["resultType"] == "complete"
    agents = await modern_call(shim, "agents_list")
    assert agents["defaultAgentId"] == "main"
    # Handshake-era requests on the same process still get handshake-era answers: no resultType.
    old = (await shim.request("tools/call", {"name": "agents_list", "arguments": {}}))["result"]
    assert "resultType" not in old and old["structuredContent"] == agents
    await shim.close()
    assert shim.unmatched == []


async def test_envelope_mistakes_get_the_spec_errors(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, initialize=False)
    unknown = await modern(shim, "server/discover", version="2099-01-01")
    assert unknown["error"]["code"] == -32022
    assert unknown["error"]["data"] == {"supported": [MODERN], "requested": "2099-01-01"}
    old_in_envelope = await modern(shim, "tools/list", version="2025-11-25")  # a handshake revision per request
    assert old_in_envelope["error"]["code"] == -32022
    half = await shim.request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}})
    assert half["error"]["code"] == -32602
    assert "io.modelcontextprotocol/clientCapabilities" in half["error"]["message"]
    assert (await modern(shim, "ping"))["error"]["code"] == -32601  # 2026-07-28 has no ping
    # server/discover does not exist before 2026-07-28: without the envelope it is -32601, so clients that
    # probe with it and fall back to initialize on -32601 keep working.
    assert (await shim.request("server/discover", {}))["error"]["code"] == -32601
    bad_call = await modern(shim, "tools/call", {"name": "no_such_tool", "arguments": {}})
    assert bad_call["error"]["code"] == -32602
    await shim.close()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_handshake_clients_still_work(gateway: GatewayProcess, start_shim: ShimFactory, version: str) -> None:
    shim = await start_shim(gateway, initialize=False, plugin_manifest={"tools": []})
    assert (await shim.initialize(version))["protocolVersion"] == version
    tools = await shim.tools()
    wire.validate_server_result("tools/list", version, {"tools": tools})
    result = await shim.call("agents_list")
    wire.validate_server_result("tools/call", version, result)
    assert "resultType" not in result and json.loads(result["content"][0]["text"])["defaultAgentId"] == "main"


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_a_waiting_call_reports_progress(gateway: GatewayProcess, start_shim: ShimFactory, era: str) -> None:
    """sessions_send waits for a slow agent (2.5 s): the client hears progress meanwhile, only if it asked."""
    shim = await start_shim(gateway, initialize=era != MODERN, plugin_manifest={"tools": []})
    args = {"sessionKey": MAIN, "message": "sleep:2.5", "timeout": 30}
    token = f"p-{uuid.uuid4().hex[:6]}"
    params: dict[str, Any] = {"name": "sessions_send", "arguments": args}
    meta = envelope(progressToken=token) if era == MODERN else {"progressToken": token}
    res = await shim.request("tools/call", {**params, "_meta": meta}, timeout=40)
    assert res["result"]["structuredContent"]["status"] == "ok", res
    progress = []
    while not shim.notifications.empty():
        progress.append(shim.notifications.get_nowait())
    assert len(progress) >= 2, progress
    assert all(p["method"] == "notifications/progress" and p["params"]["progressToken"] == token for p in progress)
    steps = [p["params"]["progress"] for p in progress]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)  # progress only goes up
    assert "sessions_send" in progress[0]["params"]["message"]
    model = wire.SERVER_NOTIFICATIONS[("notifications/progress", era)]
    for p in progress:
        model.model_validate(p)
    # Without a progressToken there is nothing to report to.
    quiet = {"name": "sessions_send", "arguments": {**args, "message": "sleep:1.5"}}
    res = await shim.request("tools/call", {**quiet, "_meta": envelope()} if era == MODERN else quiet, timeout=40)
    assert res["result"]["structuredContent"]["status"] == "ok"
    assert shim.notifications.empty()


# -- outputSchema ------------------------------------------------------------------------------------------

NEEDS_A_NODE = {"node_invoke", "node_pair_approve", "node_pair_reject"}
"""Called in ``test_node_tools_report_progress_and_match_their_schemas`` below, with a real node."""
NEEDS_A_BROWSER_NODE = {"canvas_present", "canvas_hide", "canvas_navigate", "canvas_eval", "canvas_a2ui_push",
                        "canvas_a2ui_reset"}
"""Their answer is ``node.invoke``'s; called in ``test_canvas_tools_match_their_schemas`` (Chromium on a node)."""
NOT_CALLED = {"gateway_restart", "message_send_with_effect", "a2a_send"}
"""``gateway_restart`` would end the shared gateway; web chat refuses effects (no success to check); ``a2a_send``
needs an A2A peer: ``tests/gateway/a2a/test_a2a_tool.py`` calls it with the official MCP client, which checks the
answer against the schema itself."""


def schema_checker(tools: list[dict[str, Any]]) -> dict[str, jsonschema.Draft202012Validator]:
    validators = {}
    for tool in tools:
        schema = tool.get("outputSchema")
        if schema is None:
            continue
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", tool["name"]  # MCP 2025-11-25: the root is an object
        validators[tool["name"]] = jsonschema.Draft202012Validator(schema)
    return validators


async def test_every_output_schema_holds_for_what_the_tool_answers(gateway: GatewayProcess, start_shim: ShimFactory,
                                                                  tmp_path: Path) -> None:
    key = f"agent:main:webchat:{uuid.uuid4().hex[:8]}"  # the message tools act on a conversation of their own
    chat = await start_shim(gateway, initialize=False, channel="webchat", to=key, session_key=key,
                            plugin_manifest={"tools": []})
    shim = await start_shim(gateway, initialize=False, plugin_manifest={"tools": []})
    tools = (await modern(shim, "tools/list"))["result"]["tools"]
    validators = schema_checker(tools)
    assert {"browser_request", "canvas_snapshot", "subagents", "gateway_config_get"}.isdisjoint(validators)
    checked: set[str] = set()

    async def check(name: str, arguments: dict[str, Any] | None = None) -> Any:
        payload = await modern_call(chat if name.startswith("message_") else shim, name, arguments)
        validators[name].validate(payload)
        checked.add(name)
        return payload

    await check("agents_list")
    await check("sessions_send", {"sessionKey": MAIN, "message": "hello", "timeout": 30})
    await check("sessions_send", {"sessionKey": MAIN, "message": "later", "timeout": 0})
    await check("sessions_list", {"limit": 5})
    await check("sessions_history", {"sessionKey": MAIN, "limit": 5})
    await check("session_status", {"sessionKey": MAIN})
    await check("sessions_spawn", {"task": "count to three"})
    sent = await check("message_send", {"target": key, "message": "one"})
    await check("message_reply", {"message": "re", "replyToId": sent["messageId"]})
    await check("message_thread_reply", {"message": "in thread", "threadId": sent["messageId"]})
    await check("message_broadcast", {"targets": [key], "message": "all"})
    picture = tmp_path / "p.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 16)
    attached = await check("message_send_attachment", {"target": key, "file": str(picture)})
    await check("message_react", {"emoji": "👍", "messageId": sent["messageId"]})
    await check("message_pin", {"messageId": sent["messageId"]})
    await check("message_read", {"limit": 5})
    await check("message_delete", {"messageId": attached["messageId"]})
    await check("heartbeat_report", {"anything_done": False})
    await check("ask_user", {"timeoutSeconds": 1, "questions": [{
        "id": "day", "header": "Day", "question": "Which day?", "options": [{"label": "Mon"}, {"label": "Fri"}]}]})
    await check("cron_status")
    job = await check("cron_add", {"job": {"name": "schema check", "schedule": {"kind": "every", "everyMs": 3_600_000},
                                           "payload": {"kind": "agentTurn", "message": "hi"}}})
    await check("cron_update", {"jobId": job["id"], "patch": {"name": "schema check 2"}})
    await check("cron_list")
    await check("cron_run", {"jobId": job["id"]})
    await check("cron_runs", {"jobId": job["id"]})
    await check("cron_remove", {"jobId": job["id"]})
    await check("gateway_config_schema")
    await check("gateway_config_patch", {"patches": {"session": {"idleMinutes": 61}}})
    whole = json.loads((await shim.call("gateway_config_get"))["content"][0]["text"])["config"]
    await check("gateway_config_apply", {"config": whole})
    await check("node_list")
    await check("node_pair_list")
    await check("tts_status")
    await check("tts_providers")
    await check("tts_set_provider", {"provider": "local"})
    await check("tts_enable")
    await check("tts_convert", {"text": "hello", "channel": "telegram"})
    await check("tts_disable")
    assert set(validators) - checked == NEEDS_A_NODE | NEEDS_A_BROWSER_NODE | NOT_CALLED


async def test_node_tools_report_progress_and_match_their_schemas(gateway: GatewayProcess, admin: RawClient,
                                                                 start_shim: ShimFactory, tmp_path: Path) -> None:
    """A real node pairs through the shim's tools; a command that answers after 2 s reports progress."""
    shim = await start_shim(gateway, initialize=False, plugin_manifest={"tools": []})
    validators = schema_checker((await modern(shim, "tools/list"))["result"]["tools"])

    async def check(name: str, arguments: dict[str, Any], **meta: Any) -> Any:
        payload = await modern_call(shim, name, arguments, **meta)
        validators[name].validate(payload)
        return payload

    name = f"box-{uuid.uuid4().hex[:6]}"
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name=name) as node:
        async def pending() -> dict[str, Any] | None:
            listing = await modern_call(shim, "node_pair_list")
            return next((r for r in listing["pending"] if r["displayName"] == name), None)

        request = await until(pending, 20, "the node's pairing request")
        approved = await check("node_pair_approve", {"requestId": request["requestId"]})
        assert approved["decision"] == "approved"
        node_id = request["nodeId"]
        await until(lambda: (node.state / "node.json").exists(), 30, "the node's token")
        assert node.approvals("add", "sleep").returncode == 0

        async def connected() -> bool:
            listing = await admin.call("node.list")
            return any(n["nodeId"] == node_id and n["connected"] and n["paired"] for n in listing["nodes"])

        await until(connected, 20, "the paired node online")
        await modern_call(shim, "node_describe", {"nodeId": node_id})
        token = "node-wait"
        ran = await check("node_invoke", {"nodeId": node_id, "command": "system.run",
                                          "params": {"argv": ["sleep", "2"]}, "timeoutMs": 10_000},
                          progressToken=token)
        assert ran["ok"] is True and ran["payload"]["exitCode"] == 0, ran
        progress = [shim.notifications.get_nowait() for _ in range(shim.notifications.qsize())]
        assert progress and {p["params"]["progressToken"] for p in progress} == {token}
        await modern_call(shim, "node_rename", {"nodeId": node_id, "displayName": "renamed"})
        rejected = await check("node_pair_reject", {"requestId": request["requestId"]})
        assert rejected["decision"] == "rejected"
    await asyncio.sleep(0)


async def test_canvas_tools_match_their_schemas(gateway: GatewayProcess, admin: RawClient, start_shim: ShimFactory,
                                               tmp_path: Path) -> None:
    """The canvas tools on our node with real headless Chromium, called as a 2026-07-28 client."""
    import shutil

    from tests.nodes.test_node_host import pair
    from tests.support.requires import require

    require(shutil.which("chromium") is not None, "Debian's chromium is not installed")
    shim = await start_shim(gateway, initialize=False, plugin_manifest={"tools": []})
    validators = schema_checker((await modern(shim, "tools/list"))["result"]["tools"])
    with NodeHostProcess(tmp_path / "node", gateway.port, token=gateway.token, name="schemabox",
                         browser=True) as node:
        await pair(admin, node)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("canvas_present", {"width": 640, "height": 480}),
            ("canvas_navigate", {"url": "/__remoteclaw__/canvas/"}),
            ("canvas_eval", {"javaScript": "1 + 1"}),
            ("canvas_a2ui_push", {"jsonl": (EXAMPLES / "hello-v08.jsonl").read_text()}),
            ("canvas_a2ui_reset", {}),
            ("canvas_hide", {}),
        ]
        for name, arguments in calls:
            answer = await modern_call(shim, name, {"nodeId": "schemabox", **arguments})
            validators[name].validate(answer)
        assert {name for name, _ in calls} == NEEDS_A_BROWSER_NODE


def test_the_output_schema_table_names_only_real_tools() -> None:
    from mcp_shim.tools import BUILTIN
    from mcp_shim.tools.outputs import OUTPUT_SCHEMAS

    assert set(OUTPUT_SCHEMAS) <= {t.name for t in BUILTIN}
    assert sum(1 for t in BUILTIN if t.output_schema is not None) == len(OUTPUT_SCHEMAS) == 47


async def test_the_gateway_connection_opens_after_tools_list_before_any_call(gateway: GatewayProcess,
                                                                              start_shim: ShimFactory) -> None:
    """The model thinks between tools/list and its first call: the shim connects to the gateway in that pause,
    so the first call does not wait for the import of websockets and the handshake."""
    from tests.support.ws import operator

    admin = await operator(gateway.url, gateway.token or "")
    try:
        async def shims() -> int:
            entries = await admin.call("system-presence")
            return sum(1 for e in entries if e.get("host") == "remoteclaw-mcp")

        before = await shims()
        shim = await start_shim(gateway, plugin_manifest={"tools": []})
        assert len(await shim.tools()) == 54  # and no tools/call at all

        async def connected() -> bool:
            return await shims() > before

        assert await until(connected, what="the shim's gateway connection", timeout=10)
    finally:
        await admin.close()
