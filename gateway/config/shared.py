"""One config for every replica of a deployment on a shared (PostgreSQL) database.

Several gateways behind one address must run the same agents, people, channels, sandbox and budgets, or a turn
the balancer sends to another replica runs another agent. On PostgreSQL the config document lives in the
``shared_config`` row (one row, with a version raised by one at each change); each replica reads it at start
and polls its version every ``POLL_INTERVAL_S``, applying a newer one as a hand edit of the file is applied
(``ConfigChanges.apply``, source ``replica``). A change made on any replica (``config.patch``/``set``/``apply``,
an edit of its file) is written to the row first, only if the row is still at the version this replica runs
(else the change is refused as ``CONFIG_HASH_MISMATCH``: another replica changed the config in between), then to
the file, which stays a mirror of the row that ``remoteclaw config`` and editors read.

The ``gateway`` section (how this process listens: bind, port, limits, Redis) stays each replica's own, and so do
environment overrides: they are applied by each replica on top of the document. A single gateway on SQLite
never reads or writes the row (``shared_config_for`` answers None): the file is the config, as before.

At start the file wins over the row only when it was edited while the gateway was stopped, i.e. its document
is not the one this state dir last synced (``remoteclaw.json.synced`` holds that version and hash).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from typing import TYPE_CHECKING, Any

import orjson
import structlog
from sqlalchemy import text

from gateway.config.model import ConfigError, hash_data, validate
from gateway.protocol import InvalidRequest

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gateway.config.model import ConfigStore
    from gateway.config.reload import ConfigChanges
    from gateway.store import Database

__all__ = ["LOCAL_SECTIONS", "POLL_INTERVAL_S", "SharedConfig", "shared_config_for"]

log = structlog.get_logger("gateway.config")

POLL_INTERVAL_S = 0.5
"""How often each replica reads the row's version; another replica's change is applied within about this."""

LOCAL_SECTIONS = frozenset({"gateway"})
"""Sections each replica keeps to itself (how it listens); the rest of the document is shared."""


def shared_part(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in LOCAL_SECTIONS}


def with_local(shared: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """The shared document with this replica's own sections put back."""
    return {**shared, **{k: v for k, v in local.items() if k in LOCAL_SECTIONS}}


def shared_config_for(db: Database, store: ConfigStore, replica_id: str) -> SharedConfig | None:
    """The shared config of a replica on PostgreSQL; None on SQLite (one process: the file is the config)."""
    return None if db.is_sqlite else SharedConfig(db, store, replica_id)


class SharedConfig:
    """The ``shared_config`` row: read at start, polled, and written (compare-and-set) on every change."""

    def __init__(self, db: Database, store: ConfigStore, replica_id: str) -> None:
        self._db = db
        self._store = store
        self._replica = replica_id
        self.version = 0
        """The row's version this replica runs (0: no row yet)."""
        self._task: asyncio.Task[None] | None = None

    @property
    def _synced_path(self) -> Path:
        return self._store.path.with_name(self._store.path.name + ".synced")

    def _read_synced(self) -> tuple[int, str]:
        try:
            got = json.loads(self._synced_path.read_text())
            return int(got["version"]), str(got["hash"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0, ""

    def _write_synced(self, doc_hash: str) -> None:
        tmp = self._synced_path.with_name(f".{self._synced_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": self.version, "hash": doc_hash}) + "\n")
        os.replace(tmp, self._synced_path)

    async def _row(self, *, version_only: bool = False) -> tuple[int, dict[str, Any] | None] | None:
        cols = "version" if version_only else "version, data"
        async with self._db.reading() as s:
            row = (await s.execute(text(f"SELECT {cols} FROM shared_config WHERE id = 1"))).first()
        if row is None:
            return None
        return int(row[0]), (None if version_only else orjson.loads(row[1]))

    async def join(self, changes: ConfigChanges) -> None:
        """At start, before the services read the config: make this replica run the row's document.

        No row yet: this replica's file seeds it. The file edited while the gateway was stopped: the edit is
        written to the row (as a change made here). Otherwise a row that differs from the file is adopted, and
        the file rewritten to mirror it.
        """
        store = self._store
        local = shared_part(store.data)
        local_hash = hash_data(local)
        row = await self._row()
        if row is None:
            await self._insert(local)
            log.info("shared config seeded from this replica's file", version=self.version)
            return
        version, doc = row
        assert doc is not None
        synced_version, synced_hash = self._read_synced()
        if hash_data(doc) == local_hash:
            self.version = version
        elif synced_hash and synced_hash != local_hash:
            # Edited by hand while stopped (since the last sync): the edit goes to every replica.
            self.version = version
            await self.publish(store.data, force=True)
            log.info("shared config: this replica's file was edited while it was stopped; published",
                     version=self.version, was=synced_version)
        else:
            data = with_local(doc, store.data)
            try:
                config = validate(data)
            except ConfigError as err:
                raise ConfigError(f"the shared config (version {version}, in the database) is not valid here: "
                                  f"{err.message}", details=err.details) from None
            self.version = version
            async with store.lock:
                await changes.apply(data, config, source="replica", write=True)
            log.info("shared config adopted at start", version=version)
        await asyncio.to_thread(self._write_synced, hash_data(shared_part(store.data)))

    async def _insert(self, doc: dict[str, Any]) -> None:
        async with self._db.session() as s:
            done = await s.execute(
                text("INSERT INTO shared_config (id, version, hash, data, updated_by, updated_at_ms) "
                     "VALUES (1, 1, :hash, :data, :by, :at) ON CONFLICT (id) DO NOTHING"),
                {"hash": hash_data(doc), "data": orjson.dumps(doc).decode(), "by": self._replica,
                 "at": int(time.time() * 1000)})
        if done.rowcount == 0:  # type: ignore[attr-defined]  # another replica seeded it first: use theirs
            row = await self._row()
            assert row is not None
            self.version = row[0]
            return
        self.version = 1

    async def publish(self, data: dict[str, Any], *, force: bool = False) -> None:
        """Write a change made on this replica to the row, if the row is still at the version this replica runs.

        Call with the store's lock held, before the file is written. A change of this replica's own sections
        only writes nothing. Raises ``InvalidRequest`` (``CONFIG_HASH_MISMATCH``) when another replica changed
        the config first: nothing is written, and the poll brings that change here within a second.
        """
        doc = shared_part(data)
        if not force and hash_data(doc) == hash_data(shared_part(self._store.data)):
            return
        async with self._db.session() as s:
            done = await s.execute(
                text("UPDATE shared_config SET version = version + 1, hash = :hash, data = :data, updated_by = :by, "
                     "updated_at_ms = :at WHERE id = 1 AND version = :known"),
                {"hash": hash_data(doc), "data": orjson.dumps(doc).decode(), "by": self._replica,
                 "at": int(time.time() * 1000), "known": self.version})
        if done.rowcount != 1:  # type: ignore[attr-defined]
            row = await self._row()
            if row is not None and row[1] is not None and hash_data(row[1]) == hash_data(doc):
                self.version = row[0]  # the same change, already there (a file another replica mirrored)
                return
            raise InvalidRequest("config changed on another replica since this one read it: call config.get and "
                                 "retry", details={"code": "CONFIG_HASH_MISMATCH", "currentHash": self._store.hash})
        self.version += 1
        await asyncio.to_thread(self._write_synced, hash_data(doc))

    # -- watching ------------------------------------------------------------------------------------------------

    def start(self, changes: ConfigChanges, stopping: Callable[[], bool]) -> None:
        self._task = asyncio.create_task(self._watch(changes, stopping), name="shared-config-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _watch(self, changes: ConfigChanges, stopping: Callable[[], bool]) -> None:
        while not stopping():
            await asyncio.sleep(POLL_INTERVAL_S)
            try:
                await self.check(changes)
            except Exception as exc:  # a database away for a while: the next poll tries again
                log.warning("shared config: cannot read the database", error=str(exc).splitlines()[0][:200])

    async def check(self, changes: ConfigChanges) -> None:
        """Apply the row if another replica raised its version."""
        head = await self._row(version_only=True)
        if head is None or head[0] <= self.version:
            return
        store = self._store
        async with store.lock:
            row = await self._row()
            if row is None or row[0] <= self.version:
                return
            version, doc = row
            assert doc is not None
            data = with_local(doc, store.data)
            try:
                config = validate(data)
            except ConfigError as err:
                self.version = version  # not again at every poll; the next change is tried afresh
                log.error("shared config refused here: keeping this replica's config", version=version,
                          error=err.message)
                return
            self.version = version
            if hash_data(data) != store.hash:
                await changes.apply(data, config, source="replica", write=True)
            await asyncio.to_thread(self._write_synced, hash_data(doc))
