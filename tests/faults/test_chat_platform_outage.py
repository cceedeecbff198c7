"""The chat platform answers 429 (with ``retry_after``) or 502 for a while: the reply arrives late, once.

The loopback Telegram fake refuses every ``sendMessage`` for a few seconds (``FakeTelegram.outage``), and the
Discord fake every message post (``FakeDiscord.outage``). What the user sees: the agent's reply arrives when the
platform takes messages again, exactly once. What is kept: the reply, in the outbox, marked sent once it went;
a 429's ``retry_after`` is waited out, never hammered. (Telegram's client library gives up at the first 429 or
502, so the gateway's outbox retries; discord.py waits out short ones itself.)
"""

from __future__ import annotations

import itertools
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import FAKE_CLI
from tests.support.fake_discord import FakeDiscord, Recorded, discord_gateway, snowflake
from tests.support.fake_telegram import Call, FakeTelegram, telegram_gateway
from tests.support.waiting import until

pytestmark = [pytest.mark.timeout(60)]

OWNER = 111
OUTAGE_S = 4.0


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    server = FakeTelegram().start()
    yield server
    server.stop()


def _spaced(times: list[float], at_least: float) -> bool:
    return all(b - a >= at_least - 0.3 for a, b in itertools.pairwise(times))


def _sends(fake: FakeTelegram, text: str) -> tuple[list[Call], list[Call]]:
    """(refused, taken) ``sendMessage`` calls carrying ``text``."""
    calls = [c for c in fake.calls if c.method == "sendMessage" and c.params.get("text") == text]
    return [c for c in calls if c.result is None], [c for c in calls if c.result is not None]


@pytest.mark.parametrize(("code", "retry_after"), [(429, 2), (502, None)], ids=["429-retry-after", "502"])
async def test_a_reply_refused_for_a_while_arrives_once_when_the_platform_recovers(
        tmp_path: Path, fake: FakeTelegram, code: int, retry_after: int | None) -> None:
    with telegram_gateway(tmp_path / "gw", fake, ownerAllowFrom=[OWNER], stream="off") as gw:
        await fake.wait_polling()
        fake.outage(("sendMessage",), OUTAGE_S, code, retry_after=retry_after)
        ends_at = time.monotonic() + OUTAGE_S
        fake.user_message(chat_id=OWNER, user_id=OWNER, text="good morning")
        reply = "echo: good morning"
        await until(lambda: _sends(fake, reply)[1], 20, "the reply to be taken")
        arrived = time.monotonic()
        await until(lambda: _outbox(gw.state_dir), 10, "the outbox row to be marked sent")
        refused, taken = _sends(fake, reply)
        assert refused, "the outage refused nothing: the test proved nothing"
        assert arrived >= ends_at - 0.2
        if retry_after:  # each retry waited what the platform asked
            assert _spaced([c.t for c in refused + taken], retry_after), [c.t for c in refused + taken]
        time_after = time.monotonic()
        await until(lambda: time.monotonic() - time_after > 2, 5)  # nothing trails behind
        assert len(_sends(fake, reply)[1]) == 1, "the reply was delivered twice"
        assert gw.proc is not None and gw.proc.poll() is None


def _outbox(state_dir: Path) -> bool:
    """Every outbox row is marked sent (and there is one)."""
    with sqlite3.connect(state_dir / "remoteclaw.db") as db:
        rows = db.execute("SELECT sent_at FROM outbox").fetchall()
    return bool(rows) and all(r[0] is not None for r in rows)


async def test_discord_refusing_posts_for_a_while_delivers_each_reply_once(tmp_path: Path) -> None:
    fake = await FakeDiscord().start()
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}]},
              "channels": {"discord": fake.config() | {"dmPolicy": "open"}}}
    try:
        async with discord_gateway(fake, tmp_path / "gw", config) as gw:
            for status, seconds, text in ((502, 5.0, "first morning"), (429, 4.0, "second morning")):
                dm = snowflake()
                fake.outage(seconds, status, retry_after=2.0)
                ends_at = time.monotonic() + seconds
                await fake.dispatch("MESSAGE_CREATE", fake.message_payload(content=text, author_id="5550007",
                                                                           channel_id=dm))

                def posts(dm: str = dm, text: str = text) -> list[Recorded]:
                    return [r for r in fake.requests if r.method == "POST" and r.path == f"/channels/{dm}/messages"
                            and (r.json or {}).get("content") == f"echo: {text}"]

                await until(lambda posts=posts: [r for r in posts() if r.status == 200], 40, "the reply to be taken")
                assert time.monotonic() >= ends_at - 0.2
                await until(lambda: _outbox(gw.state_dir), 10, "the outbox row to be marked sent")
                refused = [r for r in posts() if r.status != 200]
                assert refused and {r.status for r in refused} == {status}, [(r.status, r.t) for r in posts()]
                if status == 429:
                    assert _spaced([r.t for r in posts()], 2.0), [r.t for r in posts()]
                await until(lambda: True, 1)
                assert len([r for r in posts() if r.status == 200]) == 1, "the reply was delivered twice"
            assert gw.proc is not None and gw.proc.poll() is None
    finally:
        await fake.stop()
