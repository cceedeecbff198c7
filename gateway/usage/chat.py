"""Cost and usage as a chat user meets them: the ``/usage`` answer and the daily budget's refusal.

The figures are what the CLIs report per turn (``gateway.usage.store``): Claude Code and OpenCode state a
cost, Codex and Gemini CLI only tokens, so a cost is a lower bound whenever some turns were unpriced, and the
text says so. Days are UTC days, weeks start on Monday.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from gateway.access import Access
from gateway.dispatch.commands import CommandContext, command
from gateway.sessions.service import parse_key
from gateway.usage.store import Totals, UsageRepo, day_start_ms, week_start

if TYPE_CHECKING:
    from gateway.config.model import AgentConfig
    from gateway.store.db import Database

__all__ = ["budget_refusal", "turn_facts", "usage_text"]


@command("usage", access=Access("usage", "read"), help="Tokens and cost today, this week and in this conversation")
async def usage_command(ctx: CommandContext, rest: str) -> str:
    person = ctx.person
    owner = ctx.is_owner or (person is not None and person.is_owner)
    return await usage_text(ctx.db, ctx.key, ctx.sessions.agent(parse_key(ctx.key)[0]),
                            person_id=person.id if person is not None else None, everyone=owner)


def _money(value: float) -> str:
    return f"${value:.4f}" if 0 < value < 0.01 else f"${value:.2f}"


def _line(label: str, t: Totals) -> str:
    tokens = t.input + t.output + t.cache_read + t.cache_write
    cost = _money(t.cost) + ("+" if t.unpriced and t.unpriced < t.turns else "")
    if t.turns and t.unpriced == t.turns:
        cost = "cost not reported"
    return (
        f"{label}: {t.turns} turn(s), {tokens:,} tokens ({t.input:,} in, {t.output:,} out, "
        f"{t.cache_read + t.cache_write:,} cache), {cost}"
    )


async def usage_text(db: Database, session_key: str, agent: AgentConfig, *, person_id: str | None = None,
                     everyone: bool = True) -> str:
    """``/usage``: this agent today and this week, this conversation, and the budget if one is set.

    On an agent several people talk to, the day and the week are the asker's: ``everyone`` (the owner) sees the agent's
    totals; a person on record (``person_id``) their own turns; anyone else this conversation's alone. Someone
    else's turns are their business, and their count tells what they do."""
    today = datetime.now(UTC).date()
    whose = None if everyone else person_id
    only = None if everyone or person_id is not None else session_key
    async with db.session() as s:
        day = await UsageRepo.totals(s, since_ms=day_start_ms(today), agent_id=agent.id, person_id=whose,
                                     session_key=only)
        week = await UsageRepo.totals(s, since_ms=day_start_ms(week_start(today)), agent_id=agent.id,
                                      person_id=whose, session_key=only)
        convo = await UsageRepo.totals(s, session_key=session_key)
    lines = [_line("Today", day), _line("This week", week), _line("This conversation", convo)]
    if not everyone:
        lines.append("(your own turns: the owner sees the agent's)")
    elif agent.maxCostPerDay is not None:
        lines.append(f"Budget: {_money(day.cost)} of {_money(agent.maxCostPerDay)} today (UTC)")
    if day.unpriced or week.unpriced or convo.unpriced:
        lines.append("(+: some turns ran on a CLI that reports tokens but no cost)")
    return "\n".join(lines)


async def budget_refusal(db: Database, agent: AgentConfig) -> str | None:
    """Why a new turn must not start (today's spending reached ``maxCostPerDay``), or None."""
    if agent.maxCostPerDay is None:
        return None
    today = datetime.now(UTC).date()
    async with db.session() as s:
        spent = await UsageRepo.cost_since(s, agent.id, day_start_ms(today))
    if spent < agent.maxCostPerDay:
        return None
    resume = datetime(today.year, today.month, today.day, tzinfo=UTC) + timedelta(days=1)
    return (
        f"daily budget reached: agent {agent.id} has spent {_money(spent)} of its "
        f"{_money(agent.maxCostPerDay)} today; new turns start again at {resume:%H:%M} UTC "
        f"({resume:%Y-%m-%d}), or raise agents.list[].maxCostPerDay"
    )


def turn_facts(usage: dict[str, int], cost_usd: float | None) -> dict[str, float | int]:
    """What the final ``chat`` event and the transcript carry about a turn's use (the web chat shows it)."""
    out: dict[str, float | int] = {k: int(usage.get(k) or 0) for k in ("input", "output", "cacheRead", "cacheWrite")}
    if cost_usd is not None:
        out["costUsd"] = round(cost_usd, 6)
    return out
