"""Notices when the event loop is held up, and says where.

Every client, run, cron job and node of a gateway shares one event loop, so a callback that holds it for
half a second delays all of them at once: ``health`` answers late, cron fires late, a node invoke times
out. Such stalls do not show in a profile of averages. A daemon thread sends the loop a heartbeat every
``interval_s``; when the loop has not run it after ``threshold_s``, the thread samples the loop thread's
stack until it does, then logs one warning with how long the loop was held and the places it was found
most often (our code first), and how much CPU the process had meanwhile: close to the time held means our
code was working (the places say which), far below it means the machine gave the process no CPU. It costs one
thread wake-up per interval and nothing on the loop.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from types import FrameType

import structlog

__all__ = ["LoopWatch", "Stall"]

log = structlog.get_logger("gateway.loop")

SAMPLE_EVERY_S = 0.01
"""How often a held loop's stack is sampled while the watch waits for the heartbeat."""

OWN_PACKAGES = ("gateway", "channels", "nodes", "plugins", "mcp_shim")
PLUGIN_MODULES = "remoteclaw_plugin_"
"""Plugins loaded from a folder are imported under this prefix (``gateway/plugin_host/discovery.py``)."""


class Stall:
    """One stall: how long the loop was held and where it was seen."""

    def __init__(self, blocked_ms: float, cpu_ms: float, places: list[tuple[str, int]]) -> None:
        self.blocked_ms = blocked_ms
        self.cpu_ms = cpu_ms  # CPU the process got meanwhile: far below blocked_ms means the machine was busy
        self.places = places  # "file:line function", how many samples found the loop there


class LoopWatch:
    """Heartbeats from a thread; logs a ``loop.stalled`` warning for each stall longer than ``threshold_s()``.

    ``threshold_s`` is read before each heartbeat, so a config change applies at once; 0 or less pauses the watch.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, *, threshold_s: Callable[[], float],
                 interval_s: float = 0.1, keep: int = 20) -> None:
        self.loop = loop
        self.threshold_s = threshold_s
        self.interval_s = interval_s
        self.stalls: list[Stall] = []  # the last ``keep``, newest last
        self._keep = keep
        self._loop_thread = threading.get_ident()  # built on the loop's thread
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loop-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            threshold = self.threshold_s()
            if threshold <= 0:
                continue
            beat = threading.Event()
            sent, cpu = time.monotonic(), time.process_time()
            try:
                self.loop.call_soon_threadsafe(beat.set)
            except RuntimeError:  # the loop is closed: the gateway is gone
                return
            if beat.wait(threshold):
                continue
            samples: Counter[str] = Counter()
            while not beat.wait(SAMPLE_EVERY_S):
                if self._stop.is_set():
                    return
                frame = sys._current_frames().get(self._loop_thread)
                if frame is not None:
                    samples[_place(frame)] += 1
            self._record(Stall((time.monotonic() - sent) * 1000, (time.process_time() - cpu) * 1000,
                               samples.most_common(3)))

    def _record(self, stall: Stall) -> None:
        self.stalls = [*self.stalls[-(self._keep - 1):], stall]
        log.warning("loop.stalled", blocked_ms=round(stall.blocked_ms), cpu_ms=round(stall.cpu_ms),
                    seen_at=[f"{place} ({count} samples)" for place, count in stall.places])


def _place(frame: FrameType) -> str:
    """The innermost frame of our own code (a plugin's included) in the callback the loop is running, as
    ``module:line function``, with the innermost frame after it when that is elsewhere (a library doing the
    work); else the innermost frame alone. The walk stops at the event loop: what called the loop is no answer."""
    ours: FrameType | None = None
    walk: FrameType | None = frame
    while walk is not None:
        module = walk.f_globals.get("__name__", "")
        if module.startswith("asyncio.") or module == "uvloop":
            break
        if module.split(".", 1)[0] in OWN_PACKAGES or module.startswith(PLUGIN_MODULES):
            ours = walk
            break
        walk = walk.f_back
    where = _describe(ours or frame)
    return where if ours is None or ours is frame else f"{where} → {_describe(frame)}"


def _describe(frame: FrameType) -> str:
    code = frame.f_code
    name = frame.f_globals.get("__name__", code.co_filename)
    return f"{name}:{frame.f_lineno} {code.co_name}"
