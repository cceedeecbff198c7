"""The approvals service built from its constructor (fast tier): a real database and config store, the events it
broadcasts and the presenters it calls recorded.

The decisions themselves (first answer wins, a late one refused saying why, "allow always" rules, expiry,
a run's end) in milliseconds; the chat's buttons, the shim waiting and the real CLIs stay in the process tests
(``test_approvals_chat.py``, ``test_approvals_routing.py`` and the runtimes' approval tests).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import pytest

from gateway.approvals.pending import Pending
from gateway.approvals.service import ApprovalService
from gateway.config import ConfigStore
from gateway.config.model import validate
from gateway.protocol import InvalidRequest
from gateway.store import Database

pytestmark = pytest.mark.timeout(60)

SESSION = "agent:main:main"
LS = {"command": "ls -la"}


class Recorded:
    """What the service tells the world: broadcast events, presenter calls, the progress note's waiting flag."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.shown: list[tuple[str, str]] = []
        self.waiting: list[tuple[str, bool]] = []
        self.tasks: set[asyncio.Task[None]] = set()

    def broadcast(self, event: str, payload: dict[str, Any], **_: Any) -> int:
        self.events.append((event, payload))
        return 0

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        task = asyncio.create_task(work, name=name)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def present(self, phase: str, item: Pending) -> None:
        self.shown.append((phase, item.id))

    def names(self) -> list[str]:
        return [e for e, _ in self.events]


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[tuple[ApprovalService, Recorded]]:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await db.migrate()
    store = ConfigStore(tmp_path / "remoteclaw.json")
    store.config = validate({})
    seen = Recorded()
    approvals = ApprovalService(db, store, seen.broadcast, seen.spawn, lambda key, on: seen.waiting.append((key, on)))
    approvals.add_presenter(seen.present)
    yield approvals, seen
    await asyncio.gather(*seen.tasks, return_exceptions=True)
    await db.close()


def stored(tmp_path: Path, request_id: str) -> tuple[Any, ...]:
    with sqlite3.connect(tmp_path / "state.db") as conn:
        return conn.execute("SELECT status, decision, resolved_by FROM approval_requests WHERE id = ?",
                            (request_id,)).fetchone()


async def test_the_first_decision_wins_and_a_later_one_is_refused_naming_it(service, tmp_path: Path) -> None:
    approvals, seen = service
    item = await approvals.ask_tool("r1", "main", SESSION, "Bash", LS)
    assert item.pending and seen.waiting[-1] == (SESSION, True)
    assert seen.names() == ["exec.approval.requested"]
    assert seen.events[0][1]["presentation"]["commandText"] == "Bash: ls -la"
    await approvals.decide("r1", "allow-once", "telegram:42")
    assert item.done.is_set() and item.state()["decision"] == "allow-once"
    assert seen.waiting[-1] == (SESSION, False)
    with pytest.raises(InvalidRequest, match=r"already decided \(allow-once by telegram:42\)") as late:
        await approvals.decide("r1", "deny", "discord:7")
    assert late.value.details["code"] == "ALREADY_RESOLVED"
    assert stored(tmp_path, "r1") == ("allowed", "allow-once", "telegram:42")
    await asyncio.sleep(0.05)
    assert seen.shown == [("requested", "r1"), ("resolved", "r1")]


async def test_allow_always_answers_the_same_command_at_once_afterwards(service) -> None:
    approvals, _ = service
    await approvals.ask_tool("r1", "main", SESSION, "Bash", LS)
    await approvals.decide("r1", "allow-always", "owner")
    again = await approvals.ask_tool("r2", "main", SESSION, "Bash", LS)
    assert again.done.is_set() and again.decision == "allow-always" and again.resolved_by.startswith("rule:")
    other = await approvals.ask_tool("r3", "main", SESSION, "Bash", {"command": "rm -rf /"})
    assert other.pending  # the rule covers that command only
    elsewhere = await approvals.ask_tool("r4", "other-agent", SESSION, "Bash", LS)
    assert elsewhere.pending  # and that agent only


async def test_the_same_id_asked_again_is_the_same_request_and_another_session_may_not_take_it(service) -> None:
    approvals, _ = service
    first = await approvals.ask_tool("r1", "main", SESSION, "Bash", LS)
    assert await approvals.ask_tool("r1", "main", SESSION, "Bash", LS) is first
    with pytest.raises(InvalidRequest, match="already used by another session"):
        await approvals.ask_tool("r1", "main", "agent:main:other", "Bash", LS)


async def test_an_unanswered_question_expires_and_a_late_answer_is_refused(service, tmp_path: Path) -> None:
    approvals, seen = service
    asked = [{"questionId": "db", "header": "Database", "question": "Which one?",
              "options": [{"label": "SQLite"}, {"label": "PostgreSQL"}]}]
    item = await approvals.ask_question("q1", "main", SESSION, asked, 0.2)
    await asyncio.wait_for(item.done.wait(), 5)
    assert item.status == "expired" and stored(tmp_path, "q1")[0] == "expired"
    assert seen.names() == ["question.requested", "question.resolved"]
    with pytest.raises(InvalidRequest, match="expired before anyone decided"):
        await approvals.answer("q1", {"db": ["SQLite"]}, "owner")


async def test_an_answer_to_a_question_that_was_not_asked_names_the_field(service) -> None:
    approvals, _ = service
    asked = [{"questionId": "db", "header": "Database", "question": "Which one?", "options": [{"label": "SQLite"}]}]
    await approvals.ask_question("q1", "main", SESSION, asked, None)
    with pytest.raises(InvalidRequest, match="unknown questionId color") as bad:
        await approvals.answer("q1", {"color": ["red"]}, "owner")
    assert bad.value.details == {"field": "answers"}
    item = await approvals.answer("q1", {"db": ["SQLite"]}, "owner")
    assert item.status == "answered" and item.state()["answers"] == {"db": ["SQLite"]}


async def test_a_run_that_ends_cancels_what_it_asked_and_a_late_decision_is_refused(service, tmp_path: Path) -> None:
    approvals, _ = service
    item = await approvals.ask_tool("r1", "main", SESSION, "Bash", LS)
    other = await approvals.ask_tool("r2", "main", "agent:main:other", "Bash", LS)
    assert await approvals.run_ended(SESSION) == 1
    assert item.status == "cancelled" and other.pending
    with pytest.raises(InvalidRequest, match="the run that asked r1 has ended") as late:
        await approvals.decide("r1", "allow-once", "owner")
    assert late.value.details["code"] == "RUN_ENDED"
    assert stored(tmp_path, "r1")[0] == "cancelled"


async def test_a_request_held_by_another_replica_is_decided_here_through_its_row(tmp_path: Path) -> None:
    """Two replicas' services on one database (a node turn's shim asked at A, the person answers at B): B decides
    A's request through its row; A's waiter learns it at its next wait step even though no bus told it; a later
    decision at A is refused and B's outcome stands; only A's own restart cancels what A held."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'state.db'}")
    await db.migrate()
    store = ConfigStore(tmp_path / "remoteclaw.json")
    store.config = validate({})
    seen_a, seen_b = Recorded(), Recorded()
    a = ApprovalService(db, store, seen_a.broadcast, seen_a.spawn, lambda k, on: None, holder="replica-a")
    b = ApprovalService(db, store, seen_b.broadcast, seen_b.spawn, lambda k, on: None, holder="replica-b")
    try:
        asked = await a.ask_tool("far1", "remote", SESSION, "Bash", LS)
        there = await b.get("far1")
        assert there is not None and there.pending and there.remote  # pending at A, not "cancelled by a restart"
        assert (await b.wait("far1", 0.01)).pending
        await b.decide("far1", "allow-once", "webchat:owner")
        assert stored(tmp_path, "far1") == ("allowed", "allow-once", "webchat:owner")
        assert "exec.approval.resolved" not in seen_b.names()  # the holder tells the operators, once
        assert asked.pending  # no bus here: A has not heard yet
        got = await a.wait("far1", 0.05)  # the waiter's next step finds the row
        assert got is asked and got.status == "allowed" and got.resolved_by == "webchat:owner"
        assert "exec.approval.resolved" in seen_a.names()
        with pytest.raises(InvalidRequest, match="already decided") as late:
            await a.decide("far1", "deny", "telegram:7")
        assert late.value.details["code"] == "ALREADY_RESOLVED"
        assert stored(tmp_path, "far1") == ("allowed", "allow-once", "webchat:owner")

        racing = await a.ask_tool("far2", "remote", SESSION, "Bash", LS)
        await b.decide("far2", "deny", "webchat:owner")
        with pytest.raises(InvalidRequest, match="another replica") as raced:  # A's memory still said pending
            await a.decide("far2", "allow-once", "telegram:7")
        assert raced.value.details["code"] == "ALREADY_RESOLVED"
        assert racing.status == "denied" and racing.done.is_set()  # B's outcome, also in A's memory

        await a.ask_tool("far3", "remote", SESSION, "Bash", LS)
        restarted = ApprovalService(db, store, seen_a.broadcast, seen_a.spawn, lambda k, on: None,
                                    holder="replica-a")
        assert await restarted.forget_own() == 1
        gone = await b.get("far3")
        assert gone is not None and gone.status == "cancelled" and gone.reason == "gateway-restart"
    finally:
        await asyncio.gather(*seen_a.tasks, *seen_b.tasks, return_exceptions=True)
        await a.stop()
        await db.close()
