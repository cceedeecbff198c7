"""Run tokens shared by the replicas (``run_tokens``): a node turn's shim reaches whichever replica the node's
address leads to, not necessarily the one running the turn (``gateway.agents.tokens``).

One row per shared token, keyed by its SHA-256 (never the token), holding the grant as JSON, the run it belongs
to, the replica that issued it and when it stops counting (epoch milliseconds, as the leases). The issuer deletes
the run's rows when the run ends; a row past its expiry counts as gone and is pruned; a replica's rows are
dropped when it starts again (its previous process's runs are over).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import BigInteger, Index, String, Text, delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base
from gateway.store.db import rowcount

__all__ = ["RunTokenRepo", "SharedRunToken"]


class SharedRunToken(Base):
    __tablename__ = "run_tokens"
    __table_args__ = (Index("ix_run_tokens_run_id", "run_id"), Index("ix_run_tokens_expires_at", "expires_at"))

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the token
    run_id: Mapped[str] = mapped_column(String(64))
    holder: Mapped[str] = mapped_column(String(128))  # the issuing replica's lasting id
    grant_json: Mapped[str] = mapped_column(Text)  # JSON (``gateway.agents.tokens.RunGrant``)
    created_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms
    expires_at: Mapped[int] = mapped_column(BigInteger)  # epoch ms


class RunTokenRepo:
    """The statements behind ``gateway.agents.tokens.SharedGrants``; each call belongs to the caller's
    transaction."""

    @staticmethod
    async def put(s: AsyncSession, token_hash: str, *, run_id: str, holder: str, grant: str, now_ms: int,
                  expires_at: int) -> None:
        s.add(SharedRunToken(token_hash=token_hash, run_id=run_id, holder=holder, grant_json=grant, created_at=now_ms,
                             expires_at=expires_at))

    @staticmethod
    async def get(s: AsyncSession, token_hash: str, *, now_ms: int) -> str | None:
        """The grant's JSON of a live row, or None (unknown, revoked or expired)."""
        row = await s.get(SharedRunToken, token_hash)
        return row.grant_json if row is not None and row.expires_at > now_ms else None

    @staticmethod
    async def live_runs(s: AsyncSession, run_ids: Iterable[str], *, now_ms: int) -> set[str]:
        """Which of ``run_ids`` still have a live token."""
        ids = list(run_ids)
        if not ids:
            return set()
        found = await s.execute(select(SharedRunToken.run_id).where(SharedRunToken.run_id.in_(ids),
                                                                    SharedRunToken.expires_at > now_ms))
        return set(found.scalars().all())

    @staticmethod
    async def drop_run(s: AsyncSession, run_id: str) -> int:
        return rowcount(await s.execute(delete(SharedRunToken).where(SharedRunToken.run_id == run_id)))

    @staticmethod
    async def drop_holder(s: AsyncSession, holder: str) -> int:
        return rowcount(await s.execute(delete(SharedRunToken).where(SharedRunToken.holder == holder)))

    @staticmethod
    async def prune(s: AsyncSession, *, now_ms: int) -> int:
        return rowcount(await s.execute(delete(SharedRunToken).where(SharedRunToken.expires_at <= now_ms)))
