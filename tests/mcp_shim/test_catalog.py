"""Tiers, profiles, schemas and annotations, as the real shim process lists them."""

from __future__ import annotations

import pytest

from tests.mcp_shim.conftest import ShimFactory
from tests.mcp_shim.shim import error_text

SESSION = {"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status", "agents_list",
           "subagents"}
SESSION_READ = {"sessions_list", "sessions_history", "session_status", "agents_list"}
MESSAGE = {"message_send", "message_reply", "message_thread_reply", "message_broadcast", "message_react",
           "message_delete", "message_send_attachment", "message_send_with_effect", "message_pin", "message_read"}
HEARTBEAT = {"heartbeat_report"}
APPROVALS = {"ask_user", "approval_prompt"}
CRON = {"cron_status", "cron_list", "cron_add", "cron_update", "cron_remove", "cron_run", "cron_runs"}
GATEWAY = {"gateway_restart", "gateway_config_get", "gateway_config_apply", "gateway_config_patch",
           "gateway_config_schema"}
NODES = {"node_list", "node_describe", "node_invoke", "node_rename", "node_pair_list", "node_pair_approve",
         "node_pair_reject"}
CANVAS = {"canvas_present", "canvas_hide", "canvas_navigate", "canvas_eval", "canvas_snapshot", "canvas_a2ui_push",
          "canvas_a2ui_reset"}
BROWSER = {"browser_request"}
TTS = {"tts_status", "tts_convert", "tts_providers", "tts_set_provider", "tts_enable", "tts_disable"}
A2A = {"a2a_send"}
OWNER = CRON | GATEWAY | NODES | CANVAS | BROWSER | TTS | A2A
BASELINE = SESSION | MESSAGE | HEARTBEAT | APPROVALS

EXPECTED = {
    ("full", True): BASELINE | OWNER,
    ("full", False): BASELINE,
    ("messaging", True): BASELINE,
    ("messaging", False): BASELINE,
    ("coding", True): SESSION | HEARTBEAT | APPROVALS | NODES | CANVAS | BROWSER | A2A
    | {"gateway_config_get", "gateway_config_schema", "cron_status", "cron_list", "cron_runs"},
    ("coding", False): SESSION | HEARTBEAT | APPROVALS,
    ("minimal", True): SESSION_READ | HEARTBEAT | APPROVALS,
    ("minimal", False): SESSION_READ | HEARTBEAT | APPROVALS,
}

DESTRUCTIVE = {"subagents", "message_delete", "cron_remove", "gateway_restart", "gateway_config_apply",
               "gateway_config_patch", "node_invoke", "node_pair_reject", "canvas_eval", "canvas_a2ui_reset",
               "browser_request"}
READ_ONLY = SESSION_READ | {"message_read", "cron_status", "cron_list", "cron_runs", "gateway_config_get",
                            "gateway_config_schema", "node_list", "node_describe", "node_pair_list", "canvas_snapshot",
                            "tts_status", "tts_providers"}


def test_counts() -> None:
    assert len(BASELINE) == 20 and len(OWNER) == 34 and len(BASELINE | OWNER) == 54


@pytest.mark.parametrize(("profile", "owner"), sorted(EXPECTED))
async def test_profile_and_tier_select_the_documented_tools(start_shim: ShimFactory, profile: str,
                                                            owner: bool) -> None:
    shim = await start_shim(None, profile=profile, owner=owner, plugin_manifest={"tools": []})
    names = {t["name"] for t in await shim.tools()}
    assert names == EXPECTED[(profile, owner)]
    # Anything not listed is refused by name too, before any gateway contact (the URL here is dead).
    hidden = sorted((BASELINE | OWNER) - names)
    for name in hidden[:3] + hidden[-3:]:
        text = error_text(await shim.call(name, {}))
        assert text.startswith(f"Tool error ({name}): ")
        assert ("owner" in text) if name in OWNER and not owner else (f"'{profile}' tool profile" in text)


async def test_schemas_and_annotations(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, plugin_manifest={"tools": []})
    tools = await shim.tools()
    assert len({t["name"] for t in tools}) == len(tools) == 54
    for tool in tools:
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False, tool["name"]
        assert set(schema.get("required", [])) <= set(schema["properties"]), tool["name"]
        assert tool["description"] and "\n" not in tool["description"] and len(tool["description"]) < 120
        ann = tool["annotations"]
        assert set(ann) == {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert ann["title"] == tool["title"]
        assert ann["destructiveHint"] is (tool["name"] in DESTRUCTIVE), tool["name"]
        assert ann["readOnlyHint"] is (tool["name"] in READ_ONLY), tool["name"]
        if ann["readOnlyHint"]:
            assert ann["idempotentHint"] is True
    by_name = {t["name"]: t for t in tools}
    # Spot checks of exact parameters from the reference.
    assert by_name["heartbeat_report"]["inputSchema"]["required"] == ["anything_done"]
    assert by_name["canvas_snapshot"]["inputSchema"]["properties"]["format"]["enum"] == ["png", "jpg", "jpeg"]
    assert by_name["browser_request"]["inputSchema"]["properties"]["method"]["enum"] == ["GET", "POST", "DELETE"]
    assert set(by_name["message_broadcast"]["inputSchema"]["required"]) == {"targets", "message"}
    assert by_name["gateway_config_patch"]["inputSchema"]["required"] == ["patches"]
    assert set(by_name["canvas_present"]["inputSchema"]["properties"]) == {"nodeId", "url", "x", "y", "width",
                                                                         "height"}


async def test_plugin_tools_from_manifest(start_shim: ShimFactory) -> None:
    manifest = {"tools": [
        {"name": "weather", "description": "Weather for a city",
         "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        {"name": "sessions_list", "description": "clash", "inputSchema": {"type": "object"}},
        {"name": "bad name!", "description": "x"},
        {"name": "loose", "description": "no schema"},
    ]}
    shim = await start_shim(None, plugin_manifest=manifest)
    tools = {t["name"]: t for t in await shim.tools()}
    assert len(tools) == 56
    assert tools["weather"]["inputSchema"]["required"] == ["city"]
    assert tools["loose"]["inputSchema"] == {"type": "object", "additionalProperties": True}
    assert tools["sessions_list"]["description"] != "clash"
    text = error_text(await shim.call("weather", {}))
    assert "must have required property 'city'" in text
    minimal = await start_shim(None, profile="minimal", plugin_manifest=manifest)
    assert "weather" not in {t["name"] for t in await minimal.tools()}


async def test_bad_arguments_name_the_field(start_shim: ShimFactory) -> None:
    shim = await start_shim(None, plugin_manifest={"tools": []})
    cases = {
        ("sessions_list", '{"limit": "ten"}'): "at /limit: must be integer",
        ("sessions_history", "{}"): "must have required property 'sessionKey'",
        ("cron_list", '{"filtre": "x"}'): "unexpected property 'filtre'",
        ("browser_request", '{"method": "PUT", "path": "/"}'): "at /method: must be one of",
        ("message_broadcast", '{"targets": [], "message": "x"}'): "at /targets: must have at least 1",
        ("heartbeat_report", '{"anything_done": "yes"}'): "at /anything_done: must be boolean",
    }
    import json

    for (name, args), expected in cases.items():
        text = error_text(await shim.call(name, json.loads(args)))
        assert text.startswith(f"Tool error ({name}): invalid arguments: ") and expected in text, text
