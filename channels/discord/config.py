"""The ``channels.discord`` section: the access rules every channel shares, and each bot's own keys."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gateway.config.channels import ChannelAccessConfig, Section, secret

__all__ = ["DiscordAccountConfig", "DiscordConfig"]


class DiscordAccountConfig(Section):
    """One Discord bot (see channels.discord)."""

    enabled: bool = True
    token: str | None = secret("Bot token from the Discord Developer Portal.")
    allowBots: bool = Field(False, description="Also hand messages written by other bots to the agent.")
    apiBase: str | None = Field(None, description="REST base, default https://discord.com/api/v10 (tests, proxies).")
    gatewayUrl: str | None = Field(None, description="Gateway WebSocket URL, default wss://gateway.discord.gg/.")
    readyTimeoutSeconds: float = Field(30.0, gt=0, le=600)
    stream: Literal["off", "edits"] = Field(
        "edits", description="Live replies while the agent works: off (only the current step), edits (the reply "
                             "as it is written, in one message edited in place).")


class DiscordConfig(ChannelAccessConfig, DiscordAccountConfig):
    accounts: dict[str, DiscordAccountConfig] = Field(
        default_factory=dict, description="More bots by account id; the top-level token is account 'default'.")
