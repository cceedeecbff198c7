"""Limits for sockets that have not logged in yet: how big a frame, and how many of them.

Before ``connect`` succeeds, a peer is a stranger. Its frames are capped at ``MAX_PREAUTH_FRAME_BYTES``
by the WebSocket parser itself (``GatewayWebSocketProtocol``: a frame announcing more is refused from
its header, close 1009, before its payload is read), and the limit is lifted to
``gateway.maxPayload`` once the handshake succeeds. How many strangers may wait at once is capped
overall and per address (``PreAuthSockets``); at a cap the OLDEST waiting stranger is dropped, not the
newcomer, so a flood cannot keep a real client (who logs in within milliseconds) from getting in.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from gateway.protocol import MAX_PREAUTH_FRAME_BYTES

__all__ = ["LIFT_FRAME_LIMIT", "GatewayWebSocketProtocol", "PreAuthSockets"]

LIFT_FRAME_LIMIT = "remoteclaw.lift_frame_limit"
"""ASGI scope extension: call it once the peer is authenticated to allow frames up to ``maxPayload``."""


class GatewayWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol, with the pre-``connect`` frame limit enforced while reading."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._full_size = self.conn.max_message_size
        self.conn.max_message_size = MAX_PREAUTH_FRAME_BYTES

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        extensions: dict[str, Any] = self.scope.setdefault("extensions", {})  # type: ignore[assignment]
        extensions[LIFT_FRAME_LIMIT] = self._lift

    def _lift(self) -> None:
        self.conn.max_message_size = self._full_size


class PreAuthSockets:
    """The sockets still in their handshake, oldest first, overall and per address.

    Args:
        max_total: how many may wait at once on this gateway.
        max_per_address: how many from one address.
    """

    def __init__(self, max_total: int, max_per_address: int) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self._all: OrderedDict[str, Any] = OrderedDict()
        self._by_addr: dict[str, OrderedDict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def admit(self, key: str, address: str, conn: Any) -> list[Any]:
        """Count ``conn`` in; returns the waiting connections to drop (the oldest) to stay within the caps."""
        mine = self._by_addr.setdefault(address, OrderedDict())
        mine[key] = conn
        self._all[key] = conn
        drop: list[Any] = []
        while len(mine) > self.max_per_address:
            old_key, old = mine.popitem(last=False)
            self._all.pop(old_key, None)
            drop.append(old)
        while len(self._all) > self.max_total:
            old_key, old = self._all.popitem(last=False)
            for per in self._by_addr.values():
                per.pop(old_key, None)
            drop.append(old)
        return drop

    def release(self, key: str, address: str) -> None:
        """The handshake ended (in or out)."""
        self._all.pop(key, None)
        mine = self._by_addr.get(address)
        if mine is not None:
            mine.pop(key, None)
            if not mine:
                del self._by_addr[address]
