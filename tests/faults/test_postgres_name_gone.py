"""The database's host name stops resolving: the database is away, not a bug, and an answer waits for it.

In compose, ``postgres`` is a name Docker's DNS gives out only while the container runs: stopped, it does not
resolve, and asyncpg raises ``socket.gaierror`` ("Name or service not known"), not a refused connection. That
was not recognised as the database being away, so an agent's answer finished during the outage was dropped
(``persist`` raised at once instead of waiting; the turn failed and its failure could not be written either): the
chaos run's lost messages (tests/deploy/test_engine.py). Here a real asyncpg connection is made to a name that
never resolves (``.invalid``, RFC 6761).
"""

from __future__ import annotations

import socket
import time

import pytest
from sqlalchemy import text

from gateway.store import Database
from gateway.store.errors import DatabaseUnavailable, storage_failure

pytest.importorskip("asyncpg")

URL = "postgresql+asyncpg://remoteclaw:x@rc-database-gone.invalid:5432/remoteclaw"


async def test_a_name_that_does_not_resolve_is_the_database_away() -> None:
    db = Database(URL)
    try:
        with pytest.raises(Exception) as raised:
            async with db.session() as s:
                await s.execute(text("SELECT 1"))
        assert any(isinstance(e, socket.gaierror) for e in _causes(raised.value)), raised.value  # what compose shows
        failure = storage_failure(raised.value)
        assert isinstance(failure, DatabaseUnavailable), (failure, raised.value)
        assert "the database is unavailable" in failure.message

        attempts = 0

        async def work(s: object) -> None:
            nonlocal attempts
            attempts += 1
            async with db.session() as inner:
                await inner.execute(text("SELECT 1"))

        started = time.monotonic()
        with pytest.raises(Exception):  # noqa: B017 - whatever the driver raises once the wait is over
            await db.persist(work, what="an answer", within_s=1.5)
        assert attempts >= 2, "persist gave up at once instead of waiting for the database"
        assert time.monotonic() - started >= 0.7
    finally:
        await db.close()


def _causes(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    todo = [exc]
    while todo and len(out) < 20:
        e = todo.pop()
        out.append(e)
        todo.extend(x for x in (getattr(e, "orig", None), e.__cause__, e.__context__) if isinstance(x, BaseException))
    return out
