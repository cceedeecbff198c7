"""The gateway's use of Python's cyclic collector, start to exit, in one place (issue #45).

A gateway process switches the collector at four moments, each here:

1. ``pause_for_start``: ``remoteclaw gateway run`` turns it off while the server's modules load (they were
   about 200 collections of a growing heap, some 50 ms of a start);
2. ``settle``: a moment after serving starts, one collection, what survived frozen, the collector back on;
3. ``SurvivorFreezer`` while serving, and ``collect_all`` when a crowd leaves (``heap_trim``);
4. ``freeze_for_exit``: an ending process freezes its heap, so the interpreter's exit does not walk it.

Why the freezer: every connection keeps a hundred or so objects the cyclic collector tracks (its socket protocol,
parser, tasks and their frames). A full collection walks all of them, and Python starts one each time what
survived the younger generations reaches a quarter of the old one. While 10,000 clients connected, that was 13
full collections, the last ones 0.8-1.3 s each (7 s of the 15 s the crowd took to connect), and one of them
landed in the middle of 10,000 ``health`` calls (docs/benchmarks.md).

``SurvivorFreezer`` moves what survived a slow full collection out of the collector's reach (``gc.freeze``), so
the next ones walk only what was made since: the crowd's objects are walked about once, not at every collection.
What is frozen is still freed when its last reference goes; only a frozen object that dies inside a reference
cycle waits, for ``collect_all``: run when a crowd leaves (``heap_trim``), and every ``reclaim_every_s`` while
anything was frozen. A small gateway never has a slow collection, and so never freezes anything.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

import structlog

__all__ = ["RECLAIM_EVERY_S", "SLOW_S", "SurvivorFreezer", "collect_all", "freeze_for_exit", "pause_for_start",
           "settle"]

log = structlog.get_logger("gateway.server.gc_freezer")

SLOW_S = 0.1
"""A full collection that took longer than this freezes its survivors (about 3,000 connected clients here)."""
RECLAIM_EVERY_S = 600.0
"""How often everything, the frozen included, is collected once something was frozen (one long pause then)."""


def pause_for_start() -> None:
    """No cyclic collections while the server's modules load; ``settle`` turns the collector back on."""
    gc.disable()


def settle() -> None:
    """Collect once, freeze what survived and turn the cyclic collector on.

    Everything loaded by then (modules, config, routes) lives as long as the process: frozen, it is out of the
    collector's reach, so a full collection under load scans only what requests made. It runs a moment after
    the server started answering, not before: the collection takes tens of milliseconds of a start, and the
    collector is off until then when ``remoteclaw gateway run`` started us (``pause_for_start``).
    """
    started = time.perf_counter()
    collected = gc.collect()
    gc.freeze()
    gc.enable()
    log.info("heap settled", collected=collected, frozen=gc.get_freeze_count(),
             ms=round((time.perf_counter() - started) * 1000, 1))


def freeze_for_exit() -> None:
    """The process is ending: what is left needs no more collecting. Frozen, it is skipped by the collections
    of the interpreter's own shutdown, which otherwise walk a heap never settled (stopped within a second of
    starting: 0.2 s more on Ctrl-C)."""
    gc.freeze()


def collect_all() -> float:
    """Collect every generation, the frozen objects included, then freeze what survived; returns the seconds."""
    started = time.perf_counter()
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    return time.perf_counter() - started


class SurvivorFreezer:
    """Freezes the survivors of each slow full collection; collects them all again every ``reclaim_every_s``."""

    def __init__(self, *, slow_s: float = SLOW_S, reclaim_every_s: float = RECLAIM_EVERY_S,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.slow_s = slow_s
        self.reclaim_every_s = reclaim_every_s
        self._clock = clock
        self._started = 0.0
        self._own = False  # inside collect_all: its collection is not one to freeze after
        self.freezes = 0
        """Slow full collections whose survivors were frozen."""
        self.reclaims = 0
        self._timer: asyncio.TimerHandle | None = None

    def install(self) -> None:
        """Start timing full collections; the first freeze on a running loop schedules the reclaim."""
        if self._on_collection not in gc.callbacks:
            gc.callbacks.append(self._on_collection)

    def close(self) -> None:
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2 or self._own:
            return
        if phase == "start":
            self._started = self._clock()
            return
        took = self._clock() - self._started
        if took < self.slow_s:
            return
        gc.freeze()  # the survivors: what is frozen is still freed by its reference count
        self.freezes += 1
        log.debug("froze the survivors of a slow collection", seconds=round(took, 3))  # (counting them walks them)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a collection outside the loop (start-up, tests): the next one schedules it
            return
        self._timer = loop.call_later(self.reclaim_every_s, self.reclaim)

    def reclaim(self) -> None:
        """Collect everything, the frozen too (what died in a cycle since it was frozen), and freeze again."""
        self._timer = None
        self._own = True
        try:
            took = collect_all()
        finally:
            self._own = False
        self.reclaims += 1
        log.info("collected the frozen objects", seconds=round(took, 3))
