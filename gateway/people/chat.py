"""The people's chat commands, answered at the gateway's inbound door before access rules and agents:

- ``/whoami``: who the gateway takes this sender for (their person and role, or their raw id to give an admin);
- ``/link``: a code to link another chat to the same person; ``/link <code>`` sent from that other chat links it
  (this works for a sender the gateway does not know yet: that is the point);
- ``/login``: a one-time link that signs the person in to the web chat with a credential of their own.

They are commands of direct chats only: a group would show codes and links to everyone in it (there they are
ordinary messages).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from gateway.people.service import CODE_TTL_S, PeopleService, PersonView

if TYPE_CHECKING:
    from gateway.platforms.messages import Inbound

__all__ = ["COMMANDS", "answer"]

log = structlog.get_logger("gateway.people")

COMMANDS = ("whoami", "link", "login")
_MINUTES = CODE_TTL_S // 60


def _parse(text: str) -> tuple[str, str] | None:
    text = text.strip()
    if not text.startswith("/"):
        return None
    head, _, rest = text[1:].partition(" ")
    name = head.split("@", 1)[0].lower()  # Telegram appends @botname in groups
    return (name, rest.strip()) if name in COMMANDS else None


async def answer(people: PeopleService, msg: Inbound, person: PersonView | None,
                 signin_base: Callable[[], str]) -> str | None:
    """The reply to a people command, or None when the message is not one (it goes on as usual)."""
    parsed = _parse(msg.text)
    if parsed is None:
        return None
    name, rest = parsed
    if msg.chat_type != "dm":
        return None  # codes and links are for one person's eyes: in a group these are ordinary messages
    if name == "link" and rest:
        return await _redeem(people, msg, rest)
    if name == "whoami":
        if person is None:
            return (f"You are not on this gateway's people list. Your id here is {msg.channel}:{msg.sender_id} "
                    "(an admin links it with: remoteclaw people link <person> "
                    f"{msg.channel} {msg.sender_id}).")
        return f"You are {person.name} ({person.id}), {person.role} on this gateway, writing from {msg.channel}."
    if person is None:
        return None  # not someone the gateway knows: the usual access rules answer (pairing, or nothing)
    if name == "link":
        code = await people.new_code(person.id, "link")
        log.info("link code made", person=person.id, channel=msg.channel)
        return (f"Your link code: {code}\nSend \"/link {code}\" to me from your other chat (another app, or "
                f"another account) within {_MINUTES} minutes, and both chats will be you.")
    code = await people.new_code(person.id, "signin")
    log.info("sign-in link made", person=person.id, channel=msg.channel)
    return (f"Your sign-in link (one use, {_MINUTES} minutes): {signin_base().rstrip('/')}/#signin={code}\n"
            "Open it in the browser you want to use. Your web chat shows your sign-ins, and you can revoke "
            "them there (or an admin does, with remoteclaw people signins).")


async def _redeem(people: PeopleService, msg: Inbound, code: str) -> str:
    got = await people.redeem_link(code, msg.channel, msg.sender_id)
    if got is None:
        return ("That code is unknown or has expired. Send /link in a chat where I already know you to get a "
                "new one.")
    log.info("chat linked", person=got.id, channel=msg.channel, sender=msg.sender_id)
    return f"Linked: this chat is {got.name} now, the same person as on your other chats."
