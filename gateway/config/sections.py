"""Base classes shared by every config section model (``gateway.config``, ``gateway.config.channels``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["OpenSection", "Section"]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OpenSection(BaseModel):
    """A section whose full shape belongs to a later capability: known keys typed, others kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
