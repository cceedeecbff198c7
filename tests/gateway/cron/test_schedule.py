"""Cron schedules, case by case: what fires when (cronsim underneath; macros, zones and validation are ours)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from gateway.cron.schedule import ScheduleError, parse_schedule

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def fires(schedule: dict, start: datetime, n: int, tz: ZoneInfo = BERLIN) -> list[str]:
    s = parse_schedule(schedule, now_ms=ms(start))
    out, t = [], ms(start)
    for _ in range(n):
        nxt = s.next_after(t)
        if nxt is None:
            break
        out.append(datetime.fromtimestamp(nxt / 1000, tz).strftime("%Y-%m-%d %H:%M:%S%z"))
        t = nxt
    return out


CASES = [
    # (what, schedule, start (Berlin), expected firings (Berlin wall clock))
    ("weekdays at 9 Berlin", {"kind": "cron", "expr": "0 9 * * 1-5", "tz": "Europe/Berlin"},
     datetime(2026, 11, 27, 10, tzinfo=BERLIN),  # a Friday, after 9
     ["2026-11-30 09:00:00+0100", "2026-12-01 09:00:00+0100"]),
    ("0 and 7 are both Sunday", {"kind": "cron", "expr": "0 9 * * 0,7", "tz": "Europe/Berlin"},
     datetime(2026, 11, 24, tzinfo=BERLIN), ["2026-11-29 09:00:00+0100", "2026-12-06 09:00:00+0100"]),
    ("7 alone is Sunday", {"kind": "cron", "expr": "0 9 * * 7", "tz": "Europe/Berlin"},
     datetime(2026, 11, 24, tzinfo=BERLIN), ["2026-11-29 09:00:00+0100"]),
    ("day-of-month OR day-of-week (Vixie)", {"kind": "cron", "expr": "0 9 13 * 5", "tz": "Europe/Berlin"},
     datetime(2026, 12, 5, tzinfo=BERLIN),
     ["2026-12-11 09:00:00+0100", "2026-12-13 09:00:00+0100", "2026-12-18 09:00:00+0100"]),
    ("spring forward: 02:30 does not exist, fires once right after the gap",
     {"kind": "cron", "expr": "30 2 * * *", "tz": "Europe/Berlin"}, datetime(2026, 3, 28, 12, tzinfo=BERLIN),
     ["2026-03-29 03:00:00+0200", "2026-03-30 02:30:00+0200"]),
    ("fall back: 02:30 happens twice, fires once",
     {"kind": "cron", "expr": "30 2 * * *", "tz": "Europe/Berlin"}, datetime(2026, 10, 24, 12, tzinfo=BERLIN),
     ["2026-10-25 02:30:00+0200", "2026-10-26 02:30:00+0100"]),
    ("Feb 29 only in leap years", {"kind": "cron", "expr": "0 0 29 2 *", "tz": "Europe/Berlin"},
     datetime(2026, 11, 24, tzinfo=BERLIN), ["2028-02-29 00:00:00+0100", "2032-02-29 00:00:00+0100"]),
    ("@daily macro, UTC by default", {"kind": "cron", "expr": "@daily"}, datetime(2026, 11, 24, 12, tzinfo=UTC),
     ["2026-11-25 01:00:00+0100"]),
    ("six fields: seconds first", {"kind": "cron", "expr": "*/30 * * * * *"},
     datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC), ["2026-11-24 13:00:30+0100", "2026-11-24 13:01:00+0100"]),
    ("every with an anchor keeps its phase", {"kind": "every", "everyMs": 3_600_000,
                                               "anchorMs": ms(datetime(2026, 11, 24, 0, 15, tzinfo=BERLIN))},
     datetime(2026, 11, 24, 9, 20, tzinfo=BERLIN), ["2026-11-24 10:15:00+0100", "2026-11-24 11:15:00+0100"]),
    ("at without an offset is UTC", {"kind": "at", "at": "2026-12-01T08:00:00"},
     datetime(2026, 11, 24, tzinfo=BERLIN), ["2026-12-01 09:00:00+0100"]),
    ("at in the past never fires again", {"kind": "at", "at": "2020-01-01T00:00:00Z"},
     datetime(2026, 11, 24, tzinfo=BERLIN), []),
]


@pytest.mark.parametrize(("what", "schedule", "start", "expected"), CASES, ids=[c[0] for c in CASES])
def test_firings(what: str, schedule: dict, start: datetime, expected: list[str]) -> None:
    assert fires(schedule, start, len(expected) or 1) == expected


def test_new_york_dst_both_ways() -> None:
    spring = fires({"kind": "cron", "expr": "30 2 * * *", "tz": "America/New_York"},
                   datetime(2026, 3, 7, 12, tzinfo=NEW_YORK), 2, NEW_YORK)
    assert spring == ["2026-03-08 03:00:00-0400", "2026-03-09 02:30:00-0400"]
    fall = fires({"kind": "cron", "expr": "30 1 * * *", "tz": "America/New_York"},
                 datetime(2026, 10, 31, 12, tzinfo=NEW_YORK), 2, NEW_YORK)
    assert fall == ["2026-11-01 01:30:00-0400", "2026-11-02 01:30:00-0500"]


@pytest.mark.parametrize(("schedule", "field"), [
    ({"kind": "cron", "expr": "61 * * * *"}, "schedule.expr"),
    ({"kind": "cron", "expr": "* * *"}, "schedule.expr"),
    ({"kind": "cron", "expr": "@fortnightly"}, "schedule.expr"),
    ({"kind": "cron", "expr": "0 9 * * *", "tz": "Mars/Olympus"}, "schedule.tz"),
    ({"kind": "cron"}, "schedule.expr"),
    ({"kind": "every", "everyMs": 10}, "schedule.everyMs"),
    ({"kind": "every", "everyMs": "1h"}, "schedule.everyMs"),
    ({"kind": "every", "everyMs": 60000, "anchorMs": -5}, "schedule.anchorMs"),
    ({"kind": "at", "at": "next tuesday"}, "schedule.at"),
    ({"kind": "at"}, "schedule.at"),
    ({"kind": "weekly"}, "schedule.kind"),
    ("0 9 * * *", "schedule"),
])
def test_bad_schedules_name_the_field(schedule: object, field: str) -> None:
    with pytest.raises(ScheduleError) as err:
        parse_schedule(schedule, now_ms=0)
    assert err.value.field == field


def test_an_every_job_first_fires_one_interval_after_its_anchor() -> None:
    """OpenClaw's first-run rule: never at the anchor itself; a future anchor fires at the anchor."""
    now = ms(datetime(2026, 11, 24, 12, tzinfo=UTC))
    made_now = parse_schedule({"kind": "every", "everyMs": 60_000}, now_ms=now)
    assert made_now.first_run(now) == now + 60_000
    past = parse_schedule({"kind": "every", "everyMs": 60_000, "anchorMs": now - 90_000}, now_ms=now)
    assert past.first_run(now) == now + 30_000  # keeps its phase
    assert past.first_run(now + 30_000) == now + 30_000  # a firing due right now is not skipped
    future = parse_schedule({"kind": "every", "everyMs": 60_000, "anchorMs": now + 5_000}, now_ms=now)
    assert future.first_run(now) == now + 5_000
    cron = parse_schedule({"kind": "cron", "expr": "0 12 * * *"}, now_ms=now)
    assert cron.first_run(now) == now  # a cron time that is now is due now
