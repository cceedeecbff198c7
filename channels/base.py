"""The channel interface: what every messaging adapter (Telegram, Discord, Slack, Matrix, WhatsApp, web chat) offers.

A channel turns its platform's updates into ``Inbound`` messages (handed to ``on_inbound``) and
performs outbound operations. It declares what it supports in ``capabilities``; calling an
operation it lacks raises ``UnsupportedOperation`` (a clear error, never a silent no-op).
Adapters map their library's errors into ``ChannelError`` subclasses with ``raise … from exc``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from gateway.platforms import FileBytes, Inbound, InboundHandler, Media, Sent
from gateway.protocol import Forbidden, InvalidRequest, NotLinked, Unavailable

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from channels.environment import ChannelEnvironment

__all__ = [
    "Capability",
    "Channel",
    "ChannelError",
    "ChannelForbidden",
    "ChannelNotLinked",
    "ChannelUnavailable",
    "Inbound",
    "InboundHandler",
    "Media",
    "Sent",
    "TargetNotFound",
    "UnsupportedOperation",
]


class Capability(StrEnum):
    SEND = "send"
    REPLY = "reply"
    THREAD_REPLY = "threadReply"
    REACT = "react"
    DELETE = "delete"
    EDIT = "edit"
    ATTACHMENT = "sendAttachment"
    EFFECT = "sendWithEffect"
    PIN = "pin"
    READ = "read"
    TYPING = "typing"


class ChannelError(InvalidRequest):
    """The platform refused an operation (bad target, missing rights, bad input)."""


class TargetNotFound(ChannelError):
    """The chat, user or message does not exist or the bot cannot see it."""


class UnsupportedOperation(ChannelError):
    """This channel cannot do that operation at all."""


class ChannelForbidden(Forbidden):
    """The platform refused the bot itself (blocked by the user, removed from the chat, no admin right)."""


class ChannelUnavailable(Unavailable):
    """The platform could not be reached or asked us to back off (``retry_after_ms`` set)."""


class ChannelNotLinked(NotLinked):
    """No such channel/account is configured or running."""


class Channel(ABC):
    """One running account on one platform."""

    name: str = ""
    text_limit: int = 4000
    capabilities: frozenset[Capability] = frozenset()
    # How long the platform shows one typing indicator; the gateway renews it while an agent works.
    typing_lasts_s: float | None = None

    def __init__(self, account_id: str, on_inbound: InboundHandler) -> None:
        self.account_id = account_id
        self.on_inbound = on_inbound

    # -- what the manager calls to build and run an account --------------------------------------

    @classmethod
    def configured(cls, settings: dict[str, Any]) -> bool:
        """Whether this account's settings have what it needs to start (e.g. a token); unconfigured ones are
        skipped silently."""
        return True

    @classmethod
    @abstractmethod
    def from_config(cls, account_id: str, settings: dict[str, Any], env: ChannelEnvironment) -> Channel:
        """Build an account from its effective settings (the section, with the account's own keys over it) and
        its place in the gateway (``env``: the inbound door, journal, message log, folders, public URL)."""

    async def handle_webhook(self, request: Request) -> Response:
        """Answer ``POST /channels/<name>/<account>/webhook`` (channels that take pushed updates)."""
        from starlette.responses import JSONResponse

        return JSONResponse({"ok": False, "error": f"{self.name} takes no webhooks"}, status_code=404)

    def require(self, capability: Capability) -> None:
        if capability not in self.capabilities:
            raise UnsupportedOperation(
                f"{self.name} does not support {capability.value}",
                details={"code": "UNSUPPORTED", "channel": self.name, "operation": capability.value},
            )

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def send(self, to: str, text: str, *, thread_id: str | None = None, reply_to_id: str | None = None,
                   effect_id: str | None = None, silent: bool = False) -> Sent:
        """Send text (already within ``text_limit``); ``silent``: without a notification, where the platform can
        (a live note: the reply that follows is what notifies)."""

    async def draft(self, to: str, draft_id: int, text: str, *, thread_id: str | None = None) -> bool:
        """Show ``text`` as a draft the user watches being written (Telegram's ``sendMessageDraft``: animated,
        ephemeral, replaced by the message sent at the end). False where this chat has no drafts."""
        return False

    async def send_buttons(self, to: str, text: str, buttons: list[tuple[str, str]], *,
                           thread_id: str | None = None) -> Sent | None:
        """Send ``text`` with buttons ``(label, what a press types)``: a press comes back as an inbound message
        from the presser with that text. None where the channel has no buttons (the caller sends plain text)."""
        return None

    async def send_attachment(self, to: str, file: str | FileBytes, *, caption: str | None = None,
                              thread_id: str | None = None) -> Sent:
        """Send an http(s) URL or a local file's bytes (``FileBytes``: read once by the manager, never again by
        name; a path given to a channel directly is read through ``channels.files.upload_of``)."""
        self.require(Capability.ATTACHMENT)
        raise NotImplementedError

    async def react(self, to: str, message_id: str, emoji: str) -> None:
        """Set the bot's reaction; an empty ``emoji`` removes it."""
        self.require(Capability.REACT)
        raise NotImplementedError

    async def delete(self, to: str, message_id: str, *, thread_id: str | None = None) -> None:
        """Delete a message; ``thread_id`` where the platform needs it to find one inside a thread."""
        self.require(Capability.DELETE)
        raise NotImplementedError

    async def edit(self, to: str, message_id: str, text: str, *, thread_id: str | None = None) -> None:
        """Replace the text of one of the bot's own messages (within ``text_limit``)."""
        self.require(Capability.EDIT)
        raise NotImplementedError

    async def pin(self, to: str, message_id: str) -> None:
        self.require(Capability.PIN)
        raise NotImplementedError

    async def read_history(self, to: str, *, limit: int, thread_id: str | None = None) -> list[dict[str, Any]] | None:
        """Recent messages of a chat when the channel keeps them itself; None: read the gateway's message log."""
        return None

    async def typing(self, to: str, *, thread_id: str | None = None) -> None:
        """Show a typing indicator if the platform has one (best effort)."""
        return None
