"""The keys of ``channels.matrix`` that the Matrix channel itself reads, checked with an error naming the field.

The Matrix kind declares no section model (``channels.kind``), so its section is kept as written and the channel
checks its own keys when an account is built (``channels.settings``). The access keys (``dmPolicy``,
``allowFrom``, ``ownerAllowFrom``, ``groups``...) are the shared ``ChannelAccessConfig`` and are read by the
channel manager, not here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from channels.settings import parse_settings

__all__ = ["MatrixAccountConfig", "parse_config"]


class MatrixAccountConfig(BaseModel):
    """One Matrix bot account (``channels.matrix`` or one of its ``accounts``)."""

    model_config = ConfigDict(extra="ignore")  # access keys and the manager's "_" facts live beside these

    homeserver: str = Field(pattern=r"^https?://\S+$", description="Client-server API base, e.g. https://matrix.org")
    userId: str = Field(pattern=r"^@[^:\s]+:\S+$", description="The bot's full id, @name:server")
    accessToken: str | None = Field(None, min_length=1, description="A token of the bot's account (or a password)")
    password: str | None = Field(None, min_length=1, description="Logs in once; the session is kept in the state dir")
    deviceName: str = Field("remoteclaw", max_length=100)
    autoJoin: Literal["allowed", "always", "off"] = Field(
        "allowed",
        description="allowed: join invites from senders the access rules let in (DM invites from "
        "anyone under dmPolicy pairing/open, so strangers can ask for a code)",
    )
    syncTimeoutSeconds: int = Field(30, ge=0, le=300)
    stream: Literal["off", "edits"] = "edits"
    encryption: bool = Field(
        False,
        description="Take part in end-to-end encrypted rooms (extra matrix-e2e: vodozemac); the device's "
        "keys are kept in the state dir",
    )

    @model_validator(mode="after")
    def _one_credential(self) -> MatrixAccountConfig:
        if not self.accessToken and not self.password:
            raise ValueError("set accessToken or password")
        return self


def parse_config(cfg: dict[str, Any]) -> MatrixAccountConfig:
    """The checked settings; a ``ChannelError`` naming the first bad field (``channels.matrix.<field>``)."""
    return parse_settings(MatrixAccountConfig, cfg, "matrix", "accessToken")
