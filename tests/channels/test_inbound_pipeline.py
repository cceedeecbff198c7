"""The inbound pipeline every channel uses (``channels.pipeline``), built from its constructor on a real journal.

Fast tier: no gateway process. The journal is the gateway's own (``InboundJournal`` on a migrated SQLite file), and
``handle`` is what a channel gives: here a recorder that can be told to fail or to hang.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from channels.pipeline import SEEN_KEPT, InboundPipeline
from gateway.platforms import InboundJournal
from gateway.store import Database

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def journal(tmp_path: Path) -> AsyncIterator[InboundJournal]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await db.migrate()
    yield InboundJournal(db)
    await db.close()


class Recorder:
    """A channel's ``handle``: records payloads; ``fail`` and ``hold`` name texts it fails on or waits at."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.fail: set[str] = set()
        self.hold: dict[str, asyncio.Event] = {}
        self.started: dict[str, asyncio.Event] = {}

    async def __call__(self, payload: dict[str, Any]) -> None:
        text = payload["text"]
        self.started.setdefault(text, asyncio.Event()).set()
        if text in self.hold:
            await self.hold[text].wait()
        if text in self.fail:
            raise RuntimeError(f"cannot handle {text}")
        self.handled.append(text)


def pipeline(journal: InboundJournal | None, handle: Recorder, account: str = "default") -> InboundPipeline:
    return InboundPipeline("chat", account, journal, handle=handle, conversation=lambda p: p["chat"])


async def settled(p: InboundPipeline, handle: Recorder, count: int) -> None:
    for _ in range(200):
        if len(handle.handled) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"handled {handle.handled}, expected {count}")


def journal_rows(tmp_path: Path) -> list[tuple[str, bool]]:
    with sqlite3.connect(tmp_path / "state.db") as conn:
        rows = conn.execute("SELECT update_key, handled_at IS NOT NULL FROM inbound_journal ORDER BY id").fetchall()
    return [(key, bool(done)) for key, done in rows]


async def test_each_update_is_written_handled_once_and_marked_done(journal: InboundJournal, tmp_path: Path) -> None:
    handle = Recorder()
    p = pipeline(journal, handle)
    assert await p.receive("1", {"chat": "a", "text": "one"})
    assert not await p.receive("1", {"chat": "a", "text": "one"})  # a redelivery: dropped
    assert await p.receive("2", {"chat": "b", "text": "two"})
    await settled(p, handle, 2)
    await asyncio.sleep(0.05)
    assert sorted(handle.handled) == ["one", "two"]
    assert journal_rows(tmp_path) == [("1", True), ("2", True)]


async def test_one_conversation_in_order_while_another_goes_on(journal: InboundJournal) -> None:
    handle = Recorder()
    handle.hold["a1"] = asyncio.Event()
    p = pipeline(journal, handle)
    for key, chat, text in (("1", "a", "a1"), ("2", "a", "a2"), ("3", "b", "b1"), ("4", "a", "a3")):
        await p.receive(key, {"chat": chat, "text": text})
    await settled(p, handle, 1)
    assert handle.handled == ["b1"]  # chat b is not held up by chat a's slow first message
    handle.hold["a1"].set()
    await settled(p, handle, 4)
    assert handle.handled == ["b1", "a1", "a2", "a3"]


async def test_a_failed_or_cut_off_update_is_replayed_at_next_start(journal: InboundJournal, tmp_path: Path) -> None:
    handle = Recorder()
    handle.fail.add("breaks")
    handle.hold["cut off"] = asyncio.Event()
    first = pipeline(journal, handle)
    await first.receive("1", {"chat": "a", "text": "fine"})
    await first.receive("2", {"chat": "b", "text": "breaks"})
    await first.receive("3", {"chat": "c", "text": "cut off"})
    await handle.started.setdefault("cut off", asyncio.Event()).wait()
    await settled(first, handle, 1)
    await first.stop()  # the account stops while "cut off" is being handled
    assert journal_rows(tmp_path) == [("1", True), ("2", False), ("3", False)]

    again = Recorder()
    second = pipeline(journal, again)
    assert await second.replay() == 2
    await settled(second, again, 2)
    assert sorted(again.handled) == ["breaks", "cut off"]
    assert not await second.receive("3", {"chat": "c", "text": "cut off"})  # still known: not handled twice
    await asyncio.sleep(0.05)
    assert journal_rows(tmp_path) == [("1", True), ("2", True), ("3", True)]


async def test_accounts_and_channels_keep_their_own_journal_entries(journal: InboundJournal) -> None:
    handle = Recorder()
    a, b = pipeline(journal, handle, "a"), pipeline(journal, handle, "b")
    assert await a.receive("7", {"chat": "x", "text": "to a"})
    assert await b.receive("7", {"chat": "x", "text": "to b"})  # the same platform id on another account
    await settled(a, handle, 2)


async def test_a_write_that_fails_raises_so_the_platform_delivers_again(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")  # never migrated: the journal table is missing
    handle = Recorder()
    p = pipeline(InboundJournal(db), handle)
    with pytest.raises(Exception):  # noqa: B017 - whatever the database raises reaches the channel
        await p.receive("1", {"chat": "a", "text": "lost?"})
    await asyncio.sleep(0.05)
    assert handle.handled == []
    await db.close()


async def test_the_same_update_delivered_twice_at_once_is_handled_once(journal: InboundJournal) -> None:
    handle = Recorder()
    p = pipeline(journal, handle)
    results = await asyncio.gather(*(p.receive("9", {"chat": "a", "text": "twin"}) for _ in range(5)))
    assert sorted(results) == [False, False, False, False, True]
    await settled(p, handle, 1)
    await asyncio.sleep(0.05)
    assert handle.handled == ["twin"]


async def test_without_a_journal_recent_keys_are_remembered_within_a_bound() -> None:
    handle = Recorder()
    p = pipeline(None, handle)
    assert await p.receive("0", {"chat": "a", "text": "first"})
    assert not await p.receive("0", {"chat": "a", "text": "first"})
    for n in range(1, SEEN_KEPT + 1):
        await p._first_time(str(n), {})
    assert await p.receive("0", {"chat": "a", "text": "first"})  # forgotten past the bound: memory stays flat
    assert await p.replay() == 0
    await settled(p, handle, 2)
