"""What the built-in tools answer: one ``outputSchema`` per tool whose answer is always a JSON object.

MCP 2025-06-18 and later let a tool declare the shape of its ``structuredContent``; a client then checks
the result against it (the ``mcp`` SDK's client does) and a model can rely on the field names. Each schema
names the fields the gateway always returns, with their types, and leaves the object open
(``additionalProperties`` is not closed): the gateway may add fields without breaking a client.

Kept as one table beside the tool modules, not inside them, so the tool definitions stay about input and
behaviour. Tools without an entry return a shape that depends on their input (``browser_request`` proxies
any browser route, ``subagents`` and ``gateway_config_get`` answer per action or key, ``canvas_snapshot``
answers an image); they still send ``structuredContent`` whenever their answer is an object.
``tests/mcp_shim/test_protocol.py`` calls the tools and validates each answer against its schema.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OUTPUT_SCHEMAS"]

_S: dict[str, Any] = {"type": "string"}
_S0: dict[str, Any] = {"type": ["string", "null"]}
_I: dict[str, Any] = {"type": "integer"}
_N: dict[str, Any] = {"type": "number"}
_B: dict[str, Any] = {"type": "boolean"}
_A: dict[str, Any] = {"type": "array"}
_O: dict[str, Any] = {"type": "object"}


def _out(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """An open object schema: ``required`` fields always present, ``optional`` ones typed when present."""
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required)}


_SENT = _out({"ok": _B, "channel": _S}, {"accountId": _S0, "to": _S, "messageId": _S0, "threadId": _S0})
_TTS = _out({"enabled": _B, "provider": _S, "fallbacks": _A, "auto": _S}, {"maxLength": _I, "format": _S})
_NODE_ANSWER = _out({"ok": _B, "nodeId": _S, "command": _S}, {"payload": {}, "tookMs": _N})
_PAGE = {"total": _I, "offset": _I, "limit": _I, "hasMore": _B}
_JOB = _out({"id": _S, "name": _S, "enabled": _B, "schedule": _O}, {"payload": _O, "delivery": _O, "state": _O})
_CONFIG_WRITE = _out({"ok": _B, "hash": _S, "changed": _A, "restart": _B}, {"path": _S})
_PAIRING = _out({"requestId": _S, "decision": {"enum": ["approved", "rejected"]}}, {"node": {}})

OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    # session
    "sessions_list": _out({"sessions": _A, "count": _I}, {"defaultAgentId": _S}),
    "sessions_history": _out({"sessionKey": _S, "messages": _A}),
    "sessions_send": _out({"status": _S}, {"runId": _S, "reply": _S0, "error": {}}),
    "sessions_spawn": _out({"sessionKey": _S, "runId": _S, "status": _S}, {"parent": _S0, "label": _S0}),
    "session_status": _out({"key": _S, "sessionKey": _S, "agentId": _S}),
    "agents_list": _out({"agents": _A, "defaultAgentId": _S}),
    # message
    "message_send": _SENT,
    "message_reply": _SENT,
    "message_thread_reply": _SENT,
    "message_send_attachment": _SENT,
    "message_send_with_effect": _SENT,
    "message_broadcast": _out({"ok": _B, "channel": _S, "to": _A, "results": _A, "delivered": _I, "failed": _I}),
    "message_react": _out({"ok": _B, "channel": _S, "messageId": _S, "emoji": _S}, {"to": _S, "removed": _B}),
    "message_delete": _out({"ok": _B, "channel": _S, "messageId": _S, "deleted": _B}, {"to": _S}),
    "message_pin": _out({"ok": _B, "channel": _S, "messageId": _S, "pinned": _B}, {"to": _S}),
    "message_read": _out({"channel": _S, "messages": _A, "count": _I}, {"to": _S}),
    # approvals (approval_prompt answers Claude Code's permission verdict as text, by its contract)
    "ask_user": _out({"status": {"enum": ["answered", "no_answer"]}},
                     {"answers": _O, "answeredBy": _S0, "message": _S}),
    # heartbeat
    "heartbeat_report": _out({"ok": _B, "anythingDone": _B, "sessionKey": _S}),
    # cron
    "cron_status": _out({"enabled": _B, "jobs": _I, "enabledJobs": _I, "running": _I},
                        {"nextWakeAtMs": {"type": ["integer", "null"]}, "maxConcurrentRuns": _I}),
    "cron_list": _out({"jobs": _A, **_PAGE}),
    "cron_add": _JOB,
    "cron_update": _JOB,
    "cron_remove": _out({"ok": _B, "removed": _B, "id": _S}),
    "cron_run": _out({"id": _S}),
    "cron_runs": _out({"entries": _A, **_PAGE}),
    # gateway
    "gateway_restart": _out({"ok": _B, "restarting": _B}, {"reason": _S, "restartExpectedMs": _I}),
    "gateway_config_apply": _CONFIG_WRITE,
    "gateway_config_patch": _CONFIG_WRITE,
    "gateway_config_schema": _out({"schema": _O}),
    # nodes
    "node_list": _out({"ts": _I, "nodes": _A}),
    "node_invoke": _NODE_ANSWER,
    "node_pair_list": _out({"pending": _A, "paired": _A, "rejected": _A}),
    "node_pair_approve": _PAIRING,
    "node_pair_reject": _PAIRING,
    # canvas (canvas_snapshot answers an image)
    "canvas_present": _NODE_ANSWER,
    "canvas_hide": _NODE_ANSWER,
    "canvas_navigate": _NODE_ANSWER,
    "canvas_eval": _NODE_ANSWER,
    "canvas_a2ui_push": _NODE_ANSWER,
    "canvas_a2ui_reset": _NODE_ANSWER,
    # tts
    "tts_status": _TTS,
    "tts_enable": _TTS,
    "tts_disable": _TTS,
    "tts_set_provider": _TTS,
    "tts_providers": _out({"providers": _A, "active": _S}),
    "tts_convert": _out({"audioPath": _S, "provider": _S, "format": _S, "mimeType": _S, "durationS": _N}),
    # a2a
    "a2a_send": _out({"reply": _S, "state": _S, "taskId": _S0, "contextId": _S0, "files": _A, "events": _I}),
}
