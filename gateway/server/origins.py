"""Which browser pages may talk to the gateway: its own, and those listed in ``gateway.allowedOrigins``.

A browser adds ``Origin`` to every cross-site request and to every WebSocket upgrade; CLIs, agents and
nodes send none. Without this check any page a user visits could open a socket to a gateway on their
machine (``ws://127.0.0.1:18789``), or reach it through DNS rebinding, and at the very least exhaust
its failed-login budget. Same origin means the page was served by this gateway (the web chat).
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

__all__ = ["origin_allowed"]


def origin_allowed(origin: str | None, host: str | None, allowed: Iterable[str] = ()) -> bool:
    """Whether a request carrying ``Origin: origin`` to ``Host: host`` may go on.

    Args:
        origin: the request's ``Origin`` header (None: not a browser, always allowed).
        host: the request's ``Host`` header.
        allowed: extra origins from the config, compared without a trailing slash.
    """
    if origin is None:
        return True
    origin = origin.strip().rstrip("/")
    if origin in {o.strip().rstrip("/") for o in allowed}:
        return True
    parts = urlsplit(origin)  # "null" (sandboxed frames, files) has no scheme and never matches
    return parts.scheme in ("http", "https") and bool(parts.netloc) and parts.netloc == (host or "").strip()
