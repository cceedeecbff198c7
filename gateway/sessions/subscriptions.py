"""Session subscriptions: ``sessions.subscribe``, ``sessions.messages.subscribe`` and its unsubscribe twin.

They register the calling connection with ``gateway.sessions.events``; the events then arrive as sessions
change, until the connection unsubscribes or closes. OpenClaw has no ``sessions.unsubscribe``: a
connection stops getting ``sessions.changed`` when it closes, and so it is here.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import ConfigDict, Field

from gateway.access import Access
from gateway.dispatch.dispatcher import APPROVALS, READ, CallContext, Params, grants, method
from gateway.protocol import Forbidden
from gateway.sessions.methods import check_visible


class SubscribeParams(Params):
    """``SessionsListParams``: with any field given, the answer also carries that list (as OpenClaw does).

    The fields are checked by ``sessions.list`` itself, so the two always accept the same params.
    """

    model_config = ConfigDict(extra="allow")


@method("sessions.subscribe", access=Access("session", "read", each=True), params=SubscribeParams, scope=READ)
async def sessions_subscribe(p: SubscribeParams, ctx: CallContext) -> dict[str, Any]:
    """Get ``sessions.changed`` events on this connection from now on; with list params, the list too."""
    ctx.subscriptions.subscribe_sessions(ctx.caller.conn_id)
    given = p.model_dump(exclude_unset=True)
    if not given:
        return {"subscribed": True}
    listing = await ctx.call("sessions.list", given)
    return {"subscribed": True, "list": listing}


class MessagesSubscribeParams(Params):
    key: str = Field(min_length=1, max_length=512)
    agentId: str | None = Field(None, min_length=1)
    includeApprovals: Literal[True] | None = Field(
        None, description="Also replay the session's pending approvals (none yet: the replay is empty).")


def _session_key(ctx: CallContext, key: str) -> str:
    return ctx.sessions.normalize_key(key)


@method("sessions.messages.subscribe", access=Access("session", "read", ("key", "agentId")),
        params=MessagesSubscribeParams, scope=READ)
async def sessions_messages_subscribe(p: MessagesSubscribeParams, ctx: CallContext) -> dict[str, Any]:
    """Get ``session.message`` events for one session on this connection, until unsubscribed or closed."""
    key = _session_key(ctx, p.key)
    await check_visible(ctx, key, "key")
    if p.includeApprovals and not grants(ctx.caller.scopes, APPROVALS):
        raise Forbidden(f"sessions.messages.subscribe includeApprovals needs scope {APPROVALS}",
                        details={"code": "MISSING_SCOPE", "missingScope": APPROVALS})
    ctx.subscriptions.subscribe_messages(ctx.caller.conn_id, key)
    out: dict[str, Any] = {"subscribed": True, "key": key}
    if p.includeApprovals:
        # No approvals capability yet: nothing can be pending (see docs/control-ui.md).
        out["approvalReplay"] = {"sessionKey": key, "updatedAtMs": int(time.time() * 1000), "approvals": [],
                                 "truncated": False}
    return out


class MessagesUnsubscribeParams(Params):
    key: str = Field(min_length=1, max_length=512)
    agentId: str | None = Field(None, min_length=1)


@method("sessions.messages.unsubscribe", access=Access("session", "read", ("key", "agentId")),
        params=MessagesUnsubscribeParams, scope=READ)
async def sessions_messages_unsubscribe(p: MessagesUnsubscribeParams, ctx: CallContext) -> dict[str, Any]:
    """Stop ``session.message`` events for one session on this connection."""
    key = _session_key(ctx, p.key)
    ctx.subscriptions.unsubscribe_messages(ctx.caller.conn_id, key)
    return {"subscribed": False, "key": key}
