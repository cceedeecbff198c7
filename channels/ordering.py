"""One chat's messages in order, different chats at once.

Chat libraries either handle one update at a time (python-telegram-bot by default: one chat's slow
download holds up every chat) or each event in its own task (discord.py: a message with a slow
attachment can be overtaken by the next one from the same person). ``KeyedLocks`` gives each chat
its own FIFO lock, kept only while some message of that chat is being handled. ``KeyedTasks`` runs
each message in a background task under that lock, for channels that receive in a loop or a webhook
and must not wait for the agent before taking the next message (Matrix, WhatsApp).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable

__all__ = ["KeyedLocks", "KeyedTasks"]


class KeyedLocks:
    def __init__(self) -> None:
        self._held: dict[Hashable, tuple[asyncio.Lock, int]] = {}  # key -> (lock, holders and waiters)

    def __len__(self) -> int:
        return len(self._held)

    @contextlib.asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        """Wait for earlier holders of ``key`` (first come, first served), then run the block."""
        lock, users = self._held.get(key, (asyncio.Lock(), 0))
        self._held[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._held[key]
            if users <= 1:
                del self._held[key]
            else:
                self._held[key] = (lock, users - 1)


class KeyedTasks:
    """Work started in the background: one key's in the order it was started, different keys side by side."""

    def __init__(self) -> None:
        self._locks = KeyedLocks()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, key: Hashable, work: Callable[[], Awaitable[None]], name: str) -> None:
        async def run() -> None:
            async with self._locks.hold(key):
                await work()

        task = asyncio.create_task(run(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def cancel(self) -> None:
        """End all of it (a channel stopping), waiting until each task has ended."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
