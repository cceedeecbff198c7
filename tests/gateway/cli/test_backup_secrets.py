"""``remoteclaw backup`` keeps secrets inside the owner-only archive (issue #34, security checks).

The archive is a full copy of the state, so it holds the config and the token (docs/deploy.md); what
travels or is shown beside it must not: the manifest, the archive's member headers, the command's output,
and no other file is left next to the archive. On SQLite and on PostgreSQL with a password in the
database URL (the local server trusts loopback, so the password is carried but never checked).
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

import pytest

from tests.gateway.cli.test_backup import cli
from tests.support import FAKE_CLI
from tests.support.gateway_proc import GatewayProcess
from tests.support.postgres import fresh_database

pytestmark = pytest.mark.timeout(90)

TTS_KEY = "sk-backup-tts-7d6c5b4a39281706"
AGENT_KEY = "sk-ant-backup-agent-1f2e3d4c5b6a"
DB_PASSWORD = "pg-backup-pw-90a8b7c6d5"
CONFIG = {"agents": {"list": [{"id": "main", "command": [sys.executable, FAKE_CLI],
                               "env": {"ANTHROPIC_API_KEY": AGENT_KEY}}]},
          "messages": {"tts": {"openai": {"apiKey": TTS_KEY}}}}


def with_password(url: str) -> str:
    """``postgresql://user@host/db`` with a password added."""
    scheme, rest = url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{DB_PASSWORD}@{host}"


def back_up_and_check(tmp_path: Path, env: dict[str, str]) -> None:
    out_dir = tmp_path / "out"
    archive = out_dir / "backup.tar.gz"
    with GatewayProcess(tmp_path / "state", config=CONFIG, env=env, token=None) as gw:
        made = cli(gw.state_dir, "backup", "--output", str(archive), env=env)
        token = gw.token or ""
    assert made.returncode == 0, made.stderr
    secrets = [token, TTS_KEY, AGENT_KEY, DB_PASSWORD]
    assert len(token) >= 16

    with tarfile.open(archive) as tar:
        members = {m.name: m for m in tar.getmembers()}
        manifest = tar.extractfile("manifest.json").read().decode()  # type: ignore[union-attr]
        inside = {name: tar.extractfile(m).read() for name, m in members.items()}  # type: ignore[union-attr]
    # The archive is the whole state: the secrets are in it (this is what the test keeps out of the rest).
    assert TTS_KEY.encode() in inside["remoteclaw.json"] and token.encode() in inside["gateway.token"]
    assert json.loads(manifest)["files"] == ["gateway.token", "remoteclaw.json"]
    headers = json.dumps([[m.name, m.uname, m.gname, m.linkname, m.pax_headers] for m in members.values()])
    beside = [p.name for p in out_dir.iterdir()]
    assert beside == ["backup.tar.gz"]  # no .partial, no side file
    for text, where in ((manifest, "manifest"), (headers, "member headers"), (made.stdout, "stdout"),
                        (made.stderr, "stderr")):
        for secret in secrets:
            assert secret not in text, f"a secret in the backup's {where}: {text[:300]}"
    assert "backed up" in made.stdout


def test_a_sqlite_backup_shows_no_secret_outside_the_archive(tmp_path: Path) -> None:
    back_up_and_check(tmp_path, {})


def test_a_postgres_backup_shows_neither_the_database_password_nor_other_secrets(tmp_path: Path) -> None:
    with fresh_database() as url:
        back_up_and_check(tmp_path, {"REMOTECLAW_DATABASE_URL": with_password(url)})


def test_a_failing_backup_does_not_show_the_database_password(tmp_path: Path) -> None:
    """pg_dump refused (nobody listens on the port): the error says so without the password."""
    env = {"REMOTECLAW_DATABASE_URL": f"postgresql://someone:{DB_PASSWORD}@127.0.0.1:9/nodb"}
    made = cli(tmp_path / "state", "backup", "--output", str(tmp_path / "b.tar.gz"), env=env)
    assert made.returncode != 0 and "pg_dump" in made.stderr, made.stderr
    assert DB_PASSWORD not in made.stdout + made.stderr
    assert not (tmp_path / "b.tar.gz").exists() and not (tmp_path / "b.tar.gz.partial").exists()
