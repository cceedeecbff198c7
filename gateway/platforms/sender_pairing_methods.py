"""Channel sender pairing: ``channels.pairing.list``, ``channels.pairing.approve``, ``channels.pairing.reject``,
and ``channels.status`` (which channel accounts run).

An unknown sender who DMs the bot on a channel with ``dmPolicy: pairing`` gets a short code; the
owner approves it here (or with ``remoteclaw pairing approve <channel> <code>``). Approval is stored
in the database, so it survives restarts and never rewrites the config file.

``channels.pairing.list``, ``channels.pairing.approve`` and ``channels.status`` answer in OpenClaw's shapes
(its clients validate them): a request's ``requestId`` is the code the sender received, and our own details
go where those shapes leave room (a request's ``metadata``, ``channels.<name>`` of the status). Approvals and
rejections go to the audit log (``pairing.approve``, ``pairing.reject``), the sender as their target.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import structlog
from pydantic import Field, model_validator

from gateway.access import Access
from gateway.dispatch.dispatcher import PAIRING, READ, CallContext, Params, method
from gateway.platforms import sender_pairing
from gateway.platforms.interface import ChatPlatforms

log = structlog.get_logger("gateway.methods.sender_pairing")

ChannelName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_-]*$",
                                   description="e.g. telegram")]


class PairingListParams(Params):
    channel: ChannelName | None = None
    accountId: str | None = Field(None, min_length=1, max_length=128)


class PairingResolveParams(Params):
    channel: ChannelName
    code: str | None = Field(None, min_length=4, max_length=32, description="The code the sender received.")
    requestId: str | None = Field(None, min_length=1, max_length=32, description="OpenClaw's name for the code.")
    accountId: str | None = Field(None, min_length=1, max_length=128)
    notify: bool = True

    @model_validator(mode="after")
    def _one_code(self) -> PairingResolveParams:
        if not (self.code or self.requestId):
            raise ValueError("code: required (the code the sender received; requestId is accepted too)")
        return self

    @property
    def the_code(self) -> str:
        return self.code or self.requestId or ""


class StatusParams(Params):
    channel: ChannelName | None = None
    probe: bool = False  # accepted: the state shown is always the live one, there is nothing more to probe
    timeoutMs: int | None = Field(None, ge=0)


def _label(channel: str) -> str:
    return {"webchat": "Web chat"}.get(channel, channel[:1].upper() + channel[1:])


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _request(r: dict[str, Any]) -> dict[str, Any]:
    """One pending request in OpenClaw's shape; ours (code, chat) in its string ``metadata``."""
    return {"requestId": r["code"], "channel": r["channel"], "channelLabel": _label(r["channel"]),
            "accountId": r["accountId"], "senderId": r["senderId"],
            "senderLabel": r.get("senderName") or r["senderId"], "metadata": {"code": r["code"], "chatId": r["chatId"]},
            "createdAt": _iso(r["createdAtMs"]), "lastSeenAt": _iso(r["createdAtMs"]),
            "expiresAt": _iso(r["expiresAtMs"]), "notifySupported": True}


@method("channels.pairing.list", access=Access("pairing", "admin"),
        params=PairingListParams, scope=PAIRING, aliases=("pairing.list",))
async def pairing_list(p: PairingListParams, ctx: CallContext) -> dict[str, Any]:
    """Pending sender pairing requests (unexpired), oldest first, and the accounts that can have them."""
    rows = await sender_pairing.list_requests(ctx.db, p.channel)
    if p.accountId:
        rows = [r for r in rows if r["accountId"] == p.accountId]
    platforms = ctx.attached_platforms()
    running = platforms.describe() if platforms is not None else []
    accounts = [{"channel": a["channel"], "channelLabel": _label(a["channel"]), "accountId": a["accountId"],
                 "notifySupported": True} for a in running
                if (not p.channel or a["channel"] == p.channel) and (not p.accountId or a["accountId"] == p.accountId)]
    return {"accounts": accounts, "requests": [_request(r) for r in rows], "commandOwnerConfigured": True,
            "limits": {"pendingPerAccount": sender_pairing.MAX_PENDING_PER_CHANNEL,
                       "ttlMs": int(sender_pairing.PAIRING_TTL.total_seconds() * 1000)}}


async def _tell_approved(platforms: ChatPlatforms, request: dict[str, Any]) -> bool:
    """Tell a newly approved sender on their channel (best effort); whether it reached them."""
    try:
        await platforms.send_text(request["channel"], request["accountId"], request["chatId"],
                                  sender_pairing.APPROVED_TEXT)
    except Exception as exc:
        log.warning("cannot notify approved sender", channel=request["channel"], error=str(exc))
        return False
    return True


@method("channels.pairing.approve", access=Access("pairing", "admin"),
        params=PairingResolveParams, scope=PAIRING, aliases=("pairing.approve",))
async def pairing_approve(p: PairingResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Let the sender behind the code talk to the agent; they are told so on their channel (unless
    ``notify: false``). Answers OpenClaw's ``{requestId, senderId, notification, commandOwnerBootstrap}``."""
    platforms = ctx.platforms
    request = await sender_pairing.approve(ctx.db, p.channel, p.the_code)
    notification = "not-requested"
    if p.notify:
        notification = "sent" if await _tell_approved(platforms, request) else "failed"
    await ctx.audit("pairing.approve", _sender(request), {**_audited(request), "notification": notification})
    return {"requestId": request["code"], "senderId": request["senderId"], "notification": notification,
            "commandOwnerBootstrap": "not-requested"}


@method("channels.pairing.reject", access=Access("pairing", "admin"),
        params=PairingResolveParams, scope=PAIRING, aliases=("pairing.reject",))
async def pairing_reject(p: PairingResolveParams, ctx: CallContext) -> dict[str, Any]:
    """Refuse a pending request (the sender gets nothing; a later message asks again)."""
    request = await sender_pairing.reject(ctx.db, p.channel, p.the_code)
    await ctx.audit("pairing.reject", _sender(request), _audited(request))
    return {"ok": True, "rejected": request}


def _sender(request: dict[str, Any]) -> str:
    """The audit log's target: who was let in or refused, as ``<channel>:<senderId>``."""
    return f"{request['channel']}:{request['senderId']}"


def _audited(request: dict[str, Any]) -> dict[str, Any]:
    return {"code": request["code"], "accountId": request["accountId"], "senderName": request.get("senderName"),
            "chatId": request["chatId"]}


@method("channels.status", access=Access("pairing", "read"), params=StatusParams, scope=READ)
async def channels_status(p: StatusParams, ctx: CallContext) -> dict[str, Any]:
    """Each configured channel account and its state: starting, running, or error (with why).

    OpenClaw's shape; ours per channel in ``channels.<name>.accounts`` (``{channel, accountId, state,
    error?}``), which that shape leaves open.
    """
    accounts = [a for a in ctx.platforms.describe() if not p.channel or a["channel"] == p.channel]
    names = sorted({a["channel"] for a in accounts})
    mine = {n: [a for a in accounts if a["channel"] == n] for n in names}
    return {
        "ts": int(time.time() * 1000), "channelOrder": names, "channelLabels": {n: _label(n) for n in names},
        "channels": {n: {"accounts": mine[n]} for n in names},
        "channelAccounts": {n: [_account(a) for a in mine[n]] for n in names},
        "channelDefaultAccountId": {n: next((a["accountId"] for a in mine[n] if a["accountId"] == "default"),
                                            mine[n][0]["accountId"]) for n in names},
    }


def _account(a: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"accountId": a["accountId"], "enabled": True, "configured": True,
                           "running": a.get("state") == "running"}
    if a.get("error"):
        out["lastError"] = str(a["error"])
    return out
