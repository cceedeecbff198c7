"""``PlatformHost``: the part of a running gateway that platform packages may use.

A platform package (``channels/``, or a plugin's) gets one of these in its subsystem's
``start(host)`` instead of the whole ``Gateway``: it can read the config, hand allowed messages to
the agents, keep the message log, store pairing requests, post to the web chat, add HTTP routes
and clean-up, and attach its ``ChatPlatforms`` implementation. Everything else of the gateway stays
out of its reach, so the two sides can change independently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.platforms import pairing
from gateway.platforms.history import MessageLog
from gateway.platforms.journal import InboundJournal
from gateway.webchat.posts import WebchatPosts

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from gateway.config import Config
    from gateway.core import Gateway
    from gateway.platforms.interface import ChatPlatforms
    from gateway.platforms.messages import Inbound

__all__ = ["ConfigListener", "PlatformHost"]

ConfigListener = Callable[["Config", "Config", frozenset[str]], Awaitable[None]]


class PlatformHost:
    """The gateway as a platform package sees it."""

    def __init__(self, gateway: Gateway) -> None:
        self._gw = gateway
        self.history = MessageLog(gateway.db)
        self.journal = InboundJournal(gateway.db)
        # The web chat's messages are session transcripts: post, react, pin, delete, read them.
        self.webchat = WebchatPosts(gateway)

    # -- facts -----------------------------------------------------------------------------------

    @property
    def config(self) -> Config:
        """The current config (read it per use: it changes live)."""
        return self._gw.config

    @property
    def state_dir(self) -> Path:
        return self._gw.state_dir

    @property
    def config_path(self) -> Path:
        return self._gw.config_store.path

    # -- wiring ----------------------------------------------------------------------------------

    def attach(self, platforms: ChatPlatforms) -> None:
        """Make ``platforms`` the gateway's way to chats (replies, ``message.*``, pairing notices), with the
        plugins' message hooks around every send (``gateway.platforms.hooked``)."""
        from gateway.platforms.hooked import HookedPlatforms

        self._gw.platforms = HookedPlatforms(platforms, self._gw.hooks)

    def add_route(self, route: BaseRoute) -> None:
        """Serve an HTTP route (e.g. a webhook) on the gateway's port."""
        self._gw.http_routes.append(route)

    def on_config_change(self, listener: ConfigListener) -> None:
        """Call ``listener(old, new, changed_sections)`` after every live config change."""
        self._gw.config_listeners.append(listener)

    def on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        self._gw.on_stop(hook)

    # -- inbound ---------------------------------------------------------------------------------

    async def handle_inbound(self, msg: Inbound, *, is_owner: bool, tool_profile: str | None = None) -> None:
        """An allowed message: a chat command is answered, anything else becomes (part of) an agent turn."""
        await self._gw.agents.inbound.handle(msg, is_owner=is_owner, tool_profile=tool_profile)

    async def is_approved(self, channel: str, sender_id: str) -> bool:
        """Whether the owner approved this sender through pairing."""
        return await pairing.is_approved(self._gw.db, channel, sender_id)

    async def request_pairing_code(self, msg: Inbound) -> tuple[str, bool] | None:
        """The sender's pending pairing code ``(code, created)``; None when too many are pending."""
        return await pairing.request_code(self._gw.db, msg)
