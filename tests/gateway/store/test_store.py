"""Storage on both engines: migrations, SQLite settings, rows written by the real gateway.

Every test that takes ``target`` runs twice: on SQLite in the gateway's state dir, and on a fresh
PostgreSQL database (``tests.support.postgres``). Rows are read back with the plain drivers
(``sqlite3``, ``asyncpg``), not through our store code, so the checks do not trust what they test.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from alembic.script import ScriptDirectory
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from gateway.store import Database, MigrationFailed, database_url
from gateway.store.migrate import MIGRATIONS_DIR
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.postgres import fresh_database, pg_url  # noqa: F401  (fixture)
from tests.support.ws import RawClient, operator

HEADS = set(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads())


@dataclass
class Target:
    """Where a gateway keeps its data, and how the test reads it back."""

    kind: str  # "sqlite" | "postgresql"
    state_dir: Path
    pg_url: str | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"REMOTECLAW_DATABASE_URL": self.pg_url} if self.pg_url else {}

    @property
    def sqlite_path(self) -> Path:
        return self.state_dir / "remoteclaw.db"

    def gateway(self) -> GatewayProcess:
        return GatewayProcess(self.state_dir, env=self.env)

    async def query(self, sql: str) -> list[tuple[Any, ...]]:
        if self.pg_url is None:
            with sqlite3.connect(self.sqlite_path) as conn:
                return [tuple(r) for r in conn.execute(sql).fetchall()]
        conn = await asyncpg.connect(self.pg_url)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    async def tables(self) -> set[str]:
        if self.pg_url is None:
            rows = await self.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = await self.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {r[0] for r in rows}

    async def revisions(self) -> set[str]:
        return {r[0] for r in await self.query("SELECT version_num FROM alembic_version")}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    return Target(request.param, tmp_path / "state", url)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def device_proof(key: Ed25519PrivateKey, *, nonce: str, token: str) -> dict[str, Any]:
    """Sign the v3 device payload the way an OpenClaw client does (layout written out here on purpose)."""
    raw = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    device_id = hashlib.sha256(raw).hexdigest()
    signed_at = int(time.time() * 1000)
    scopes = "operator.admin,operator.read,operator.write,operator.approvals,operator.pairing"
    payload = f"v3|{device_id}|test|test|operator|{scopes}|{signed_at}|{token}|{nonce}|linux|"
    return {"id": device_id, "publicKey": _b64url(raw), "signature": _b64url(key.sign(payload.encode())),
            "signedAt": signed_at, "nonce": nonce}


async def connect_device(gw: GatewayProcess, key: Ed25519PrivateKey) -> str:
    client = await RawClient.open(gw.url)
    assert client.challenge is not None
    proof = device_proof(key, nonce=client.challenge["payload"]["nonce"], token=gw.token or "")
    frame = await client.handshake(gw.token, device=proof)
    await client.close()
    assert frame["ok"], frame
    return str(proof["id"])


# -- through the real gateway process -----------------------------------------------------------------------


async def test_fresh_database_is_migrated_and_restart_keeps_rows(target: Target) -> None:
    with target.gateway() as gw:
        device_id = await connect_device(gw, Ed25519PrivateKey.generate())
        client = await operator(gw.url, gw.token or "")
        health, status = await client.call("health"), await client.call("status")
        await client.close()
        if target.kind == "sqlite":
            assert target.sqlite_path.with_name("remoteclaw.db-wal").exists()  # WAL is live while it runs
    assert health["ok"] is True and health["database"] == status["database"] == target.kind
    assert await target.revisions() == HEADS
    assert {"alembic_version", "devices"} <= await target.tables()
    rows = await target.query(f"SELECT status, role, client_id FROM devices WHERE id = '{device_id}'")
    assert rows == [("approved", "operator", "test")]
    if target.kind == "sqlite":
        with sqlite3.connect(target.sqlite_path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    else:
        assert not target.sqlite_path.exists()  # nothing fell back to SQLite

    # A second start on the migrated database is a no-op for the schema and loses nothing.
    with target.gateway() as gw:
        assert gw.wait_healthy()["database"] == target.kind
        second = await connect_device(gw, Ed25519PrivateKey.generate())
    assert await target.revisions() == HEADS
    ids = {r[0] for r in await target.query("SELECT id FROM devices")}
    assert ids == {device_id, second}


@pytest.mark.postgres
async def test_two_gateways_starting_at_once_share_one_postgres(pg_url: str, tmp_path: Path) -> None:  # noqa: F811
    env = {"REMOTECLAW_DATABASE_URL": pg_url}
    a = GatewayProcess(tmp_path / "a", env=env)
    b = GatewayProcess(tmp_path / "b", env=env)
    try:
        # Start both processes before waiting on either, so their migrations overlap.
        await asyncio.gather(asyncio.to_thread(a.start), asyncio.to_thread(b.start))
        assert a.wait_healthy()["database"] == b.wait_healthy()["database"] == "postgresql"
        ids = [await connect_device(gw, Ed25519PrivateKey.generate()) for gw in (a, b)]
    finally:
        a.stop()
        b.stop()
    target = Target("postgresql", tmp_path, pg_url)
    assert await target.revisions() == HEADS
    assert {r[0] for r in await target.query("SELECT id FROM devices")} == set(ids)


def _start_failure(state_dir: Path, url: str) -> subprocess.CompletedProcess[str]:
    env = GatewayProcess(state_dir, env={"REMOTECLAW_DATABASE_URL": url}).env()
    return subprocess.run([sys.executable, "-m", "gateway.cli", "gateway", "run", "--port", "0"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(("url", "expected"), [
    ("postgresql://postgres:s3cret@127.0.0.1:1/nowhere", "cannot open the database postgresql://postgres:***@"),
    ("postgresql://postgres@127.0.0.1:5432/rc_test_absent", 'database "rc_test_absent" does not exist'),
    ("mysql://root@127.0.0.1/x", "REMOTECLAW_DATABASE_URL: unsupported database 'mysql'"),
    ("sqlite:///:memory:", "in-memory SQLite is not supported"),
])
def test_unusable_database_url_is_one_clear_line(url: str, expected: str, tmp_path: Path) -> None:
    result = _start_failure(tmp_path, url)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("remoteclaw: "), result.stderr
    assert expected in lines[0]
    assert "s3cret" not in result.stderr + result.stdout


# -- the store module itself ------------------------------------------------------------------------------


async def _open(target: Target, migrations_dir: Path = MIGRATIONS_DIR) -> Database:
    target.state_dir.mkdir(parents=True, exist_ok=True)
    url = database_url(target.state_dir) if target.pg_url is None else _async_pg(target.pg_url)
    return Database(url, migrations_dir=migrations_dir)


def _async_pg(url: str) -> str:
    return url.replace("postgresql://", "postgresql+asyncpg://", 1)


async def test_sqlite_pragmas_apply_to_every_connection(tmp_path: Path) -> None:
    db = await _open(Target("sqlite", tmp_path))
    try:
        await db.migrate()
        conns = [await db.engine.connect() for _ in range(3)]  # three distinct pooled connections
        for conn in conns:
            got = [(await conn.exec_driver_sql(f"PRAGMA {p}")).scalar()
                   for p in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")]
            assert got == ["wal", 1, 5000, 1]
        for conn in conns:
            await conn.close()
    finally:
        await db.close()


BROKEN = '''
"""A revision that creates a table, then fails.

Revision ID: 0999_broken
Revises: {down}
"""
import sqlalchemy as sa
from alembic import op

revision = "0999_broken"
down_revision = {down!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("half_done", sa.Column("id", sa.Integer, primary_key=True))
    op.execute("INSERT INTO half_done (id) VALUES (1)")
    op.execute("SELECT no_such_column FROM half_done")


def downgrade() -> None:
    pass
'''


async def test_failed_migration_rolls_back_and_keeps_data(target: Target, tmp_path: Path) -> None:
    scripts = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, scripts, ignore=shutil.ignore_patterns("__pycache__"))
    db = await _open(target, scripts)
    await db.migrate()
    async with db.session() as s:
        from gateway.store.base import Device

        s.add(Device(id="d1", public_key="k", status="approved", role="operator", client_id="c"))
    await db.close()

    heads = sorted(HEADS)
    (scripts / "versions" / "0999_broken.py").write_text(
        textwrap.dedent(BROKEN).format(down=heads[0] if len(heads) == 1 else tuple(heads))
    )
    db = await _open(target, scripts)
    with pytest.raises(MigrationFailed, match="rolled back") as err:
        await db.migrate()
    assert "no_such_column" in err.value.message
    assert "half_done" not in await target.tables()
    assert await target.revisions() == HEADS
    assert await target.query("SELECT id FROM devices") == [("d1",)]


async def test_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    target = Target("sqlite", tmp_path)
    db = await _open(target)
    await db.migrate()
    await db.close()
    with sqlite3.connect(target.sqlite_path) as conn:
        conn.execute("DELETE FROM alembic_version")
        conn.execute("INSERT INTO alembic_version (version_num) VALUES ('9999_future')")
    result = _start_failure(tmp_path, "")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "remoteclaw: the database is at revision 9999_future, which this remoteclaw does not know: it was "
        "migrated by a newer version (run that version, or restore the backup taken before upgrading)"
    )


async def test_a_run_started_while_its_message_is_still_being_stored_is_saved_once(target: Target) -> None:
    """A queued turn can start (its row written ``running``) while the message that created it is still being
    committed (its row written ``queued``). Both writers race to insert one row: neither may fail, and the
    later ``queued`` must not undo ``running``. (Seen as "the run could not start: UNIQUE constraint failed".)"""
    from gateway.sessions.store import AgentRun, SessionRepo

    db = await _open(target)
    try:
        await db.migrate()
        async with db.session() as s:
            await SessionRepo.ensure(s, "agent:main:main", agent_id="main", kind="main")
        async with db.session() as submit:
            await SessionRepo.save_run(submit, "run-1", "agent:main:main", "queued", only_if_new=True)

            async def drive() -> None:
                async with db.session() as s:
                    await SessionRepo.save_run(s, "run-1", "agent:main:main", "running")

            starting = asyncio.create_task(drive())
            await asyncio.sleep(0.2)  # the start waits on the message's uncommitted row
        await asyncio.wait_for(starting, 10)
        async with db.session() as s:
            await SessionRepo.save_run(s, "run-1", "agent:main:main", "queued", only_if_new=True)  # a late joiner
        async with db.session() as s:
            row = await s.get(AgentRun, "run-1")
            assert row is not None and row.status == "running"
    finally:
        await db.close()
