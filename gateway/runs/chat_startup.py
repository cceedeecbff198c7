"""``chat.startup`` and ``chat.metadata``: what OpenClaw's Control UI asks before it shows a chat.

``chat.startup`` is the first page of ``chat.history`` plus how the session was found (``resolution``),
and subscribes the connection to ``sessions.changed`` as OpenClaw does. The messages are in OpenClaw's
shape (``content`` blocks and ``timestamp``), with our ``text`` and ids kept beside.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, Params, method
from gateway.protocol import InvalidRequest
from gateway.sessions.events import openclaw_message
from gateway.sessions.methods import check_visible
from gateway.sessions.store import SessionRepo

MAX_STARTUP_MESSAGES = 200


class StartupParams(Params):
    sessionKey: str | None = Field(None, min_length=1, max_length=512)
    agentId: str | None = Field(None, min_length=1)
    shortId: str | None = Field(None, min_length=1, description="Accepted; we have no short ids, so it finds none.")
    slugHint: str | None = Field(None, description="Accepted and ignored.")
    limit: int | None = Field(None, ge=1, le=1000)
    maxBytes: int | None = Field(None, ge=1, description="Accepted and ignored: the limit bounds the page.")

    @model_validator(mode="after")
    def _one_target(self) -> StartupParams:
        if self.sessionKey is None and self.shortId is None and self.agentId is None:
            raise ValueError("give sessionKey (or agentId for its main session)")
        return self


def _message(entry: dict[str, Any]) -> dict[str, Any]:
    extra = {k: v for k, v in entry.items() if k not in ("role", "text", "ts")}
    return openclaw_message(entry["role"], entry.get("text") or "", ts=entry.get("ts"), **extra)


@method("chat.startup", access=Access("session", "read", ("sessionKey", "agentId")), params=StartupParams, scope=READ)
async def chat_startup(p: StartupParams, ctx: CallContext) -> dict[str, Any]:
    """The session's latest messages and row, to open a chat; also subscribes to ``sessions.changed``."""
    svc = ctx.sessions
    if p.sessionKey is None:
        if p.shortId is not None:
            return {"resolution": {"ok": False}}
        agent = svc.agent(p.agentId)
        key = svc.normalize_key(f"agent:{agent.id}:main")
    else:
        key = svc.normalize_key(p.sessionKey)
    await check_visible(ctx, key)
    ctx.subscriptions.subscribe_sessions(ctx.caller.conn_id)
    agent_id = key.split(":")[1]
    if p.agentId and p.agentId != agent_id:
        raise InvalidRequest(f"invalid chat.startup params: at /agentId: session {key} belongs to agent "
                             f"'{agent_id}'", details={"field": "agentId"})
    async with ctx.db.session() as s:
        row = await SessionRepo.get(s, key)
        entries = await SessionRepo.history(s, key, min(p.limit or 80, MAX_STARTUP_MESSAGES))
    info: dict[str, Any] = row.to_dict() if row is not None else {"key": key, "sessionKey": key, "agentId": agent_id}
    if ctx.runs is not None:
        lane = ctx.runs.lane_state(key)
        info["hasActiveRun"] = lane["active"] is not None
    return {"sessionKey": key, "agentId": agent_id, "messages": [_message(e.to_dict()) for e in entries],
            "sessionInfo": info, "resolution": {"ok": True, "key": key, "agentId": agent_id}}


class MetadataParams(Params):
    agentId: str | None = Field(None, min_length=1)
    sessionKey: str | None = Field(None, min_length=1, max_length=512)


@method("chat.metadata", access=Access("session", "read", ("sessionKey", "agentId")), params=MetadataParams, scope=READ)
async def chat_metadata(p: MetadataParams, ctx: CallContext) -> dict[str, Any]:
    """Which agent a chat talks to, its CLI and model; no per-user auth profiles here."""
    svc = ctx.sessions
    key = svc.normalize_key(p.sessionKey) if p.sessionKey else None
    if key is not None:
        await check_visible(ctx, key)
    agent = svc.agent(p.agentId or (key.split(":")[1] if key else None))
    model = agent.model
    if key is not None:
        async with ctx.db.session() as s:
            row = await SessionRepo.get(s, key)
        model = (row.model if row is not None else None) or model
    return {"agentId": agent.id, "runtime": agent.runtime, **({"model": model} if model else {})}
