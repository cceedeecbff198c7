"""One client's WebSocket: an outbound queue with a byte budget, event sequence numbers, in-flight requests.

Every frame a connection sends goes through ``send_text``. While the socket keeps up, a frame is written
straight to the transport, with no task switch (a broadcast to 1,000 clients is 1,000 writes, not 1,000
task wake-ups); once the peer stops reading (the transport pauses), frames wait in a queue that one
writer task per connection drains in batches when the socket is writable again. So a slow client only
ever fills its own buffer. Events that can be skipped (ticks, presence) are dropped once half the
budget is used; when the budget is exhausted the connection is closed with 1008 ("slow consumer")
instead of holding up anyone else or growing without bound. Beside this per-connection budget there
is one for the whole process (``gateway.server.send_budget``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import structlog
from starlette.websockets import WebSocket
from websockets.protocol import State

from gateway.dispatch.callers import Caller
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
from gateway.server.send_budget import OutboundBudget

__all__ = ["CLOSE_INTERNAL", "CLOSE_POLICY", "CLOSE_PROTOCOL", "CLOSE_RESTART", "CLOSE_TOO_BIG", "Connection"]

log = structlog.get_logger("gateway.server.connection")

SLOW_CLOSE_GRACE_S = 5.0
"""After closing a slow consumer, how long its socket may linger before it is aborted."""

BATCH_BYTES = 64 * 1024
"""The most queued bytes the writer hands the transport at once (then it checks for backpressure again)."""


class _Wire:
    """Direct access to uvicorn's ``websockets-sansio`` protocol under a Starlette ``WebSocket``.

    Why: going through ASGI ``send`` costs an await per frame; the sans-I/O protocol lets us frame
    any number of messages and hand the transport one write. ``gateway.server.serve`` pins this
    implementation; with any other server ``of`` returns None and frames go through ASGI.
    """

    __slots__ = ("by_hand", "conn", "proto", "transport")

    def __init__(self, proto: Any) -> None:
        self.proto = proto
        self.conn = proto.conn
        self.transport = proto.transport
        self.by_hand = hasattr(self.conn, "writes") and hasattr(self.conn, "extensions")
        """Frames made here (``write``); a websockets without those internals frames them itself."""

    @classmethod
    def of(cls, ws: WebSocket) -> _Wire | None:
        proto = getattr(getattr(ws, "_send", None), "__self__", None)
        if all(hasattr(proto, name) for name in ("conn", "transport", "writable", "close_sent", "disconnected")):
            return cls(proto)
        return None

    def ready(self) -> bool:
        """Writable right now: open, and the transport not pushing back."""
        p = self.proto
        return p.writable.is_set() and not p.close_sent and not p.disconnected and not self.transport.is_closing()

    async def writable(self) -> None:
        await self.proto.writable.wait()
        if self.proto.close_sent or self.proto.disconnected or self.transport.is_closing():
            raise ConnectionError("socket closed")

    def write(self, texts: list[str]) -> None:
        conn = self.conn
        if not self.by_hand or conn.state is not State.OPEN or conn.extensions or conn.writes:
            # websockets frames them (or refuses: the connection is closing)
            for text in texts:
                conn.send_text(text.encode())
            self.transport.write(b"".join(conn.data_to_send()))
            return
        parts: list[bytes] = []
        for text in texts:  # a server's text frame is a header and the bytes (RFC 6455 §5.2): no parser needed
            payload = text.encode()
            parts.append(_text_frame_head(len(payload)))
            parts.append(payload)
        self.transport.write(b"".join(parts))


_SMALL_HEADS = [bytes((0x81, size)) for size in range(126)]


def _text_frame_head(size: int) -> bytes:
    """The header of a final, unmasked text frame of ``size`` bytes: what websockets would write, made without
    its ``Frame`` object and serializer, which every answer used to cross."""
    if size < 126:
        return _SMALL_HEADS[size]
    if size < 65536:
        return b"\x81\x7e" + size.to_bytes(2, "big")
    return b"\x81\x7f" + size.to_bytes(8, "big")


class Connection:
    """The send side of one socket, plus what the handshake learned about the peer."""

    def __init__(self, ws: WebSocket, conn_id: str, remote: str, *, max_buffered: int,
                 budget: OutboundBudget | None = None) -> None:
        self.ws = ws
        self.conn_id = conn_id
        self.remote = remote
        self.max_buffered = max_buffered
        self.budget = budget if budget is not None else OutboundBudget(1 << 62)
        self.caller: Caller | None = None
        self.protocol = 0
        self.connected_at_ms = 0
        self.seq = 0
        self.buffered = 0
        """Bytes queued and not yet handed to the transport (counted in ``budget`` too)."""
        self.in_transport = 0
        """Bytes the transport held, unsent, when last looked at (``sample``; counted in ``budget`` too)."""
        self.closed = False
        self._queue: deque[str] = deque()
        self._close_request: tuple[int, str] | None = None
        self._wake = asyncio.Event()
        self._wire = _Wire.of(ws)
        self._writer: asyncio.Task[None] | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.budget.register(self)

    def start_writer(self) -> None:
        self._writer = asyncio.create_task(self._write_loop(), name=f"ws-writer-{self.conn_id}")

    def _take(self, limit: int) -> list[str]:
        batch: list[str] = []
        size = 0
        while self._queue and (not batch or size < limit):
            text = self._queue.popleft()
            batch.append(text)
            size += len(text)
        self._release(size)
        return batch

    def _release(self, size: int) -> None:
        self.buffered -= size
        self.budget.total -= size

    @property
    def backlog(self) -> int:
        """Bytes on their way to this peer that it has not taken yet: our queue plus the transport's buffer."""
        return self.buffered + self.in_transport

    def sample(self) -> None:
        """Bring ``in_transport`` (and the budget's total) up to date with the transport's buffer.

        A frame written while the socket kept up may still sit partly in the transport (a large
        ``hello-ok``, a burst to a peer that just stopped reading): that memory counts toward the
        budgets like our own queue. It drains without telling us, so it is re-read whenever this
        connection sends, and for everyone before the budget closes anybody.
        """
        if self._wire is None or self.closed:
            return
        now = self._wire.transport.get_write_buffer_size()
        self.budget.total += now - self.in_transport
        self.in_transport = now

    def _forget_transport(self) -> None:
        self.budget.total -= self.in_transport
        self.in_transport = 0

    async def _write_loop(self) -> None:
        try:
            while True:
                if not self._queue:
                    if self._close_request is not None:  # queued behind what was already sent
                        code, reason = self._close_request
                        with contextlib.suppress(Exception):
                            await self.ws.close(code=code, reason=reason)
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                if self._wire is not None:
                    # Waits while the transport is paused (the peer is not reading): that wait is
                    # what makes ``buffered`` grow for a slow consumer.
                    await self._wire.writable()
                    self._wire.write(self._take(BATCH_BYTES))
                    self.sample()
                else:
                    text = self._take(1)[0]
                    await self.ws.send_text(text)
        except Exception:  # the peer went away; the reader side notices and cleans up
            self.closed = True
            self._drop_queue()

    def send(self, frame: dict[str, Any]) -> bool:
        """Queue a frame; returns False when the connection is closed or was just closed as too slow."""
        if self.closed:
            return False
        return self.send_text(encode(frame))

    def send_text(self, text: str) -> bool:
        """Send an already encoded frame (see ``send``): at once if the socket keeps up, else queued."""
        if self.closed:
            return False
        size = len(text)
        self.sample()
        if self.backlog + size > self.max_buffered:
            log.warning("closing slow consumer", conn_id=self.conn_id, buffered=self.backlog)
            self.close_slow()
            return False
        budget = self.budget
        if budget.total + size > budget.limit and not budget.make_room(size, self):
            return False
        if not self._queue and self._wire is not None and self._wire.ready():
            try:
                self._wire.write([text])
                self.sample()
                return True
            except Exception:  # closing under us: let the writer find out, in order
                pass
        self._queue.append(text)
        self.buffered += size
        budget.total += size
        self._wake.set()
        return True

    def _skip(self, drop_if_slow: bool) -> bool:
        """Skip a droppable event: this client is half its budget behind, or behind at all while the
        process-wide budget is half used (clients that keep up still get their ticks)."""
        if not drop_if_slow:
            return False
        self.sample()
        if self.backlog == 0:
            return False
        return self.backlog > self.max_buffered // 2 or self.budget.crowded()

    def send_event(self, event: str, payload: Any = None, *, drop_if_slow: bool = False) -> bool:
        """Send an event with the next sequence number. ``drop_if_slow`` skips it rather than closing."""
        if self.closed or self._skip(drop_if_slow):
            return False
        self.seq += 1
        return self.send(event_frame(event, payload, self.seq))

    def send_event_head(self, head: str, *, drop_if_slow: bool = False) -> bool:
        """``send_event`` for a frame encoded once for many sockets (``protocol.event_head``)."""
        if self.closed or self._skip(drop_if_slow):
            return False
        self.seq += 1
        return self.send_text(f"{head}{self.seq}}}")

    def close(self, code: int, reason: str = "") -> None:
        """Close after the frames already queued have been written."""
        if self.closed:
            return
        self.closed = True
        self._close_request = (code, close_reason(reason))
        self._wake.set()

    def _drop_queue(self) -> None:
        """Forget what was never written, and give its bytes back to the budgets."""
        self._release(sum(len(t) for t in self._queue))
        self._queue.clear()

    def close_slow(self) -> None:
        """Close a peer that stopped reading, without waiting for its buffer to drain (it never will).

        The writer is parked waiting for the transport to become writable, so a normal close would
        queue behind it forever. We stop the writer (it is between frames, so the stream stays well
        formed), drop its queue (that memory is what the budgets are for), append the close frame
        straight to the transport, wake our reader with a disconnect, and abort the socket if the
        peer has not finished closing in a few seconds. With a server other than uvicorn's
        ``websockets-sansio`` (``_Wire``) it falls back to an ordinary close.
        """
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.cancel()
        self._drop_queue()
        self._forget_transport()  # aborted within SLOW_CLOSE_GRACE_S at most: count it as freed now
        wire = self._wire
        if wire is None:
            self._close_request = (CLOSE_POLICY, "slow consumer")
            self.start_writer()
            return
        proto, transport = wire.proto, wire.transport
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            if not proto.close_sent and not transport.is_closing():
                wire.conn.send_close(CLOSE_POLICY, "slow consumer")
                transport.write(b"".join(wire.conn.data_to_send()))
                proto.close_sent = True
                proto.close_timer = loop.call_later(SLOW_CLOSE_GRACE_S, transport.abort)
            proto.queue.put_nowait({"type": "websocket.disconnect", "code": CLOSE_POLICY, "reason": "slow consumer"})

    async def wait_closed(self, timeout: float = 2.0) -> None:
        if self._writer is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._writer), timeout)

    async def abort(self) -> None:
        """Stop the writer and any in-flight handlers (on disconnect), and release what was queued."""
        self.closed = True
        if self._writer is not None and not self._writer.done():
            self._writer.cancel()
        for task in list(self.tasks):
            task.cancel()
        self._drop_queue()
        self._forget_transport()
        self.budget.unregister(self)
