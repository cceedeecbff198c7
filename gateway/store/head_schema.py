"""Writes the snapshot a fresh SQLite database is made from in one step: the statements the migrations leave
behind (read and replayed by ``gateway.store.migrate``).

A new state dir (a first start, and every test gateway) would otherwise import Alembic and run every revision,
about 0.15 s of CPU. ``migrations/sqlite_head.json`` holds the dump of an empty database migrated to the heads
(tables, indexes, rows such as ``alembic_version``), so it is exactly what the migrations make. It is used only
when the database holds no table yet and its heads are the heads of the scripts beside it; otherwise, or
for PostgreSQL, the migrations run as before. Written by::

    .venv/bin/python -m gateway.store.head_schema

and ``tests/gateway/store/test_head_schema.py`` says when it no longer matches the migrations.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
from pathlib import Path

import orjson

__all__ = ["dump", "dump_migrated", "write"]


def dump(path: Path) -> list[str]:
    """Every statement that recreates the database at ``path`` (its own transaction statements left out), in an
    order that does not depend on the order Alembic ran its branches in: tables, then rows, then the rest."""
    with sqlite3.connect(path) as conn:
        statements = [s for s in conn.iterdump() if s not in ("BEGIN TRANSACTION;", "COMMIT;")]
    return sorted(statements, key=lambda s: (_RANK.get(" ".join(s.split()[:2]).upper(), 2), s))


_RANK = {"CREATE TABLE": 0, "INSERT INTO": 1, "DELETE FROM": 1}


def dump_migrated(migrations_dir: Path) -> tuple[list[str], list[str]]:
    """(heads, statements) of an empty SQLite database brought to the heads by the migrations themselves."""
    from gateway.store.db import Database
    from gateway.store.migrate import known_heads

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "head.db"

        async def migrate() -> None:
            db = Database(f"sqlite+aiosqlite:///{path}", migrations_dir=migrations_dir, snapshot=False)
            try:
                await db.migrate()
            finally:
                await db.close()

        asyncio.run(migrate())
        return sorted(known_heads(migrations_dir)), dump(path)


def write(migrations_dir: Path | None = None) -> Path:
    from gateway.store.migrate import MIGRATIONS_DIR, SNAPSHOT_FILE

    where = migrations_dir or MIGRATIONS_DIR
    heads, statements = dump_migrated(where)
    out = where / SNAPSHOT_FILE
    out.write_bytes(orjson.dumps({"heads": heads, "statements": statements}, option=orjson.OPT_INDENT_2) + b"\n")
    return out


if __name__ == "__main__":
    print(f"wrote {write()}", file=sys.stderr)
