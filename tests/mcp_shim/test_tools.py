"""Every one of the 51 tools through the real shim process against a real gateway process.

Effects are checked where they land: session rows and transcripts (a fake agent CLI answers), stored
webchat messages, config on the gateway, side-effect records, gateway logs, or the exact UNAVAILABLE
answer of the capabilities that come later (browser, tts); cron and nodes have their own tests (tests/gateway/cron,
tests/nodes, tests/compat/test_openclaw_nodes.py); here the node and canvas tools meet a gateway with no node.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_shim.conftest import ShimFactory
from tests.mcp_shim.shim import error_text, side_effects
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import RawClient

pytestmark = pytest.mark.timeout(90)

MAIN = "agent:main:main"
BROWSER = ("no browser-capable node is connected: run `remoteclaw node run` on a machine with Chromium (and the "
           "browser extra) and approve it")


async def test_browser_without_a_node_is_unavailable_and_the_tts_tools_work(
        agent_gateway: GatewayProcess, start_shim: ShimFactory, tmp_path: Path) -> None:
    shim = await start_shim(agent_gateway, plugin_manifest={"tools": []})
    browser, status, providers, unknown = await asyncio.gather(  # all at once, on the shim's one connection
        shim.call("browser_request", {"method": "GET", "path": "/tabs", "query": {"a": 1}}),
        shim.call("tts_status"), shim.call("tts_providers"), shim.call("tts_set_provider", {"provider": "siri"}))
    assert error_text(browser) == f"Tool error (browser_request): UNAVAILABLE: {BROWSER}"
    assert json.loads(status["content"][0]["text"])["auto"] == "inbound"
    listed = json.loads(providers["content"][0]["text"])["providers"]
    assert [p["id"] for p in listed] == ["openai", "elevenlabs", "edge", "local"]
    assert "valid: openai, elevenlabs, edge, local" in error_text(unknown)
    on = json.loads((await shim.call("tts_enable"))["content"][0]["text"])
    assert on["enabled"] is True
    await shim.call("tts_set_provider", {"provider": "local"})
    converted = await shim.call("tts_convert", {"text": "hello", "channel": "telegram"})
    spoken = json.loads(converted["content"][0]["text"])
    assert spoken["provider"] == "local" and spoken["audioPath"].endswith(".ogg") and spoken["durationS"] > 0
    off = json.loads((await shim.call("tts_disable"))["content"][0]["text"])
    assert off["enabled"] is False
    assert side_effects(tmp_path) == []


NO_NODE: dict[str, dict[str, Any]] = {
    "node_describe": {"nodeId": "n1"},
    "node_invoke": {"nodeId": "n1", "command": "system.run", "params": {"argv": ["true"]}, "timeoutMs": 1000},
    "node_rename": {"nodeId": "n1", "displayName": "Laptop"},
    "canvas_present": {"nodeId": "n1", "url": "http://127.0.0.1/", "x": 0, "width": 640},
    "canvas_hide": {"nodeId": "n1"},
    "canvas_navigate": {"nodeId": "n1", "url": "http://127.0.0.1/"},
    "canvas_eval": {"nodeId": "n1", "javaScript": "1+1"},
    "canvas_snapshot": {"nodeId": "n1", "format": "png", "maxWidth": 800},
    "canvas_a2ui_push": {"nodeId": "n1", "jsonl": "{}"},
    "canvas_a2ui_reset": {"nodeId": "n1"},
}


async def test_node_tools_reach_the_node_service(agent_gateway: GatewayProcess, start_shim: ShimFactory) -> None:
    """With no node paired, every tool that names one says so; the listings are empty, not errors."""
    shim = await start_shim(agent_gateway, plugin_manifest={"tools": []})
    listed = await shim.call_ok("node_list")
    assert listed["nodes"] == [] and listed["ts"] > 0
    assert await shim.call_ok("node_pair_list") == {"pending": [], "paired": [], "rejected": []}
    results = await asyncio.gather(*(shim.call(tool, args) for tool, args in NO_NODE.items()))
    for tool, result in zip(NO_NODE, results, strict=True):
        assert error_text(result).startswith(f"Tool error ({tool}): INVALID_REQUEST: unknown node: n1"), tool
    for tool in ("node_pair_approve", "node_pair_reject"):
        text = error_text(await shim.call(tool, {"requestId": "r1"}))
        assert text == (f"Tool error ({tool}): INVALID_REQUEST: unknown pairing request: r1 (node.pair.list shows "
                        "the pending ones)")


async def test_session_tools(agent_gateway: GatewayProcess, start_shim: ShimFactory, tmp_path: Path) -> None:
    shim = await start_shim(agent_gateway, owner=False, plugin_manifest={"tools": []})
    agents = await shim.call_ok("agents_list")
    assert agents["defaultAgentId"] == "main" and [a["id"] for a in agents["agents"]] == ["main"]

    # sessions_send waits for the (fake) agent's reply and picks it from the history.
    sent = await shim.call_ok("sessions_send", {"sessionKey": MAIN, "message": "ping", "timeout": 30})
    assert sent["status"] == "ok" and sent["reply"] == "pong: ping" and sent["runId"]
    quick = await shim.call_ok("sessions_send", {"sessionKey": MAIN, "message": "later", "timeout": 0})
    assert quick["status"] == "accepted" and quick["runId"] and quick["runId"] != sent["runId"]
    assert "give sessionKey or label" in error_text(await shim.call("sessions_send", {"message": "x"}))
    records = [r for r in side_effects(tmp_path) if r["tool"] == "sessions_send"]
    assert [(r["type"], r["provider"], r["to"], r["text"]) for r in records] == [
        ("message_sent", "session", MAIN, "ping"), ("message_sent", "session", MAIN, "later")]

    history = await shim.call_ok("sessions_history", {"sessionKey": MAIN, "limit": 50})
    assert {"role": "assistant", "text": "pong: ping"}.items() <= next(
        m for m in history["messages"] if m.get("text") == "pong: ping").items()
    listed = await shim.call_ok("sessions_list", {"limit": 50})
    assert MAIN in [s["key"] for s in listed["sessions"]]
    filtered = await shim.call_ok("sessions_list", {"filter": "main"})
    assert MAIN in [s["key"] for s in filtered["sessions"]]
    status = await shim.call_ok("session_status")
    assert status["sessionKey"] == MAIN

    label = f"helper-{uuid.uuid4().hex[:8]}"
    spawned = await shim.call_ok("sessions_spawn", {"task": "count to three", "label": label})
    assert spawned["sessionKey"].startswith("agent:main:subagent:") and spawned["parent"] == MAIN
    children = await shim.call_ok("subagents", {"action": "list"})
    assert spawned["sessionKey"] in [c["key"] for c in children["subagents"]]
    one = await shim.call_ok("subagents", {"action": "status", "params": {"target": label}})
    assert one["subagent"]["key"] == spawned["sessionKey"]
    child_status = await shim.call_ok("session_status", {"sessionKey": spawned["sessionKey"]})
    assert child_status["parentSessionKey"] == MAIN


async def test_message_tools_through_webchat(agent_gateway: GatewayProcess, start_shim: ShimFactory,
                                             tmp_path: Path) -> None:
    shim = await start_shim(agent_gateway, owner=False, channel="webchat", to=MAIN, plugin_manifest={"tools": []})
    other = "agent:main:webchat-other"
    sent = await shim.call_ok("message_send", {"target": MAIN, "message": "hello from a tool"})
    assert sent["ok"] is True and sent["channel"] == "webchat" and sent["messageId"]
    cast = await shim.call_ok("message_broadcast", {"targets": [MAIN, other], "message": "to both"})
    assert cast["delivered"] == 2
    read = await shim.call_ok("message_read", {"limit": 50})
    texts = [m["text"] for m in read["messages"]]
    assert "hello from a tool" in texts and "to both" in texts
    read_other = await shim.call_ok("message_read", {"channelId": other})
    assert [m["text"] for m in read_other["messages"]] == ["to both"]
    # Webchat declares what it cannot do; the refusal proves the call reached the channel with its params.
    unsupported = {
        "message_reply": ({"message": "re", "replyToId": sent["messageId"]}, "reply"),
        "message_thread_reply": ({"message": "in thread", "threadId": "t1"}, "threadReply"),
        "message_send_attachment": ({"target": MAIN, "file": "/etc/hostname", "caption": "c"}, "sendAttachment"),
        "message_send_with_effect": ({"target": MAIN, "message": "fx", "effectId": "confetti"}, "sendWithEffect"),
        "message_react": ({"emoji": "👍", "messageId": sent["messageId"]}, "react"),
        "message_delete": ({"messageId": sent["messageId"]}, "delete"),
        "message_pin": ({"messageId": sent["messageId"]}, "pin"),
    }
    for tool, (args, op) in unsupported.items():
        assert error_text(await shim.call(tool, args)) == f"Tool error ({tool}): INVALID_REQUEST: webchat does " \
                                                          f"not support {op}"
    records = side_effects(tmp_path)
    assert [(r["tool"], r["provider"], r["to"], r["text"]) for r in records] == [
        ("message_send", "webchat", MAIN, "hello from a tool"),
        ("message_broadcast", "webchat", MAIN, "to both"),
        ("message_broadcast", "webchat", other, "to both"),
    ]
    assert all(set(r) == {"type", "tool", "provider", "accountId", "to", "text", "mediaUrl", "ts"} for r in records)


async def test_message_tools_need_a_channel(agent_gateway: GatewayProcess, start_shim: ShimFactory) -> None:
    shim = await start_shim(agent_gateway, channel=None, to=None, plugin_manifest={"tools": []})
    text = error_text(await shim.call("message_send", {"target": "x", "message": "y"}))
    assert "REMOTECLAW_CHANNEL" in text


async def test_gateway_config_tools(agent_gateway: GatewayProcess, start_shim: ShimFactory,
                                    watcher: RawClient) -> None:
    shim = await start_shim(agent_gateway, plugin_manifest={"tools": []})
    schema = await shim.call_ok("gateway_config_schema")
    assert "agents" in schema["schema"]["properties"]
    level = await shim.call_ok("gateway_config_get", {"key": "logging.level"})
    assert level["key"] == "logging.level"
    patched = await shim.call_ok("gateway_config_patch", {"patches": {"session": {"idleMinutes": 77}}})
    assert patched["ok"] is True
    got = await watcher.call("config.get", {"key": "session.idleMinutes"})
    assert got["value"] == 77
    whole = (await shim.call_ok("gateway_config_get"))["config"]
    whole["session"]["idleMinutes"] = 78
    applied = await shim.call_ok("gateway_config_apply", {"config": whole})
    assert applied["ok"] is True
    assert (await watcher.call("config.get", {"key": "session.idleMinutes"}))["value"] == 78
    bad = error_text(await shim.call("gateway_config_patch", {"patches": {"agents": {"default": "nobody"}}}))
    assert bad.startswith("Tool error (gateway_config_patch): INVALID_REQUEST") and "nobody" in bad
    assert (await watcher.call("config.get", {"key": "session.idleMinutes"}))["value"] == 78


async def test_heartbeat_report(agent_gateway: GatewayProcess, start_shim: ShimFactory, tmp_path: Path,
                                watcher: RawClient) -> None:
    shim = await start_shim(agent_gateway, owner=False, profile="minimal", plugin_manifest={"tools": []})
    marker = f"checked inbox {uuid.uuid4().hex[:6]}"
    done = await shim.call_ok("heartbeat_report", {"anything_done": True, "summary": marker})
    assert done == {"ok": True, "anythingDone": True, "sessionKey": MAIN}
    [record] = side_effects(tmp_path)
    assert record["type"] == "heartbeat_report" and record["anythingDone"] is True and record["summary"] == marker
    logs = await watcher.call("logs.tail", {"search": marker, "limit": 20})
    assert any("heartbeat report" in json.dumps(line) for line in logs["lines"])


async def test_plugin_tools(agent_gateway: GatewayProcess, start_shim: ShimFactory) -> None:
    # Standalone (no manifest): the list comes from the gateway in the background (the memory plugin's six).
    standalone = await start_shim(agent_gateway)

    async def with_plugins() -> list[dict[str, Any]] | None:
        tools = await standalone.tools()
        return tools if len(tools) > 51 else None

    names = {t["name"] for t in await until(with_plugins, what="the gateway's plugin tools")}
    assert {"memory_search", "memory_remember", "memory_forget"} <= names and len(names) == 57
    manifest = {"tools": [{"name": "weather", "description": "Weather", "inputSchema": {"type": "object"}}]}
    shim = await start_shim(agent_gateway, plugin_manifest=manifest)
    text = error_text(await shim.call("weather", {"city": "Oslo"}))
    assert text.startswith("Tool error (weather): INVALID_REQUEST: invalid plugin.tools.invoke params: at /toolName: "
                           "no plugin tool named 'weather'"), text
