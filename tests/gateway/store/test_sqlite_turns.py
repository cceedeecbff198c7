"""SQLite units of work take turns in the gateway process (found by the soak, issue #34).

Before: a hundred ``chat.send`` at once (the soak's waves of agent runs) made some units of work wait in
SQLite's busy handler for longer than ``busy_timeout`` and fail with "database is locked": the caller got
``UNAVAILABLE`` and the run was lost. Now the units queue in the process, in order, without a deadline.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text

from gateway.store import Database
from gateway.store import db as db_module
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(180)


async def test_slow_writers_all_commit(tmp_path: Path) -> None:
    """Twenty units each holding the write lock for 0.35 s (a busy event loop between statements):
    7 s in all, more than the 5 s busy timeout, and still every one commits."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'turns.db'}")
    async with db.session() as s:
        await s.execute(text("CREATE TABLE t (n INTEGER)"))

    async def unit(n: int) -> None:
        async with db.session() as s:
            await s.execute(text("INSERT INTO t (n) VALUES (:n)"), {"n": n})
            await asyncio.sleep(0.35)

    results = await asyncio.gather(*(unit(n) for n in range(20)), return_exceptions=True)
    await db.close()
    assert [r for r in results if r is not None] == []
    with sqlite3.connect(tmp_path / "turns.db") as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (20,)


async def test_readers_do_not_wait_for_the_writers_turn(tmp_path: Path) -> None:
    """While a unit of work holds its turn (and SQLite's write lock), ``reading`` answers from the last commit;
    the writer only finishes after the reader did, so a reader waiting for the turn would never get there."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'read.db'}")
    async with db.session() as s:
        await s.execute(text("CREATE TABLE t (n INTEGER)"))
        await s.execute(text("INSERT INTO t (n) VALUES (1)"))
    read_done = asyncio.Event()
    writing = asyncio.Event()

    async def writer() -> None:
        async with db.session() as s:
            await s.execute(text("INSERT INTO t (n) VALUES (2)"))
            writing.set()
            await asyncio.wait_for(read_done.wait(), 10)

    async def reader() -> int:
        await writing.wait()
        async with db.reading() as s:
            count = int((await s.execute(text("SELECT count(*) FROM t"))).scalar_one())
        read_done.set()
        return count

    _, seen = await asyncio.gather(writer(), reader())
    assert seen == 1  # the committed row; the writer's own is not visible until it commits
    async with db.reading() as s:
        assert (await s.execute(text("SELECT count(*) FROM t"))).scalar_one() == 2
    await db.close()


async def test_a_unit_inside_a_unit_does_not_wait_for_itself(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'nested.db'}")
    async with db.session() as s:
        await s.execute(text("CREATE TABLE t (n INTEGER)"))

    async def outer() -> int:
        async with db.session() as s:
            async with db.session() as inner:
                await inner.execute(text("INSERT INTO t (n) VALUES (1)"))
            return int((await s.execute(text("SELECT count(*) FROM t"))).scalar_one())

    assert await asyncio.wait_for(outer(), 10) == 1
    await db.close()


async def test_a_unit_waiting_on_another_task_goes_ahead_in_the_end(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit that waits for a task which itself needs the database: no deadlock; after ``TURN_WAIT_S``
    the waiting task goes ahead without its turn (as every unit did before the turns)."""
    monkeypatch.setattr(db_module, "TURN_WAIT_S", 0.5)
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'wait.db'}")
    async with db.session() as s:
        await s.execute(text("CREATE TABLE t (n INTEGER)"))
    gate = asyncio.Event()

    async def reader() -> int:
        await gate.wait()
        async with db.session() as s:
            return int((await s.execute(text("SELECT count(*) FROM t"))).scalar_one())

    task = asyncio.create_task(reader())  # started outside the unit below: it has to wait for a turn

    async def holder() -> int:
        async with db.session():
            gate.set()
            return await asyncio.wait_for(task, 10)

    assert await holder() == 0
    await db.close()


async def test_a_hundred_chat_sends_at_once_all_run(tmp_path: Path) -> None:
    config = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "maxConcurrentRuns": 100},
              "logging": {"level": "warning", "consoleLevel": "warning"}}
    with GatewayProcess(tmp_path / "gw", config=config).start(30) as gw:
        client = await operator(gw.url, gw.token or "")

        async def one(i: int) -> str:
            sent = await client.req("chat.send", {"sessionKey": f"agent:main:burst-{i}", "message": "sleep:1 hi",
                                                  "idempotencyKey": uuid.uuid4().hex}, timeout=90)
            if not sent["ok"]:
                return f"chat.send: {sent['error']}"
            waited = await client.call("agent.wait", {"runId": sent["payload"]["runId"], "timeoutMs": 90_000},
                                       timeout=100)
            return str(waited["status"])

        outcomes = await asyncio.gather(*(one(i) for i in range(100)))
        await client.close()
        log = (gw.state_dir / "logs" / "gateway.log").read_text()
    assert [o for o in outcomes if o != "ok"] == []
    assert "database is locked" not in log
