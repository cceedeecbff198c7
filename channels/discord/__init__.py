"""Discord: a bot through discord.py (extra ``discord``), on the Discord gateway's WebSocket."""

from __future__ import annotations

from channels.discord.config import DiscordConfig
from channels.kind import ChannelKind

__all__ = ["KIND"]

KIND = ChannelKind("discord", "channels.discord.channel:DiscordChannel", config=DiscordConfig)
