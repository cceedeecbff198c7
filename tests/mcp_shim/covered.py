"""Which test calls each tool through the real shim and checks what the call did.

Every built-in tool and every tool of the plugins shipped in ``plugins/`` must be listed here, pointing at
a test (``path::function``) that starts the real ``remoteclaw-mcp`` against a real gateway, calls the tool
(directly, or through a helper of that test module) and asserts its effect where it lands.
``test_coverage.py`` fails when a tool is added without an entry, or when an entry's test no longer calls it.
"""

from __future__ import annotations

_TOOLS = "tests/mcp_shim/test_tools.py"
_NODES = "tests/mcp_shim/test_node_tools.py::test_pairing_naming_and_running_a_node_through_the_node_tools"
_CANVAS = "tests/nodes/browser/test_browser_canvas.py"
_A2UI = f"{_CANVAS}::test_a2ui_drawn_on_the_canvas_is_seen_and_a_button_press_reaches_the_session"
_PLACE = f"{_CANVAS}::test_present_places_the_canvas_and_hide_hides_it_as_a_snapshot_shows"
_WAKE = "tests/gateway/cron/test_cron_wake.py::test_next_heartbeat_queues_the_event_for_one_heartbeat_turn"
_SESSIONS = f"{_TOOLS}::test_session_tools"
_MESSAGES = f"{_TOOLS}::test_message_tools_through_webchat"
_TTS = f"{_TOOLS}::test_browser_without_a_node_is_unavailable_and_the_tts_tools_work"
_CONFIG = f"{_TOOLS}::test_gateway_config_tools"
_MEMORY = "tests/gateway/plugin_host/test_memory.py::test_remember_search_get_forget_through_the_shim"
_EXAMPLE = ("tests/gateway/plugin_host/test_plugin_api.py::"
            "test_folder_plugin_tools_images_and_blocking_hook_through_the_real_shim")

COVERED: dict[str, str] = {
    # session (baseline)
    "sessions_list": _SESSIONS, "sessions_history": _SESSIONS, "sessions_send": _SESSIONS,
    "sessions_spawn": _SESSIONS, "session_status": _SESSIONS, "agents_list": _SESSIONS, "subagents": _SESSIONS,
    # message (baseline)
    "message_send": _MESSAGES, "message_reply": _MESSAGES, "message_thread_reply": _MESSAGES,
    "message_broadcast": _MESSAGES, "message_react": _MESSAGES, "message_delete": _MESSAGES,
    "message_send_attachment": _MESSAGES, "message_send_with_effect": _MESSAGES, "message_pin": _MESSAGES,
    "message_read": _MESSAGES,
    "heartbeat_report": f"{_TOOLS}::test_heartbeat_report",
    # approvals (baseline)
    "ask_user": "tests/mcp_shim/test_approval_tools.py::test_ask_user_answered_by_an_operator",
    "approval_prompt": "tests/mcp_shim/test_approval_tools.py::test_allow_once_then_a_second_decision_is_refused",
    # cron
    "cron_status": _WAKE, "cron_list": _WAKE, "cron_add": _WAKE, "cron_update": _WAKE, "cron_run": _WAKE,
    "cron_runs": _WAKE,
    "cron_remove": "tests/gateway/cron/test_cron_gateway.py::"
                   "test_a_job_added_through_the_shim_runs_announces_once_and_stops_when_removed",
    # gateway
    "gateway_config_get": _CONFIG, "gateway_config_apply": _CONFIG, "gateway_config_patch": _CONFIG,
    "gateway_config_schema": _CONFIG,
    "gateway_restart": "tests/mcp_shim/test_hooks_effects.py::test_gateway_restart_mid_session",
    # nodes
    "node_list": _NODES, "node_describe": _NODES, "node_invoke": _NODES, "node_rename": _NODES,
    "node_pair_list": _NODES, "node_pair_approve": _NODES, "node_pair_reject": _NODES,
    # canvas
    "canvas_present": _PLACE, "canvas_hide": _PLACE, "canvas_snapshot": _PLACE, "canvas_eval": _A2UI,
    "canvas_navigate": _A2UI, "canvas_a2ui_push": _A2UI, "canvas_a2ui_reset": _A2UI,
    # browser
    "browser_request": f"{_CANVAS}::test_an_agent_drives_a_loopback_page_through_the_shim_gateway_and_node",
    # tts
    "tts_status": _TTS, "tts_convert": _TTS, "tts_providers": _TTS, "tts_set_provider": _TTS,
    "tts_enable": _TTS, "tts_disable": _TTS,
    # a2a
    "a2a_send": "tests/gateway/a2a/test_a2a_tool.py::test_a2a_send_through_the_shim_under_the_official_mcp_client",
    # plugins shipped in plugins/
    "memory_search": _MEMORY, "memory_get": _MEMORY, "memory_remember": _MEMORY, "memory_forget": _MEMORY,
    "memory_stats": _MEMORY, "memory_flush": _MEMORY,
    "example_greet": _EXAMPLE, "example_chart": _EXAMPLE,
}
