"""``agent`` and ``agent.wait``: start an agent turn in a session and wait for its result.

``agent`` answers at once with ``{runId, status: "accepted"}``; the run's outcome arrives later as
the final ``agent`` event (``stream: "lifecycle"``, with ``result``) and from ``agent.wait``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import WRITE, CallContext, Params, method
from gateway.runs import Origin, RunRequest
from gateway.sessions.methods import check_visible, claim_session, is_owner
from gateway.sessions.service import main_key


class AgentParams(Params):
    message: str = Field(min_length=1, max_length=200_000)
    sessionKey: str | None = Field(None, min_length=1, max_length=512)
    label: str | None = Field(None, min_length=1, max_length=256)
    agentId: str | None = Field(None, min_length=1, max_length=128)
    idempotencyKey: str = Field(min_length=1, max_length=256)
    deliver: bool = False
    channel: str | None = Field(None, min_length=1, max_length=64)
    accountId: str | None = Field(None, max_length=128)
    to: str | None = Field(None, max_length=256)
    threadId: str | None = Field(None, max_length=256)


async def delivery_origin(ctx: CallContext, key: str, *, channel: str | None, account_id: str | None,
                          to: str | None, thread_id: str | None) -> Origin | None:
    """Where a ``deliver: true`` reply goes: the given target, else the session's last route."""
    row = await ctx.sessions.get(key)
    channel = channel or (row.channel if row else None)
    to = to or (row.peer_id if row else None)
    if not channel or not to:
        return None
    return Origin(channel=channel, account_id=account_id or (row.account_id if row else None), to=to,
                  chat_type=(row.chat_type if row and row.chat_type else "dm"),
                  thread_id=thread_id or (row.thread_id if row else None))


@method("agent", access=(Access("session", "write", ("sessionKey", "label", "agentId")), Access("chat", "write")),
        params=AgentParams, scope=WRITE, idempotent=True, baseline=True)
async def agent(p: AgentParams, ctx: CallContext) -> dict[str, Any]:
    """Give an agent a message in a session (by key, label, or the agent's main session)."""
    svc = ctx.sessions
    if p.sessionKey:
        key = svc.normalize_key(p.sessionKey)
        await claim_session(ctx, key)  # a person signed in: their own sessions only (gateway.people)
        await svc.ensure(key)
    elif p.label:
        key = await svc.resolve(label=p.label)
    else:
        key = main_key(svc.agent(p.agentId).id)
        await claim_session(ctx, key)
        await svc.ensure(key)
    await check_visible(ctx, key)  # a non-owner run may not talk to (and read replies from) others' sessions
    agent_id = key.split(":", 2)[1]
    origin = None
    if p.deliver:
        origin = await delivery_origin(ctx, key, channel=p.channel, account_id=p.accountId, to=p.to,
                                       thread_id=p.threadId)
        if origin is not None and (p.channel or p.to):  # a target given: decided like a message sent there
            await ctx.access.check(ctx.caller, "write", ctx.access.chat(origin.channel, origin.to), "to")
    run, status = await ctx.runs.submit(RunRequest(
        session_key=key, agent_id=agent_id, message=p.message, source="agent", is_owner=is_owner(ctx),
        origin=origin, deliver=origin is not None))
    return {"runId": run.id, "status": "accepted", "queued": status == "queued", "sessionKey": key}


class WaitParams(Params):
    runId: str = Field(min_length=1, max_length=64)
    timeoutMs: int = Field(30_000, ge=0, le=24 * 3600 * 1000)


@method("agent.wait", access=Access("run", "read", ("runId",)), params=WaitParams, scope=WRITE, baseline=True)
async def agent_wait(p: WaitParams, ctx: CallContext) -> dict[str, Any]:
    """Wait up to ``timeoutMs`` for a run to finish: ``status`` is ok, error or timeout.

    Works for runs held by any replica: one running elsewhere is awaited through its final ``agent`` event.
    """
    return await ctx.runs.wait(p.runId, p.timeoutMs)
