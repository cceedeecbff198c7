"""Stand-ins shared by the replicas (``model_standins``): a node turn's CLI calls its model at the address the node
reaches, which behind a balancer may be any replica, not the one running the turn.

One row per shared stand-in, keyed by its SHA-256 (never the stand-in), holding whose use it is (run, agent, person,
session, CLI family and upstream names: never a real credential, which each replica adds from its own config and
login), the issuing replica, an expiry (epoch milliseconds), and what other replicas saw the run use (``used_json``,
added to the issuer's own count when the run ends). The issuer deletes the row when the run ends; a replica starting
again drops its own; an expired row counts as gone and is pruned.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import BigInteger, Index, String, Text, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base

if TYPE_CHECKING:
    from gateway.store import Database

__all__ = ["SharedStandIn", "SharedStandIns", "Used"]


class SharedStandIn(Base):
    __tablename__ = "model_standins"
    __table_args__ = (Index("ix_model_standins_holder", "holder"),
                      Index("ix_model_standins_expires_at", "expires_at"))

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the stand-in
    run_id: Mapped[str] = mapped_column(String(64))
    holder: Mapped[str] = mapped_column(String(128))  # the issuing replica's lasting id
    grant_json: Mapped[str] = mapped_column(Text)  # whose use: run, agent, session, person, owner, family, upstreams
    used_json: Mapped[str | None] = mapped_column(Text, nullable=True)  # ``Used`` as the other replicas counted it
    created_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms
    expires_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms


@dataclass(slots=True)
class Used:
    """What a run used at the replicas that did not issue its stand-in."""

    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    model: str | None = None
    stopped: str | None = None

    @classmethod
    def of(cls, text: str | None) -> Used:
        if not text:
            return cls()
        data: dict[str, Any] = orjson.loads(text)
        return cls({k: int(v) for k, v in (data.get("usage") or {}).items()}, float(data.get("cost") or 0.0),
                   data.get("model"), data.get("stopped"))

    def json(self) -> str:
        return orjson.dumps({"usage": self.usage, "cost": self.cost_usd, "model": self.model,
                             "stopped": self.stopped}).decode()


def _now_ms() -> int:
    return int(time.time() * 1000)


class SharedStandIns:
    """The rows behind the stand-ins this replica shares, and the look-up of the others'. Read only when a stand-in
    is not in this replica's memory, so a local run's model request never waits on the database."""

    def __init__(self, db: Database, holder: str) -> None:
        self._db = db
        self._holder = holder

    async def put(self, token_hash: str, *, run_id: str, grant: dict[str, Any], ttl_s: float) -> None:
        now = _now_ms()
        async with self._db.session() as s:
            await s.execute(delete(SharedStandIn).where(SharedStandIn.expires_at <= now))
            s.add(SharedStandIn(token_hash=token_hash, run_id=run_id, holder=self._holder,
                                grant_json=orjson.dumps(grant).decode(), created_at=now,
                                expires_at=now + int(ttl_s * 1000)))

    async def get(self, token_hash: str) -> tuple[dict[str, Any], Used] | None:
        """The grant and what the other replicas counted, of a live row (None: unknown, revoked or expired)."""
        async with self._db.reading() as s:
            row = await s.get(SharedStandIn, token_hash)
            if row is None or row.expires_at <= _now_ms():
                return None
            return orjson.loads(row.grant_json), Used.of(row.used_json)

    async def add(self, token_hash: str, more: Used) -> bool:
        """``more`` added to the row's count (False: the row is gone, its run has ended)."""
        async with self._db.session() as s:
            row = (await s.execute(select(SharedStandIn).where(SharedStandIn.token_hash == token_hash)
                                   .with_for_update())).scalar_one_or_none()
            if row is None:
                return False
            used = Used.of(row.used_json)
            for key, value in more.usage.items():
                used.usage[key] = used.usage.get(key, 0) + value
            used.cost_usd += more.cost_usd
            used.model = more.model or used.model
            used.stopped = more.stopped or used.stopped
            row.used_json = used.json()
            return True

    async def take(self, token_hash: str) -> Used | None:
        """The row deleted, with what the other replicas counted in it (None: there was none)."""
        async with self._db.session() as s:
            row = (await s.execute(select(SharedStandIn).where(SharedStandIn.token_hash == token_hash)
                                   .with_for_update())).scalar_one_or_none()
            if row is None:
                return None
            used = Used.of(row.used_json)
            await s.delete(row)
            return used

    async def drop_own(self) -> None:
        """This replica's rows: a previous process of it issued them, and its runs ended with it."""
        async with self._db.session() as s:
            await s.execute(delete(SharedStandIn).where(SharedStandIn.holder == self._holder))

