"""The session, message, heartbeat, gateway and tts tools through the real shim process against a real gateway
process, and the node and canvas tools meeting a gateway with no node.

Effects are checked where they land: session rows and transcripts (a fake agent CLI answers), stored
webchat messages, config on the gateway, side-effect records, gateway logs, audio files. Which test covers
each of the tools (cron, nodes, canvas and browser have their own) is listed in ``covered.py``, and
``test_coverage.py`` keeps that list equal to the catalogue.
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
from tests.support.ws import RawClient, operator

pytestmark = pytest.mark.timeout(90)

MAIN = "agent:main:main"
BROWSER = ("no browser-capable node is connected: run `remoteclaw-node run` on a machine with Chromium and the "
           "optional part 'browser' (on this one: REMOTECLAW_EXTRAS=browser ./scripts/gateway), then approve it")


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
    # The channel picks the format: voice notes (OGG/Opus) for Telegram and Discord, MP3 for the web chat.
    for channel, (mime, magic, voice) in {"telegram": ("audio/ogg", b"OggS", True),
                                          "discord": ("audio/ogg", b"OggS", True),
                                          "webchat": ("audio/mpeg", b"ID3", False)}.items():
        made = await shim.call_ok("tts_convert", {"text": "hello", "channel": channel})
        assert (made["mimeType"], made["voiceCompatible"]) == (mime, voice), (channel, made)
        assert (await asyncio.to_thread(Path(made["audioPath"]).read_bytes))[:len(magic)] == magic, channel
    assert "at /channel: unknown channel 'fax'" in error_text(await shim.call("tts_convert", {"text": "hi",
                                                                                          "channel": "fax"}))
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
    # A wait that runs out is the contract's one failure shape, {runId, status: "error", error}.
    slow_key = f"agent:main:slow-{uuid.uuid4().hex[:6]}"
    late = await shim.call_ok("sessions_send", {"sessionKey": slow_key, "message": "sleep 3", "timeout": 0.5})
    assert set(late) == {"runId", "status", "error"} and late["status"] == "error" and late["runId"], late
    assert "no reply within 0.5 s" in late["error"]
    records = [r for r in side_effects(tmp_path) if r["tool"] == "sessions_send"]
    assert [(r["type"], r["provider"], r["to"], r["text"]) for r in records] == [
        ("message_sent", "session", MAIN, "ping"), ("message_sent", "session", MAIN, "later"),
        ("message_sent", "session", slow_key, "sleep 3")]

    history = await shim.call_ok("sessions_history", {"sessionKey": MAIN, "limit": 50})
    assert {"role": "assistant", "text": "pong: ping"}.items() <= next(
        m for m in history["messages"] if m.get("text") == "pong: ping").items()
    listed = await shim.call_ok("sessions_list", {"limit": 50})
    assert MAIN in [s["key"] for s in listed["sessions"]]
    # The global and unknown sessions: hidden from a plain sessions.list, shown when asked (the tool asks).
    admin = await operator(agent_gateway.url, agent_gateway.token or "")
    try:
        special = ["agent:main:global", "agent:main:unknown"]
        for key in special:
            await admin.call("sessions.patch", {"key": key, "label": f"special-{key.rsplit(':', 1)[1]}"})
        plain = [s["key"] for s in (await admin.call("sessions.list", {"limit": 500}))["sessions"]]
        assert not set(special) & set(plain) and MAIN in plain
        only_global = await admin.call("sessions.list", {"limit": 500, "includeGlobal": True})
        assert {s["key"]: s["kind"] for s in only_global["sessions"] if s["key"] in special} == {
            "agent:main:global": "global"}
    finally:
        await admin.close()
    everything = [s["key"] for s in (await shim.call_ok("sessions_list", {"limit": 500}))["sessions"]]
    assert set(special) <= set(everything)
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
                                             watcher: RawClient, tmp_path: Path) -> None:
    import httpx

    key = f"agent:main:webchat:{uuid.uuid4().hex[:8]}"  # a conversation of its own: other tests post to main
    shim = await start_shim(agent_gateway, owner=False, channel="webchat", to=key, session_key=key,
                            plugin_manifest={"tools": []})
    other = f"agent:main:webchat-other-{uuid.uuid4().hex[:6]}"
    sent = await shim.call_ok("message_send", {"target": key, "message": "hello from a tool"})
    assert sent["ok"] is True and sent["channel"] == "webchat" and sent["messageId"].isdigit()
    cast = await shim.call_ok("message_broadcast", {"targets": [key, other], "message": "to both"})
    assert cast["delivered"] == 2
    read = await shim.call_ok("message_read", {"limit": 50})
    assert [(m["id"], m["text"]) for m in read["messages"]][:1] == [(sent["messageId"], "hello from a tool")]
    read_other = await shim.call_ok("message_read", {"channelId": other})
    assert [m["text"] for m in read_other["messages"]] == ["to both"]

    # Every message tool acts on the page's conversation, and what it did is in the stored transcript.
    first = sent["messageId"]
    reply = await shim.call_ok("message_reply", {"message": "re", "replyToId": first})
    threaded = await shim.call_ok("message_thread_reply", {"message": "in thread", "threadId": first})
    picture = tmp_path / "chart.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    notes = tmp_path / "notes.html"
    notes.write_text("<script>alert(1)</script>")
    attached = await shim.call_ok("message_send_attachment", {"target": key, "file": str(picture), "caption": "c"})
    page = await shim.call_ok("message_send_attachment", {"target": key, "file": str(notes)})
    await shim.call_ok("message_react", {"emoji": "👍", "messageId": first})
    await shim.call_ok("message_pin", {"messageId": reply["messageId"]})
    hist = {m["id"]: m for m in (await watcher.call("chat.history", {"sessionKey": key}))["messages"]}
    assert hist[int(first)]["reaction"] == "👍"
    assert hist[int(reply["messageId"])]["replyTo"] == first and hist[int(reply["messageId"])]["pinned"] is True
    assert hist[int(threaded["messageId"])] | {"replyTo": first, "thread": True} == hist[int(threaded["messageId"])]
    image = hist[int(attached["messageId"])]["attachments"][0]
    assert (image["name"], image["mimeType"], image["inline"], hist[int(attached["messageId"])]["text"]) == (
        "chart.png", "image/png", True, "c")
    download = hist[int(page["messageId"])]["attachments"][0]
    async with httpx.AsyncClient(base_url=agent_gateway.http, headers={
            "authorization": f"Bearer {agent_gateway.token}"}) as http:  # a file is served to who may read it
        assert (await http.get(image["url"], headers={"authorization": ""})).status_code == 401
        got = await http.get(image["url"])
        assert got.status_code == 200 and got.content == picture.read_bytes()
        assert got.headers["content-type"] == "image/png" and got.headers["content-disposition"].startswith("inline")
        risky = await http.get(download["url"])
        assert risky.status_code == 200 and risky.headers["content-type"] == "application/octet-stream"
        assert risky.headers["content-disposition"].startswith("attachment")
        assert "sandbox" in risky.headers["content-security-policy"]
        # Deleting a message removes its text and its file, and the page's history says it was deleted.
        await shim.call_ok("message_react", {"emoji": "", "messageId": first})
        await shim.call_ok("message_delete", {"messageId": attached["messageId"]})
        assert (await http.get(image["url"])).status_code == 404
        assert (await http.get(image["url"].replace(image["url"].split("/")[-2], "0" * 32))).status_code == 404
    hist = {m["id"]: m for m in (await watcher.call("chat.history", {"sessionKey": key}))["messages"]}
    assert "reaction" not in hist[int(first)]
    assert hist[int(attached["messageId"])]["deleted"] is True and hist[int(attached["messageId"])]["text"] == ""
    assert "attachments" not in hist[int(attached["messageId"])]
    read = await shim.call_ok("message_read", {"limit": 50})
    assert attached["messageId"] not in [m["id"] for m in read["messages"]]

    # Bad ids are named; an effect is still not something a page can show.
    bad = error_text(await shim.call("message_react", {"emoji": "👍", "messageId": "abc"}))
    assert "messageId" in bad and "INVALID_REQUEST" in bad
    gone = error_text(await shim.call("message_pin", {"messageId": "999999999"}))
    assert f"no message 999999999 in {key}" in gone
    assert "threadId" in error_text(await shim.call("message_thread_reply", {"message": "x", "threadId": "t1"}))
    effect = await shim.call("message_send_with_effect", {"target": key, "message": "fx", "effectId": "confetti"})
    assert error_text(effect) == "Tool error (message_send_with_effect): INVALID_REQUEST: webchat does not support " \
                                 "sendWithEffect"
    records = side_effects(tmp_path)
    assert [(r["tool"], r["provider"], r["to"], r["text"]) for r in records] == [
        ("message_send", "webchat", key, "hello from a tool"),
        ("message_broadcast", "webchat", key, "to both"),
        ("message_broadcast", "webchat", other, "to both"),
        ("message_reply", "webchat", key, "re"),
        ("message_thread_reply", "webchat", key, "in thread"),
        ("message_send_attachment", "webchat", key, "c"),
        ("message_send_attachment", "webchat", key, None),
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
    # Standalone (no manifest): the first list already holds the gateway's plugin tools (the memory plugin's six).
    standalone = await start_shim(agent_gateway)
    names = {t["name"] for t in await standalone.tools()}  # 54 of ours (52 + approval_prompt, ask_user) + plugins'
    assert {"memory_search", "memory_remember", "memory_forget"} <= names and len(names) == 60
    manifest = {"tools": [{"name": "weather", "description": "Weather", "inputSchema": {"type": "object"}}]}
    shim = await start_shim(agent_gateway, plugin_manifest=manifest)
    text = error_text(await shim.call("weather", {"city": "Oslo"}))
    assert text.startswith("Tool error (weather): INVALID_REQUEST: invalid plugin.tools.invoke params: at /toolName: "
                           "no plugin tool named 'weather'"), text
