"""The ``channels.telegram`` section: the access rules every channel shares, and each bot's own keys."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config.channels import ChannelAccessConfig, Section, secret

__all__ = ["TelegramAccountConfig", "TelegramConfig"]


class TelegramAccountConfig(Section):
    """One Telegram bot."""

    enabled: bool = True
    botToken: str | None = secret("Token from @BotFather.")
    mode: Literal["polling", "webhook"] = "polling"
    webhookUrl: str | None = Field(None, description="Public HTTPS URL Telegram posts to (webhook mode).")
    webhookSecret: str | None = secret("Checked against X-Telegram-Bot-Api-Secret-Token.",
                                       pattern=r"^[A-Za-z0-9_-]{1,256}$")
    apiBaseUrl: str | None = Field(None, description="Bot API base, default https://api.telegram.org/bot.")
    fileBaseUrl: str | None = Field(None, description="File download base, default .../file/bot.")
    pollTimeoutSeconds: int = Field(30, ge=0, le=300)
    stream: Literal["off", "edits", "draft"] = Field(
        "edits", description="Live replies while the agent works: off (only the current step), edits (the reply "
                             "as it is written, in one message edited in place), draft (Telegram's animated "
                             "message draft in private chats; edits elsewhere).")


class TelegramConfig(ChannelAccessConfig, TelegramAccountConfig):
    accounts: dict[str, TelegramAccountConfig] = Field(
        default_factory=dict, description="More bots by account id; the top-level botToken is account 'default'.")
