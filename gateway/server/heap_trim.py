"""Give memory back to the system after a crowd of clients has left (issue #28).

Every connection costs the process buffers, tasks and parser state. When hundreds leave, Python frees
those objects, but glibc's allocator keeps the freed pages in its arenas, so the resident size stays at
its peak (1,000 clients: 114 -> 148 MB, and still 149 MB after all had gone). ``ReleaseAfterCrowd``
watches the number of connections and, once it has fallen well below its recent peak and stayed quiet
for a moment, collects garbage and asks glibc to return its free pages (``malloc_trim``). On other C
libraries (musl, macOS) the trim is skipped; the collection still runs.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import Callable

import structlog

from gateway.server.gc_freezer import collect_all

__all__ = ["QUIET_S", "ReleaseAfterCrowd", "trim"]

log = structlog.get_logger("gateway.server.heap_trim")

QUIET_S = 2.0
"""How long after the last disconnect of a drop to release (a leaving crowd leaves over a few seconds)."""
MIN_DROP = 100
"""Connections that must have gone since the peak before releasing is worth a collection."""


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        fn = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn  # type: ignore[no-any-return]


_TRIM = _malloc_trim()


def trim() -> None:
    """Collect cycles (the frozen objects too: ``gateway.server.gc_freezer``), then return the allocator's free
    pages to the system (glibc only)."""
    collect_all()
    if _TRIM is not None:
        _TRIM(0)


class ReleaseAfterCrowd:
    """Calls ``trim`` once the connection count has dropped by ``MIN_DROP`` from its peak and is quiet."""

    def __init__(self, *, quiet_s: float = QUIET_S, min_drop: int = MIN_DROP) -> None:
        self.quiet_s = quiet_s
        self.min_drop = min_drop
        self.peak = 0
        self.releases = 0
        self._timer: asyncio.TimerHandle | None = None
        self._count = 0

    def changed(self, count: int) -> None:
        """The number of connections is now ``count``."""
        self._count = count
        self.peak = max(self.peak, count)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.peak - count >= self.min_drop:
            self._timer = asyncio.get_running_loop().call_later(self.quiet_s, self._release)

    def _release(self) -> None:
        self._timer = None
        log.info("returning memory after clients left", peak=self.peak, now=self._count)
        self.peak = self._count
        self.releases += 1
        trim()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
