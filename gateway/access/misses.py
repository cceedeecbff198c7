"""Throttled look-ups of credentials shaped like ours that no replica issued (run tokens, model stand-ins)."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["MissThrottle"]


class MissThrottle:
    """Credentials this replica does not hold, looked up in the database, counted per client address: past
    ``limit`` misses within ``window_s`` that address gets no more look-ups until the window has passed (a refusal,
    without a read). Run tokens and model stand-ins are 256 random bits, so a client missing again and again is
    guessing, and its guesses must not cost a database read each; a node turn calls with live ones and is never
    counted."""

    def __init__(self, limit: int = 20, window_s: float = 60.0, *, clock: Callable[[], float] = time.monotonic,
                 max_addresses: int = 10_000) -> None:
        self._limit = limit
        self._window = window_s
        self._clock = clock
        self._max = max_addresses
        self._misses: dict[str, tuple[float, int]] = {}
        """Address -> (when its window began, misses in it)."""

    def blocked(self, address: str) -> bool:
        entry = self._misses.get(address)
        if entry is None:
            return False
        if self._clock() - entry[0] >= self._window:
            del self._misses[address]
            return False
        return entry[1] >= self._limit

    def miss(self, address: str) -> None:
        now = self._clock()
        began, count = self._misses.get(address, (now, 0))
        if now - began >= self._window:
            began, count = now, 0
        if address not in self._misses and len(self._misses) >= self._max:
            self._misses = {a: e for a, e in self._misses.items() if now - e[0] < self._window}
            if len(self._misses) >= self._max:  # many addresses at once: the oldest window goes
                self._misses.pop(next(iter(self._misses)))
        self._misses[address] = (began, count + 1)
