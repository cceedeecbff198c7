"""Answers of side-effecting requests, kept by ``(method, idempotencyKey)`` for the idempotency window.

The dispatcher's in-memory cache answers retries while the process lives; this table answers them after
a crash or a restart too (a client that lost its connection as the gateway died retries with the same
key, and must get the run it already started, not a second one). Only successful answers are kept: a
refusal is cheap to compute again. Rows older than the window are pruned as new ones are written.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import orjson
from sqlalchemy import BigInteger, String, Text, delete
from sqlalchemy.orm import Mapped, mapped_column

from gateway.protocol import decode, encode
from gateway.store import upsert
from gateway.store.base import Base
from gateway.store.db import Database

__all__ = ["MISSING", "Durable", "DurableOutcomes", "IdempotencyOutcome"]

MISSING = object()


class IdempotencyOutcome(Base):
    __tablename__ = "idempotency_outcomes"

    method: Mapped[str] = mapped_column(String(128), primary_key=True)
    key: Mapped[str] = mapped_column(String(256), primary_key=True)
    result: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger, index=True)  # epoch ms


class Durable(Protocol):
    """Where answers of idempotent requests outlive the process: what the dispatcher (and ``node.invoke``) use."""

    async def get(self, method: str, key: str) -> Any:
        """The stored answer, or the sentinel the dispatcher was given as ``missing`` when there is none."""

    async def put(self, method: str, key: str, result: Any) -> None: ...


class DurableOutcomes:
    """The table as the dispatcher uses it: ``get`` a remembered answer, ``put`` a new one.

    Args:
        db: the gateway's database.
        ttl_s: the idempotency window, in seconds.
    """

    def __init__(self, db: Database, ttl_s: float = 300.0) -> None:
        self.db = db
        self.ttl_s = ttl_s
        self._puts = 0

    async def get(self, method: str, key: str) -> Any:
        """The answer stored for ``(method, key)`` within the window, or ``MISSING``."""
        async with self.db.session() as s:
            row = await s.get(IdempotencyOutcome, (method, key[:256]))
            if row is None or row.created_at < _now_ms() - self.ttl_s * 1000:
                return MISSING
            return decode(row.result)

    async def put(self, method: str, key: str, result: Any) -> None:
        """Remember an answer (the first one wins); prunes expired rows now and then."""
        try:
            body = encode(result)
        except (TypeError, orjson.JSONEncodeError):
            return  # not JSON: only the in-memory cache can remember it
        now = _now_ms()
        async with self.db.session() as s:
            await s.execute(upsert.insert(s, IdempotencyOutcome)
                            .values(method=method, key=key[:256], result=body, created_at=now)
                            .on_conflict_do_nothing(index_elements=["method", "key"]))
            self._puts += 1
            if self._puts % 100 == 1:
                await s.execute(delete(IdempotencyOutcome)
                                .where(IdempotencyOutcome.created_at < now - int(self.ttl_s * 1000)))


def _now_ms() -> int:
    return int(time.time() * 1000)
