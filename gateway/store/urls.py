"""Which database to open: ``REMOTECLAW_DATABASE_URL`` turned into an SQLAlchemy async URL.

Accepted forms (anything else is refused with a message naming the variable):

- unset or empty: SQLite at ``<state dir>/remoteclaw.db``;
- ``sqlite:///relative.db`` (relative to the state dir) or ``sqlite:////absolute/path.db``;
- ``postgresql://``, ``postgres://`` or ``postgresql+asyncpg://user:pass@host:port/db``; libpq's
  ``sslmode=`` query parameter is passed on as asyncpg's ``ssl=``.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from gateway.store.errors import BadDatabaseUrl

__all__ = ["ENV_VAR", "database_url", "describe_url", "normalize_url"]

ENV_VAR = "REMOTECLAW_DATABASE_URL"

_POSTGRES_DRIVERS = {"postgresql", "postgres", "postgresql+asyncpg"}
_SQLITE_DRIVERS = {"sqlite", "sqlite+aiosqlite"}


def database_url(state_dir: Path) -> str:
    """The async URL to open: ``REMOTECLAW_DATABASE_URL`` if set, else SQLite in the state dir.

    Raises:
        BadDatabaseUrl: the variable is set to something we cannot use.
    """
    return normalize_url(os.environ.get(ENV_VAR, ""), state_dir)


def normalize_url(raw: str, state_dir: Path) -> str:
    """Map a user-facing URL to the driver we ship (aiosqlite, asyncpg); see the module docstring."""
    raw = raw.strip()
    if not raw:
        return f"sqlite+aiosqlite:///{state_dir / 'remoteclaw.db'}"
    try:
        url = make_url(raw)
    except ArgumentError:
        raise BadDatabaseUrl(
            f"{ENV_VAR} is not a database URL (expected postgresql://user@host:5432/db or sqlite:///file.db)"
        ) from None
    driver = url.drivername.lower()
    if driver in _POSTGRES_DRIVERS:
        return _postgres(url).render_as_string(hide_password=False)
    if driver in _SQLITE_DRIVERS:
        return _sqlite(url, state_dir).render_as_string(hide_password=False)
    raise BadDatabaseUrl(
        f"{ENV_VAR}: unsupported database {url.drivername!r}: use postgresql://... (asyncpg) or sqlite:///..."
    )


def _postgres(url: URL) -> URL:
    if not url.database:
        raise BadDatabaseUrl(f"{ENV_VAR}: the PostgreSQL URL names no database (…/dbname at the end)")
    query = dict(url.query)
    if "sslmode" in query:  # libpq spelling; asyncpg calls it ssl and takes the same values
        query["ssl"] = query.pop("sslmode")
    return url.set(drivername="postgresql+asyncpg", query=query)


def _sqlite(url: URL, state_dir: Path) -> URL:
    name = url.database or ""
    if name in ("", ":memory:") or name.startswith("file::memory:"):
        # Every pooled connection would get its own empty database, and all of it is lost at exit.
        raise BadDatabaseUrl(f"{ENV_VAR}: in-memory SQLite is not supported; give a file path")
    path = Path(name).expanduser()
    if not path.is_absolute():
        path = state_dir / path
    return url.set(drivername="sqlite+aiosqlite", database=str(path))


def describe_url(url: str) -> str:
    """The URL as a person would write it (no driver suffix), password masked, for messages and logs."""
    try:
        parsed = make_url(url)
        return parsed.set(drivername=parsed.get_backend_name()).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparsable URL>"
