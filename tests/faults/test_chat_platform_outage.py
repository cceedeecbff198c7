"""The chat platform answers 429 (with ``retry_after``) or 502 for a while: the reply arrives late, once.

The loopback Telegram fake refuses every ``sendMessage`` for a few seconds (``FakeTelegram.outage``). What the
user sees: the agent's reply arrives when the platform takes messages again, exactly once. What is kept: the
reply, in the outbox, marked sent once it went; a 429's ``retry_after`` is waited out, never hammered.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.support.fake_telegram import Call, FakeTelegram, telegram_gateway
from tests.support.waiting import until

pytestmark = [pytest.mark.timeout(60)]

OWNER = 111
OUTAGE_S = 4.0


@pytest.fixture
def fake() -> FakeTelegram:
    server = FakeTelegram().start()
    yield server  # type: ignore[misc]
    server.stop()


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
            times = [c.t for c in refused + taken]
            assert all(b - a >= retry_after - 0.3 for a, b in zip(times, times[1:], strict=False)), times
        time_after = time.monotonic()
        await until(lambda: time.monotonic() - time_after > 2, 5)  # nothing trails behind
        assert len(_sends(fake, reply)[1]) == 1, "the reply was delivered twice"
        assert gw.proc is not None and gw.proc.poll() is None


def _outbox(state_dir: Path) -> bool:
    """Every outbox row is marked sent (and there is one)."""
    with sqlite3.connect(state_dir / "remoteclaw.db") as db:
        rows = db.execute("SELECT sent_at FROM outbox").fetchall()
    return bool(rows) and all(r[0] is not None for r in rows)
