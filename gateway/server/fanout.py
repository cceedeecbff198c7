"""Sends one event to many sockets a slice at a time, so a broadcast never holds the event loop for long.

Writing a frame to a loopback socket costs the sender the receiver's side of the TCP stack too: tens of
microseconds each, so an event for a thousand clients is tens of milliseconds of one callback on a quiet
machine, and far longer on a busy one (the soak in docs/benchmarks.md saw the loop held 0.8 s there). Every
``health``, cron timer and node answer waits behind it. Here a broadcast to more than ``SLICE`` sockets is
written ``SLICE`` sockets at a time, with the loop free in between.

Order is kept: while sliced broadcasts are pending, every later one queues behind them (first in, first
out), so each socket gets the events in the order they were broadcast. A reply to a request is not an event
and is never held back by them.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

import structlog

__all__ = ["SLICE", "FanOut"]

log = structlog.get_logger("gateway.server.fanout")

SLICE = 128
"""Sockets written per slice: a few milliseconds of work on a quiet machine."""


class Receiver(Protocol):
    closed: bool

    def send_event_head(self, head: str, *, drop_if_slow: bool = False) -> bool: ...


class FanOut:
    """The broadcasts of one gateway start; ``spawn`` runs the background writer (``Gateway.spawn``)."""

    def __init__(self, spawn: Callable[[Coroutine[Any, Any, None], str], asyncio.Task[None]], *,
                 slice_size: int = SLICE) -> None:
        self._spawn = spawn
        self.slice_size = slice_size
        self._pending: deque[tuple[str, Sequence[Receiver], bool]] = deque()
        self._writer: asyncio.Task[None] | None = None

    def send(self, head: str, receivers: Sequence[Receiver], *, drop_if_slow: bool = False) -> int:
        """Send the event (``protocol.event_head``) to each receiver; returns how many it went or goes to.

        A small broadcast with nothing queued is written at once, as before; a larger one, or any one while
        others wait, is queued and counted by the receivers still open now.
        """
        if not self._pending and len(receivers) <= self.slice_size:
            return _write(head, receivers, drop_if_slow)
        self._pending.append((head, receivers, drop_if_slow))
        if self._writer is None:
            self._writer = self._spawn(self._write_pending(), "event-fan-out")
        return sum(1 for r in receivers if not r.closed)

    @property
    def queued(self) -> int:
        """Broadcasts not yet written to every socket."""
        return len(self._pending)

    async def _write_pending(self) -> None:
        try:
            while self._pending:
                head, receivers, drop_if_slow = self._pending[0]
                for start in range(0, len(receivers), self.slice_size):
                    _write(head, receivers[start:start + self.slice_size], drop_if_slow)
                    await asyncio.sleep(0)  # requests, timers and answers waiting on the loop go first
                self._pending.popleft()
        finally:
            self._writer = None


def _write(head: str, receivers: Sequence[Receiver], drop_if_slow: bool) -> int:
    sent = 0
    for receiver in receivers:
        try:
            sent += receiver.send_event_head(head, drop_if_slow=drop_if_slow)
        except Exception:  # one socket's failure is its own (its reader finds out); the others still get it
            log.exception("event not sent to one socket")
    return sent
