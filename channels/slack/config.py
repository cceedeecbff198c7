"""The keys of ``channels.slack`` that the Slack channel itself reads, checked with an error naming the field.

The access keys (``dmPolicy``, ``allowFrom``, ``ownerAllowFrom``, ``groups``...) are the shared
``ChannelAccessConfig`` and are read by the channel manager, not here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from channels.settings import parse_settings

__all__ = ["SlackAccountConfig", "parse_config"]


class SlackAccountConfig(BaseModel):
    """One Slack app installed in one workspace (``channels.slack`` or one of its ``accounts``)."""

    model_config = ConfigDict(extra="ignore")  # access keys and the manager's "_" facts live beside these

    botToken: str = Field(pattern=r"^xoxb-\S+$", description="The bot user OAuth token (xoxb-...)")
    appToken: str | None = Field(
        None, pattern=r"^xapp-\S+$", description="An app-level token with connections:write: Socket Mode"
    )
    signingSecret: str | None = Field(
        None, min_length=8, description="The app's signing secret: the Events API over HTTP (our webhook URL)"
    )
    mode: Literal["auto", "socket", "http"] = Field(
        "auto", description="auto: Socket Mode when appToken is set, else the Events API over HTTP"
    )
    apiBase: str = Field(
        "https://slack.com/api/", pattern=r"^https?://\S+/$", description="Web API base (tests point it at a fake)"
    )
    fileHosts: list[str] = Field(
        default_factory=lambda: ["files.slack.com"],
        description="Hosts the bot token may be sent to when a shared file is downloaded (besides apiBase's)",
    )

    @model_validator(mode="after")
    def _one_mode(self) -> SlackAccountConfig:
        if self.socket_mode and not self.appToken:
            raise ValueError("Socket Mode needs appToken (xapp-..., with connections:write)")
        if not self.socket_mode and not self.signingSecret:
            raise ValueError("set appToken (Socket Mode) or signingSecret (Events API over HTTP)")
        return self

    @property
    def socket_mode(self) -> bool:
        return self.mode == "socket" or (self.mode == "auto" and bool(self.appToken))


def parse_config(cfg: dict[str, Any]) -> SlackAccountConfig:
    """The checked settings; a ``ChannelError`` naming the first bad field (``channels.slack.<field>``)."""
    return parse_settings(SlackAccountConfig, cfg, "slack", "botToken")
