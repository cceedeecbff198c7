"""``remoteclaw backup`` of a running gateway, ``remoteclaw restore`` into a fresh state dir: the restored
gateway shows the same sessions, transcripts, config and token. On SQLite (the online backup API) and on
PostgreSQL (pg_dump / pg_restore), each with real gateway processes and the real CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.support import FAKE_CLI
from tests.support.gateway_proc import ROOT, GatewayProcess
from tests.support.postgres import fresh_database
from tests.support.ws import operator

pytestmark = pytest.mark.timeout(120)
CONFIG = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI]}], "maxConcurrentRuns": 3}}


def cli(state: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("REMOTECLAW_")}
    full.update(REMOTECLAW_STATE_DIR=str(state), **(env or {}))
    return subprocess.run([sys.executable, "-m", "gateway.cli", *args], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=60, check=False)


async def fill(gw: GatewayProcess) -> dict[str, Any]:
    """Give the gateway a conversation and a config change; returns what a restore must bring back."""
    client = await operator(gw.url, gw.token or "")
    for key, text in (("agent:main:main", "remember the blue door"), ("agent:main:side", "a second session")):
        sent = await client.call("chat.send", {"sessionKey": key, "message": text, "idempotencyKey": key})
        await client.call("agent.wait", {"runId": sent["runId"], "timeoutMs": 20_000})
    h = (await client.call("config.get"))["hash"]
    await client.call("config.set", {"key": "agents.maxConcurrentRuns", "value": 7, "baseHash": h})
    seen = await snapshot(gw)
    await client.close()
    return seen


async def snapshot(gw: GatewayProcess) -> dict[str, Any]:
    client = await operator(gw.url, gw.token or "")
    keys = sorted(s["key"] for s in (await client.call("sessions.list"))["sessions"])
    history = {k: [(m["role"], m["text"]) for m in (await client.call("chat.history", {"sessionKey": k}))["messages"]]
               for k in keys}
    runs = (await client.call("config.get", {"key": "agents.maxConcurrentRuns"}))["value"]
    await client.close()
    return {"sessions": keys, "history": history, "maxConcurrentRuns": runs, "token": gw.token}


async def round_trip(tmp_path: Path, env_a: dict[str, str], env_b: dict[str, str]) -> None:
    archive = tmp_path / "backup.tar.gz"
    with GatewayProcess(tmp_path / "a", config=CONFIG, env=env_a, token=None) as a:
        before = await fill(a)
        made = cli(a.state_dir, "backup", "--output", str(archive), env=env_a)  # while it runs
        assert made.returncode == 0, made.stderr
    assert before["history"]["agent:main:main"][0] == ("user", "remember the blue door")
    assert archive.stat().st_mode & 0o077 == 0  # it holds the token: owner-only
    with tarfile.open(archive) as tar:
        assert "gateway.token" in tar.getnames() and "manifest.json" in tar.getnames()

    restored = cli(tmp_path / "b", "restore", str(archive), env=env_b)
    assert restored.returncode == 0, restored.stderr
    with GatewayProcess(tmp_path / "b", env=env_b, token=None) as b:
        assert await snapshot(b) == before
    again = cli(tmp_path / "b", "restore", str(archive), env=env_b)
    assert again.returncode == 1 and "--force" in again.stderr
    forced = cli(tmp_path / "b", "restore", str(archive), "--force", env=env_b)
    assert forced.returncode == 0, forced.stderr


async def test_sqlite_backup_of_a_running_gateway_restores_into_a_fresh_state_dir(tmp_path: Path) -> None:
    await round_trip(tmp_path, {}, {})


async def test_postgres_backup_restores_into_an_empty_database(tmp_path: Path) -> None:
    with fresh_database() as first, fresh_database() as second:
        await round_trip(tmp_path, {"REMOTECLAW_DATABASE_URL": first}, {"REMOTECLAW_DATABASE_URL": second})


def test_a_file_that_is_not_a_backup_is_refused_whole(tmp_path: Path) -> None:
    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        (tmp_path / "x").write_text("owned")
        tar.add(tmp_path / "x", arcname="../../etc/cron.d/x")
    out = cli(tmp_path / "state", "restore", str(evil))
    assert out.returncode == 1 and "not part of a remoteclaw backup" in out.stderr
    assert not (tmp_path / "state" / "remoteclaw.db").exists()


def rewrite(archive: Path, out: Path, *, manifest: dict[str, Any] | None = None, drop: str | None = None) -> Path:
    """A copy of a real backup with its manifest replaced and/or one member left out."""
    import io
    import json

    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for info in src.getmembers():
            if info.name == drop:
                continue
            data = src.extractfile(info).read()  # type: ignore[union-attr]
            if info.name == "manifest.json" and manifest is not None:
                data = json.dumps({**json.loads(data), **manifest}).encode()
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data))
    return out


async def test_a_restore_checks_the_whole_archive_before_writing_anything(tmp_path: Path) -> None:
    archive = tmp_path / "backup.tar.gz"
    with GatewayProcess(tmp_path / "a", config=CONFIG, token=None) as a:
        made = cli(a.state_dir, "backup", "--output", str(archive))
        assert made.returncode == 0, made.stderr
    cases = {
        "lacks": (rewrite(archive, tmp_path / "lacks.tar.gz", drop="gateway.token"), "lacks it"),
        "unknown": (rewrite(archive, tmp_path / "unknown.tar.gz",
                            manifest={"files": ["remoteclaw.json", "gateway.token", "authorized_keys"]}),
                    "'authorized_keys'"),
        "no-db": (rewrite(archive, tmp_path / "nodb.tar.gz", drop="db.sqlite"), "has no db.sqlite"),
    }
    for name, (crafted, says) in cases.items():
        state = tmp_path / f"state-{name}"
        out = cli(state, "restore", str(crafted))
        assert out.returncode == 1, (name, out.stdout, out.stderr)
        assert says in out.stderr and "Traceback" not in out.stderr, (name, out.stderr)
        assert not (state / "remoteclaw.db").exists(), name  # nothing written: no half-done restore
        assert not (state / "remoteclaw.json").exists(), name


async def test_a_postgres_restore_over_a_newer_schema_leaves_nothing_of_it_behind(tmp_path: Path) -> None:
    """The rollback of an upgrade: N's backup restored with ``--force`` over the database N+1 migrated. A table
    N+1's migration made must go with it, or the next upgrade's migration fails on "relation already exists"
    (found by the rolling upgrade in a real engine, after the in-place upgrade's rollback)."""
    import asyncpg

    with fresh_database() as url:
        env = {"REMOTECLAW_DATABASE_URL": url}
        archive = tmp_path / "n.tar.gz"
        with GatewayProcess(tmp_path / "a", config=CONFIG, env=env, token=None) as a:
            before = await fill(a)
            assert cli(a.state_dir, "backup", "--output", str(archive), env=env).returncode == 0
        dsn = url.replace("postgresql+asyncpg://", "postgresql://")
        conn = await asyncpg.connect(dsn)
        try:  # what image N+1's migration leaves: a table of its own, with a row
            await conn.execute("CREATE TABLE upgrade_test (id integer PRIMARY KEY);"
                               " INSERT INTO upgrade_test VALUES (1)")
        finally:
            await conn.close()
        forced = cli(tmp_path / "a", "restore", str(archive), "--force", env=env)
        assert forced.returncode == 0, forced.stderr
        conn = await asyncpg.connect(dsn)
        try:
            assert await conn.fetchval("SELECT to_regclass('upgrade_test')") is None
            await conn.execute("CREATE TABLE upgrade_test (id integer PRIMARY KEY)")  # the next upgrade's migration
        finally:
            await conn.close()
        with GatewayProcess(tmp_path / "a", env=env, token=None) as b:
            assert await snapshot(b) == before
