"""A channel's own config keys, checked with an error naming the first bad field (``channels.<name>.<field>``).

A channel kind without a section model (``channels.kind``: Slack, Matrix, WhatsApp, a plugin's channel) has its
section kept as written, so the channel checks its own keys with a pydantic model when an account is built; a
mistake then shows in ``channels.status`` as the field and what is wrong with it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from channels.base import ChannelError

__all__ = ["parse_settings"]

M = TypeVar("M", bound=BaseModel)


def parse_settings(model: type[M], cfg: dict[str, Any], channel: str, fallback_field: str) -> M:
    """``cfg`` checked against ``model``; a ``ChannelError`` naming ``channels.<channel>.<field>`` otherwise."""
    try:
        return model.model_validate(cfg)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or fallback_field
        raise ChannelError(
            f"channels.{channel}.{field}: {err['msg']}", details={"field": f"channels.{channel}.{field}"}
        ) from None
