"""The built-in web chat as a channel: the agents' message tools act on the page people read."""

from __future__ import annotations

from channels.kind import ChannelKind

__all__ = ["KIND"]

KIND = ChannelKind("webchat", "channels.webchat.channel:WebchatChannel", autostart=True)
