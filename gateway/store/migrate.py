"""Apply Alembic migrations safely: one transaction, one migrator at a time.

Why each guard exists:

- Everything runs in a single transaction, so a failing revision rolls back the whole run and
  the schema stays exactly as it was. PostgreSQL has transactional DDL natively; Python's sqlite3
  module would autocommit each ``CREATE``/``ALTER``, so on SQLite we open the transaction ourselves
  with ``BEGIN IMMEDIATE`` (which also takes the write lock, serializing two processes on one file).
- On PostgreSQL several gateway replicas may start at once: each takes a transaction-scoped advisory
  lock before looking at ``alembic_version``, so exactly one migrates and the others then find the
  schema current. The lock is released by the commit or rollback, even if the process dies.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import time
from pathlib import Path
from typing import Any

import orjson
import structlog
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.store.errors import DatabaseUnavailable, MigrationFailed, StoreError, one_line

__all__ = ["LOCK_KEY", "MIGRATIONS_DIR", "SNAPSHOT_FILE", "current_revisions", "snapshot_statements", "upgrade"]

log = structlog.get_logger("gateway.store")

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent.parent / "migrations"

LOCK_KEY = int.from_bytes(hashlib.sha256(b"remoteclaw:migrations").digest()[:8], "big", signed=True)
"""The advisory lock id (a stable signed 64-bit number) every replica agrees on."""

LOCK_WAIT_S = 300.0
"""How long a replica waits for another one's migration before giving up with a clear error."""


_REVISION = re.compile(r"^revision\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_DOWN = re.compile(r"^down_revision\s*=\s*(.+)$", re.MULTILINE)


def known_heads(migrations_dir: Path = MIGRATIONS_DIR) -> frozenset[str]:
    """Head revisions of the migration scripts, read as text (without importing Alembic, which is slow)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (migrations_dir / "versions").glob("*.py"):
        body = path.read_text()
        rev = _REVISION.search(body)
        if rev is None:
            continue
        revisions.add(rev.group(1))
        down = _DOWN.search(body)
        if down is not None:
            parents.update(re.findall(r"['\"]([^'\"]+)['\"]", down.group(1)))
    return frozenset(revisions - parents)


async def _is_current(engine: AsyncEngine, migrations_dir: Path) -> bool:
    """True when ``alembic_version`` already holds exactly the script heads (the common restart case)."""
    heads = known_heads(migrations_dir)
    if not heads:
        return False
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars().all()
    except Exception:  # no table yet, or anything odd: let the full path decide and report
        return False
    return frozenset(rows) == heads


async def upgrade(engine: AsyncEngine, *, is_sqlite: bool, migrations_dir: Path = MIGRATIONS_DIR,
                  snapshot: bool = True) -> None:
    """Bring the schema to every head revision, or leave it untouched and raise.

    A database already at the heads is recognised without importing Alembic (it costs ~0.5 s and
    ~10 MiB), so an ordinary restart stays fast.

    Raises:
        MigrationFailed: a revision failed (the transaction was rolled back) or the lock wait timed out.
        DatabaseUnavailable: the connection broke while migrating.
    """
    if await _is_current(engine, migrations_dir):
        return
    if is_sqlite and snapshot and await _made_from_snapshot(engine, migrations_dir):
        return
    try:
        async with engine.connect() as conn:
            if is_sqlite:
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                await _advisory_lock(conn)
            await conn.run_sync(_alembic_upgrade, migrations_dir)
            await conn.commit()
    except StoreError:
        raise
    except OSError as exc:
        raise DatabaseUnavailable(f"lost the database while migrating: {one_line(exc)}") from exc
    except Exception as exc:
        before = await _revisions_or_unknown(engine)
        if "Can't locate revision" in str(exc):
            raise MigrationFailed(
                f"the database is at revision {before}, which this remoteclaw does not know: it was migrated "
                "by a newer version (run that version, or restore the backup taken before upgrading)"
            ) from exc
        raise MigrationFailed(
            f"database migration failed and was rolled back (schema still at {before}): {one_line(exc)}"
        ) from exc


SNAPSHOT_FILE = "sqlite_head.json"
"""Beside the scripts: a dump of an empty SQLite database at the heads (``gateway.store.head_schema`` writes it)."""


def snapshot_statements(migrations_dir: Path, heads: frozenset[str]) -> list[str] | None:
    """The statements that make a fresh database at ``heads``, or ``None`` when the snapshot is missing or was
    written for other revisions."""
    try:
        data = orjson.loads((migrations_dir / SNAPSHOT_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not heads or not isinstance(data, dict) or frozenset(data.get("heads", ())) != heads:
        return None
    statements = data.get("statements")
    return statements if isinstance(statements, list) else None


async def _made_from_snapshot(engine: AsyncEngine, migrations_dir: Path) -> bool:
    """An empty SQLite database made at the heads in one transaction from the snapshot, without Alembic. False
    (nothing changed) when the snapshot does not apply or anything fails: the migrations then run as usual and
    report what is wrong."""
    statements = snapshot_statements(migrations_dir, known_heads(migrations_dir))
    if statements is None:
        return False
    try:
        async with engine.connect() as conn:
            await conn.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock: another process may be starting too
            if (await conn.exec_driver_sql("SELECT count(*) FROM sqlite_master")).scalar():
                await conn.rollback()
                return False
            for statement in statements:
                await conn.exec_driver_sql(statement)
            await conn.commit()
    except Exception as exc:  # never worse than migrating: the transaction rolled back
        log.warning("the schema snapshot did not apply; running the migrations", error=one_line(exc))
        return False
    return True


async def _advisory_lock(conn: AsyncConnection) -> None:
    """Wait for the cluster-wide migration lock; it is held until this transaction ends."""
    deadline = time.monotonic() + LOCK_WAIT_S
    said = False
    while True:
        got = (await conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": LOCK_KEY})).scalar()
        if got:
            return
        if not said:
            log.info("another gateway is migrating the database; waiting for it")
            said = True
        if time.monotonic() > deadline:
            raise MigrationFailed(f"gave up after {LOCK_WAIT_S:.0f}s waiting for another gateway's migration")
        await asyncio.sleep(0.2)


def _alembic_config(migrations_dir: Path, conn: Connection | None = None) -> Any:
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(migrations_dir))
    if conn is not None:
        cfg.attributes["connection"] = conn
    return cfg


def _alembic_upgrade(conn: Connection, migrations_dir: Path) -> None:
    from alembic import command

    # "heads": capabilities may add their revisions as branches off 0001_core or as one linear chain.
    command.upgrade(_alembic_config(migrations_dir, conn), "heads")


def _current(conn: Connection) -> list[str]:
    from alembic.runtime.migration import MigrationContext

    return sorted(MigrationContext.configure(conn).get_current_heads())


async def current_revisions(engine: AsyncEngine) -> list[str]:
    """The revisions recorded in ``alembic_version`` (empty for a database never migrated)."""
    async with engine.connect() as conn:
        return await conn.run_sync(_current)


async def _revisions_or_unknown(engine: AsyncEngine) -> str:
    try:
        revs = await current_revisions(engine)
    except Exception:
        return "an unknown revision"
    return ", ".join(revs) if revs else "no revision (empty)"
