"""Session leases: which gateway replica may run a session's turn right now.

A lease is one row per session key naming its holder and an expiry (epoch milliseconds, from the
holder's clock). Taking it is a single ``INSERT … ON CONFLICT DO UPDATE … WHERE`` statement, which
both SQLite (3.24+) and PostgreSQL execute atomically: it succeeds when there is no row, when the
row has expired, or when the caller already holds it, and changes nothing otherwise. Expiry is an
integer rather than a timestamp so the comparison is the same on both engines.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, String, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store import upsert
from gateway.store.base import Base
from gateway.store.db import rowcount

__all__ = ["LeaseRepo", "ReplicaHeartbeat", "ReplicaRepo", "SessionLease"]


class SessionLease(Base):
    __tablename__ = "session_leases"

    session_key: Mapped[str] = mapped_column(String(512), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))  # "<replica id>/<run id prefix>"
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)  # epoch ms
    acquired_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms

    def to_dict(self) -> dict[str, Any]:
        return {"sessionKey": self.session_key, "holder": self.holder, "expiresAt": self.expires_at,
                "acquiredAt": self.acquired_at}


class LeaseRepo:
    """The statements behind ``gateway.runs.lease``; each call belongs to the caller's transaction."""

    @staticmethod
    async def acquire(s: AsyncSession, key: str, holder: str, *, now_ms: int, ttl_ms: int) -> bool:
        """Take the lease on ``key`` if it is free, expired or already ours; True when we hold it now."""
        table = SessionLease.__table__
        stmt = upsert.insert(s, table).values(session_key=key, holder=holder, expires_at=now_ms + ttl_ms,
                                            acquired_at=now_ms)
        stmt = stmt.on_conflict_do_update(
            index_elements=[table.c.session_key],
            set_={"holder": holder, "expires_at": now_ms + ttl_ms, "acquired_at": now_ms},
            where=(table.c.expires_at <= now_ms) | (table.c.holder == holder),
        )
        result = await s.execute(stmt)
        return bool(rowcount(result))

    @staticmethod
    async def renew(s: AsyncSession, key: str, holder: str, *, now_ms: int, ttl_ms: int) -> bool:
        """Push the expiry forward; False when the lease is no longer ours (it expired and was taken)."""
        result = await s.execute(
            update(SessionLease)
            .where(SessionLease.session_key == key, SessionLease.holder == holder)
            .values(expires_at=now_ms + ttl_ms)
        )
        return bool(rowcount(result))

    @staticmethod
    async def release(s: AsyncSession, key: str, holder: str) -> bool:
        result = await s.execute(
            delete(SessionLease).where(SessionLease.session_key == key, SessionLease.holder == holder)
        )
        return bool(rowcount(result))

    @staticmethod
    async def get(s: AsyncSession, key: str) -> SessionLease | None:
        return (await s.execute(select(SessionLease).where(SessionLease.session_key == key))).scalar_one_or_none()

    @staticmethod
    async def release_holder(s: AsyncSession, replica: str) -> int:
        """Drop every lease held by ``replica`` (its holders are ``<replica>/<run>``); how many."""
        result = await s.execute(delete(SessionLease).where(SessionLease.holder.startswith(replica + "/")))
        return rowcount(result)


class ReplicaHeartbeat(Base):
    """A gateway replica's sign of life: renewed while it runs, so the others can tell when it is gone."""

    __tablename__ = "replica_heartbeats"

    replica_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    beat_at: Mapped[int] = mapped_column(BigInteger, index=True)  # epoch ms
    started_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms


class ReplicaRepo:
    """Heartbeats, and the claim by which a live replica adopts a dead one's unfinished runs."""

    @staticmethod
    async def beat(s: AsyncSession, replica_id: str, *, now_ms: int, started_ms: int) -> None:
        table = ReplicaHeartbeat.__table__
        stmt = upsert.insert(s, table).values(replica_id=replica_id, beat_at=now_ms, started_at=started_ms)
        await s.execute(stmt.on_conflict_do_update(index_elements=[table.c.replica_id],
                                                   set_={"beat_at": now_ms, "started_at": started_ms}))

    @staticmethod
    async def stale(s: AsyncSession, me: str, *, before_ms: int) -> list[str]:
        """Replicas other than ``me`` whose last beat is older than ``before_ms``."""
        res = await s.execute(select(ReplicaHeartbeat.replica_id).where(
            ReplicaHeartbeat.replica_id != me, ReplicaHeartbeat.beat_at < before_ms))
        return list(res.scalars())

    @staticmethod
    def still_dead(replica_id: str, before_ms: int) -> Any:
        """A clause true while ``replica_id`` has not beaten since ``before_ms`` (part of every claim, so a
        replica that came back in the meantime keeps its runs)."""
        return ~select(ReplicaHeartbeat.replica_id).where(
            ReplicaHeartbeat.replica_id == replica_id, ReplicaHeartbeat.beat_at >= before_ms).exists()

    @staticmethod
    async def forget(s: AsyncSession, *, before_ms: int) -> int:
        """Drop the heartbeats of replicas gone since ``before_ms`` (nothing of theirs is left to adopt)."""
        return rowcount(await s.execute(delete(ReplicaHeartbeat).where(ReplicaHeartbeat.beat_at < before_ms)))
