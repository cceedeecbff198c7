"""The keys of ``channels.whatsapp`` that the WhatsApp channel itself reads, checked with an error naming the field.

The WhatsApp kind declares no section model (``channels.kind``), so its section is kept as written and the
channel checks its own keys when an account is built (``channels.settings``). The access keys (``dmPolicy``,
``allowFrom``, ``ownerAllowFrom``...) are the shared ``ChannelAccessConfig`` and are read by the channel manager,
not here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from channels.settings import parse_settings

__all__ = ["WhatsAppAccountConfig", "parse_config"]


class WhatsAppAccountConfig(BaseModel):
    """One WhatsApp business phone number (``channels.whatsapp`` or one of its ``accounts``)."""

    model_config = ConfigDict(extra="ignore")  # access keys and the manager's "_" facts live beside these

    phoneNumberId: str = Field(pattern=r"^\d{5,30}$", description="The Cloud API's id of the business number")
    accessToken: str = Field(min_length=8, description="A system user's (or the test) access token")
    appSecret: str = Field(min_length=8, description="The Meta app's secret: checks X-Hub-Signature-256")
    verifyToken: str = Field(min_length=8, description="Any string; Meta sends it back when the webhook is set")
    apiBaseUrl: str = Field("https://graph.facebook.com", pattern=r"^https?://\S+$")
    apiVersion: str = Field("v23.0", pattern=r"^v\d+\.\d+$")
    inboundReactions: bool = Field(
        False, description="Hand a person's reactions to the agent as a short message (each one starts a run)"
    )
    readReceipts: bool = Field(True, description="Mark messages read (blue ticks) with the typing indicator")
    reengageTemplate: str | None = Field(
        None,
        min_length=1,
        max_length=512,
        description="An approved template sent instead of a message outside the 24-hour window",
    )
    reengageLanguage: str = Field("en_US", pattern=r"^[a-z]{2,3}(_[A-Z]{2})?$")


def parse_config(cfg: dict[str, Any]) -> WhatsAppAccountConfig:
    """The checked settings; a ``ChannelError`` naming the first bad field (``channels.whatsapp.<field>``)."""
    return parse_settings(WhatsAppAccountConfig, cfg, "whatsapp", "phoneNumberId")
