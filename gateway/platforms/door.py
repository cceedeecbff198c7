"""The one door every chat message comes in by, on the gateway side.

A channel turns a platform update into one ``Inbound`` value and hands it to ``InboundDoor.receive`` (it is
the ``on_inbound`` callback every channel is built with). From there the path is a straight line, in this
order:

1. **history**: the message is stored; one seen before stops here (platforms redeliver after a restart);
2. **access**: who is talking (``access.decide`` on the channel's policy, the owner lists and the senders
   approved through pairing);
3. **pairing offer**: an unknown DM sender under ``dmPolicy: pairing`` is answered with a code, once;
4. **routing**: an allowed message goes to the agents (a chat command answered, or a turn queued).

The message is marked handled at the end whatever happened, so one bad message never stops a channel; a
message that could not even be stored raises, so the channel does not acknowledge it and it comes again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from gateway.dispatch.commands import DoorContext, Speaker, commands
from gateway.people.service import PeopleService, PersonView
from gateway.platforms import access, sender_pairing
from gateway.platforms.history import MessageLog
from gateway.platforms.messages import Inbound, Sent
from gateway.store import Database

if TYPE_CHECKING:
    from gateway.config import Config

__all__ = ["PAIRING_TEXT", "AgentInbound", "InboundDoor", "channel_section"]

log = structlog.get_logger("gateway.platforms.inbound")

PAIRING_TEXT = (
    "Hi! This assistant only talks with people its owner has approved.\n"
    "Your pairing code: {code}\n"
    "Ask the owner to run: remoteclaw pairing approve {channel} {code}"
)


class AgentInbound(Protocol):
    """Where allowed messages go: the agents' inbound handler (``gateway.agents.router``)."""

    async def handle(self, msg: Inbound, *, is_owner: bool, tool_profile: str | None = None,
                     person: PersonView | None = None) -> None: ...


SendText = Callable[..., Awaitable[list[Sent]]]
"""``ChatPlatforms.send_text``: how the pairing offer is answered on the sender's own channel."""


def channel_section(config: Config, channel: str) -> Any:
    """The config section of one channel type: a declared model field, or a plugin channel's free section."""
    ch = config.channels
    if channel in type(ch).model_fields:
        return getattr(ch, channel)
    return (ch.model_extra or {}).get(channel)


class InboundDoor:
    """Stores, checks, offers pairing and routes every inbound message, in that order."""

    def __init__(self, db: Database, config: Callable[[], Config], history: MessageLog, agents: AgentInbound,
                 send_text: SendText, people: PeopleService | None = None,
                 signin_base: Callable[[], str] = lambda: "") -> None:
        self._db = db
        self._config = config
        self._history = history
        self._agents = agents
        self._send_text = send_text
        self._people = people
        """Who is talking (``gateway.people``): a known person is let in and may be the owner."""
        self._signin_base = signin_base

    async def receive(self, msg: Inbound) -> None:
        """The ``on_inbound`` of every channel."""
        try:
            if not await self._history.record_in(msg):
                log.info("inbound message seen before: not handled twice", channel=msg.channel, chat=msg.chat_id,
                         message=msg.message_id)
                return
        except Exception:
            log.exception("inbound message could not be stored", channel=msg.channel, chat=msg.chat_id)
            raise  # not acknowledged: the platform (or the journal) hands it out again
        try:
            await self.route(msg)
        except Exception:
            log.exception("inbound message failed", channel=msg.channel, chat=msg.chat_id)
        finally:
            await self._history.handled(msg)

    async def route(self, msg: Inbound) -> access.Decision:
        """Decide who is talking, then offer pairing, hand the message to the agents, or drop it."""
        config = self._config()
        cfg = access.access_config(channel_section(config, msg.channel))
        person = await self._people.by_identity(msg.channel, msg.sender_id) if self._people is not None else None
        if self._people is not None and cfg.enabled:
            said = await self._door_command(self._people, msg, person)
            if said is not None:
                with contextlib.suppress(Exception):
                    await self._send_text(msg.channel, msg.account_id, msg.chat_id, said, thread_id=msg.thread_id)
                return access.Decision("drop", "people command answered")
        # A person on record is let in as the access rules let an approved sender in; their role says whether
        # they are the owner (the config's owner lists count only for senders who are nobody's identity).
        owner = person.is_owner if person is not None else access.is_owner(cfg, config.channels.ownerAllowFrom, msg)
        approved = (msg.chat_type == "dm" and not owner
                    and (person is not None or await sender_pairing.is_approved(self._db, msg.channel, msg.sender_id)))
        decision = access.decide(cfg, msg, owner=owner, approved=approved)
        log.info("inbound", channel=msg.channel, account=msg.account_id, chat=msg.chat_id, sender=msg.sender_id,
                 action=decision.action, reason=decision.reason, owner=decision.is_owner,
                 person=person.id if person is not None else None)
        if decision.action == "pair":
            await self._offer_pairing(msg)
        elif decision.action == "allow":
            await self._agents.handle(msg, is_owner=decision.is_owner, person=person)
        return decision

    async def _door_command(self, people: PeopleService, msg: Inbound, person: PersonView | None) -> str | None:
        """The answer to a door command (``@command(stage="door")``: ``/whoami``, ``/link``, ``/login``), or None:
        not one, refused by the access model, or nothing to say (the message goes on as usual)."""
        parsed = commands.parse(msg.text, "door")
        if parsed is None:
            return None
        spec, rest = parsed
        speaker = Speaker(msg.channel, msg.chat_id, msg.chat_type, person_id=person.id if person else None,
                          owner=person is not None and person.is_owner)
        if not speaker.may_use(spec):
            return None
        said: str | None = await spec.handler(DoorContext(msg, person, people, self._signin_base, speaker), rest)
        return said

    async def _offer_pairing(self, msg: Inbound) -> None:
        got = await sender_pairing.request_code(self._db, msg)
        if got is None:
            log.warning("too many pending pairing requests; ignoring sender", channel=msg.channel)
            return
        code, created = got
        if not created:
            return  # they already have a code; answering every message would let strangers spam the bot
        log.info("pairing requested", channel=msg.channel, sender=msg.sender_id, code=code)
        with contextlib.suppress(Exception):
            await self._send_text(msg.channel, msg.account_id, msg.chat_id,
                                  PAIRING_TEXT.format(code=code, channel=msg.channel), thread_id=msg.thread_id)
