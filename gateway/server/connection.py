"""One client's WebSocket: an outbound queue with a byte budget, event sequence numbers, in-flight requests.

Every frame a connection sends goes through ``send_text``, and is framed by websockets' sans-I/O protocol under
our own socket driver (``gateway.server.rpc_socket``). While the socket keeps up, a frame is written
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
from gateway.server.rpc_socket import RpcSocket
from gateway.server.send_budget import OutboundBudget

__all__ = ["CLOSE_INTERNAL", "CLOSE_POLICY", "CLOSE_PROTOCOL", "CLOSE_RESTART", "CLOSE_TOO_BIG", "Connection"]

log = structlog.get_logger("gateway.server.connection")

SLOW_CLOSE_GRACE_S = 5.0
"""After closing a slow consumer, how long its socket may linger before it is aborted."""

BATCH_BYTES = 64 * 1024
"""The most queued bytes the writer hands the transport at once (then it checks for backpressure again)."""


class Connection:
    """The send side of one socket, plus what the handshake learned about the peer."""

    def __init__(self, socket: RpcSocket, conn_id: str, remote: str, *, max_buffered: int,
                 budget: OutboundBudget | None = None) -> None:
        self.socket = socket
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
        if self.closed:
            return
        now = self.socket.write_buffer_size()
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
                        self.socket.close(*self._close_request)
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                # Waits while the transport is paused (the peer is not reading): that wait is
                # what makes ``buffered`` grow for a slow consumer.
                await self.socket.writable()
                self.socket.write(self._take(BATCH_BYTES))
                self.sample()
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
        if not self._queue and self.socket.ready():
            try:
                self.socket.write([text])
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
        straight to the transport (which also ends our reader), and abort the socket if the peer has
        not finished closing in a few seconds.
        """
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.cancel()
        self._drop_queue()
        self._forget_transport()  # aborted within SLOW_CLOSE_GRACE_S at most: count it as freed now
        self.socket.close(CLOSE_POLICY, "slow consumer", within=SLOW_CLOSE_GRACE_S, abort=True)

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
