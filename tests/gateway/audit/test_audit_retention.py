"""Retention on both engines: rows past ``audit.retentionDays`` go when the gateway starts, a shorter retention
applies at once, recent rows stay, and the prefix filters and paging read the same on PostgreSQL.

Old rows are written straight into the database with the plain driver (``sqlite3``, ``asyncpg``), as a gateway
running 90 days ago would have left them; what is left is read back the same way.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from tests.support.gateway_proc import GatewayProcess
from tests.support.postgres import pg_url  # noqa: F401  (fixture)
from tests.support.ws import RawClient, operator

DAY_MS = 86_400_000


@dataclass
class Target:
    kind: str  # "sqlite" | "postgresql"
    state_dir: Path
    pg_url: str | None = None

    def gateway(self) -> GatewayProcess:
        return GatewayProcess(self.state_dir, env={"REMOTECLAW_DATABASE_URL": self.pg_url} if self.pg_url else {})

    async def sql(self, statement: str, *args: Any) -> list[tuple[Any, ...]]:
        """Run one statement with ``$1``-style arguments (rewritten to ``?`` for SQLite)."""
        if self.pg_url is None:
            query = statement
            for n in range(len(args), 0, -1):
                query = query.replace(f"${n}", "?")
            with sqlite3.connect(self.state_dir / "remoteclaw.db") as conn:
                return [tuple(r) for r in conn.execute(query, args).fetchall()]
        conn = await asyncpg.connect(self.pg_url)
        try:
            return [tuple(r) for r in await conn.fetch(statement, *args)]
        finally:
            await conn.close()

    async def insert(self, at: int, target: str) -> None:
        await self.sql("INSERT INTO audit_events (at, actor, actor_kind, action, target, details) "
                       "VALUES ($1, 'cli', 'cli', 'config.patch', $2, NULL)", at, target)

    async def targets(self) -> set[str]:
        return {r[0] for r in await self.sql("SELECT target FROM audit_events WHERE target IS NOT NULL")}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    return Target(request.param, tmp_path / "state", url)


async def patch(client: RawClient, change: dict[str, Any]) -> None:
    base = (await client.call("config.get"))["hash"]
    await client.call("config.patch", {"patch": change, "baseHash": base})


async def test_old_events_go_at_start_and_when_retention_shrinks(target: Target) -> None:
    with target.gateway() as gw:  # the schema, and one event of today
        client = await operator(gw.url, gw.token or "")
        await client.call("config.set", {"key": "cron.keepRunsDays", "value": 9,
                                         "baseHash": (await client.call("config.get"))["hash"]})
        await client.close()
    now = int(time.time() * 1000)
    await target.insert(now - 91 * DAY_MS, "past-retention")
    await target.insert(now - 89 * DAY_MS, "within-retention")
    await target.insert(now - 40 * DAY_MS, "forty-days")

    with target.gateway() as gw:
        assert await target.targets() == {"within-retention", "forty-days", "cron.keepRunsDays"}
        client = await operator(gw.url, gw.token or "")
        listed = await client.call("audit.log.list", {})
        assert [e["target"] for e in listed["events"]] == ["cron.keepRunsDays", "forty-days", "within-retention"]
        assert listed["retentionDays"] == 90

        await patch(client, {"audit": {"retentionDays": 30}})  # applied live: the older rows go now
        assert await target.targets() == {"cron.keepRunsDays"}
        latest = (await client.call("audit.log.list", {"limit": 1}))["events"][0]
        assert latest["action"] == "config.patch" and latest["details"]["patch"] == {"audit": {"retentionDays": 30}}
        await client.close()


async def test_filters_and_paging_on_this_engine(target: Target) -> None:
    with target.gateway() as gw:
        client = await operator(gw.url, gw.token or "")
        await client.call("audit.log.list", {})  # the schema is there
        now = int(time.time() * 1000)
        for n, name in enumerate(["a_b", "a%b", "axb", "a_b"]):  # LIKE's wildcards are matched as themselves
            await target.insert(now - n * 1000, name)
            await target.sql("UPDATE audit_events SET actor = $1 WHERE target = $2", f"person:{name}", name)
        assert [e["target"] for e in await _all(client, actor="person:a_")] == ["a_b", "a_b"]
        assert [e["target"] for e in await _all(client, actor="person:a%")] == ["a%b"]
        same_ms = now - 10_000
        for _ in range(5):
            await target.insert(same_ms, "same-ms")
        paged = await _all(client, target="same-ms", limit=2)
        assert len(paged) == 5 and [e["id"] for e in paged] == sorted((e["id"] for e in paged), reverse=True)
        await client.close()


async def _all(client: RawClient, **params: Any) -> list[dict[str, Any]]:
    """Every page of ``audit.log.list`` for ``params``, in order."""
    out: list[dict[str, Any]] = []
    before = None
    while True:
        page = await client.call("audit.log.list", {**params, **({"before": before} if before else {})})
        out += page["events"]
        before = page["nextBefore"]
        if before is None:
            return out
