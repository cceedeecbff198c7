"""A memory ceiling for the bytes queued to all clients together (``gateway.maxBufferedBytesTotal``).

Each connection already has its own budget (``gateway.maxBufferedBytes``, see ``gateway.server.connection``),
but that budget multiplies by the number of sockets: 1,000 clients that stop reading (stuck tabs,
paused phones) could hold 8 GiB between them. This is the process-wide ceiling beside it:

* once half of it is used, skippable events (``tick``, ``presence``) are dropped for every client that
  is behind (has anything queued);
* a frame that would take the total past it first closes the slowest consumers (the most bytes waiting,
  close 1008 "slow consumer") until it fits, and their queues are released at once.

The accounting is plain integers updated by the connections as they queue and write; no I/O here.
"""

from __future__ import annotations

from typing import Protocol

import structlog

__all__ = ["OutboundBudget", "Sender"]

log = structlog.get_logger("gateway.server.send_budget")


class Sender(Protocol):
    """What the budget needs of one client's send side (``connection.Connection``, which charges the budget as it
    queues and writes): its id, how far behind it is, and closing it as a slow consumer."""

    @property
    def conn_id(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def backlog(self) -> int: ...
    def sample(self) -> None: ...
    def close_slow(self) -> None: ...


class OutboundBudget:
    """Bytes queued across every connection of this process, and the ceiling for them.

    Args:
        limit: the most bytes that may wait to be written to clients, all together.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        """Bytes on their way right now: every connection's queue, plus what its transport held when last
        sampled (``Connection.backlog``)."""
        self.closed_slow = 0
        """Consumers closed because the total was full (diagnostics)."""
        self._conns: dict[str, Sender] = {}

    def register(self, conn: Sender) -> None:
        self._conns[conn.conn_id] = conn

    def unregister(self, conn: Sender) -> None:
        self._conns.pop(conn.conn_id, None)

    def crowded(self) -> bool:
        """Half the ceiling is used: skippable events are dropped for every client that is behind."""
        return self.total > self.limit // 2

    def make_room(self, size: int, asking: Sender) -> bool:
        """Close the slowest consumers until ``size`` more bytes fit; False if ``asking`` was one of them.

        The slowest is the connection with the most bytes waiting (queued, or unsent in its transport): it
        has fallen furthest behind, and
        closing it frees the most memory. ``asking`` may be it (a client that stopped reading while its
        own requests pile up).
        """
        for conn in self._conns.values():  # their transports drained meanwhile without telling us
            conn.sample()
        while self.total + size > self.limit:
            slowest = max(
                (c for c in self._conns.values() if not c.closed and c.backlog > 0),
                key=lambda c: c.backlog, default=None,
            )
            if slowest is None:
                break  # nothing queued anywhere: one frame bigger than the ceiling still goes out
            log.warning("closing slow consumer: outbound budget full", conn_id=slowest.conn_id,
                        backlog=slowest.backlog, total=self.total, limit=self.limit)
            self.closed_slow += 1
            slowest.close_slow()
            if slowest is asking:
                return False
        return True
