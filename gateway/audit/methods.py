"""``audit.log.list``: the audit log, newest first, filtered and paged (admin only: it says who did what).

Not ``audit.list``: OpenClaw's protocol has that name for another log (agent runs and tool actions, in its
``AuditEvent`` shape), and its clients must never be handed this one instead.

Times are ms since the epoch, an ISO 8601 time, or an age counted back from now (``7d``, ``12h``, ``30m``), so
``remoteclaw audit --since 7d`` passes its flag through as it is. ``action`` and ``actor`` match as prefixes
(``config.`` is every config write, ``device:`` every device); ``target`` matches whole. A page that is not the
last ends with ``nextBefore``: pass it back as ``before`` for the next one.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from gateway.access import Access
from gateway.audit.service import AUDIT_LOG
from gateway.audit.store import Cursor, Filter
from gateway.dispatch.dispatcher import ADMIN, CallContext, Params, method

__all__ = ["LAST_MS", "AuditListParams", "parse_when"]

_AGE = re.compile(r"^(\d{1,9})\s*(s|m|h|d|w)$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_WHEN = "ms since the epoch, an ISO 8601 time (2026-11-01T09:00:00Z) or an age (7d, 12h, 30m)"


LAST_MS = 253_402_300_799_999
"""The last millisecond of year 9999: a later time is a mistake, and past 2**63 SQLite cannot even store it."""


def parse_when(value: int | str, now_ms: int | None = None) -> int:
    """A time given as ms, ISO 8601 (UTC unless it says otherwise) or an age before now, as ms."""
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is before 1970: give {_WHEN}")
        if value > LAST_MS:
            raise ValueError(f"{value} is after the year 9999: give {_WHEN}")
        return value
    text = value.strip()
    age = _AGE.match(text)
    if age:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return now - int(age.group(1)) * _UNIT_MS[age.group(2)]
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{value!r} is not a time: give {_WHEN}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


class AuditListParams(Params):
    since: int | str | None = Field(None, description=f"Only events at or after this: {_WHEN}.")
    until: int | str | None = Field(None, description=f"Only events before this: {_WHEN}.")
    action: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.*-]+$",
                               description="An action or its prefix: config.patch, config., pairing.")
    actor: str | None = Field(None, min_length=1, max_length=200,
                              description="An actor or its prefix: cli, device:, agent-run:agent:main:")
    target: str | None = Field(None, min_length=1, max_length=512, description="Exactly this target.")
    limit: int = Field(100, ge=1, le=1000)
    before: str | None = Field(None, max_length=40, pattern=r"^\d{1,16}:\d{1,18}$",
                               description="nextBefore of the previous page.")

    @field_validator("since", "until", mode="before")
    @classmethod
    def _a_time(cls, value: Any, _info: ValidationInfo) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ValueError(f"must be {_WHEN}")
        return parse_when(value)


@method("audit.log.list", access=Access("gateway", "admin"), params=AuditListParams, scope=ADMIN)
async def audit_list(p: AuditListParams, ctx: CallContext) -> dict[str, Any]:
    """Who did what, newest first: ``{events: [{id, at, actor, actorKind, action, target, details}], count,
    nextBefore}`` (``nextBefore`` null on the last page)."""
    where = Filter(since=_ms(p.since), until=_ms(p.until), action=p.action, actor=p.actor, target=p.target,
                   before=Cursor.parse(p.before) if p.before is not None else None)
    events, cursor = await ctx.service(AUDIT_LOG).page(where, p.limit)
    return {"events": events, "count": len(events), "nextBefore": cursor,
            "retentionDays": ctx.config.audit.retentionDays}


def _ms(value: int | str | None) -> int | None:
    """A validated time (``AuditListParams._a_time`` made it ms)."""
    return int(value) if value is not None else None
