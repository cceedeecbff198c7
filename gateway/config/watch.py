"""Notice hand edits of the config file and apply them, without taking the gateway down.

A small asyncio task polls the file's (mtime, size, inode) a few times a second; when that
signature changes and has settled, it reads and parses the file in a thread. What happens next:

- the parsed content hashes to what is already current: nothing (this is how the gateway's own
  writes, from ``config.set``/``patch``/``apply``, are told apart from a person's edit);
- it does not parse or validate: the running config stays, an error is logged saying so, and
  ``config.get`` reports ``valid: false`` with the reasons until a later edit fixes the file;
- it is valid: it is applied like any other change (``gateway.config.reload.apply_committed``):
  live sections at once, ``gateway``/``plugins`` by a restart in place.

A deleted file is ignored too (the running config stays): resetting every setting to its
default because a file was briefly moved away would be a surprise.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import structlog

from gateway.config import ConfigError, hash_data, validate

if TYPE_CHECKING:
    from collections.abc import Callable

    from gateway.config import ConfigStore
    from gateway.config.reload import ConfigChanges

__all__ = ["POLL_INTERVAL_S", "ConfigWatcher"]

log = structlog.get_logger("gateway.config")

POLL_INTERVAL_S = 0.25
"""How often the file is checked; a change is applied within about two intervals."""

Signature = tuple[int, int, int] | None


def _signature(store: ConfigStore) -> Signature:
    try:
        st = store.path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class ConfigWatcher:
    """Polls one gateway's config file and applies what changed."""

    def __init__(self, store: ConfigStore, changes: ConfigChanges, stopping: Callable[[], bool],
                 interval: float = POLL_INTERVAL_S) -> None:
        self._store = store
        self._changes = changes
        self._stopping = stopping
        self.interval = interval
        # Start from the file as it is now: the server has just loaded (or refused) it.
        self.last: Signature = _signature(store)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="config-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        store = self._store
        while not self._stopping():
            await asyncio.sleep(self.interval)
            sig = await asyncio.to_thread(_signature, store)
            if sig == self.last:
                continue
            # Let a writer finish (editors truncate, then write): wait until the signature holds still.
            await asyncio.sleep(min(self.interval, 0.1))
            settled = await asyncio.to_thread(_signature, store)
            if settled != sig:
                continue
            try:
                await self.check()
            except Exception:  # never let the watcher die: the next edit must still be seen
                log.exception("config watcher failed")

    async def check(self) -> None:
        """Read the file once and apply it if it differs from what runs."""
        store = self._store
        # Read under the lock: a config.patch in flight must not be overtaken by its own old file.
        async with store.lock:
            self.last = sig = await asyncio.to_thread(_signature, store)
            if sig is None:
                log.warning("config file disappeared; keeping the running config", path=str(store.path))
                return
            try:
                text = await asyncio.to_thread(store.path.read_text)
            except (OSError, UnicodeDecodeError) as exc:
                self._refuse(ConfigError(f"cannot read config file {store.path}: {exc}"))
                return
            try:
                data = store.parse(text)
                if hash_data(data) == store.hash:
                    store.file_issue = None  # our own write, or an edit back to what runs
                    return
                config = validate(data)
            except ConfigError as err:
                self._refuse(err)
                return
            await self._changes.apply(data, config, source="file", write=False)

    def _refuse(self, err: ConfigError) -> None:
        store = self._store
        errors: list[dict[str, Any]] = (err.details or {}).get("errors", [])
        store.file_issue = {"message": err.message, "errors": errors}
        log.error("config file edit refused; keeping the last good config", path=str(store.path),
                  error=err.message, errors=errors)
