"""``remoteclaw backup`` and ``remoteclaw restore``: a gateway's state in one ``.tar.gz``, taken while it runs.

What a backup holds: the database as a consistent snapshot (SQLite's online backup API, which copies a
live database page by page under its own locking; ``pg_dump`` for PostgreSQL, one repeatable-read
transaction), the config file, the gateway token, and a manifest (format, remoteclaw version, schema
heads, what the database is). Media and logs are left out: they can be large and nothing depends on them.
The replica id is left out too: a restored gateway is a new replica, and adopts the old one's unfinished
turns once its heartbeat has stopped.

A restore writes those back into a state dir (a fresh one, or an existing one with ``--force``), with the
gateway stopped. The schema heads go with the data, so a restored gateway on an older remoteclaw refuses
to start with a clear message instead of running on a schema it does not know.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from gateway import __version__, paths
from gateway.store.migrate import known_heads
from gateway.store.urls import ENV_VAR, database_url

__all__ = ["BackupError", "create", "restore"]

FORMAT = 1
_FILES = {"remoteclaw.json", "gateway.token"}
_MEMBERS = {"manifest.json", "db.sqlite", "db.pgdump", *_FILES}


class BackupError(Exception):
    """Why a backup or restore could not be made; says what to do."""


def _database(state: Path) -> tuple[str, Any]:
    """("sqlite", path) or ("postgresql", sqlalchemy URL) for the database this state dir uses."""
    url = make_url(database_url(state))
    if url.drivername.startswith("sqlite"):
        return "sqlite", Path(url.database or "")
    return "postgresql", url


def _libpq(url: Any) -> tuple[str, dict[str, str]]:
    """A libpq connection string without the password, and an environment carrying it (never on argv)."""
    env = {**os.environ}
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    plain = url.set(drivername="postgresql", password=None)
    query = {k: v for k, v in plain.query.items() if k != "ssl"}
    if plain.query.get("ssl"):
        query["sslmode"] = plain.query["ssl"]
    return plain.set(query=query).render_as_string(hide_password=False), env


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(f"{name} is not installed (it comes with PostgreSQL's client: apt-get install "
                          f"postgresql-client)")
    return found


def _run(argv: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BackupError(f"{Path(argv[0]).name} failed: {proc.stderr.strip()[-500:] or proc.returncode}")


def create(state: Path, output: Path) -> dict[str, Any]:
    """Write a backup of ``state`` (and its database) to ``output``; returns the manifest."""
    kind, where = _database(state)
    with tempfile.TemporaryDirectory(prefix="remoteclaw-backup-") as tmp:
        work = Path(tmp)
        if kind == "sqlite":
            if not where.exists():
                raise BackupError(f"no database at {where}: has this gateway ever started?")
            source = sqlite3.connect(f"file:{where}?mode=ro", uri=True)
            target = sqlite3.connect(work / "db.sqlite")
            try:
                source.backup(target)  # consistent even while the gateway writes
            finally:
                target.close()
                source.close()
        else:
            dsn, env = _libpq(where)
            _run([_tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
                  f"--file={work / 'db.pgdump'}", f"--dbname={dsn}"], env)
        files = {"remoteclaw.json": paths.config_path(), "gateway.token": paths.token_path()}
        present = sorted(name for name, path in files.items() if path.is_file())
        manifest: dict[str, Any] = {"format": FORMAT, "remoteclawVersion": __version__,
                                    "createdAt": int(time.time() * 1000), "database": kind,
                                    "schemaHeads": sorted(known_heads()), "files": present}
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the token
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            data = json.dumps(manifest, indent=2).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, io.BytesIO(data))
            tar.add(work / ("db.sqlite" if kind == "sqlite" else "db.pgdump"),
                    arcname="db.sqlite" if kind == "sqlite" else "db.pgdump")
            for name in present:
                tar.add(files[name], arcname=name)
        os.replace(partial, output)
    return manifest


def _read(archive: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest and members of a backup; anything that is not one of ours is refused, not extracted."""
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            members: dict[str, bytes] = {}
            for info in tar.getmembers():
                if info.name not in _MEMBERS or not info.isfile():
                    raise BackupError(f"{archive} holds {info.name!r}, which is not part of a remoteclaw backup")
                extracted = tar.extractfile(info)
                assert extracted is not None
                members[info.name] = extracted.read()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BackupError(f"cannot read {archive}: {exc}") from None
    if "manifest.json" not in members:
        raise BackupError(f"{archive} is not a remoteclaw backup (no manifest.json)")
    try:
        manifest = json.loads(members["manifest.json"])
    except ValueError:
        raise BackupError(f"{archive}: manifest.json is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise BackupError(f"{archive}: manifest.json is not an object")
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{archive} is backup format {manifest.get('format')}; this remoteclaw reads {FORMAT}")
    return manifest, members


def _check_whole(archive: Path, manifest: dict[str, Any], members: dict[str, bytes]) -> None:
    """Everything a restore will write must be in the archive and named right, checked before anything is
    written: a restore stops before it starts, never half-way (the database written, the files not)."""
    kind = manifest.get("database")
    if kind not in ("sqlite", "postgresql"):
        raise BackupError(f"{archive}: the manifest's database is {kind!r}, not sqlite or postgresql")
    dump = "db.sqlite" if kind == "sqlite" else "db.pgdump"
    if dump not in members:
        raise BackupError(f"{archive} is incomplete: the manifest says {kind} but the archive has no {dump}")
    files = manifest.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise BackupError(f"{archive}: the manifest's files must be a list of names")
    for name in files:
        if name not in _FILES:
            raise BackupError(f"{archive}: the manifest names {name!r}, which is not a file a backup holds "
                              f"({', '.join(sorted(_FILES))})")
        if name not in members:
            raise BackupError(f"{archive} is incomplete: the manifest names {name} but the archive lacks it")


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(path.name + ".restoring")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(partial, path)


def _pg_has_schema(url: Any) -> bool:
    dsn, env = _libpq(url)
    proc = subprocess.run([_tool("psql"), f"--dbname={dsn}", "-tAc", "SELECT to_regclass('alembic_version')"],
                          env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BackupError(f"cannot reach the database to restore into: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip() not in ("", "null")


def _drop_tables_not_in(dump: str, dsn: str, env: dict[str, str]) -> None:
    """Make the database the backup's: the tables it does not hold go first.

    ``pg_restore --clean`` replaces only what the dump names, so a table a newer version's migration made (the
    upgrade a backup is restored to undo) stayed behind, and the next upgrade's migration then failed on it
    ("relation already exists"). Only tables of the schema the dump restores into are dropped."""
    listed = subprocess.run([_tool("pg_restore"), "--list", dump], env=env, capture_output=True, text=True,
                            check=False)
    if listed.returncode != 0:
        raise BackupError(f"pg_restore --list failed: {listed.stderr.strip()[-300:]}")
    kept: set[tuple[str, ...]] = set()
    for line in listed.stdout.splitlines():  # "214; 1259 23476 TABLE public sessions owner"
        words = line.split()
        if not line.startswith(";") and len(words) > 5 and words[3] == "TABLE" and words[4] != "DATA":
            kept.add((words[4], words[5]))
    found = subprocess.run([_tool("psql"), f"--dbname={dsn}", "-tAc",
                            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = current_schema()"],
                           env=env, capture_output=True, text=True, check=False)
    if found.returncode != 0:
        raise BackupError(f"cannot list the database's tables: {found.stderr.strip()[-300:]}")
    stale = [tuple(row.split("|", 1)) for row in found.stdout.splitlines() if "|" in row]
    drops = [f'DROP TABLE IF EXISTS "{schema}"."{name}" CASCADE;' for schema, name in stale
             if (schema, name) not in kept]
    if drops:
        _run([_tool("psql"), f"--dbname={dsn}", "-v", "ON_ERROR_STOP=1", "-qc", " ".join(drops)], env)


def restore(archive: Path, state: Path, *, force: bool = False) -> dict[str, Any]:
    """Put a backup back into ``state`` (the gateway must be stopped); returns the manifest."""
    manifest, members = _read(archive)
    _check_whole(archive, manifest, members)
    kind, where = _database(state)
    if manifest["database"] != kind:
        raise BackupError(f"the backup holds a {manifest['database']} database but this state dir uses {kind} "
                          f"({ENV_VAR}); restore into the same kind of database")
    if kind == "sqlite":
        if where.exists() and not force:
            raise BackupError(f"{where} already exists: restore into a fresh state dir, or pass --force to "
                              f"replace it (stop the gateway first)")
        for stale in (where.with_name(where.name + "-wal"), where.with_name(where.name + "-shm")):
            stale.unlink(missing_ok=True)  # a journal of the database being replaced must not be replayed
        _write_private(where, members["db.sqlite"])
    else:
        if _pg_has_schema(where) and not force:
            raise BackupError("the database already holds a remoteclaw schema: restore into an empty database, "
                              "or pass --force to replace what it holds (stop the gateway first)")
        dsn, env = _libpq(where)
        with tempfile.NamedTemporaryFile(suffix=".pgdump") as dump:
            dump.write(members["db.pgdump"])
            dump.flush()
            _drop_tables_not_in(dump.name, dsn, env)
            _run([_tool("pg_restore"), "--clean", "--if-exists", "--no-owner", "--no-privileges",
                  "--single-transaction", f"--dbname={dsn}", dump.name], env)
    targets = {"remoteclaw.json": paths.config_path(), "gateway.token": paths.token_path()}
    for name in manifest.get("files", []):
        _write_private(targets[name], members[name])
    return manifest
