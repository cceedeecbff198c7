"""Plugins on real gateway processes: found through an entry point and from a folder, listed with their
errors, switched live, their tools called through the real MCP shim, their hooks deciding and observing."""

from __future__ import annotations

import base64
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.mcp_shim.shim import Shim, shim_env
from tests.support import FAKE_CLI, ROOT, SUPPORT
from tests.support.fake_telegram import FakeTelegram, cli_runs, telegram_gateway
from tests.support.gateway_proc import GatewayProcess
from tests.support.waiting import until
from tests.support.ws import operator

EXAMPLE = ROOT / "plugins" / "example"
RECORDER = SUPPORT / "plugins" / "recorder"
BROKEN = SUPPORT / "plugins" / "broken"


def http_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def post_json(url: str, body: Any) -> int:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return int(r.status)


def by_id(listed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["id"]: p for p in listed["diagnostics"]}  # our detailed rows; plugins[] is OpenClaw's shape


def recorded(path: Path, hook: str | None = None) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in events if hook is None or e["hook"] == hook]


async def test_entry_point_plugin_broken_plugin_and_live_switching(tmp_path: Path) -> None:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "plugins": {"load": {"paths": [str(BROKEN)]}, "entries": {"example": {"enabled": True}}}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        c = await operator(gw.url, gw.token or "")
        try:
            plugins = by_id(await c.call("plugins.list"))
            assert plugins["example"]["status"] == "loaded", plugins["example"]
            assert plugins["example"]["source"] == "entry-point:example"
            assert plugins["example"]["tools"] == ["example_greet", "example_chart"]
            assert plugins["memory"]["status"] == "loaded" and "memory_search" in plugins["memory"]["tools"]
            broken = plugins["broken"]
            assert broken["status"] == "error" and "broken on purpose" in broken["error"]
            assert (await c.call("health"))["ok"] is True  # the gateway runs on without it
            listed = {t["name"] for t in (await c.call("plugin.tools.list"))["tools"]}
            assert {"example_greet", "example_chart", "memory_search", "memory_forget"} <= listed
            assert "broken_tool" not in listed
            assert (await c.call("example.stats"))["calls"]["example_greet"] == 0
            assert http_json(f"{gw.http}/plugins/example/hello") == {"plugin": "example", "greeting": "Hello"}

            # Off without a restart: tools, method and route go; the switch is in the config file.
            off = await c.call("plugins.setEnabled", {"id": "example", "enabled": False})
            assert off["ok"] and off["plugin"]["state"] == "disabled" and off["plugin"]["enabled"] is False
            assert "example_greet" not in {t["name"] for t in (await c.call("plugin.tools.list"))["tools"]}
            gone = await c.req("example.stats")
            assert not gone["ok"] and "unknown method" in gone["error"]["message"]
            config_file = json.loads((gw.state_dir / "remoteclaw.json").read_text())
            assert config_file["plugins"]["entries"]["example"]["enabled"] is False
            on = await c.call("plugins.setEnabled", {"id": "example", "enabled": True})
            assert on["plugin"]["state"] == "enabled"
            assert (await c.call("example.stats"))["calls"] == {"example_greet": 0, "example_chart": 0}

            # Settings are checked against the plugin's schema, naming the field.
            got = await c.call("config.get")
            bad = await c.req("config.patch", {"raw": json.dumps(
                {"plugins": {"entries": {"example": {"config": {"greeting": 42}}}}}), "baseHash": got["hash"]})
            assert not bad["ok"] and "/plugins/entries/example/config/greeting" in bad["error"]["message"], bad
            unknown = await c.req("plugins.setEnabled", {"id": "nope", "enabled": True})
            assert not unknown["ok"] and "at /id" in unknown["error"]["message"]
            schema = (await c.call("config.schema"))["schema"]
            entry = schema["$defs"]["PluginsConfig"]["properties"]["entries"]["properties"]["example"]
            assert "greeting" in entry["properties"]["config"]["properties"]
            # New settings reload the plugin with them.
            got = await c.call("config.get")
            await c.call("config.patch", {"raw": json.dumps(
                {"plugins": {"entries": {"example": {"config": {"greeting": "Ahoy"}}}}}), "baseHash": got["hash"]})
            assert http_json(f"{gw.http}/plugins/example/hello")["greeting"] == "Ahoy"
        finally:
            await c.close()


async def test_folder_plugin_tools_images_and_blocking_hook_through_the_real_shim(tmp_path: Path) -> None:
    events = tmp_path / "events.ndjson"
    config = {"plugins": {"load": {"paths": [str(EXAMPLE), str(RECORDER)]}, "entries": {
        "example": {"config": {"greeting": "Hi", "blockedWords": ["launch codes"]}},
        "recorder": {"config": {"file": str(events), "raiseIn": ["before_tool_call", "after_tool_call"],
                                "token": "s3cret-plugin-token"}}}}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        c = await operator(gw.url, gw.token or "")
        shim = await Shim.start(shim_env(gw, tmp_path, owner=False))  # standalone: asks the gateway for the list
        try:
            plugins = by_id(await c.call("plugins.list"))
            assert plugins["example"]["source"] == f"path:{EXAMPLE}"  # a folder in config wins over the package
            await shim.initialize()

            async def listed() -> dict[str, Any] | None:  # fetched in the background, then list_changed
                tools = {t["name"]: t for t in (await shim.request("tools/list"))["result"]["tools"]}
                return tools if "example_greet" in tools else None

            tools = await until(listed, what="the plugin tools in the shim's list")
            assert tools["example_greet"]["annotations"]["readOnlyHint"] is True
            assert tools["memory_forget"]["annotations"]["destructiveHint"] is True

            greeted = await shim.call("example_greet", {"name": "Ada"})
            assert not greeted.get("isError") and greeted["content"][0]["text"] == "Hi, Ada!", greeted
            chart = await shim.call("example_chart", {"values": [1, 3, 2]})
            kinds = [item["type"] for item in chart["content"]]
            assert kinds == ["text", "image"] and chart["content"][1]["mimeType"] == "image/png"
            assert base64.b64decode(chart["content"][1]["data"]).startswith(b"\x89PNG\r\n\x1a\n")
            bad = await shim.call("example_chart", {"values": []})
            assert bad["isError"] and "values" in bad["content"][0]["text"]

            # The example's before_tool_call blocks; the recorder's raises and is skipped (the call goes on).
            blocked = await shim.call("example_greet", {"name": "the launch codes"})
            assert blocked["isError"], blocked
            assert "blocked by plugin example" in blocked["content"][0]["text"]
            assert "launch codes" in blocked["content"][0]["text"]
            assert (await c.call("example.stats"))["calls"]["example_greet"] == 1  # the blocked one never ran
            rewritten = await shim.call("example_greet", {"name": "rewrite me"})
            assert rewritten["content"][0]["text"] == "Hi, Rewritten!", rewritten  # the hook's params were used
            await until(lambda: len(recorded(events, "after_tool_call")) >= 3, what="after_tool_call events")
            before = recorded(events, "before_tool_call")
            assert [e["toolName"] for e in before][:2] == ["example_greet", "example_chart"]
            assert before[0]["agentId"] == "main" and before[0]["params"] == {"name": "Ada"}
            # A plugin's secret setting is redacted in config.get.
            got = await c.call("config.get")
            assert "s3cret-plugin-token" not in json.dumps(got)
        finally:
            await shim.close()
            await c.close()
        assert "s3cret-plugin-token" not in gw.output()


async def test_hooks_around_a_telegram_turn_and_the_tool_list_handed_to_the_run(tmp_path: Path) -> None:
    events = tmp_path / "events.ndjson"
    fake = FakeTelegram().start()
    gw = telegram_gateway(tmp_path / "gw", fake, dmPolicy="open", config={"plugins": {
        "load": {"paths": [str(RECORDER)]},
        "entries": {"recorder": {"config": {"file": str(events), "context": "Note: the user prefers tea.",
                                            "suffix": " [signed]", "stallIn": ["message_received"]}}}}})
    try:
        gw.start()
        fake.user_message(chat_id=4242, user_id=4242, text="hello there")
        await until(lambda: fake.calls_of("sendMessage"), what="the reply")
        (reply,) = [c.params["text"] for c in fake.calls_of("sendMessage")]
        assert reply.endswith(" [signed]"), reply  # message_sending rewrote it
        (run,) = cli_runs(gw.state_dir)
        assert run["prompt"].startswith("Note: the user prefers tea.")  # before_agent_start added context
        assert "hello there" in run["prompt"]
        names = {t["name"] for t in run["plugin_tools"]["tools"]}  # the list the executor handed the shim
        assert {"memory_search", "memory_remember"} <= names
        assert run["env"]["REMOTECLAW_PLUGIN_TOOLS_FILE"].endswith(".plugin-tools.json")
        await until(lambda: recorded(events, "message_sent"), what="message_sent")
        c = await operator(gw.url, gw.token or "")
        try:
            cancelled = await c.req("message.send", {"channel": "telegram", "to": "4242", "message": "cancel me now"})
            assert not cancelled["ok"] and "cancelled by plugin recorder" in cancelled["error"]["message"], cancelled
            assert len(fake.calls_of("sendMessage")) == 1  # it never reached Telegram
            await c.call("sessions.reset", {"key": recorded(events, "session_start")[0]["sessionKey"]})
            await until(lambda: recorded(events, "session_end"), what="session_end")
            assert recorded(events, "session_end")[0]["reason"] == "reset"
        finally:
            await c.close()
        hooks = [e["hook"] for e in recorded(events)]
        for hook in ("gateway_start", "message_received", "session_start", "before_agent_start", "agent_end",
                     "message_sending", "message_sent"):
            assert hook in hooks, (hook, hooks)
        received = recorded(events, "message_received")[0]
        assert received["content"] == "hello there" and received["channel"] == "telegram"
        end = recorded(events, "agent_end")[0]
        assert end["ok"] is True and end["agentId"] == "main"
    finally:
        gw.stop()
        fake.stop()
    assert "plugin hook timed out" in gw.output()  # the stalled observer was cut off, the turn went on


async def test_a_plugin_adds_a_chat_channel(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox.ndjson"
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "plugins": {"load": {"paths": [str(SUPPORT / "plugins" / "loopchan")]}},
              "channels": {"pluginloop": {"dmPolicy": "open", "outbox": str(outbox)}}}
    with GatewayProcess(tmp_path / "gw", config=config) as gw:
        assert post_json(f"{gw.http}/channels/pluginloop/default/webhook",
                         {"sender": "pat", "id": "m-1", "text": "hi from a plugin channel"}) == 200

        def replies() -> list[str]:
            if not outbox.exists():
                return []
            return [json.loads(x)["text"] for x in outbox.read_text().splitlines() if json.loads(x)["op"] == "send"]

        assert await until(replies, what="the reply on the plugin's channel") == ["echo: hi from a plugin channel"]
        # Switched off live, the channel goes with the plugin; switched on, it is back.
        c = await operator(gw.url, gw.token or "")
        try:
            await c.call("plugins.setEnabled", {"id": "loopchan", "enabled": False})
            assert "pluginloop" not in {a["channel"] for a in _accounts(await c.call("channels.status"))}
            await c.call("plugins.setEnabled", {"id": "loopchan", "enabled": True})

            async def running() -> bool:
                accounts = _accounts(await c.call("channels.status"))
                return any(a["channel"] == "pluginloop" and a["state"] == "running" for a in accounts)

            await until(running, what="the plugin's channel running again")
        finally:
            await c.close()


def _accounts(status: dict[str, Any]) -> list[dict[str, Any]]:
    """Every account in a ``channels.status`` answer (ours, under ``channels.<name>.accounts``)."""
    return [a for channel in status["channels"].values() for a in channel["accounts"]]
