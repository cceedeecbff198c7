"""The messages that cross between the gateway and chat platforms: what arrived, and what was sent.

Plain data owned by the gateway, so platform adapters (``channels/``, plugins) and the gateway's own
code (the message log, pairing, the agent inbound path) share one vocabulary without the gateway
importing any adapter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ChatType", "Inbound", "InboundHandler", "Media", "MediaKind", "Sent"]

ChatType = Literal["dm", "group", "channel"]
MediaKind = Literal["photo", "voice", "audio", "video", "file", "sticker"]


@dataclass(frozen=True, slots=True)
class Media:
    kind: MediaKind
    url: str | None = None
    path: str | None = None
    mime: str | None = None
    name: str | None = None
    size: int | None = None


@dataclass(frozen=True, slots=True)
class Inbound:
    """One message that arrived on a channel."""

    channel: str
    account_id: str
    sender_id: str
    chat_id: str
    chat_type: ChatType
    message_id: str
    text: str
    sender_name: str | None = None
    thread_id: str | None = None
    reply_to_id: str | None = None
    media: tuple[Media, ...] = ()
    mentioned: bool = False
    ts: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ref(self) -> tuple[str, str, str, str]:
        """What names this message on its platform: (channel, account, chat, message id)."""
        return (self.channel, self.account_id, self.chat_id, self.message_id)


@dataclass(frozen=True, slots=True)
class Sent:
    """What an outbound operation produced."""

    message_id: str
    chat_id: str
    thread_id: str | None = None


InboundHandler = Callable[[Inbound], Awaitable[None]]
"""What a channel calls with each message it receives."""
