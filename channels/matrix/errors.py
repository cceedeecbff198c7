"""Homeserver refusals as the channel error family, and one call to the homeserver with them applied.

``M_FORBIDDEN`` -> ``ChannelForbidden`` (or ``TargetNotFound`` when it says the bot is not in the room),
``M_NOT_FOUND`` -> ``TargetNotFound``, ``M_LIMIT_EXCEEDED`` -> ``ChannelUnavailable`` with ``retry_after_ms``,
a dead token -> ``ChannelUnavailable``, network errors -> retryable ``ChannelUnavailable``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from typing import Any

import aiohttp
import nio

from channels.base import ChannelError, ChannelForbidden, ChannelUnavailable, TargetNotFound

__all__ = ["call", "error_of"]


def error_of(op: str, resp: Any, target: str, account_id: str) -> Exception:
    """Our error for a homeserver's error response to ``op`` on ``target``."""
    code = getattr(resp, "status_code", None) or ""
    message = getattr(resp, "message", None) or str(resp)
    details = {"channel": "matrix", "operation": op, "to": target, "errcode": code}
    if code == "M_LIMIT_EXCEEDED":
        retry = int(getattr(resp, "retry_after_ms", None) or 1000)
        return ChannelUnavailable(
            f"matrix rate limit on {op}: retry after {retry} ms",
            retryable=True,
            retry_after_ms=retry,
            details=details,
        )
    if code == "M_FORBIDDEN" and re.search(r"not in (the )?room|not joined|unknown room", message, re.IGNORECASE):
        # The homeserver does not say whether the room exists; either way the bot cannot reach it.
        return TargetNotFound(
            f"matrix {op}: the bot is not in {target} ({message})", details={**details, "code": "TARGET_NOT_FOUND"}
        )
    if code == "M_FORBIDDEN":
        return ChannelForbidden(
            f"matrix refused {op} in {target}: {message}", details={**details, "code": "CHANNEL_FORBIDDEN"}
        )
    if code == "M_NOT_FOUND":
        return TargetNotFound(f"matrix {op}: {message} ({target})", details={**details, "code": "TARGET_NOT_FOUND"})
    if code == "M_UNKNOWN_TOKEN":
        return ChannelUnavailable(f"matrix account {account_id}: the access token is no longer valid")
    return ChannelError(f"matrix {op} failed: {code} {message}".strip(), details=details)


async def call(op: str, target: str, coro: Awaitable[Any], ok: Any, account_id: str) -> Any:
    """Await one nio request; its response when it is an ``ok``, else the refusal as our error."""
    try:
        resp = await coro
    except nio.LocalProtocolError as exc:
        raise ChannelError(f"matrix {op}: {exc}", details={"channel": "matrix", "operation": op}) from exc
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise ChannelUnavailable(f"matrix {op}: cannot reach the homeserver: {exc}", retryable=True) from exc
    if not isinstance(resp, ok):
        raise error_of(op, resp, target, account_id)
    return resp
