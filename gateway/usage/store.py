"""What each agent turn used: tokens and, where the CLI reports it, cost in US dollars.

One row per turn, kept apart from the session (no foreign key): ``/new`` or deleting a conversation must not
give an agent its day's budget back, and ``usage.cost`` must still count yesterday's deleted sessions. The
``sessions`` table keeps its running token totals for ``/status``; this table is the timeline behind
``/usage``, ``agents.list[].maxCostPerDay`` and ``usage.cost``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, Float, Index, Integer, String, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from gateway.store.base import Base

__all__ = ["Totals", "TurnUsage", "UsageRepo", "day_start_ms", "week_start"]


class TurnUsage(Base):
    __tablename__ = "turn_usage"
    __table_args__ = (
        Index("ix_turn_usage_session_at", "session_key", "at_ms"),
        Index("ix_turn_usage_agent_at", "agent_id", "at_ms"),
        Index("ix_turn_usage_person_at", "person_id", "at_ms"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(64))
    session_key: Mapped[str] = mapped_column(String(512))
    agent_id: Mapped[str] = mapped_column(String(128))
    runtime: Mapped[str] = mapped_column(String(64))
    model: Mapped[str | None] = mapped_column(String(256), nullable=True)
    at_ms: Mapped[int] = mapped_column(BigInteger)
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)  # None: the CLI did not say
    person_id: Mapped[str | None] = mapped_column(String(64), nullable=True)  # whose turn (their budget)


@dataclass(slots=True)
class Totals:
    """Sums over some turns; ``unpriced`` counts the turns whose CLI reported no cost."""

    turns: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0
    unpriced: int = 0
    by_day: dict[str, Totals] = field(default_factory=dict)
    by_session: dict[str, Totals] = field(default_factory=dict)
    by_person: dict[str | None, Totals] = field(default_factory=dict)
    """Per person whose turns they were (None: nobody's, e.g. a group chat's or from before people)."""

    def add(self, row: TurnUsage) -> None:
        self.turns += 1
        self.input += row.input_tokens
        self.output += row.output_tokens
        self.cache_read += row.cache_read_tokens
        self.cache_write += row.cache_write_tokens
        if row.cost_usd is None:
            self.unpriced += 1
        else:
            self.cost += row.cost_usd

    def openclaw(self) -> dict[str, Any]:
        """OpenClaw's ``CostUsageTotals`` (its split of the cost by token kind is unknown to us: 0)."""
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.input + self.output + self.cache_read + self.cache_write,
            "totalCost": round(self.cost, 6),
            "inputCost": 0,
            "outputCost": 0,
            "cacheReadCost": 0,
            "cacheWriteCost": 0,
            "missingCostEntries": self.unpriced,
        }


def day_start_ms(day: date) -> int:
    """Midnight UTC of ``day`` in epoch milliseconds (days are UTC days throughout)."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


class UsageRepo:
    @staticmethod
    async def record(
        s: AsyncSession,
        *,
        run_id: str,
        session_key: str,
        agent_id: str,
        runtime: str,
        model: str | None,
        usage: dict[str, int],
        cost_usd: float | None,
        person_id: str | None = None,
    ) -> None:
        s.add(
            TurnUsage(
                run_id=run_id,
                session_key=session_key,
                agent_id=agent_id,
                runtime=runtime,
                model=model,
                at_ms=int(time.time() * 1000),
                input_tokens=int(usage.get("input") or 0),
                output_tokens=int(usage.get("output") or 0),
                cache_read_tokens=int(usage.get("cacheRead") or 0),
                cache_write_tokens=int(usage.get("cacheWrite") or 0),
                cost_usd=cost_usd,
                person_id=person_id,
            )
        )

    @staticmethod
    async def cost_since(s: AsyncSession, agent_id: str, since_ms: int) -> float:
        """What the agent's turns since ``since_ms`` cost (the budget check)."""
        res = await s.execute(
            select(func.coalesce(func.sum(TurnUsage.cost_usd), 0.0)).where(
                TurnUsage.agent_id == agent_id, TurnUsage.at_ms >= since_ms
            )
        )
        return float(res.scalar_one() or 0.0)

    @staticmethod
    async def totals(
        s: AsyncSession,
        *,
        since_ms: int = 0,
        until_ms: int | None = None,
        session_key: str | None = None,
        agent_id: str | None = None,
        person_id: str | None = None,
    ) -> Totals:
        """Sums of the matching turns, overall, per UTC day (``by_day``, keyed ``YYYY-MM-DD``), per session and per
        person."""
        q = select(TurnUsage).where(TurnUsage.at_ms >= since_ms)
        if until_ms is not None:
            q = q.where(TurnUsage.at_ms < until_ms)
        if session_key is not None:
            q = q.where(TurnUsage.session_key == session_key)
        if agent_id is not None:
            q = q.where(TurnUsage.agent_id == agent_id)
        if person_id is not None:
            q = q.where(TurnUsage.person_id == person_id)
        out = Totals()
        for row in (await s.execute(q.order_by(TurnUsage.at_ms))).scalars():
            out.add(row)
            day = datetime.fromtimestamp(row.at_ms / 1000, UTC).date().isoformat()
            out.by_day.setdefault(day, Totals()).add(row)
            out.by_session.setdefault(row.session_key, Totals()).add(row)
            out.by_person.setdefault(row.person_id, Totals()).add(row)
        return out


def week_start(today: date) -> date:
    """Monday of ``today``'s week."""
    return today - timedelta(days=today.weekday())
