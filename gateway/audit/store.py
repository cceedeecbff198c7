"""The ``audit_events`` table and its three queries: add a row, read a page newest first, drop old rows.

A row is written after the action it records has succeeded, in its own transaction: the log describes what
happened, and a failure to write it never undoes the action (``service.AuditService.record``). Rows are
read newest first by ``(at, id)``; ``at`` is indexed, which serves the time filters, the order and the
retention delete alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import BigInteger, Index, Integer, String, Text, and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base
from gateway.store.db import rowcount

__all__ = ["AuditEvent", "Cursor", "Filter", "insert", "page", "prune"]


class AuditEvent(Base):
    """One thing someone did: ``actor`` did ``action`` to ``target`` at ``at`` (ms), with ``details`` (JSON)."""

    __tablename__ = "audit_events"
    __table_args__ = (Index("ix_audit_events_at", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[int] = mapped_column(BigInteger)
    actor: Mapped[str] = mapped_column(String(200))
    actor_kind: Mapped[str] = mapped_column(String(16))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(512), nullable=True)
    details: Mapped[str | None] = mapped_column(Text, nullable=True)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "actor": self.actor, "actorKind": self.actor_kind,
                "action": self.action, "target": self.target,
                "details": orjson.loads(self.details) if self.details else None}


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page ended: the next page holds the rows strictly older than this one (``at``, then ``id``)."""

    at: int
    id: int

    def __str__(self) -> str:
        return f"{self.at}:{self.id}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """The cursor ``str`` wrote (``audit.log.list``'s ``nextBefore``); its params model checks the shape."""
        at, _, row = text.partition(":")
        return cls(int(at), int(row))


@dataclass(frozen=True, slots=True)
class Filter:
    """What ``audit.log.list`` asks for; every part optional. ``action`` and ``actor`` are prefixes."""

    since: int | None = None
    until: int | None = None
    action: str | None = None
    actor: str | None = None
    target: str | None = None
    before: Cursor | None = None


async def insert(s: AsyncSession, *, at: int, actor: str, actor_kind: str, action: str, target: str | None,
                 details: str | None) -> int:
    row = AuditEvent(at=at, actor=actor, actor_kind=actor_kind, action=action, target=target, details=details)
    s.add(row)
    await s.flush()
    return row.id


async def page(s: AsyncSession, where: Filter, limit: int) -> tuple[list[AuditEvent], Cursor | None]:
    """Up to ``limit`` rows newest first, and the cursor of the next page (None when this is the last)."""
    q = select(AuditEvent)
    if where.since is not None:
        q = q.where(AuditEvent.at >= where.since)
    if where.until is not None:
        q = q.where(AuditEvent.at < where.until)
    if where.action:
        q = q.where(AuditEvent.action.startswith(where.action, autoescape=True))
    if where.actor:
        q = q.where(AuditEvent.actor.startswith(where.actor, autoescape=True))
    if where.target is not None:
        q = q.where(AuditEvent.target == where.target)
    if where.before is not None:
        c = where.before
        q = q.where(or_(AuditEvent.at < c.at, and_(AuditEvent.at == c.at, AuditEvent.id < c.id)))
    rows = list((await s.execute(q.order_by(AuditEvent.at.desc(), AuditEvent.id.desc()).limit(limit + 1)))
                .scalars())
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, Cursor(rows[-1].at, rows[-1].id)


async def prune(s: AsyncSession, cutoff: int) -> int:
    """Delete the rows older than ``cutoff`` (ms); how many went."""
    return rowcount(await s.execute(delete(AuditEvent).where(AuditEvent.at < cutoff)))
