"""A channel type as the gateway finds it: one ``remoteclaw.channels`` entry point per channel package.

Each ``channels/<name>/__init__.py`` declares ``KIND = ChannelKind(...)`` and ``pyproject.toml`` names it
(``telegram = "channels.telegram:KIND"``). The kind is cheap to import (a name, a config model, a string): the
gateway reads the config models of every kind when it builds its config model, and imports the channel's
class, with its platform library, only when an account of that type is configured.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

    from channels.base import Channel

__all__ = ["ChannelKind"]


@dataclass(frozen=True)
class ChannelKind:
    """What the gateway knows of a channel type before any account of it runs.

    Attributes:
        name: the type's name, the key under ``channels`` in the config.
        implementation: ``"module:Class"`` of its ``Channel`` subclass, imported on first use.
        config: the model of its ``channels.<name>`` section, checked whenever the config is written (and in
            ``config.schema``); None: the section is kept as written and the channel checks its own keys when
            an account starts (``channels.settings.parse_settings``), the field named in ``channels.status``.
        autostart: run an account even without a config section (the web chat).
    """

    name: str
    implementation: str
    config: type[BaseModel] | None = None
    autostart: bool = False

    def load(self) -> type[Channel]:
        module, _, attr = self.implementation.partition(":")
        cls: type[Channel] = getattr(importlib.import_module(module), attr)
        return cls
