"""One client's WebSocket: an outbound queue with a byte budget, event sequence numbers, in-flight requests.

Every frame a connection sends goes through ``send``: a single writer task drains the queue, so
a slow client only ever fills its own buffer. Events that can be skipped (ticks, presence) are
dropped once half the budget is used; when the budget is exhausted the connection is closed
with 1008 ("slow consumer") instead of holding up anyone else or growing without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import structlog
from starlette.websockets import WebSocket

from gateway.protocol import (
    CLOSE_INTERNAL,
    CLOSE_POLICY,
    CLOSE_PROTOCOL,
    CLOSE_RESTART,
    CLOSE_TOO_BIG,
    close_reason,
    encode,
    event_frame,
)
from gateway.rpc import Caller

__all__ = ["CLOSE_INTERNAL", "CLOSE_POLICY", "CLOSE_PROTOCOL", "CLOSE_RESTART", "CLOSE_TOO_BIG", "Connection"]

log = structlog.get_logger("gateway.connection")

SLOW_CLOSE_GRACE_S = 5.0
"""After closing a slow consumer, how long its socket may linger before it is aborted."""


class Connection:
    """The send side of one socket, plus what the handshake learned about the peer."""

    def __init__(self, ws: WebSocket, conn_id: str, remote: str, *, max_buffered: int) -> None:
        self.ws = ws
        self.conn_id = conn_id
        self.remote = remote
        self.max_buffered = max_buffered
        self.caller: Caller | None = None
        self.protocol = 0
        self.connected_at_ms = 0
        self.seq = 0
        self.buffered = 0
        self.closed = False
        self._queue: asyncio.Queue[str | tuple[int, str]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self.tasks: set[asyncio.Task[Any]] = set()

    def start_writer(self) -> None:
        self._writer = asyncio.create_task(self._write_loop(), name=f"ws-writer-{self.conn_id}")

    async def _write_loop(self) -> None:
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, tuple):  # a close request, queued behind what was already sent
                    code, reason = item
                    with contextlib.suppress(Exception):
                        await self.ws.close(code=code, reason=reason)
                    return
                # uvicorn's send waits while the transport is paused (the peer is not reading):
                # that wait is what makes ``buffered`` grow for a slow consumer.
                await self.ws.send_text(item)
                self.buffered -= len(item)
        except Exception:  # the peer went away; the reader side notices and cleans up
            self.closed = True

    def send(self, frame: dict[str, Any]) -> bool:
        """Queue a frame; returns False when the connection is closed or was just closed as too slow."""
        if self.closed:
            return False
        return self.send_text(encode(frame))

    def send_text(self, text: str) -> bool:
        """Queue an already encoded frame (see ``send``)."""
        if self.closed:
            return False
        size = len(text)
        if self.buffered + size > self.max_buffered:
            log.warning("closing slow consumer", conn_id=self.conn_id, buffered=self.buffered)
            self._close_slow()
            return False
        self.buffered += size
        self._queue.put_nowait(text)
        return True

    def send_event(self, event: str, payload: Any = None, *, drop_if_slow: bool = False) -> bool:
        """Send an event with the next sequence number. ``drop_if_slow`` skips it rather than closing."""
        if self.closed:
            return False
        if drop_if_slow and self.buffered > self.max_buffered // 2:
            return False
        self.seq += 1
        return self.send(event_frame(event, payload, self.seq))

    def send_event_head(self, head: str, *, drop_if_slow: bool = False) -> bool:
        """``send_event`` for a frame encoded once for many sockets (``protocol.event_head``)."""
        if self.closed:
            return False
        if drop_if_slow and self.buffered > self.max_buffered // 2:
            return False
        self.seq += 1
        return self.send_text(f"{head}{self.seq}}}")

    def close(self, code: int, reason: str = "") -> None:
        """Close after the frames already queued have been written."""
        if self.closed:
            return
        self.closed = True
        self._queue.put_nowait((code, close_reason(reason)))

    def _close_slow(self) -> None:
        """Close a peer that stopped reading, without waiting for its buffer to drain (it never will).

        The writer is parked inside uvicorn's ``send`` waiting for the transport to become writable,
        so a normal close would queue behind it forever. We stop the writer (it is between frames,
        so the stream stays well formed), append the close frame straight to the transport, wake our
        reader with a disconnect, and abort the socket if the peer has not finished closing in a few
        seconds. This reaches into uvicorn's ``websockets-sansio`` protocol (the implementation
        ``gateway.server`` pins); with any other server it falls back to an ordinary close.
        """
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.cancel()
        proto = getattr(getattr(self.ws, "_send", None), "__self__", None)
        transport = getattr(proto, "transport", None)
        wsproto = getattr(proto, "conn", None)
        if proto is None or transport is None or wsproto is None or not hasattr(proto, "close_sent"):
            self._queue.put_nowait((CLOSE_POLICY, "slow consumer"))
            self.start_writer()
            return
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            if not proto.close_sent and not transport.is_closing():
                wsproto.send_close(CLOSE_POLICY, "slow consumer")
                transport.write(b"".join(wsproto.data_to_send()))
                proto.close_sent = True
                proto.close_timer = loop.call_later(SLOW_CLOSE_GRACE_S, transport.abort)
            proto.queue.put_nowait({"type": "websocket.disconnect", "code": CLOSE_POLICY, "reason": "slow consumer"})

    async def wait_closed(self, timeout: float = 2.0) -> None:
        if self._writer is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._writer), timeout)

    async def abort(self) -> None:
        """Stop the writer and any in-flight handlers (on disconnect)."""
        self.closed = True
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
        for task in list(self.tasks):
            task.cancel()
