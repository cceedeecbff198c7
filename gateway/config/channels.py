"""Config models of the ``channels`` section: access rules shared by every channel, and each channel's own keys.

Kept apart from ``gateway.config`` because they grow with every channel type; ``gateway.platforms.access``
reads the access rules, each adapter its own keys.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from gateway.config.sections import OpenSection, Section, secret

__all__ = [
    "ChannelAccessConfig",
    "ChannelGroupConfig",
    "ChannelsConfig",
    "DiscordAccountConfig",
    "DiscordConfig",
    "TelegramAccountConfig",
    "TelegramConfig",
]


def _id_str(value: Any) -> Any:
    # Chat and user ids are often written as JSON numbers; keep them as strings.
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


SenderId = Annotated[str, BeforeValidator(_id_str)]


class ChannelGroupConfig(Section):
    """One group chat the bot may answer in (key ``*`` = every group)."""

    enabled: bool = True
    requireMention: bool | None = Field(None, description="Overrides the channel's requireMention.")
    allowFrom: list[SenderId] = Field(default_factory=list, description="Senders allowed here; empty = anyone.")


class ChannelAccessConfig(Section):
    """Who may talk to the agent on one channel; shared by every channel type (see gateway.platforms.access)."""

    enabled: bool = True
    dmPolicy: Literal["pairing", "allowlist", "open", "disabled"] = Field(
        "pairing", description="pairing: unknown senders get a code the owner approves.")
    allowFrom: list[SenderId] = Field(default_factory=list, description="Sender ids always allowed in DMs.")
    groupPolicy: Literal["allowlist", "open", "disabled"] = Field(
        "allowlist", description="allowlist: only chats listed in groups.")
    groups: dict[str, ChannelGroupConfig] = Field(default_factory=dict, description="Group chat id -> rules.")
    groupAllowFrom: list[SenderId] = Field(default_factory=list, description="Senders allowed in groups; empty = any.")
    requireMention: bool = Field(True, description="In groups, answer only when mentioned or replied to.")
    ownerAllowFrom: list[SenderId] = Field(default_factory=list, description="Sender ids whose runs get owner tools.")


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


class ChannelsConfig(OpenSection):
    """Per-channel sections. Channel types without a typed model yet are kept as given."""

    ownerAllowFrom: list[str] = Field(default_factory=list, description="Owners as 'channel:senderId'.")
    mediaMaxAgeDays: float = Field(30, ge=0, description="Downloaded attachments older than this are deleted "
                                                         "from the state dir (0: keep them forever).")
    telegram: TelegramConfig = TelegramConfig()
    discord: DiscordConfig = DiscordConfig()
