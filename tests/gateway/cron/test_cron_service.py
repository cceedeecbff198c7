"""The cron service built from its constructor (fast tier): the real run queue and sessions service on a real
database, the agent's turn a scripted executor, and no gateway process.

What the scheduler itself decides: a due job fires once and its run is recorded, an isolated job gets a session
of its own, a failed run counts as an error with a backoff and alerts after ``failureAlertAfter``, a one-shot
``at`` job is switched off after it ran, and a job that is not due is not run by ``due``. The process tests
(``test_cron_gateway.py``) keep the methods, the shim's tools, delivery to the chats, replicas and crashes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.config import ConfigStore
from gateway.config.model import validate
from gateway.cron.jobs import validate_job
from gateway.cron.service import CronService
from gateway.cron.store import CronJob
from gateway.hooks.runner import HookRunner
from gateway.runs.lease import LeaseService
from gateway.runs.queue import RunQueue
from gateway.runs.run import Run, RunOutcome
from gateway.sessions.service import SessionsService
from gateway.store import Database

pytestmark = pytest.mark.timeout(60)


class Agent:
    """The executor: answers each turn at once; a message containing ``fail`` fails it."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    async def __call__(self, run: Run) -> RunOutcome:
        message = run.requests[0].message
        self.turns.append((run.session_key, message))
        if "fail" in message:
            return RunOutcome("error", error="the CLI failed")
        return RunOutcome("ok", reply=f"done: {message}")


@dataclass
class Cron:
    service: CronService
    agent: Agent
    events: list[tuple[str, dict[str, Any]]]
    db: Database
    state: Path

    async def add(self, **job: Any) -> str:
        """A job as ``cron.add`` makes one (checked by the same ``validate_job``), due as its schedule says."""
        now = _now()
        spec = validate_job({"name": "test", "payload": {"kind": "agentTurn", "message": "hello"}, **job},
                            now_ms=now, agent_ids=["main"], default_agent="main")
        row = CronJob(id=uuid.uuid4().hex[:16], created_at=now, updated_at=now, kind="job",
                      consecutive_errors=0, **spec.columns())
        row.next_run_at = spec.schedule.first_run(now) if spec.enabled else None
        if spec.schedule.kind == "at" and row.next_run_at is None:
            row.next_run_at = now
        async with self.db.session() as s:
            s.add(row)
        self.service.wake()
        return row.id

    def runs_of(self, job_id: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.state / "state.db") as conn:
            return conn.execute("SELECT status, error, session_key FROM cron_runs WHERE job_id = ? ORDER BY id",
                                (job_id,)).fetchall()

    def job(self, job_id: str) -> tuple[Any, ...] | None:
        with sqlite3.connect(self.state / "state.db") as conn:
            return conn.execute("SELECT enabled, consecutive_errors, last_status, next_run_at FROM cron_jobs "
                                "WHERE id = ?", (job_id,)).fetchone()

    async def finished(self, job_id: str, count: int = 1) -> None:
        for _ in range(500):
            if len([r for r in self.runs_of(job_id) if r[0] != "running"]) >= count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"job {job_id} ran {self.runs_of(job_id)}, expected {count} finished")


def _now() -> int:
    return int(time.time() * 1000)


@pytest.fixture
async def cron(tmp_path: Path) -> AsyncIterator[Cron]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await db.migrate()
    store = ConfigStore(tmp_path / "remoteclaw.json")
    store.config = validate({"agents": {"list": [{"id": "main", "command": ["true"]}]},
                             "cron": {"failureAlertAfter": 2}})
    agent, events = Agent(), []

    def broadcast(event: str, payload: dict[str, Any], **_: Any) -> int:
        events.append((event, payload))
        return 0

    runs = RunQueue(db, store, broadcast, LeaseService(db, "replica-a"), executor=agent)
    sessions = SessionsService(db, store, HookRunner(), runs)
    service = CronService(db, store, "replica-a", sessions, runs, None, broadcast, lambda: None)
    await service.start()
    yield Cron(service, agent, events, db, tmp_path)
    await service.stop()
    await runs.stop()
    await db.close()


async def test_a_due_job_fires_once_and_its_run_is_recorded(cron: Cron) -> None:
    job = await cron.add(schedule={"kind": "at", "at": "2020-01-01T00:00:00Z"}, sessionTarget="main")
    await cron.finished(job)
    await asyncio.sleep(0.2)
    assert cron.agent.turns == [("agent:main:main", "hello")]
    assert cron.runs_of(job) == [("ok", None, "agent:main:main")]
    enabled, errors, last, next_run = cron.job(job)
    assert (enabled, errors, last, next_run) == (0, 0, "ok", None)  # a one-shot job is off once it ran
    actions = [p["action"] for e, p in cron.events if e == "cron"]
    assert actions[:2] == ["started", "finished"]


async def test_an_isolated_job_runs_in_a_session_of_its_own(cron: Cron) -> None:
    job = await cron.add(schedule={"kind": "at", "at": "2020-01-01T00:00:00Z"}, sessionTarget="isolated")
    await cron.finished(job)
    [(key, _message)] = cron.agent.turns
    assert key.startswith(f"agent:main:cron:{job}:")


async def test_a_failed_run_is_an_error_with_a_backoff_and_alerts_at_the_threshold(cron: Cron) -> None:
    job = await cron.add(schedule={"kind": "every", "everyMs": 1000}, sessionTarget="main",
                         payload={"kind": "agentTurn", "message": "please fail"})
    first = await cron.service.run_now(job, due_only=False)
    assert first == {"ok": True, "ran": True}
    await cron.finished(job)
    status, error, _ = cron.runs_of(job)[0]
    assert status == "error" and "the CLI failed" in error
    enabled, errors, last, next_run = cron.job(job)
    assert enabled == 1 and errors == 1 and last == "error" and next_run >= _now() + 20_000  # backed off
    await cron.service.run_now(job, due_only=False)
    await cron.finished(job, 2)
    assert cron.job(job)[1] == 2


async def test_due_does_not_run_a_job_that_is_not_due(cron: Cron) -> None:
    job = await cron.add(schedule={"kind": "every", "everyMs": 3_600_000}, sessionTarget="main")
    assert await cron.service.run_now(job, due_only=True) == {"ok": True, "ran": False, "reason": "not-due"}
    assert await cron.service.run_now("nope", due_only=False) == {"ok": False, "ran": False, "reason": "not-found"}
    await asyncio.sleep(0.1)
    assert cron.agent.turns == []


async def test_stop_ends_the_timer_even_when_a_wake_lands_as_it_is_cancelled(cron: Cron) -> None:
    """A run finishing wakes the timer; ``stop`` cancelling it in that same moment must still end it (Python
    3.11's ``wait_for`` returned normally there and the cancellation was lost: ``stop`` then hung for ever)."""
    c = cron.service
    for turns in range(8):  # the window is a few loop turns after ``wake``: cancel in each of them
        timer = CronService(cron.db, c._config, "replica-b", c._sessions, c._runs, None, lambda *a, **k: 0,
                            lambda: None)
        await timer.start()
        await asyncio.sleep(0.05)  # the timer is waiting for its next due time
        timer.wake()
        for _ in range(turns):
            await asyncio.sleep(0)
        stopping = asyncio.create_task(timer.stop())
        await asyncio.wait([stopping], timeout=5)  # not asyncio.timeout: stop() swallows a CancelledError
        assert stopping.done(), f"stop() hung when cancelling {turns} loop turns after a wake"
