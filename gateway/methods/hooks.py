"""Tool hooks and heartbeat reports sent by the MCP shim.

``hooks.tool.before`` / ``hooks.tool.after`` are fired (without waiting) by the shim around every tool
call. The gateway logs them and re-broadcasts each as one ``hooks.tool`` event, so operators and
the logs show what agents do as they do it. ``heartbeat.report`` is how a heartbeat run says whether
it did anything; the gateway logs it (the run's side-effects file carries it to the bridge).
"""

from __future__ import annotations

from typing import Any

import structlog
from pydantic import Field

from gateway.rpc import WRITE, CallContext, Params, method

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
    delivered = ctx.gateway.broadcast("hooks.tool", event, scope=WRITE)
    return {"ok": True, "delivered": delivered}


@method("hooks.tool.before", params=ToolBeforeParams, scope=WRITE, aliases=("hooks:tool:before",), baseline=True)
async def tool_before(p: ToolBeforeParams, ctx: CallContext) -> dict[str, Any]:
    """An agent is about to run a tool."""
    log.info("tool call", phase="before", tool=p.toolName, session_key=p.sessionKey)
    return _emit(ctx, "before", p.model_dump(exclude_none=True))


@method("hooks.tool.after", params=ToolAfterParams, scope=WRITE, aliases=("hooks:tool:after",), baseline=True)
async def tool_after(p: ToolAfterParams, ctx: CallContext) -> dict[str, Any]:
    """An agent's tool call finished (``error`` set when it failed)."""
    log.info("tool call", phase="after", tool=p.toolName, session_key=p.sessionKey,
             duration_ms=round(p.durationMs, 2), error=p.error)
    return _emit(ctx, "after", p.model_dump(exclude_none=True))


@method("heartbeat.report", params=HeartbeatParams, scope=WRITE, aliases=("heartbeat:report",), baseline=True)
async def heartbeat_report(p: HeartbeatParams, ctx: CallContext) -> dict[str, Any]:
    """A heartbeat run reports whether it did anything worth telling the user."""
    log.info("heartbeat report", session_key=p.sessionKey, anything_done=p.anythingDone, summary=p.summary)
    return {"ok": True, "anythingDone": p.anythingDone, "sessionKey": p.sessionKey}
