"""Session leases: one turn per session across every replica sharing the database.

The run queue serializes a session's turns inside one process; this extends the guarantee to
several gateway replicas on one PostgreSQL database. Before a turn starts, the queue takes the
session's lease (a row in ``session_leases``); while the turn runs the lease is renewed every
third of its lifetime; when the turn ends the lease is deleted. A replica that finds the lease
held polls with backoff (the turn stays queued and keeps collecting messages meanwhile). If the
holder dies, its lease simply expires and the next replica takes it over.

On SQLite (one replica) the same code runs and costs two small statements per turn.

``REMOTECLAW_LEASE_TTL_MS`` sets the lifetime (default 30 s); replicas' clocks must agree to well
within it, which NTP gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from gateway.store.leases import LeaseRepo

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["DEFAULT_TTL_MS", "TTL_ENV", "Lease", "LeaseService", "LeaseUnavailable"]

log = structlog.get_logger("gateway.runs.lease")

TTL_ENV = "REMOTECLAW_LEASE_TTL_MS"
DEFAULT_TTL_MS = 30_000
MIN_TTL_MS = 1_000
GIVE_UP_AFTER_S = 30.0
"""How long the database may keep failing while a turn waits for its lease before the turn fails."""

MAX_POLL_S = 1.0


def _now_ms() -> int:
    return int(time.time() * 1000)


def ttl_from_env() -> int:
    raw = os.environ.get(TTL_ENV, "").strip()
    if not raw:
        return DEFAULT_TTL_MS
    try:
        ttl = int(raw)
    except ValueError:
        log.warning(f"{TTL_ENV} is not a whole number of milliseconds; using the default", value=raw)
        return DEFAULT_TTL_MS
    return max(ttl, MIN_TTL_MS)


class LeaseUnavailable(RuntimeError):
    """The database kept failing while we tried to take a lease: the turn cannot start safely."""


class Lease:
    """A held session lease; renews itself in the background until ``release``."""

    def __init__(self, service: LeaseService, key: str, holder: str, on_lost: Callable[[], None]) -> None:
        self.service = service
        self.key = key
        self.holder = holder
        self.lost = False
        self._on_lost = on_lost
        self._renewer = asyncio.create_task(self._renew_loop(), name=f"lease-{key}")

    async def _renew_loop(self) -> None:
        svc = self.service
        interval = svc.ttl_ms / 3000
        while True:
            await asyncio.sleep(interval)
            try:
                async with svc.db.session() as s:
                    ours = await LeaseRepo.renew(s, self.key, self.holder, now_ms=_now_ms(), ttl_ms=svc.ttl_ms)
            except Exception as exc:
                # Keep going: if nobody takes the lease meanwhile, the next renewal still succeeds.
                log.warning("could not renew a session lease", session_key=self.key, error=str(exc))
                continue
            if not ours:
                self.lost = True
                log.error("lost a session lease to another replica; stopping the turn", session_key=self.key)
                self._on_lost()
                return

    async def release(self) -> None:
        """Stop renewing and delete the row (an expired lease is harmless if the delete fails)."""
        self._renewer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._renewer
        if self.lost:
            return
        try:
            async with self.service.db.session() as s:
                await LeaseRepo.release(s, self.key, self.holder)
        except Exception as exc:
            log.warning("could not release a session lease; it will expire", session_key=self.key, error=str(exc))


class LeaseService:
    """Takes and keeps session leases for this replica's run queue."""

    def __init__(self, db: Database, replica_id: str, *, ttl_ms: int | None = None) -> None:
        self.db = db
        self.replica_id = replica_id
        """Who holds the leases this service takes (with the run's id)."""
        self.ttl_ms = ttl_ms or ttl_from_env()

    async def acquire(self, key: str, run_id: str, on_lost: Callable[[], None]) -> Lease:
        """Wait until this replica holds ``key``'s lease; ``on_lost`` runs if a renewal finds it taken.

        Raises:
            LeaseUnavailable: the database failed for ``GIVE_UP_AFTER_S`` in a row.
        """
        holder = f"{self.replica_id}/{run_id[:8]}"
        delay = 0.05
        waiting_logged = False
        failing_since: float | None = None
        while True:
            try:
                async with self.db.session() as s:
                    got = await LeaseRepo.acquire(s, key, holder, now_ms=_now_ms(), ttl_ms=self.ttl_ms)
                failing_since = None
            except Exception as exc:
                got = False
                now = time.monotonic()
                if failing_since is None:
                    failing_since = now
                    log.warning("could not take a session lease; retrying", session_key=key, error=str(exc))
                elif now - failing_since > GIVE_UP_AFTER_S:
                    raise LeaseUnavailable(f"the database kept failing while taking the session lease: {exc}") \
                        from exc
            if got:
                if waiting_logged:
                    log.info("session lease taken after waiting", session_key=key)
                return Lease(self, key, holder, on_lost)
            if not waiting_logged and failing_since is None:
                log.info("session is busy on another replica; waiting for its lease", session_key=key)
                waiting_logged = True
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 1.6, MAX_POLL_S)
