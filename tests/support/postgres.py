"""A fresh, private PostgreSQL database per test (or per module), on 127.0.0.1:5432.

CI guarantees a PostgreSQL server there with trust authentication (see ``.ci/run``), so when it
is not answering these helpers **fail loudly**; they never skip. Each database is named
``rc_test_<random hex>``, which keeps parallel (pytest-xdist) workers apart, and is dropped
afterwards with ``WITH (FORCE)`` so a gateway that did not close its connections cannot block it.

Use the fixtures (import them into your test module so pytest finds them)::

    from tests.support.postgres import pg_url, pg_url_module  # noqa: F401

    async def test_on_postgres(pg_url: str, tmp_path):
        with GatewayProcess(tmp_path, env={"REMOTECLAW_DATABASE_URL": pg_url}) as gw:
            ...

``pg_url`` is a new database per test, ``pg_url_module`` one per test module. Both are plain
``postgresql://user@127.0.0.1:5432/rc_test_…`` URLs: hand them to the gateway as
``REMOTECLAW_DATABASE_URL``, or to ``asyncpg.connect`` to look at rows. Outside fixtures, use
``create_database()`` / ``drop_database(url)`` (async) or the ``fresh_database()`` context manager
(sync; safe to call with or without a running event loop).

The admin connection tries user ``postgres`` then the current user, and database ``test`` then
``postgres``; the first pair that connects is remembered for the session.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import getpass
import secrets
from collections.abc import Coroutine, Iterator
from typing import Any

import asyncpg
import pytest

__all__ = ["HOST", "PORT", "create_database", "drop_database", "fresh_database", "pg_url", "pg_url_module"]

HOST = "127.0.0.1"
PORT = 5432

_admin: tuple[str, str] | None = None  # (user, database) that worked


async def _connect_admin() -> asyncpg.Connection:
    global _admin
    candidates = [_admin] if _admin else [(u, d) for u in _users() for d in ("test", "postgres")]
    errors = []
    for user, db in candidates:
        try:
            conn = await asyncpg.connect(host=HOST, port=PORT, user=user, database=db, timeout=5)
        except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
            errors.append(f"{user}@{db}: {exc or type(exc).__name__}")
            continue
        _admin = (user, db)
        return conn
    pytest.fail(
        f"PostgreSQL is required on {HOST}:{PORT} (trust auth) and did not accept a connection "
        f"({'; '.join(errors)}). Start it (e.g. pg_ctlcluster <version> main start) or run .ci/run.",
        pytrace=False,
    )


def _users() -> list[str]:
    me = getpass.getuser()
    return ["postgres"] if me == "postgres" else ["postgres", me]


async def create_database() -> str:
    """Create an empty ``rc_test_<hex>`` database and return its ``postgresql://`` URL."""
    name = f"rc_test_{secrets.token_hex(6)}"
    conn = await _connect_admin()
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    assert _admin is not None
    return f"postgresql://{_admin[0]}@{HOST}:{PORT}/{name}"


async def drop_database(url: str) -> None:
    """Drop a database made by ``create_database`` (closing anything still connected to it)."""
    name = url.rsplit("/", 1)[1]
    if not name.startswith("rc_test_"):
        raise ValueError(f"refusing to drop {name!r}: not a test database")
    conn = await _connect_admin()
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    # A worker thread has no event loop of its own, so this works inside async tests too and never
    # disturbs pytest-asyncio's session loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new database for the duration of the block; dropped afterwards."""
    url = _run(create_database())
    try:
        yield url
    finally:
        _run(drop_database(url))


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database for one test."""
    with fresh_database() as url:
        yield url


@pytest.fixture(scope="module")
def pg_url_module() -> Iterator[str]:
    """A fresh PostgreSQL database shared by one test module."""
    with fresh_database() as url:
        yield url
