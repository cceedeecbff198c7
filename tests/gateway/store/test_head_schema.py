"""A fresh SQLite database is made from the migrations' snapshot (``gateway.store.head_schema``), without Alembic,
and is the same database the migrations make."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gateway.store import head_schema
from gateway.store.migrate import MIGRATIONS_DIR, SNAPSHOT_FILE, known_heads, snapshot_statements
from tests.support.gateway_proc import ROOT


def test_the_snapshot_is_what_the_migrations_make_now() -> None:
    heads, statements = head_schema.dump_migrated(MIGRATIONS_DIR)
    written = json.loads((MIGRATIONS_DIR / SNAPSHOT_FILE).read_text())
    assert written == {"heads": heads, "statements": statements}, (
        "migrations/sqlite_head.json is out of date: run .venv/bin/python -m gateway.store.head_schema")


PROBE = """
import asyncio, sys
from gateway.store.db import Database

async def main():
    db = Database("sqlite+aiosqlite:///" + sys.argv[1])
    await db.migrate()
    await db.close()

asyncio.run(main())
print("alembic" in sys.modules)
"""


def test_a_fresh_database_made_from_it_equals_a_migrated_one_and_needs_no_alembic(tmp_path: Path) -> None:
    made = tmp_path / "made.db"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(made)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"  # the snapshot made it: Alembic was never imported
    _, migrated = head_schema.dump_migrated(MIGRATIONS_DIR)
    assert head_schema.dump(made) == migrated
    # and a restart finds it current (the same probe, now on a database with tables)
    again = subprocess.run([sys.executable, "-c", PROBE, str(made)], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == "False", again.stderr


def test_a_snapshot_of_other_revisions_is_not_used(tmp_path: Path) -> None:
    (tmp_path / SNAPSHOT_FILE).write_text(json.dumps({"heads": ["0001_core"], "statements": ["SELECT 1"]}))
    assert snapshot_statements(tmp_path, known_heads(MIGRATIONS_DIR)) is None
    assert snapshot_statements(tmp_path, frozenset({"0001_core"})) == ["SELECT 1"]
    assert snapshot_statements(tmp_path / "missing", frozenset({"0001_core"})) is None
