"""Session tools (7): look at sessions, talk to them, spawn and manage sub-agents."""

from __future__ import annotations

from mcp_shim.schema import free_object, integer, number, obj, string
from mcp_shim.tools._base import Call, Tool, ToolError, compact, group

TYPE_CHECKING = False  # typing costs ~7 ms at start; annotations only need it for type checkers
if TYPE_CHECKING:
    from typing import Any


def _uuid() -> str:
    import uuid  # imported on first use: listing tools does not need it

    return str(uuid.uuid4())


TOOLS: list[Tool] = []
tool = group("session", TOOLS)

_KEY = "Session key, e.g. agent:main:telegram:dm:12345"


@tool("sessions_list", "List sessions",
      "List sessions (global and unknown ones included); filter searches them, else limit caps the count.",
      obj({"filter": string("Text to search for in keys, labels and titles; limit is then ignored"),
           "limit": integer("Most sessions to return (used when filter is absent)", minimum=1, maximum=1000)}),
      read_only=True)
async def sessions_list(call: Call, a: dict[str, Any]) -> Any:
    params: dict[str, Any] = {"includeGlobal": True, "includeUnknown": True}
    if a.get("filter"):
        params["search"] = a["filter"]
    elif a.get("limit") is not None:
        params["limit"] = a["limit"]
    return await call.gateway("sessions.list", params)


@tool("sessions_history", "Read session history", "Read the chat history of a session, newest last.",
      obj({"sessionKey": string(_KEY), "limit": integer("Most messages to return", minimum=1, maximum=1000)},
          ("sessionKey",)),
      read_only=True)
async def sessions_history(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("chat.history", compact(sessionKey=a["sessionKey"], limit=a.get("limit")))


def _last_reply(history: Any) -> str | None:
    messages = history.get("messages") if isinstance(history, dict) else None
    for msg in reversed(messages or []):
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            text = msg.get("text")
            if text is None and isinstance(msg.get("content"), str):
                text = msg["content"]
            return text
    return None


@tool("sessions_send", "Message another session",
      "Send a message to another session (by sessionKey or label) and wait for its reply; timeout 0 does not wait.",
      obj({"sessionKey": string(_KEY),
           "label": string("The target session's label (used when sessionKey is absent)"),
           "message": string("Message text"),
           "timeout": number("Seconds to wait for the reply (default 30; 0 = fire and forget)",
                             minimum=0, maximum=600)},
          ("message",)))
async def sessions_send(call: Call, a: dict[str, Any]) -> Any:
    key, label = a.get("sessionKey"), a.get("label")
    if not key and not label:
        raise ToolError("give sessionKey or label to say which session to message")
    target = {"sessionKey": key} if key else {"label": label}
    # The idempotency key lets the gateway drop a retried send instead of running the agent twice.
    accepted = await call.gateway("agent", {"message": a["message"], **target,
                                            "idempotencyKey": _uuid(), "deliver": False})
    run_id = accepted.get("runId") if isinstance(accepted, dict) else None
    call.side_effects.message_sent(tool=call.tool, provider="session", account_id=None,
                                   to=key or label, text=a["message"])
    timeout = float(a.get("timeout", 30))
    if timeout == 0:
        return {"runId": run_id, "status": "accepted"}
    waited = await call.gateway("agent.wait", {"runId": run_id, "timeoutMs": int(timeout * 1000)},
                                timeout=timeout + 10)
    status = waited.get("status") if isinstance(waited, dict) else None
    if status != "ok":
        # The contract has one failure shape, {runId, status: "error", error}: a timeout is an error too,
        # with the wait's own status kept in the message.
        error = (waited or {}).get("error") if isinstance(waited, dict) else None
        if not error:
            error = (f"no reply within {timeout:g} s (the run goes on; sessions_history shows its reply later)"
                     if status == "timeout" else f"the run ended with status {status or 'unknown'}")
        return {"runId": run_id, "status": "error", "error": error}
    history_key = key or (accepted.get("sessionKey") if isinstance(accepted, dict) else None)
    reply = None
    if history_key:
        reply = _last_reply(await call.gateway("chat.history", {"sessionKey": history_key, "limit": 5}))
    return {"runId": run_id, "status": status, "reply": reply}


@tool("sessions_spawn", "Spawn a sub-agent",
      "Start a sub-agent session on a delegated task; this session becomes its parent.",
      obj({"task": string("What the sub-agent should do"),
           "agentId": string("Which configured agent to run (default: the default agent)"),
           "label": string("A label for the new session")},
          ("task",)))
async def sessions_spawn(call: Call, a: dict[str, Any]) -> Any:
    params = compact(task=a["task"], agentId=a.get("agentId"), label=a.get("label"), parent=call.ctx.session_key)
    return await call.gateway("sessions.spawn", {**params, "idempotencyKey": _uuid()})


@tool("session_status", "Session status", "Show a session's status (this session when sessionKey is omitted).",
      obj({"sessionKey": string(_KEY + " (default: this session)")}),
      read_only=True)
async def session_status(call: Call, a: dict[str, Any]) -> Any:
    return await call.gateway("status", {"sessionKey": a.get("sessionKey") or call.ctx.session_key})


@tool("agents_list", "List agents", "List the configured agents and which one is the default.", obj(),
      read_only=True)
async def agents_list(call: Call, _a: dict[str, Any]) -> Any:
    listed = await call.gateway("agents.list", {})
    if isinstance(listed, dict) and "defaultId" in listed:  # OpenClaw's name; the tool has always said this
        listed = {**listed, "defaultAgentId": listed["defaultId"]}
    return listed


@tool("subagents", "Manage sub-agents",
      "Manage this session's sub-agents: action list, status, send or cancel, with extra params for the action.",
      obj({"action": string("Sub-agent action: list, status, send, cancel ..."),
           "params": free_object("More parameters for the action (spread into the gateway call)")},
          ("action",)),
      destructive=True)
async def subagents(call: Call, a: dict[str, Any]) -> Any:
    # The action and this session's key win over same-named keys in params.
    params = {**(a.get("params") or {}), "action": a["action"], "sessionKey": call.ctx.session_key}
    return await call.gateway("sessions.subagents", params)
