"""Chat methods for interactive clients (the web chat page, the TUI): send, history, abort."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.methods.agent import delivery_origin
from gateway.methods.sessions import check_visible, is_owner
from gateway.rpc import READ, WRITE, CallContext, Params, method
from gateway.runs import RunRequest
from gateway.sessions import parse_key
from gateway.store.transcripts import SessionRepo


class SendParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    message: str = Field(min_length=1, max_length=200_000)
    idempotencyKey: str = Field(min_length=1, max_length=256)
    deliver: bool = False
    thinking: str | None = Field(None, max_length=32)
    timeoutMs: int | None = Field(None, ge=0)


@method("chat.send", params=SendParams, scope=WRITE, idempotent=True)
async def chat_send(p: SendParams, ctx: CallContext) -> dict[str, Any]:
    """Send a message into a session; ``queued`` when it joins the turn after the running one."""
    svc = ctx.gateway.sessions
    key = svc.normalize_key(p.sessionKey)
    await svc.ensure(key)
    origin = None
    if p.deliver:
        origin = await delivery_origin(ctx, key, channel=None, account_id=None, to=None, thread_id=None)
    run, status = await ctx.gateway.runs.submit(RunRequest(
        session_key=key, agent_id=parse_key(key)[0], message=p.message, source="chat", is_owner=is_owner(ctx),
        origin=origin, deliver=origin is not None))
    return {"runId": run.id, "status": status, "sessionKey": key}


class HistoryParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    limit: int | None = Field(None, ge=1, le=1000)


@method("chat.history", params=HistoryParams, scope=READ, baseline=True)
async def chat_history(p: HistoryParams, ctx: CallContext) -> dict[str, Any]:
    """The session's transcript, oldest first (the last ``limit`` entries)."""
    key = ctx.gateway.sessions.normalize_key(p.sessionKey)
    await check_visible(ctx, key)
    async with ctx.gateway.db.session() as s:
        entries = await SessionRepo.history(s, key, p.limit or 200)
    return {"sessionKey": key, "messages": [e.to_dict() for e in entries]}


class AbortParams(Params):
    sessionKey: str = Field(min_length=1, max_length=512)
    runId: str | None = Field(None, min_length=1, max_length=64)


@method("chat.abort", params=AbortParams, scope=WRITE)
async def chat_abort(p: AbortParams, ctx: CallContext) -> dict[str, Any]:
    """Stop the session's running turn (or the given run) and drop messages waiting for the next turn.

    ``runIds`` are the runs stopped: here, and with several replicas also the session's runs that another
    replica holds, to which the request is passed (``forwarded: true``); a turn stopped there ends with
    its usual ``agent``/``chat`` events.
    """
    key = ctx.gateway.sessions.normalize_key(p.sessionKey)
    aborted, forwarded = await ctx.gateway.runs.abort_everywhere(key, p.runId)
    return {"ok": True, "aborted": bool(aborted), "runIds": aborted, "sessionKey": key, "forwarded": forwarded}
