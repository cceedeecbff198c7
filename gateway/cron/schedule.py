"""When a cron job fires: parsing, validating and stepping its schedule.

Three kinds, shaped as OpenClaw's ``cron.*`` methods shape them:

- ``{"kind": "at", "at": "2026-12-01T09:00:00+01:00"}``: once (an ISO time, read as UTC without an offset,
  or epoch milliseconds);
- ``{"kind": "every", "everyMs": 1800000, "anchorMs": ...}``: at ``anchor + k * everyMs`` (the anchor is
  the job's creation time unless given), so a job keeps its phase across restarts; as in OpenClaw, it first
  fires one interval after its anchor, never at the anchor itself (a future anchor: at the anchor);
- ``{"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"}``: a cron expression of five fields
  (or six, seconds first), stepped by cronsim in the IANA zone (UTC by default).

cronsim does the calendar: day-of-month and day-of-week are ORed when both are restricted (as Vixie
cron does), 0 and 7 are both Sunday, a time skipped by a spring-forward night fires at the first
moment after the gap, and a time repeated by a fall-back night fires once. It has no ``@daily``-style
macros, so they are expanded here first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

__all__ = ["MACROS", "MIN_EVERY_MS", "Schedule", "ScheduleError", "parse_schedule"]

MIN_EVERY_MS = 1_000
MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}


class ScheduleError(ValueError):
    """A schedule that cannot be used; ``field`` names the offending one (``schedule.expr``, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, slots=True)
class Schedule:
    kind: Literal["at", "every", "cron"]
    at_ms: int | None = None
    every_ms: int | None = None
    anchor_ms: int | None = None
    expr: str | None = None
    tz: str | None = None

    def next_after(self, after_ms: int) -> int | None:
        """The first firing strictly after ``after_ms`` (epoch ms), or None when it never fires again."""
        if self.kind == "at":
            assert self.at_ms is not None
            return self.at_ms if self.at_ms > after_ms else None
        if self.kind == "every":
            assert self.every_ms is not None and self.anchor_ms is not None
            if after_ms < self.anchor_ms:
                return self.anchor_ms
            steps = (after_ms - self.anchor_ms) // self.every_ms + 1
            return self.anchor_ms + steps * self.every_ms
        assert self.expr is not None
        zone = ZoneInfo(self.tz or "UTC")
        start = datetime.fromtimestamp(after_ms / 1000, zone)
        try:
            fire = next(CronSim(self.expr, start))
        except StopIteration:
            return None
        return int(fire.timestamp() * 1000)

    def first_run(self, now_ms: int) -> int | None:
        """When a job just made (or just given this schedule) at ``now_ms`` first fires, or None for never.

        An ``every`` schedule follows OpenClaw's rule: a future anchor fires at the anchor, otherwise at the
        first ``anchor + k * everyMs`` (k >= 1) not before now, so a job anchored now first runs one interval
        from now rather than at once. ``at`` and ``cron`` fire at the first time not before now.
        """
        if self.kind == "every":
            assert self.every_ms is not None and self.anchor_ms is not None
            if now_ms < self.anchor_ms:
                return self.anchor_ms
            steps = max(1, -(-(now_ms - self.anchor_ms) // self.every_ms))  # ceil, at least one interval
            return self.anchor_ms + steps * self.every_ms
        return self.next_after(now_ms - 1)

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "at":
            assert self.at_ms is not None
            return {"kind": "at", "at": datetime.fromtimestamp(self.at_ms / 1000, UTC).isoformat()
                    .replace("+00:00", "Z")}
        if self.kind == "every":
            out_every: dict[str, Any] = {"kind": "every", "everyMs": self.every_ms}
            if self.anchor_ms is not None:
                out_every["anchorMs"] = self.anchor_ms
            return out_every
        out: dict[str, Any] = {"kind": "cron", "expr": self.expr}
        if self.tz:
            out["tz"] = self.tz
        return out


def _at_ms(value: Any) -> int:
    if isinstance(value, bool):
        raise ScheduleError("schedule.at", "expected an ISO 8601 time or epoch milliseconds")
    if isinstance(value, int | float):
        return int(value)
    if not isinstance(value, str) or not value.strip():
        raise ScheduleError("schedule.at", "expected an ISO 8601 time, e.g. 2026-12-01T09:00:00+01:00")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ScheduleError("schedule.at", f"not an ISO 8601 time: {value!r}") from exc
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # no offset given: UTC, never the server's local time
    return int(when.timestamp() * 1000)


def _int(value: Any, field: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ScheduleError(field, "expected a whole number of milliseconds")
    if value < minimum:
        raise ScheduleError(field, f"must be at least {minimum}")
    return int(value)


def parse_schedule(raw: Any, *, now_ms: int) -> Schedule:
    """Validate a schedule object; ``now_ms`` anchors an ``every`` schedule that names no anchor.

    Raises:
        ScheduleError: naming the field that is wrong.
    """
    if not isinstance(raw, dict):
        raise ScheduleError("schedule", "expected an object with a kind: at, every or cron")
    kind = raw.get("kind")
    if kind == "at":
        value = raw.get("at", raw.get("atMs"))
        if value is None:
            raise ScheduleError("schedule.at", "required for kind at")
        return Schedule("at", at_ms=_at_ms(value))
    if kind == "every":
        every = _int(raw.get("everyMs"), "schedule.everyMs", minimum=MIN_EVERY_MS)
        anchor = raw.get("anchorMs")
        anchor_ms = now_ms if anchor is None else _int(anchor, "schedule.anchorMs", minimum=0)
        return Schedule("every", every_ms=every, anchor_ms=anchor_ms)
    if kind == "cron":
        expr = raw.get("expr")
        if not isinstance(expr, str) or not expr.strip():
            raise ScheduleError("schedule.expr", "required for kind cron, e.g. '0 9 * * 1-5'")
        expr = " ".join(expr.split())
        expr = MACROS.get(expr.lower(), expr)
        if expr.startswith("@"):
            raise ScheduleError("schedule.expr", f"unknown macro {expr!r} (known: {', '.join(MACROS)})")
        tz = raw.get("tz")
        if tz is not None:
            if not isinstance(tz, str) or not tz.strip():
                raise ScheduleError("schedule.tz", "expected an IANA time zone name, e.g. Europe/Berlin")
            try:
                ZoneInfo(tz)
            except (ZoneInfoNotFoundError, ValueError) as exc:
                raise ScheduleError("schedule.tz", f"unknown time zone {tz!r}") from exc
        try:
            CronSim(expr, datetime.now(UTC))
        except CronSimError as exc:
            raise ScheduleError("schedule.expr", f"{exc} in {expr!r}") from exc
        return Schedule("cron", expr=expr, tz=tz)
    raise ScheduleError("schedule.kind", f"expected at, every or cron, got {kind!r}")
