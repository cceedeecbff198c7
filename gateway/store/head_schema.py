"""A fresh SQLite database made in one step: the statements the migrations leave behind, replayed.

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
from typing import Any

import orjson

__all__ = ["FILE_NAME", "dump_migrated", "load", "write"]

FILE_NAME = "sqlite_head.json"


def load(migrations_dir: Path, heads: frozenset[str]) -> list[str] | None:
    """The statements that make a fresh database at ``heads``, or ``None`` when the snapshot is missing or was
    written for other revisions."""
    try:
        data: dict[str, Any] = orjson.loads((migrations_dir / FILE_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if frozenset(data.get("heads", ())) != heads or not heads:
        return None
    statements = data.get("statements")
    return statements if isinstance(statements, list) else None


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
    from gateway.store.migrate import MIGRATIONS_DIR

    where = migrations_dir or MIGRATIONS_DIR
    heads, statements = dump_migrated(where)
    out = where / FILE_NAME
    out.write_bytes(orjson.dumps({"heads": heads, "statements": statements}, option=orjson.OPT_INDENT_2) + b"\n")
    return out


if __name__ == "__main__":
    print(f"wrote {write()}", file=sys.stderr)
