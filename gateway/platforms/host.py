"""``PlatformHost``: the part of a running gateway that platform packages may use.

A platform package (``channels/``, or a plugin's) gets one of these in its
``start(host)`` instead of the whole ``Gateway``: it can read the config, hand every message it receives
to the gateway's inbound door (``receive``: history, access, pairing offers and routing happen there), keep
the message log, post to the web chat, add HTTP routes and clean-up, and attach its ``ChatPlatforms``
implementation. Everything else of the gateway stays
out of its reach, so the two sides can change independently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.composition.hosts import GatewayHost
from gateway.config.reload import Listener
from gateway.platforms import sender_pairing
from gateway.platforms.door import InboundDoor
from gateway.platforms.history import MessageLog
from gateway.platforms.journal import InboundJournal
from gateway.webchat.posts import WebchatPosts

if TYPE_CHECKING:
    from gateway.platforms.interface import ChatPlatforms
    from gateway.platforms.messages import Inbound
    from gateway.store import Database

__all__ = ["ConfigListener", "PlatformHost", "PlatformParts"]

ConfigListener = Listener
"""``listener(old, new, changed_sections)``, called after every live config change."""


@dataclass(frozen=True, slots=True)
class PlatformParts:
    """What every platform package shares, built once by the composition root (``gateway.composition.wiring``)."""

    history: MessageLog
    """The message log behind ``message.read``."""
    journal: InboundJournal
    """Platform updates stored before they are acknowledged."""
    webchat: WebchatPosts
    """The web chat's messages, which are session transcripts: post, react, pin, delete, read them."""
    door: InboundDoor
    """Every message in: history, access, pairing offers, routing to the agents."""


@dataclass(frozen=True, slots=True)
class PlatformHost(GatewayHost):
    """The gateway as a platform package sees it (built by ``gateway.composition.wiring.platform_host``)."""

    db: Database
    history: MessageLog
    """The message log behind ``message.read``."""
    journal: InboundJournal
    """Platform updates stored before they are acknowledged."""
    webchat: WebchatPosts
    """The web chat's messages, which are session transcripts: post, react, pin, delete, read them."""
    door: InboundDoor
    """Every message in: history, access, pairing offers, routing to the agents."""
    attach: Callable[[ChatPlatforms], None]
    """Make the package's ``ChatPlatforms`` the gateway's way to chats (replies, ``message.*``, pairing
    notices), with the plugins' message hooks around every send (``gateway.platforms.hooked``)."""
    listen: Callable[[], tuple[str, int]]
    """Where the server listens (known once it is bound)."""

    @property
    def config_path(self) -> Path:
        return self.config_store.path

    def signin_base(self) -> str:
        """Where ``/login`` links point (``gateway.people.signin``)."""
        from gateway.people.signin import signin_base

        return signin_base(self.config, self.listen())

    async def receive(self, msg: Inbound) -> None:
        """Every message a channel receives, handed over once (``gateway.platforms.door``)."""
        await self.door.receive(msg)

    async def is_approved(self, channel: str, sender_id: str) -> bool:
        """Whether the owner approved this sender through pairing (e.g. to accept a room invitation)."""
        return await sender_pairing.is_approved(self.db, channel, sender_id)
