"""``agent.identity.get``: the name (and nothing more) an agent shows under in OpenClaw's Control UI."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from gateway.access import Access
from gateway.dispatch.dispatcher import READ, CallContext, Params, method


class IdentityParams(Params):
    agentId: str | None = Field(None, min_length=1)
    sessionKey: str | None = Field(None, description="Picks the session's agent when agentId is not given.")


@method("agent.identity.get", access=Access("agent", "read"), params=IdentityParams, scope=READ)
async def agent_identity_get(p: IdentityParams, ctx: CallContext) -> dict[str, Any]:
    """The agent's configured ``name`` (its id when unset); we keep no avatars or emoji."""
    svc = ctx.sessions
    wanted = p.agentId
    if wanted is None and p.sessionKey:
        wanted = svc.normalize_key(p.sessionKey).split(":")[1]
    agent = svc.agent(wanted)
    return {"agentId": agent.id, "name": agent.name or agent.id, "nameSource": "config" if agent.name else "default"}
