"""Replica liveness: when a gateway replica dies for good, a live one answers or explains its turns.

Each replica writes a heartbeat (``replica_heartbeats``) every third of the lease lifetime
(``REMOTECLAW_LEASE_TTL_MS``, 30 s by default). Each replica also looks, on the same beat, for
replicas whose heartbeat is older than one lifetime and that left turns ``queued`` or ``running``
(or replies unsent in the outbox). It adopts them one by one with a conditional update that names
the dead replica and requires that it still has not beaten, so two survivors never adopt the same
turn, and a replica that comes back in time keeps its own. Adopted turns go through the same
recovery as a replica's own after a restart (``recovery.recover_runs``): interrupted ones are
explained and retried once when safe, queued ones run in order; the session leases the dead replica
held have expired by then, so the turns can start.

A replica that stops cleanly marks its heartbeat stale, so the others adopt what its shutdown grace
left unfinished at their next beat instead of one lifetime later.

**Cut off is not dead.** While the database is away nobody can beat, so once it is back every heartbeat in it
is stale at once. A replica judges the others only after its own beats have gone through, unbroken, for a whole
lifetime (``dead_before_ms``): every live replica has beaten again by then, and only those that did not are
dead. Without that, the first replica to reach the database again adopted the running turns of the others
(and took their session leases, which stopped those turns), and marked their cron runs interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

import structlog
from sqlalchemy import select, update

from gateway.runs.lease import ttl_from_env
from gateway.sessions.store import AgentRun
from gateway.store.db import rowcount
from gateway.store.leases import ReplicaRepo

if TYPE_CHECKING:
    from gateway.composition.callable_types import Spawn
    from gateway.runs.recovery import Recovery
    from gateway.store import Database

__all__ = ["ReplicaWatch"]

log = structlog.get_logger("gateway.runs.replicas")

UNFINISHED = ("queued", "running")
FORGET_AFTER_MS = 7 * 24 * 3600 * 1000
"""Heartbeats of replicas gone this long are deleted (their turns were adopted long since)."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaWatch:
    """This replica's heartbeat, and the adoption of dead replicas' unfinished turns."""

    def __init__(self, db: Database, replica_id: str, recovery: Recovery, spawn: Spawn, *,
                 ttl_ms: int | None = None) -> None:
        self._db = db
        self._replica_id = replica_id
        self._recovery = recovery
        """What answers or explains the turns adopted from a dead replica."""
        self._spawn = spawn
        self.ttl_ms = ttl_ms or ttl_from_env()
        self.started_ms = _now_ms()
        self.adopted: dict[str, int] = {"runs": 0, "replies": 0}
        self._task: asyncio.Task[None] | None = None
        self._beating_since_ms: int | None = None
        """When this replica's current unbroken run of successful beats began (None: the last one failed)."""

    async def beat(self, *, at_ms: int | None = None) -> None:
        try:
            async with self._db.session() as s:
                await ReplicaRepo.beat(s, self._replica_id, now_ms=_now_ms() if at_ms is None else at_ms,
                                       started_ms=self.started_ms)
        except Exception:
            self._beating_since_ms = None
            raise
        if self._beating_since_ms is None:
            self._beating_since_ms = _now_ms()

    def dead_before_ms(self) -> int | None:
        """Replicas whose last beat is older than this are dead; None: this replica cannot tell yet, its own
        beats have not gone through for a whole lifetime (it was cut off from the database, or just started)."""
        now = _now_ms()
        if self._beating_since_ms is None or now - self._beating_since_ms < self.ttl_ms:
            return None
        return now - self.ttl_ms

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="replica-heartbeat")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        with contextlib.suppress(Exception):  # the others then adopt at once what the shutdown left
            await self.beat(at_ms=0)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_ms / 3000)
            try:
                await self.beat()
                await self.adopt()
            except Exception as exc:  # the database is away: try again on the next beat
                log.warning("replica heartbeat failed", error=str(exc))

    async def adopt(self) -> int:
        """Adopt the unfinished turns and unsent replies of replicas whose heartbeat stopped; how many turns."""
        from gateway.agents.outbox import OutboxRow

        me = self._replica_id
        cutoff = self.dead_before_ms()
        if cutoff is None:
            return 0
        async with self._db.session() as s:
            dead = await ReplicaRepo.stale(s, me, before_ms=cutoff)
            if not dead:
                return 0
            candidates = (await s.execute(select(AgentRun.id, AgentRun.replica_id).where(
                AgentRun.replica_id.in_(dead), AgentRun.status.in_(UNFINISHED))
                .order_by(AgentRun.created_at, AgentRun.id))).all()
            unsent = (await s.execute(select(OutboxRow.id, OutboxRow.replica_id).where(
                OutboxRow.replica_id.in_(dead), OutboxRow.sent_at.is_(None)))).all()
            await ReplicaRepo.forget(s, before_ms=_now_ms() - FORGET_AFTER_MS)
        claimed: list[str] = []
        for run_id, owner in candidates:
            async with self._db.session() as s:
                result = await s.execute(update(AgentRun).where(
                    AgentRun.id == run_id, AgentRun.replica_id == owner, AgentRun.status.in_(UNFINISHED),
                    ReplicaRepo.still_dead(str(owner), cutoff)).values(replica_id=me))
                if rowcount(result):
                    claimed.append(run_id)
        replies = 0
        for row_id, owner in unsent:
            async with self._db.session() as s:
                replies += rowcount(await s.execute(update(OutboxRow).where(
                    OutboxRow.id == row_id, OutboxRow.replica_id == owner, OutboxRow.sent_at.is_(None),
                    ReplicaRepo.still_dead(owner, cutoff)).values(replica_id=me)))
        if not claimed and not replies:
            return 0
        async with self._db.session() as s:
            rows = list((await s.execute(select(AgentRun).where(AgentRun.id.in_(claimed))
                                         .order_by(AgentRun.created_at, AgentRun.id))).scalars())
        done, notices = await self._recovery.recover_runs(rows)
        self.adopted["runs"] += len(rows)
        self.adopted["replies"] += replies
        log.info("adopted the unfinished turns of a replica that stopped beating", replicas=dead, turns=len(rows),
                 replies=replies, **done)
        # In the background (it waits for the chat accounts): the heartbeat must not miss a beat.
        self._spawn(self._recovery.send_notices(notices), "adoption-notices")  # and the adopted replies
        return len(rows)
