"""The run queue built from its constructor (fast tier): a real database and config store, a scripted executor.

What only the queue decides is tested here in milliseconds instead of through a gateway process and a stand-in
CLI: turns of one session never overlap and messages sent during a turn join the next one, the global cap (read
live from the config), abort, the run timeout, failures reported and not fatal, and what is stored (the turn's
transcript entries, its row in ``agent_runs``) and broadcast (``agent`` lifecycle and final ``chat`` events).
The process-level tests in ``test_queue.py`` keep what needs the real executor and CLI (``docs/architecture.md``,
"Tests").
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.config import ConfigStore
from gateway.config.model import validate
from gateway.runs.lease import LeaseService
from gateway.runs.queue import RunQueue
from gateway.runs.run import Run, RunOutcome, RunRequest
from gateway.sessions.store import SessionRepo
from gateway.store import Database

pytestmark = pytest.mark.timeout(60)


class Script:
    """The executor: each run waits for its gate (opened by the test) and answers by its first message."""

    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.started: list[list[str]] = []
        self.running = 0
        self.most_at_once = 0

    def gate(self, text: str) -> asyncio.Event:
        return self.gates.setdefault(text, asyncio.Event())

    async def __call__(self, run: Run) -> RunOutcome:
        messages = [r.message for r in run.requests]
        self.started.append(messages)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await self.gate(messages[0]).wait()
            if messages[0].startswith("fail"):
                raise RuntimeError("the CLI crashed")
            if messages[0].startswith("refuse"):
                return RunOutcome("error", error="the CLI said no")
            return RunOutcome("ok", reply="answer to " + " + ".join(messages))
        finally:
            self.running -= 1


class Events:
    """The broadcast: every event kept."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, event: str, payload: dict[str, Any], **_: Any) -> int:
        self.seen.append((event, payload))
        return 0

    def of(self, event: str, run_id: str) -> list[dict[str, Any]]:
        return [p for e, p in self.seen if e == event and p["runId"] == run_id]


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await database.migrate()
    yield database
    await database.close()


def config_store(tmp_path: Path, **agents: Any) -> ConfigStore:
    store = ConfigStore(tmp_path / "remoteclaw.json")
    store.config = validate({"agents": {"list": [{"id": "main", "command": ["true"]}], **agents}})
    return store


@pytest.fixture
async def queue(db: Database, tmp_path: Path) -> AsyncIterator[tuple[RunQueue, Script, Events]]:
    script, events = Script(), Events()
    q = RunQueue(db, config_store(tmp_path, maxConcurrentRuns=2, timeoutSeconds=30), events,
                 LeaseService(db, "replica-a"), executor=script)
    yield q, script, events
    for gate in script.gates.values():
        gate.set()
    await q.stop()


async def submit(q: RunQueue, key: str, text: str) -> tuple[Run, str]:
    """A chat message to ``key``, its session made first (as the sessions service does before a turn)."""
    async with q._db.session() as s:
        await SessionRepo.ensure(s, key, agent_id="main")
    return await q.submit(RunRequest(session_key=key, agent_id="main", message=text, source="chat"))


async def until(check: Any, what: str) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def rows(tmp_path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(tmp_path / "state.db") as conn:
        return conn.execute(sql).fetchall()


async def test_messages_during_a_turn_join_the_next_one_which_starts_after_it(queue, tmp_path: Path) -> None:
    q, script, events = queue
    first, status1 = await submit(q, "agent:main:a", "first")
    await until(lambda: script.started, "the first turn started")
    second, status2 = await submit(q, "agent:main:a", "second")
    third, status3 = await submit(q, "agent:main:a", "third")
    assert (status1, status2, status3) == ("accepted", "queued", "queued")
    assert second is third is not first
    script.gate("first").set()
    script.gate("second").set()
    done = await q.wait(second.id, 5000)
    assert done["status"] == "ok" and script.started == [["first"], ["second", "third"]]
    assert second.started_at is not None and first.ended_at is not None and second.started_at >= first.ended_at
    assert [p["state"] for p in events.of("chat", second.id)] == ["final"]
    assert events.of("chat", second.id)[0]["message"]["text"] == "answer to second + third"
    phases = [p["data"]["phase"] for p in events.of("agent", first.id) if p["stream"] == "lifecycle"]
    assert phases == ["start", "end"]
    stored = rows(tmp_path, "SELECT id, status FROM agent_runs ORDER BY created_at")
    assert sorted(stored) == sorted([(first.id, "ok"), (second.id, "ok")])
    assert [m for (m,) in rows(tmp_path, "SELECT text FROM session_messages WHERE role = 'user' ORDER BY id")] \
        == ["first", "second", "third"]


async def test_the_global_cap_is_read_live(queue) -> None:
    q, script, _ = queue
    for n in range(5):
        await submit(q, f"agent:main:s{n}", f"turn {n}")
    await until(lambda: script.running == 2, "two turns running")
    await asyncio.sleep(0.1)
    assert script.running == 2 and q.active_count == 2  # maxConcurrentRuns: 2
    q._config.config = validate({"agents": {"list": [{"id": "main", "command": ["true"]}], "maxConcurrentRuns": 3}})
    for n in range(5):
        script.gate(f"turn {n}").set()
    await until(lambda: len(script.started) == 5, "every turn started")
    assert script.most_at_once <= 3


async def test_abort_stops_the_turn_and_drops_the_one_queued_behind_it(queue) -> None:
    q, script, events = queue
    running, _ = await submit(q, "agent:main:b", "long")
    await until(lambda: script.running == 1, "the turn running")
    queued, status = await submit(q, "agent:main:b", "next")
    assert status == "queued"
    stopped = q.abort("agent:main:b")
    assert running.id in stopped
    result = await q.wait(running.id, 5000)
    assert result["status"] == "error" and running.status == "aborted"  # agent.wait says error, as OpenClaw does
    assert [p["state"] for p in events.of("chat", running.id)] == ["aborted"]
    await asyncio.sleep(0.1)
    assert script.started == [["long"]]  # the queued turn never ran
    assert queued.id not in [r.id for r in q.runs.values() if r.status == "running"]


async def test_a_crash_and_a_refusal_are_reported_and_the_session_goes_on(queue, tmp_path: Path) -> None:
    q, script, events = queue
    crashed, _ = await submit(q, "agent:main:c", "fail now")
    script.gate("fail now").set()
    assert (await q.wait(crashed.id, 5000))["status"] == "error"
    assert "the CLI crashed" in events.of("chat", crashed.id)[-1]["errorMessage"]
    refused, _ = await submit(q, "agent:main:c", "refuse this")
    script.gate("refuse this").set()
    result = await q.wait(refused.id, 5000)
    assert result["status"] == "error" and result["error"] == "the CLI said no"
    fine, _ = await submit(q, "agent:main:c", "fine")
    script.gate("fine").set()
    assert (await q.wait(fine.id, 5000))["status"] == "ok"
    assert dict(rows(tmp_path, "SELECT id, status FROM agent_runs")) == {
        crashed.id: "error", refused.id: "error", fine.id: "ok"}


async def test_a_turn_past_the_timeout_is_stopped(db: Database, tmp_path: Path) -> None:
    script, events = Script(), Events()
    q = RunQueue(db, config_store(tmp_path, timeoutSeconds=1), events, LeaseService(db, "replica-a"),
                 executor=script)
    run, _ = await submit(q, "agent:main:t", "never answers")
    result = await q.wait(run.id, 5000)
    assert result["status"] == "error" and run.status == "timeout" and "longer than 1s" in result["error"]
    await q.stop()


async def test_without_an_executor_a_turn_fails_with_a_reason(db: Database, tmp_path: Path) -> None:
    q = RunQueue(db, config_store(tmp_path), Events(), LeaseService(db, "replica-a"))
    run, _ = await submit(q, "agent:main:n", "anyone?")
    result = await q.wait(run.id, 5000)
    assert result["status"] == "error" and "no agent executor" in result["error"]
    await q.stop()
