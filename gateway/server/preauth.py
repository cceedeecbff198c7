"""Limits for sockets that have not logged in yet: how many may wait (their frames' size: ``rpc_socket``).

Before ``connect`` succeeds, a peer is a stranger. Its frames are capped at ``MAX_PREAUTH_FRAME_BYTES``
by the WebSocket parser itself (``gateway.server.rpc_socket``: a frame announcing more is refused from
its header, close 1009, before its payload is read), and the limit is lifted to
``gateway.maxPayload`` once the handshake succeeds. How many strangers may wait at once is capped
overall and per address (``PreAuthSockets``); at a cap the OLDEST waiting stranger is dropped, not the
newcomer, so a flood cannot keep a real client (who logs in within milliseconds) from getting in.

Only strangers that are idle on their side can be dropped (issue #28): one whose ``connect`` frame has
arrived (read, or still unread in its socket while the event loop is behind: ``rpc_socket``'s
``peer_spoke``) is waiting on US, and one younger than ``GRACE_S`` may simply not have had its challenge
written yet, because the event loop is busy with a thousand others. Before that rule a connect storm
of 1,000 real clients from one address (a proxy, a NAT, a benchmark) lost 301 of them to the
per-address cap. Over a cap with nobody droppable, newcomers are let in and the count is checked
again once the oldest is ``GRACE_S`` old (``sweep``): an idle flood is still cut back within a second.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["GRACE_S", "PreAuthSockets"]

GRACE_S = 2.0
"""A waiting stranger younger than this is never dropped to make room (its challenge may still be queued)."""


@dataclass(slots=True)
class _Waiting:
    conn: Any
    address: str
    since: float
    spoke: Callable[[], bool] | None


class PreAuthSockets:
    """The sockets still in their handshake, oldest first, overall and per address.

    Args:
        max_total: how many may wait at once on this gateway.
        max_per_address: how many from one address.
        grace_s: how young a stranger is safe from being dropped (``GRACE_S``).
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, max_total: int, max_per_address: int, *, grace_s: float = GRACE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_total = max_total
        self.max_per_address = max_per_address
        self.grace_s = grace_s
        self._clock = clock
        self._all: OrderedDict[str, _Waiting] = OrderedDict()
        self._by_addr: dict[str, OrderedDict[str, _Waiting]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def admit(self, key: str, address: str, conn: Any, spoke: Callable[[], bool] | None = None) -> list[Any]:
        """Count ``conn`` in; returns the waiting connections to drop (the oldest idle) to stay within the caps.

        ``spoke`` tells whether the peer has sent a whole message (``RpcSocket.peer_spoke``); without it the
        peer counts as idle. If the caps are still exceeded afterwards (nobody droppable yet), call
        ``sweep`` after ``overdue_in()`` seconds.
        """
        waiting = _Waiting(conn, address, self._clock(), spoke)
        self._by_addr.setdefault(address, OrderedDict())[key] = waiting
        self._all[key] = waiting
        return self.sweep()

    def sweep(self) -> list[Any]:
        """Drop the oldest idle strangers past their grace while a cap is exceeded; returns them."""
        drop: list[Any] = []
        now = self._clock()
        for address in [a for a, per in self._by_addr.items() if len(per) > self.max_per_address]:
            per = self._by_addr[address]
            excess = len(per) - self.max_per_address
            for key in self._droppable(per, now, excess):
                drop.append(self._forget(key).conn)
        excess = len(self._all) - self.max_total
        if excess > 0:
            for key in self._droppable(self._all, now, excess):
                drop.append(self._forget(key).conn)
        return drop

    def overdue_in(self) -> float | None:
        """Seconds until ``sweep`` may drop someone while over a cap; None when within the caps."""
        over = len(self._all) > self.max_total or any(len(p) > self.max_per_address for p in self._by_addr.values())
        if not over or not self._all:
            return None
        oldest = next(iter(self._all.values()))
        return max(0.0, oldest.since + self.grace_s - self._clock()) + 0.01

    def _droppable(self, table: OrderedDict[str, _Waiting], now: float, count: int) -> list[str]:
        keys: list[str] = []
        for key, waiting in table.items():
            if len(keys) >= count or now - waiting.since < self.grace_s:
                break  # oldest first: everyone after this one is younger still
            if waiting.spoke is not None and waiting.spoke():
                continue  # its connect is here: it waits on us, not we on it
            keys.append(key)
        return keys

    def _forget(self, key: str) -> _Waiting:
        waiting = self._all.pop(key)
        per = self._by_addr.get(waiting.address)
        if per is not None:
            per.pop(key, None)
            if not per:
                del self._by_addr[waiting.address]
        return waiting

    def release(self, key: str, address: str) -> None:
        """The handshake ended (in or out)."""
        if key in self._all:
            self._forget(key)
