"""In-process taps on one session's events: what a door that is not a socket (the OpenAI-compatible API, A2A)
reads of a turn while it runs.

A socket client hears a turn through the broadcast (``chat`` deltas, ``agent`` events, approval requests). An HTTP
door that runs a turn for its caller needs the same events, for one session, inside the gateway. ``EventTaps``
is handed every event this replica delivers (``Gateway.deliver_local``) and copies those about a tapped session
into that tap's queue; with no tap open it costs one truth test per event. A tap is opened before the turn is
started, so nothing of it is missed, and closed when the door is done with it.

Which session an event is about is read by the one function the access model reads it with
(``gateway.access.doors.event_session``): the door then decides what it shows its caller, having been allowed
to write to that session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["EventTap", "EventTaps"]

TAP_QUEUE_MAX = 4096
"""Events held for a tap nobody reads fast enough; past it the oldest are dropped (deltas carry the whole text so
far, so a dropped one loses nothing the next does not repeat)."""


class EventTap:
    """One session's events as they happen: ``(event, payload)`` from ``get``."""

    __slots__ = ("_close", "_queue", "session_key")

    def __init__(self, session_key: str, close: Callable[[EventTap], None]) -> None:
        self.session_key = session_key
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(TAP_QUEUE_MAX)
        self._close = close

    def offer(self, event: str, payload: Any) -> None:
        if self._queue.full():
            self._queue.get_nowait()
        self._queue.put_nowait((event, payload))

    async def get(self) -> tuple[str, Any]:
        return await self._queue.get()

    def close(self) -> None:
        self._close(self)

    def __enter__(self) -> EventTap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EventTaps:
    """The open taps of one gateway start, by session key."""

    def __init__(self, session_of: Callable[[Any], str | None]) -> None:
        self._session_of = session_of
        self._taps: dict[str, list[EventTap]] = {}

    def __bool__(self) -> bool:
        return bool(self._taps)

    def open(self, session_key: str) -> EventTap:
        """A tap on ``session_key``'s events from now on; close it (or use it as a context manager) when done."""
        tap = EventTap(session_key, self._remove)
        self._taps.setdefault(session_key, []).append(tap)
        return tap

    def _remove(self, tap: EventTap) -> None:
        taps = self._taps.get(tap.session_key)
        if taps is None:
            return
        if tap in taps:
            taps.remove(tap)
        if not taps:
            del self._taps[tap.session_key]

    def offer(self, event: str, payload: Any) -> None:
        """One event this replica delivers: copied to the taps of the session it is about."""
        key = self._session_of(payload)
        if key is None:
            return
        for tap in self._taps.get(key, ()):
            tap.offer(event, payload)
