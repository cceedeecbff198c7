"""The memory plugin: its six tools through the real MCP shim on SQLite and PostgreSQL, tier expiry with an
injected clock, hybrid search against a fake embedding server, and ``remoteclaw memory``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from gateway.store import Database
from plugins.memory.store import MemoryStore
from tests.mcp_shim.shim import Shim, shim_env
from tests.support import FAKE_CLI, ROOT
from tests.support.fake_embeddings import FakeEmbeddings
from tests.support.gateway_proc import GatewayProcess
from tests.support.postgres import fresh_database, pg_url  # noqa: F401
from tests.support.ws import operator

AGENTS = {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]},
                   {"id": "ops", "command": [sys.executable, FAKE_CLI]}]}


@pytest.fixture(params=["sqlite", "postgresql"])
def db_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    if request.param == "sqlite":
        yield {}
        return
    with fresh_database() as url:
        yield {"REMOTECLAW_DATABASE_URL": url}


async def start_shim(gw: GatewayProcess, tmp: Path, session_key: str = "agent:main:main") -> Shim:
    """A non-owner run's shim, handed the plugin tool list as the executor hands it (no fetch at start)."""
    c = await operator(gw.url, gw.token or "")
    try:
        listing = await c.call("plugin.tools.list")
    finally:
        await c.close()
    shim = await Shim.start(shim_env(gw, tmp, owner=False, session_key=session_key, plugin_manifest=listing))
    await shim.initialize()
    return shim


async def rows(gw: GatewayProcess, env: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(agent, tier, content)`` of every stored memory, read from the database itself."""
    sql = "SELECT agent_id, tier, content FROM plugin_memory_items ORDER BY created_at"
    if "REMOTECLAW_DATABASE_URL" in env:
        conn = await asyncpg.connect(env["REMOTECLAW_DATABASE_URL"])
        try:
            return [tuple(r) for r in await conn.fetch(sql)]  # type: ignore[misc]
        finally:
            await conn.close()
    with sqlite3.connect(gw.state_dir / "remoteclaw.db") as conn:
        return [tuple(r) for r in conn.execute(sql)]


async def test_remember_search_get_forget_through_the_shim(tmp_path: Path, db_env: dict[str, str]) -> None:
    with GatewayProcess(tmp_path / "gw", config={"agents": AGENTS}, env=db_env) as gw:
        shim = await start_shim(gw, tmp_path, "agent:main:telegram:direct:7")
        ops = await start_shim(gw, tmp_path, "agent:ops:main")
        try:
            tea = await shim.call_ok("memory_remember", {"content": "The user prefers green tea in the morning",
                                                         "tier": "core"})
            assert tea["created"] is True and tea["tier"] == "core" and tea["expiresAt"] is None
            note = await shim.call_ok("memory_remember", {"content": "Deploy window: Friday 14:00\nowner: Sam\n"
                                                          "rollback: make revert", "tier": "notes"})
            assert note["expiresAt"] is not None and note["lines"] == 3
            again = await shim.call_ok("memory_remember", {"content": "The user prefers green tea in the morning",
                                                           "tier": "core"})
            assert again["created"] is False and again["id"] == tea["id"]  # no duplicate
            assert await rows(gw, db_env) == [("main", "core", "The user prefers green tea in the morning"),
                                              ("main", "notes", "Deploy window: Friday 14:00\nowner: Sam\n"
                                                                "rollback: make revert")]

            found = await shim.call_ok("memory_search", {"query": "what tea does the user like?"})
            assert found["mode"] == "keyword"
            assert [r["id"] for r in found["results"]] == [tea["id"]] and found["results"][0]["score"] == 1.0
            assert (await ops.call_ok("memory_search", {"query": "tea"}))["results"] == []  # another agent's

            lines = await shim.call_ok("memory_get", {"path": note["id"], "from_line": 2, "lines": 2})
            assert lines["content"] == "owner: Sam\nrollback: make revert" and lines["totalLines"] == 3
            missing = await shim.call("memory_get", {"path": "mem_nope"})
            assert missing["isError"] and "no memory" in missing["content"][0]["text"]

            refused = await shim.call("memory_forget", {"content_or_id": tea["id"]})
            assert refused["isError"] and "confirmed: true" in refused["content"][0]["text"]
            assert len(await rows(gw, db_env)) == 2  # nothing was deleted
            forgot = await shim.call_ok("memory_forget", {"content_or_id": "green tea", "confirmed": True})
            assert forgot == {"forgotten": 1, "ids": [tea["id"]]}
            assert (await shim.call_ok("memory_search", {"query": "tea"}))["results"] == []

            flushed = await shim.call_ok("memory_flush", {"summary": "Planned the release", "decisions": ["ship v2"],
                                                          "action_items": ["tag the build"]})
            assert flushed["path"].startswith("flush/")
            doc = await shim.call_ok("memory_get", {"path": flushed["path"]})
            assert "Decisions:\n- ship v2" in doc["content"] and "- tag the build" in doc["content"]
            stats = await shim.call_ok("memory_stats")
            assert stats["total"] == 2 and stats["byTier"] == {"core": 0, "stable": 1, "notes": 1}
            assert stats["index"] == ("postgresql-tsvector" if db_env else "sqlite-fts5")
            bad = await shim.call("memory_remember", {"content": "x", "tier": "forever"})
            assert bad["isError"] and "tier" in bad["content"][0]["text"]
        finally:
            await shim.close()
            await ops.close()


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
async def test_tiers_expire_on_their_own(tmp_path: Path, engine: str, request: pytest.FixtureRequest) -> None:
    now = [1_800_000_000.0]
    url = f"sqlite+aiosqlite:///{tmp_path / 'memory.db'}"
    if engine == "postgresql":
        url = request.getfixturevalue("pg_url").replace("postgresql://", "postgresql+asyncpg://")
    db = Database(url)
    store = MemoryStore(db, clock=lambda: now[0])
    try:
        await store.create_schema()
        await store.create_schema()  # idempotent: every plugin start runs it
        for tier in ("core", "stable", "notes"):
            await store.remember("main", f"{tier} memory about the garden", tier)
        assert len(await store.keyword("main", "garden", 10)) == 3
        now[0] += 25 * 3600  # a day and an hour later: the note has expired, invisibly at once
        assert sorted(m.tier for m, _ in await store.keyword("main", "garden", 10)) == ["core", "stable"]
        assert await store.sweep() == 1
        now[0] += 7 * 86400  # a week later only core is left
        assert [m.tier for m in await store.recent("main")] == ["core"]
        assert await store.sweep() == 1
        assert (await store.stats("main"))["byTier"] == {"core": 1, "stable": 0, "notes": 0}
    finally:
        await db.close()


async def test_hybrid_search_with_a_fake_embedding_server(tmp_path: Path) -> None:
    with FakeEmbeddings() as fake:
        config = {"agents": AGENTS, "plugins": {"entries": {"memory": {"config": {"embeddings": {
            "baseUrl": f"{fake.url}/v1", "apiKey": "sk-embed-secret", "model": "fake-embed-64"}}}}}}
        with GatewayProcess(tmp_path / "gw", config=config) as gw:
            shim = await start_shim(gw, tmp_path)
            try:
                await shim.call_ok("memory_remember", {"content": "User prefers green tea", "tier": "core"})
                await shim.call_ok("memory_remember", {"content": "The release train leaves on Fridays"})
                found = await shim.call_ok("memory_search", {"query": "favourite beverage"})
                assert found["mode"] == "hybrid"
                assert found["results"][0]["snippet"] == "User prefers green tea", found  # no word in common
                assert {r["model"] for r in fake.requests} == {"fake-embed-64"}
                assert fake.requests[-1]["input"] == ["favourite beverage"]
                fake.fail_with = 429
                fallback = await shim.call_ok("memory_search", {"query": "green tea"})
                assert fallback["mode"] == "keyword" and "embeddings unavailable" in fallback["note"]
                assert fallback["results"][0]["snippet"] == "User prefers green tea"
                stats = await shim.call_ok("memory_stats")
                assert stats["withEmbeddings"] == 2 and stats["embeddings"]["model"] == "fake-embed-64"
            finally:
                await shim.close()
        assert "sk-embed-secret" not in gw.output()


def memory_cli(gw: GatewayProcess, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    env.update(REMOTECLAW_GATEWAY_URL=gw.url, REMOTECLAW_GATEWAY_TOKEN=gw.token or "")
    return subprocess.run([sys.executable, "-m", "gateway.cli", "memory", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


async def test_the_owner_reads_and_edits_memories_from_the_cli(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path / "gw", config={"agents": AGENTS}) as gw:
        shim = await start_shim(gw, tmp_path, "agent:ops:main")
        try:
            kept = await shim.call_ok("memory_remember", {"content": "Backups run nightly at 02:00", "tier": "core"})
        finally:
            await shim.close()
        assert "no memories for agent main" in memory_cli(gw, "list").stdout  # the default agent has none
        listed = memory_cli(gw, "list", "--agent", "ops")
        assert listed.returncode == 0 and kept["id"] in listed.stdout and "Backups run nightly" in listed.stdout
        found: Any = json.loads(memory_cli(gw, "search", "backups", "--agent", "ops", "--json").stdout)
        assert [r["id"] for r in found["results"]] == [kept["id"]]
        stats = memory_cli(gw, "stats", "--agent", "ops")
        assert "1 memories (core 1, stable 0, notes 0)" in stats.stdout, stats
        gone = memory_cli(gw, "forget", kept["id"], "--agent", "ops")
        assert gone.returncode == 0 and kept["id"] in gone.stdout
        assert "no memories" in memory_cli(gw, "list", "--agent", "ops").stdout
        bad = memory_cli(gw, "forget", "mem_nope", "--agent", "ops")
        assert bad.returncode != 0 and "no memory matches" in bad.stderr
