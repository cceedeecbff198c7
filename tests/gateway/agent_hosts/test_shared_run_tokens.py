"""Run tokens shared by the replicas (``gateway.agents.tokens.SharedGrants``, ``gateway.store.run_tokens``), on a
real PostgreSQL database: what one replica issues and shares the other accepts, with the same grant, until it is
revoked or expires; only the hash is stored; a replica starting again drops its own rows."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import AsyncIterator

import pytest

from gateway.agents.tokens import RunGrant, RunTokens, SharedGrants
from gateway.dispatch.callers import SessionScope
from gateway.store import Database
from tests.support.postgres import pg_url  # noqa: F401  (fixture)

pytestmark = [pytest.mark.timeout(60)]


@pytest.fixture
async def db(pg_url: str) -> AsyncIterator[Database]:  # noqa: F811
    database = Database(pg_url.replace("postgresql://", "postgresql+asyncpg://", 1))
    await database.migrate()
    try:
        yield database
    finally:
        await database.close()


def _replica(db: Database, name: str) -> RunTokens:
    return RunTokens(SharedGrants(db, name))


async def test_a_shared_token_counts_on_the_other_replica_until_revoked(db: Database) -> None:
    a, b = _replica(db, "replica-a"), _replica(db, "replica-b")
    scope = SessionScope("agent:remote:main", "telegram", "42", person_id="p1")
    token = b.issue(frozenset({"operator.read", "operator.write"}), frozenset({"chat.send", "approvals.ask"}),
                    confine=scope, session_key="agent:remote:main", run_id="run-1", node_id="node-1")
    assert await a.find(token) is None  # not shared yet: this replica's memory only
    unshared: list[RunGrant] = []
    b.on_unshare(unshared.append)
    await b.share(token, ttl_s=60)
    got = await a.find(token)
    assert got == b.grant(token)  # the same grant, scopes, methods, confinement and node
    assert got is not None and got.confine == scope and got.methods == frozenset({"chat.send", "approvals.ask"})
    assert a.grant(token) is None  # found in the shared store, never copied into a's memory
    rows = [tuple(r) for r in (await _rows(db))]
    assert rows == [(hashlib.sha256(token.encode()).hexdigest(), "run-1", "replica-b")]
    assert token not in repr(rows)
    assert await a.find("run-" + "x" * 43) is None and await a.find("not-a-run-token") is None
    b.revoke(token)
    assert [g.run_id for g in unshared] == ["run-1"]
    assert b.shared is not None and await b.shared.drop_run("run-1") == 1
    assert await a.find(token) is None and await b.find(token) is None


async def test_expired_rows_count_as_gone_and_are_pruned_and_a_restart_drops_its_own(db: Database) -> None:
    a, b = _replica(db, "replica-a"), _replica(db, "replica-b")
    short = b.issue(frozenset({"operator.read"}), run_id="run-short")
    kept = b.issue(frozenset({"operator.read"}), run_id="run-kept")
    await b.share(short, ttl_s=0.2)
    await b.share(kept, ttl_s=60)
    assert b.shared is not None and a.shared is not None
    assert await a.shared.live_runs(["run-short", "run-kept", "run-none"]) == {"run-short", "run-kept"}
    await asyncio.sleep(0.4)
    assert await a.find(short) is None and await a.find(kept) is not None
    assert await a.shared.live_runs(["run-short", "run-kept"]) == {"run-kept"}
    assert await a.shared.prune() == 1
    assert await a.shared.drop_own() == 0  # a's start: nothing of b's goes
    assert await b.shared.drop_own() == 1  # b's start again: its previous process's runs are over
    assert await a.find(kept) is None and await _rows(db) == []


async def _rows(db: Database) -> list[tuple[str, str, str]]:
    from sqlalchemy import text

    async with db.session() as s:
        found = await s.execute(text("SELECT token_hash, run_id, holder FROM run_tokens ORDER BY run_id"))
        return [(str(r[0]), str(r[1]), str(r[2])) for r in found.all()]


async def test_a_guessing_address_gets_no_more_database_look_ups(db: Database) -> None:
    a, b = _replica(db, "replica-a"), _replica(db, "replica-b")
    token = b.issue(frozenset({"operator.read"}), run_id="run-guessed")
    await b.share(token, ttl_s=60)
    for _ in range(20):  # run-shaped tokens nobody issued, from one address
        assert await a.find("run-" + secrets.token_urlsafe(32), "10.0.0.9") is None
    assert await a.find(token, "10.0.0.9") is None  # no look-up for that address any more, even of a live one
    assert await a.find(token, "10.0.0.10") == b.grant(token)  # another address is looked up as before
    assert await b.find(token, "10.0.0.9") == b.grant(token)  # the issuer answers from memory, whoever asks
