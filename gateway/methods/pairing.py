"""Channel sender pairing: ``channels.pairing.list``, ``channels.pairing.approve``, ``channels.pairing.reject``,
and ``channels.status`` (which channel accounts run).

An unknown sender who DMs the bot on a channel with ``dmPolicy: pairing`` gets a short code; the
owner approves it here (or with ``remoteclaw pairing approve <channel> <code>``). Approval is stored
in the database, so it survives restarts and never rewrites the config file.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from gateway.platforms import pairing
from gateway.rpc import PAIRING, READ, CallContext, NoParams, Params, method

ChannelName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_-]*$",
                                   description="e.g. telegram")]


class PairingListParams(Params):
    channel: ChannelName | None = None


class PairingResolveParams(Params):
    channel: ChannelName
    code: str = Field(min_length=4, max_length=32, description="The code the sender received.")


@method("channels.pairing.list", params=PairingListParams, scope=PAIRING, aliases=("pairing.list",))
async def pairing_list(p: PairingListParams, ctx: CallContext) -> dict[str, Any]:
    """Pending sender pairing requests (unexpired), oldest first."""
    requests = await pairing.list_requests(ctx.gateway.db, p.channel)
    return {"requests": requests, "count": len(requests)}


@method("channels.pairing.approve", params=PairingResolveParams, scope=PAIRING, aliases=("pairing.approve",))
async def pairing_approve(p: PairingResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Let the sender behind ``code`` talk to the agent; they are told so on their channel."""
    mgr = ctx.platforms
    request = await pairing.approve(ctx.gateway.db, p.channel, p.code)
    notified = await mgr.notify_approved(request)
    return {"ok": True, "approved": request, "notified": notified}


@method("channels.pairing.reject", params=PairingResolveParams, scope=PAIRING, aliases=("pairing.reject",))
async def pairing_reject(p: PairingResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Refuse a pending request (the sender gets nothing; a later message asks again)."""
    request = await pairing.reject(ctx.gateway.db, p.channel, p.code)
    return {"ok": True, "rejected": request}


@method("channels.status", scope=READ)
async def channels_status(_p: NoParams, ctx: CallContext) -> dict[str, Any]:
    """Each configured channel account and its state: starting, running, or error (with why)."""
    accounts = ctx.platforms.describe()
    return {"accounts": accounts, "count": len(accounts)}
