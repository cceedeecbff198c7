"""Config model of the ``channels`` section: the access rules every channel shares, and a field per channel type.

Each channel type's own model lives in its package (``channels/telegram/config.py``) and is found the way the
channel itself is: through its ``remoteclaw.channels`` entry point (a ``ChannelKind`` with a ``config`` model).
``ChannelsConfig`` is built from those at import, so a channel's keys are checked whenever the config is written,
show in ``config.schema`` and have their secrets marked, while the gateway names no module of ``channels/``.
A kind without a model (and a channel a plugin adds at run time) keeps its section as written.

This module is the config surface a channel package may import (``Section``, ``secret``, ``ChannelAccessConfig``):
it is read while the config model is being built, so it cannot come through ``gateway.platforms``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import structlog
from pydantic import BaseModel, BeforeValidator, Field, create_model

from gateway.config.sections import OpenSection, Section, secret

__all__ = [
    "ChannelAccessConfig",
    "ChannelGroupConfig",
    "ChannelsConfig",
    "Section",
    "channel_config_models",
    "secret",
]

log = structlog.get_logger("gateway.config.channels")


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


class ChannelsBase(OpenSection):
    """What the ``channels`` section holds besides the channel types' own sections."""

    ownerAllowFrom: list[str] = Field(default_factory=list, description="Owners as 'channel:senderId'.")
    mediaMaxAgeDays: float = Field(30, ge=0, description="Downloaded attachments older than this are deleted "
                                                         "from the state dir (0: keep them forever).")


def channel_config_models() -> dict[str, type[BaseModel]]:
    """Channel type -> the model of its section, from the installed ``remoteclaw.channels`` kinds."""
    from gateway.composition.entry_points import CHANNELS

    models: dict[str, type[BaseModel]] = {}
    for name in CHANNELS.names():
        try:
            kind = CHANNELS.load(name)
        except Exception as exc:  # a broken package must not stop the gateway reading its config
            log.warning("channel type not loadable", channel=name, error=str(exc))
            continue
        model = getattr(kind, "config", None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            models[name] = model
    return models


if TYPE_CHECKING:  # the channel types' fields exist only at run time; code reads them with channel_section()
    ChannelsConfig = ChannelsBase
else:
    ChannelsConfig = create_model(
        "ChannelsConfig",
        __base__=ChannelsBase,
        __module__=__name__,
        __doc__="Per-channel sections: a typed one for each channel type with a config model, others as given.",
        **{name: (model, model()) for name, model in channel_config_models().items()},
    )
