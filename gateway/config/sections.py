"""Base classes shared by every config section model (``gateway.config``, ``gateway.config.channels``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["OpenSection", "Section", "secret"]


def secret(description: str, **kwargs: Any) -> Any:
    """A secret config field (a token, a key): marked ``"secret": true`` in the JSON Schema, which is what
    ``config.get`` and the log scrubber go by (``gateway.redaction``), whatever the field is called."""
    return Field(None, description=description, json_schema_extra={"secret": True}, **kwargs)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OpenSection(BaseModel):
    """A section whose full shape belongs to a later capability: known keys typed, others kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
