"""Token usage and cost for OpenClaw's Control UI: ``usage.status``, ``usage.cost`` and ``sessions.usage``.

Our agent CLIs report tokens per turn, which we add up per session (``sessions`` table), and each turn's
tokens and, where the CLI states it (Claude Code, OpenCode), its cost are kept in ``turn_usage``. No CLI
reports a provider quota, so ``usage.status`` lists no providers. ``usage.cost`` is OpenClaw's cost summary
(``days``, ``daily`` per UTC day, ``totals``) from ``turn_usage``; ``missingCostEntries`` counts the turns
whose CLI reported no cost. ``sessions.usage`` gives the token totals of the sessions active in the range,
per agent and per channel, with the cost of their turns in the range. Per-session and per-model breakdowns
are left empty.
"""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from gateway.access import Access, Obj
from gateway.access.rows import session_obj
from gateway.dispatch.dispatcher import READ, CallContext, NoParams, Params, method
from gateway.protocol import Forbidden, InvalidRequest
from gateway.sessions.store import SessionRepo
from gateway.usage.store import Totals, UsageRepo, day_start_ms

_DATE = r"^\d{4}-\d{2}-\d{2}$"
_RANGES = {"7d": 7, "30d": 30, "90d": 90, "1y": 365}


def _totals() -> dict[str, float]:
    return dict.fromkeys(("input", "output", "cacheRead", "cacheWrite", "totalTokens", "totalCost", "inputCost",
                          "outputCost", "cacheReadCost", "cacheWriteCost", "missingCostEntries"), 0)


@method("usage.status", access=Access("usage", "read", each=True), params=NoParams, scope=READ)
async def usage_status(_p: NoParams, _ctx: CallContext) -> dict[str, Any]:
    """Provider quota windows: none known (the CLIs hold their own accounts)."""
    return {"updatedAt": int(time.time() * 1000), "providers": []}


class SessionsUsageParams(Params):
    key: str | None = Field(None, min_length=1)
    agentId: str | None = Field(None, min_length=1)
    agentScope: Literal["all"] | None = None
    startDate: str | None = Field(None, pattern=_DATE)
    endDate: str | None = Field(None, pattern=_DATE)
    mode: Literal["utc", "gateway", "specific"] | None = Field(None, description="Accepted; days are UTC days.")
    range: Literal["7d", "30d", "90d", "1y", "all"] | None = None
    groupBy: Literal["instance", "family"] | None = Field(None, description="Accepted and ignored.")
    includeHistorical: bool | None = Field(None, description="Accepted and ignored.")
    utcOffset: str | None = Field(None, pattern=r"^UTC[+-]\d{1,2}(?::[0-5]\d)?$", description="Accepted and ignored.")
    timeZone: str | None = Field(None, min_length=1, description="Accepted and ignored.")
    limit: int | None = Field(None, ge=1)
    includeContextWeight: bool | None = Field(None, description="Accepted and ignored.")


def _window(p: SessionsUsageParams) -> tuple[date, date]:
    today = datetime.now(UTC).date()
    end = date.fromisoformat(p.endDate) if p.endDate else today
    if p.startDate:
        return date.fromisoformat(p.startDate), end
    days = _RANGES.get(p.range or "30d")
    return (end - timedelta(days=days - 1) if days else date(1970, 1, 1)), end


@method("sessions.usage", access=Access("usage", "read", ("key",)), params=SessionsUsageParams, scope=READ)
async def sessions_usage(p: SessionsUsageParams, ctx: CallContext) -> dict[str, Any]:
    """Token totals of the sessions active in the date range, overall, per agent and per channel."""
    start, end = _window(p)
    async with ctx.db.session() as s:
        rows = await SessionRepo.search(s, search=None, limit=None)
    totals, count = _totals(), 0
    by_agent: dict[str, dict[str, float]] = {}
    by_channel: dict[str, dict[str, float]] = {}
    rows = ctx.access.visible(ctx.caller, rows, lambda r: session_obj(r, "usage"))  # only what it may read
    async with ctx.db.session() as s:
        turns = await UsageRepo.totals(s, since_ms=day_start_ms(start), until_ms=day_start_ms(end + timedelta(days=1)),
                                       agent_id=p.agentId)
    for row in rows:
        day = row.updated_at.date() if row.updated_at else None
        if day is None or not start <= day <= end or (p.key and row.key != p.key):
            continue
        if p.agentId and row.agent_id != p.agentId:
            continue
        count += 1
        used: dict[str, float] = {
            "input": row.input_tokens, "output": row.output_tokens, "cacheRead": row.cache_read_tokens,
            "cacheWrite": row.cache_write_tokens, "totalTokens": row.input_tokens + row.output_tokens}
        cost = turns.by_session.get(row.key)
        if cost is not None:
            used.update(totalCost=cost.cost, missingCostEntries=cost.unpriced)
        for bucket in (totals, by_agent.setdefault(row.agent_id, _totals()),
                       by_channel.setdefault(row.channel or "webchat", _totals())):
            for k, v in used.items():
                bucket[k] += v or 0
    aggregates = {
        "sessionCount": count,
        "messages": {"total": 0, "user": 0, "assistant": 0, "toolCalls": 0, "toolResults": 0, "errors": 0},
        "tools": {"totalCalls": 0, "uniqueTools": 0, "tools": []},
        "byModel": [], "byProvider": [],
        "byAgent": [{"agentId": a, "totals": t} for a, t in sorted(by_agent.items())],
        "byChannel": [{"channel": c, "totals": t} for c, t in sorted(by_channel.items())],
        "byCreator": [], "costDaily": [], "dailyLatency": [], "modelDaily": [], "daily": [],
    }
    return {"updatedAt": int(time.time() * 1000), "startDate": start.isoformat(), "endDate": end.isoformat(),
            "sessions": [], "totals": totals, "aggregates": aggregates, "creatorOptions": []}


class UsageCostParams(Params):
    startDate: str | None = Field(None, pattern=_DATE)
    endDate: str | None = Field(None, pattern=_DATE)
    days: int | None = Field(None, ge=1, le=3660, description="The last N UTC days (without startDate).")
    agentId: str | None = Field(None, min_length=1)
    agentScope: Literal["all"] | None = None
    mode: Literal["utc", "gateway", "specific"] | None = Field(None, description="Accepted; days are UTC days.")
    utcOffset: str | None = Field(None, pattern=r"^UTC[+-]\d{1,2}(?::[0-5]\d)?$", description="Accepted and ignored.")
    timeZone: str | None = Field(None, min_length=1, description="Accepted and ignored.")
    personId: str | None = Field(None, min_length=1, max_length=64, description="Only this person's turns "
                                 "(gateway.people); a member's own are all they may ask for.")
    groupBy: Literal["person"] | None = Field(None, description="person: also ``byPerson``, each person's totals "
                                              "(and ``null`` for turns that are nobody's).")


def _days(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


@method("usage.cost", access=Access("usage", "read", each=True), params=UsageCostParams, scope=READ)
async def usage_cost(p: UsageCostParams, ctx: CallContext) -> dict[str, Any]:
    """OpenClaw's cost summary over UTC days: one ``daily`` row per day (zeros included) and the ``totals``."""
    if p.agentScope == "all" and p.agentId:
        raise InvalidRequest("agentScope=all cannot be combined with agentId", details={"field": "agentScope"})
    today = datetime.now(UTC).date()
    end = date.fromisoformat(p.endDate) if p.endDate else today
    start = date.fromisoformat(p.startDate) if p.startDate else end - timedelta(days=(p.days or 30) - 1)
    if start > end:
        raise InvalidRequest("startDate is after endDate", details={"field": "startDate"})
    person_id = _whose_cost(p, ctx)
    if p.agentId:
        ctx.sessions.agent(p.agentId)  # an unknown id names agentId
    async with ctx.db.session() as s:
        got = await UsageRepo.totals(s, since_ms=day_start_ms(start), until_ms=day_start_ms(end + timedelta(days=1)),
                                     agent_id=p.agentId, person_id=person_id)
    daily = [{"date": d.isoformat(), **got.by_day.get(d.isoformat(), Totals()).openclaw()} for d in _days(start, end)]
    out: dict[str, Any] = {"updatedAt": int(time.time() * 1000), "days": len(daily), "daily": daily,
                           "totals": got.openclaw()}
    if person_id is not None:
        out["personId"] = person_id
    if p.groupBy == "person":
        out["byPerson"] = [{"personId": who, "name": _name(ctx, who), "turns": t.turns, "totals": t.openclaw()}
                           for who, t in sorted(got.by_person.items(), key=lambda kv: -kv[1].cost)]
    return out


def _whose_cost(p: UsageCostParams, ctx: CallContext) -> str | None:
    """Whose turns ``usage.cost`` may sum for this caller, as the access model decides a person's spending: the
    owner and admins anyone's or everyone's; a person their own (asking for another's is refused, naming
    ``personId``); a non-owner run nothing, as OpenClaw."""
    if p.personId is not None and ctx.people.peek(p.personId) is None:
        raise InvalidRequest(f"unknown personId {p.personId!r}", details={"field": "personId"})
    if ctx.access.allows(ctx.caller, "read", Obj("usage", person_id=p.personId)):
        return p.personId  # None: everyone's
    mine = ctx.caller.person_id
    if p.personId is None and mine is not None and ctx.access.allows(ctx.caller, "read", Obj("usage", person_id=mine)):
        return mine
    if p.personId is not None:
        raise Forbidden("personId: you may only see your own usage", details={"code": "FORBIDDEN_OBJECT",
                                                                             "field": "personId"})
    raise Forbidden("usage.cost sums every session's usage; this caller may only see some sessions",
                    details={"code": "FORBIDDEN_OBJECT"})


def _name(ctx: CallContext, person_id: str | None) -> str | None:
    person = ctx.people.peek(person_id) if person_id is not None else None
    return person.name if person is not None else None
