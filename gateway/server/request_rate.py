"""Per-connection request rate: a token bucket that every request of one socket takes from (issue #51, item 7).

Why: one authenticated client (any run token will do: ``health`` is baseline) could pipeline requests as fast as
its socket carries them and have the gateway answer every one. The bucket holds ``burst`` tokens and refills at
``per_second``; a request that finds it empty is answered ``UNAVAILABLE`` with ``retryable: true``,
``retryAfterMs`` and ``details.code: "RATE_LIMITED"`` (OpenClaw's shape for a refusal one may retry), without
running. It is counted wherever a request is decided: as its frame is read (inline answers) or by the
connection's reading task. Why no library: a bucket per socket is two floats and one clock read, on the path of
every ``health``; the libraries (``limits``, ``aiolimiter``, ``pyrate-limiter``) key shared storage by name or
make callers await, which costs more than the bucket itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from gateway.protocol import Unavailable

__all__ = ["RequestRate", "rate_limited"]


class RequestRate:
    """One connection's token bucket. ``per_second`` 0 means no limit.

    Args:
        per_second: the sustained rate, in requests per second.
        burst: how many requests may come at once after a quiet while (the bucket's size).
        clock: monotonic seconds (tests pass a fake).
    """

    __slots__ = ("_clock", "_stamp", "_tokens", "burst", "per_second")

    def __init__(self, per_second: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_second = per_second
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock()

    def _refill(self) -> float:
        now = self._clock()
        tokens = min(self.burst, self._tokens + (now - self._stamp) * self.per_second)
        self._tokens, self._stamp = tokens, now
        return tokens

    def wait(self) -> float:
        """Seconds until a request may be taken (0: now); takes nothing."""
        if self.per_second <= 0:
            return 0.0
        tokens = self._refill()
        return 0.0 if tokens >= 1 else (1 - tokens) / self.per_second

    def take(self) -> float:
        """Take a request's token: 0 when taken, else the seconds to wait (and nothing is taken)."""
        if self.per_second <= 0:
            return 0.0
        tokens = self._refill()
        if tokens >= 1:
            self._tokens = tokens - 1
            return 0.0
        return (1 - tokens) / self.per_second


def rate_limited(wait_s: float, rate: RequestRate) -> Unavailable:
    """The refusal of a request over this connection's rate (``gateway.requestRate``)."""
    return Unavailable(
        f"rate limited: more than {rate.per_second:g} requests per second (burst {rate.burst}) on this "
        "connection (gateway.requestRate)",
        retryable=True, retry_after_ms=max(1, math.ceil(wait_s * 1000)), details={"code": "RATE_LIMITED"})
