"""Telegram: a bot through python-telegram-bot (extra ``telegram``), by long polling or webhook."""

from __future__ import annotations

from channels.kind import ChannelKind
from channels.telegram.config import TelegramConfig

__all__ = ["KIND"]

KIND = ChannelKind("telegram", "channels.telegram.channel:TelegramChannel", config=TelegramConfig)
