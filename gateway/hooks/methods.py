"""Tool hooks and heartbeat reports sent by the MCP shim.

``hooks.tool.before`` / ``hooks.tool.after`` are sent by the shim around every tool call. The gateway
logs them, re-broadcasts each as one ``hooks.tool`` event, so operators and the logs show what agents do
as they do it, and runs the plugins' ``before_tool_call`` / ``after_tool_call`` hooks.
``heartbeat.report`` is how a heartbeat run says whether
it did anything; the gateway logs it (the run's side-effects file carries it to the executor).
"""

from __future__ import annotations

from typing import Any

import structlog
from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import WRITE, CallContext, Params, method
from gateway.protocol import RpcError
from gateway.sessions.service import parse_key

log = structlog.get_logger("gateway.hooks")

_NAME = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:-]+$")
_KEY = Field(None, min_length=1, max_length=512)


class ToolBeforeParams(Params):
    toolName: str = _NAME
    params: dict[str, Any] = Field(default_factory=dict)
    sessionKey: str | None = _KEY


class ToolAfterParams(ToolBeforeParams):
    durationMs: float = Field(ge=0)
    error: str | None = Field(None, max_length=10_000)


class HeartbeatParams(Params):
    anythingDone: bool
    summary: str | None = Field(None, max_length=10_000)
    sessionKey: str | None = _KEY


def _emit(ctx: CallContext, phase: str, payload: dict[str, Any]) -> dict[str, Any]:
    event = {"phase": phase, **payload, "connId": ctx.caller.conn_id}
    # Tool params may carry message texts or config values: only writers see them.
    delivered = ctx.broadcast("hooks.tool", event, scope=WRITE)
    return {"ok": True, "delivered": delivered}


def _agent_id(ctx: CallContext, session_key: str | None) -> str | None:
    if not session_key:
        return None
    try:
        return parse_key(ctx.sessions.normalize_key(session_key))[0]
    except RpcError:
        return None


@method("hooks.tool.before", access=Access("session", "write", ("sessionKey",)),
        params=ToolBeforeParams, scope=WRITE, aliases=("hooks:tool:before",), baseline=True)
async def tool_before(p: ToolBeforeParams, ctx: CallContext) -> dict[str, Any]:
    """An agent is about to run a tool. Plugins' ``before_tool_call`` hooks may block it (``block`` and
    ``reason`` in the answer) or rewrite its params (``params``); the shim waits for this answer only when
    its tool list says such a hook is loaded."""
    log.info("tool call", phase="before", tool=p.toolName, session_key=p.sessionKey)
    out = _emit(ctx, "before", p.model_dump(exclude_none=True))
    hooks = ctx.hooks
    if hooks.has("before_tool_call"):
        event = {"toolName": p.toolName, "params": p.params, "sessionKey": p.sessionKey,
                 "agentId": _agent_id(ctx, p.sessionKey)}
        decided = await hooks.decide("before_tool_call", event)
        if decided.get("block"):
            log.info("tool call blocked by a plugin", tool=p.toolName, plugin=decided.get("plugin"),
                     reason=decided.get("reason"))
            out.update(block=True, reason=decided["reason"], plugin=decided.get("plugin"))
        elif decided.get("params") is not p.params and isinstance(decided.get("params"), dict):
            out["params"] = decided["params"]
    return out


@method("hooks.tool.after", access=Access("session", "write", ("sessionKey",)),
        params=ToolAfterParams, scope=WRITE, aliases=("hooks:tool:after",), baseline=True)
async def tool_after(p: ToolAfterParams, ctx: CallContext) -> dict[str, Any]:
    """An agent's tool call finished (``error`` set when it failed)."""
    log.info("tool call", phase="after", tool=p.toolName, session_key=p.sessionKey,
             duration_ms=round(p.durationMs, 2), error=p.error)
    payload = p.model_dump(exclude_none=True)
    ctx.hooks.fire("after_tool_call", {**payload, "agentId": _agent_id(ctx, p.sessionKey)})
    return _emit(ctx, "after", payload)


@method("heartbeat.report", access=Access("session", "write", ("sessionKey",)),
        params=HeartbeatParams, scope=WRITE, aliases=("heartbeat:report",), baseline=True)
async def heartbeat_report(p: HeartbeatParams, ctx: CallContext) -> dict[str, Any]:
    """A heartbeat run reports whether it did anything worth telling the user."""
    log.info("heartbeat report", session_key=p.sessionKey, anything_done=p.anythingDone, summary=p.summary)
    return {"ok": True, "anythingDone": p.anythingDone, "sessionKey": p.sessionKey}
