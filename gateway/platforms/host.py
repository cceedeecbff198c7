"""``PlatformHost``: the part of a running gateway that platform packages may use.

A platform package (``channels/``, or a plugin's) gets one of these in its
``start(host)`` instead of the whole ``Gateway``: it can read the config, hand every message it receives
to the gateway's inbound door (``receive``: history, access, pairing offers and routing happen there), keep
the message log, post to the web chat, add HTTP routes and clean-up, and attach its ``ChatPlatforms``
implementation. Everything else of the gateway stays
out of its reach, so the two sides can change independently.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.composition.hosts import GatewayHost
from gateway.config.reload import Listener
from gateway.platforms import sender_pairing
from gateway.platforms.door import InboundDoor
from gateway.platforms.history import MessageLog
from gateway.platforms.journal import InboundJournal
from gateway.webchat.posts import WebchatPosts

if TYPE_CHECKING:

    from gateway.composition.gateway import Gateway
    from gateway.platforms.interface import ChatPlatforms
    from gateway.platforms.messages import Inbound, Sent

__all__ = ["ConfigListener", "PlatformHost"]

ConfigListener = Listener
"""``listener(old, new, changed_sections)``, called after every live config change."""


class PlatformHost(GatewayHost):
    """The gateway as a platform package sees it."""

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(gateway)
        self.history = MessageLog(gateway.db)
        self.journal = InboundJournal(gateway.db)
        # The web chat's messages are session transcripts: post, react, pin, delete, read them.
        self.webchat = WebchatPosts(gateway.db, gateway.sessions, gateway.broadcast)
        self.door = InboundDoor(gateway.db, lambda: gateway.config, self.history, gateway.agents.inbound,
                                self._send_text, people=gateway.people, signin_base=self.signin_base)

    # -- facts -----------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self._gw.config_store.path

    # -- wiring ----------------------------------------------------------------------------------

    def attach(self, platforms: ChatPlatforms) -> None:
        """Make ``platforms`` the gateway's way to chats (replies, ``message.*``, pairing notices), with the
        plugins' message hooks around every send (``gateway.platforms.hooked``)."""
        from gateway.platforms.hooked import HookedPlatforms

        self._gw.platforms = HookedPlatforms(platforms, self._gw.hooks)

    def signin_base(self) -> str:
        """Where ``/login`` links point (``gateway.people.signin``)."""
        from gateway.people.signin import signin_base

        return signin_base(self._gw.config, self._gw.listen)

    # -- inbound ---------------------------------------------------------------------------------

    async def receive(self, msg: Inbound) -> None:
        """Every message a channel receives, handed over once (``gateway.platforms.door``)."""
        await self.door.receive(msg)

    async def is_approved(self, channel: str, sender_id: str) -> bool:
        """Whether the owner approved this sender through pairing (e.g. to accept a room invitation)."""
        return await sender_pairing.is_approved(self._gw.db, channel, sender_id)

    async def _send_text(self, channel: str, account_id: str | None, to: str, text: str, **kwargs: Any) -> list[Sent]:
        platforms = self._gw.platforms
        if platforms is None:
            return []
        return await platforms.send_text(channel, account_id, to, text, **kwargs)
