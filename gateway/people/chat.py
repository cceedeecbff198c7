"""The people's chat commands, answered at the gateway's inbound door before access rules and agents:

- ``/whoami``: who the gateway takes this sender for (their person and role, or their raw id to give an admin);
- ``/link``: a code to link another chat to the same person; ``/link <code>`` sent from that other chat links it
  (this works for a sender the gateway does not know yet: that is the point);
- ``/login``: a one-time link that signs the person in to the web chat with a credential of their own.

They are commands of direct chats only: a group would show codes and links to everyone in it (there they are
ordinary messages). Declared with ``@command(stage="door")`` (``gateway.dispatch.commands``); one the access model
refuses, or that has nothing to answer (``/login`` from a stranger), goes on as an ordinary message.
"""

from __future__ import annotations

import structlog

from gateway.access import Access
from gateway.dispatch.commands import DoorContext, command
from gateway.people.service import CODE_TTL_S

__all__ = ["link", "login", "whoami"]

log = structlog.get_logger("gateway.people")

_MINUTES = CODE_TTL_S // 60
_ANYONE = Access("gateway", "read")
"""What a sender nobody knows yet may use: saying who they are to the gateway, and redeeming a link code."""


@command("whoami", access=_ANYONE, stage="door", dm_only=True, help="Who the gateway takes you for")
async def whoami(ctx: DoorContext, rest: str) -> str:
    msg, person = ctx.msg, ctx.person
    if person is None:
        return (f"You are not on this gateway's people list. Your id here is {msg.channel}:{msg.sender_id} "
                "(an admin links it with: remoteclaw people link <person> "
                f"{msg.channel} {msg.sender_id}).")
    return f"You are {person.name} ({person.id}), {person.role} on this gateway, writing from {msg.channel}."


@command("link", access=_ANYONE, stage="door", dm_only=True,
         help="Link another chat of yours: /link here, then /link <code> from the other chat")
async def link(ctx: DoorContext, rest: str) -> str | None:
    """``/link <code>`` works for a sender the gateway does not know yet (that is the point); ``/link`` alone
    makes the code, for a person on record (anyone else has nothing to link from: an ordinary message)."""
    msg, person = ctx.msg, ctx.person
    if rest:
        return await _redeem(ctx, rest)
    if person is None:
        return None
    code = await ctx.people.new_code(person.id, "link")
    log.info("link code made", person=person.id, channel=msg.channel)
    return (f"Your link code: {code}\nSend \"/link {code}\" to me from your other chat (another app, or "
            f"another account) within {_MINUTES} minutes, and both chats will be you.")


@command("login", access=Access("person", "become"), stage="door", dm_only=True,
         help="A one-time link that signs you in to the web chat")
async def login(ctx: DoorContext, rest: str) -> str | None:
    """A sign-in is for oneself: the access model lets a person on record (``become`` themselves) have one."""
    person = ctx.person
    if person is None:
        return None
    code = await ctx.people.new_code(person.id, "signin")
    log.info("sign-in link made", person=person.id, channel=ctx.msg.channel)
    return (f"Your sign-in link (one use, {_MINUTES} minutes): {ctx.signin_base().rstrip('/')}/#signin={code}\n"
            "Open it in the browser you want to use. Your web chat shows your sign-ins, and you can revoke "
            "them there (or an admin does, with remoteclaw people signins).")


async def _redeem(ctx: DoorContext, code: str) -> str:
    msg = ctx.msg
    got = await ctx.people.redeem_link(code, msg.channel, msg.sender_id)
    if got is None:
        return ("That code is unknown or has expired. Send /link in a chat where I already know you to get a "
                "new one.")
    log.info("chat linked", person=got.id, channel=msg.channel, sender=msg.sender_id)
    return f"Linked: this chat is {got.name} now, the same person as on your other chats."
