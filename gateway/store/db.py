"""The database handle: engine, sessions, and migrations applied on start.

SQLite (WAL mode) in the state dir by default; PostgreSQL through asyncpg when
``REMOTECLAW_DATABASE_URL`` says so (see ``gateway.store.urls``). Alembic owns the schema
(see ``gateway.store.migrate``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import structlog
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from gateway.extras import install_hint
from gateway.store import migrate as _migrate
from gateway.store.errors import BadDatabaseUrl, DatabaseUnavailable, StoreError, one_line, storage_failure
from gateway.store.urls import describe_url

T = TypeVar("T")

__all__ = ["CONNECT_TIMEOUT_S", "PERSIST_WITHIN_S", "SQLITE_PRAGMAS", "Database", "rowcount"]

log = structlog.get_logger("gateway.store")

CONNECT_TIMEOUT_S = 10.0
"""How long start-up waits for the database server before saying it is unreachable."""

PERSIST_WITHIN_S = 120.0
"""How long ``Database.persist`` waits for a database that went away (a PostgreSQL restart, a failover)."""

SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",  # readers run beside the writer; persistent in the file, cheap to repeat
    "PRAGMA synchronous=NORMAL",  # safe with WAL: a crash may lose the last commits, never corrupts
    "PRAGMA busy_timeout=5000",  # wait for a lock instead of failing at once with "database is locked"
    "PRAGMA foreign_keys=ON",  # off by default in SQLite; our schema relies on it
)
"""Run on every new SQLite connection: all but journal_mode are per-connection settings."""


TURN_WAIT_S = 30.0
"""How long a SQLite unit of work waits for its turn before going ahead without it (see ``Database.session``)."""

_IN_UNIT: ContextVar[bool] = ContextVar("rc_db_in_unit", default=False)
"""Set while a task is inside ``Database.session``: a nested unit does not wait for the SQLite turn it holds."""


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    for pragma in SQLITE_PRAGMAS:
        cur.execute(pragma)
    cur.close()


class Database:
    """One engine per gateway process, shared by every repository.

    Args:
        url: an async SQLAlchemy URL, as returned by ``gateway.store.database_url``.
        migrations_dir: the Alembic scripts to apply (tests point this at their own).

    Raises:
        BadDatabaseUrl: the URL's driver is not installed (e.g. asyncpg without the postgres extra).
    """

    def __init__(self, url: str, *, migrations_dir: Path = _migrate.MIGRATIONS_DIR, snapshot: bool = True) -> None:
        self.url = url
        self.snapshot = snapshot
        """Make an empty SQLite database from the migrations' snapshot (``gateway.store.head_schema``)."""
        self.safe_url = describe_url(url)
        self.is_sqlite = url.startswith("sqlite")
        self.kind = "sqlite" if self.is_sqlite else "postgresql"
        self.migrations_dir = migrations_dir
        kwargs: dict[str, Any] = {}
        if not self.is_sqlite:
            kwargs = {"pool_pre_ping": True, "connect_args": {"timeout": CONNECT_TIMEOUT_S}}
        try:
            self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        except ModuleNotFoundError as exc:
            raise BadDatabaseUrl(
                f"{self.safe_url} needs the {exc.name} driver (optional part 'postgres'): {install_hint('postgres')}"
            ) from None
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._turn: asyncio.Lock | None = asyncio.Lock() if self.is_sqlite else None
        """SQLite: one unit of work at a time, in arrival order (see ``session``)."""

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A unit of work: committed when the block ends, rolled back on error.

        On SQLite the units of this process take turns (an asyncio lock, first come first served). SQLite
        has one writer at a time: a unit holds the file's write lock from its first write until it commits,
        across every ``await`` in between, while the others wait in SQLite's busy handler, which polls
        without order and gives up after ``busy_timeout``. Under load (the soak in ``bench/soak.py``: a
        hundred runs starting at once while a thousand clients are served) a unit could lose that race for
        five seconds and fail with "database is locked". Waiting here instead is fair. A unit opened inside
        another (same task, or a task started inside it) goes straight through rather than wait for itself;
        one that still waits ``TURN_WAIT_S`` (a unit waiting on something that needs the database) goes
        ahead without its turn, as before the turns, and says so in the log.
        """
        if self._turn is None or _IN_UNIT.get():
            async with self.sessions() as s, s.begin():
                yield s
            return
        turn: asyncio.Lock | None = self._turn
        try:
            async with asyncio.timeout(TURN_WAIT_S):
                await self._turn.acquire()
        except TimeoutError:
            turn = None
            log.warning("went ahead without its SQLite turn", waited_s=TURN_WAIT_S)
        token = _IN_UNIT.set(True)
        try:
            async with self.sessions() as s, s.begin():
                yield s
        finally:
            _IN_UNIT.reset(token)
            if turn is not None:
                turn.release()

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[AsyncSession]:
        """A unit of work that only reads: it never waits for a SQLite turn.

        With WAL a reader runs beside the writer and sees the last commit, so lists and lookups (``sessions.list``,
        ``chat.history``, the cron timer's next due time) answer at once while writes queue for their turns;
        under a burst of runs they used to wait behind every write (the soak's ``sessions.list`` p99 of 1.4 s).
        Anything it wrote would be rolled back: writes go through ``session``. On PostgreSQL it is ``session``.
        """
        if self._turn is None or _IN_UNIT.get():
            async with self.session() as s:
                yield s
            return
        async with self.sessions() as s:  # closed, hence rolled back, at the end: a reader commits nothing
            yield s

    async def persist(self, work: Callable[[AsyncSession], Awaitable[T]], *, what: str,
                      within_s: float = PERSIST_WITHIN_S) -> T:
        """``work(session)`` in one transaction; while the database is unreachable, wait and run it again.

        For what must not be lost once it happened outside the database (an agent's answer, a run's end): a
        PostgreSQL restart delays it instead of failing the turn. Each attempt is a whole transaction, so a
        failed one left nothing behind; ``work`` must be safe to run twice. Other errors (and a database still
        away after ``within_s``) are raised as they are.
        """
        deadline = time.monotonic() + within_s
        delay = 0.25
        while True:
            try:
                async with self.session() as s:
                    return await work(s)
            except Exception as exc:
                failure = storage_failure(exc)
                if not isinstance(failure, DatabaseUnavailable) or time.monotonic() + delay > deadline:
                    raise
                log.warning("database unavailable; will write again", what=what, retry_in_s=delay,
                            error=failure.message)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def migrate(self) -> None:
        """Check the database answers, then bring the schema to the newest revisions.

        On failure the engine is disposed (no stray connections) and a ``StoreError`` with a
        one-line message is raised; the schema is left as it was.
        """
        try:
            await self.ping()
            await _migrate.upgrade(self.engine, is_sqlite=self.is_sqlite, migrations_dir=self.migrations_dir,
                                   snapshot=self.snapshot)
        except StoreError:
            await self.close()
            raise

    async def ping(self, timeout: float = CONNECT_TIMEOUT_S + 2) -> None:
        """Open a connection and run ``SELECT 1``.

        Raises:
            DatabaseUnavailable: with the driver's reason (refused, unknown database, bad password...).
        """
        try:
            async with asyncio.timeout(timeout), self.engine.connect() as conn:
                await conn.exec_driver_sql("SELECT 1")
        except Exception as exc:
            raise DatabaseUnavailable(f"cannot open the database {self.safe_url}: {one_line(exc)}") from exc

    async def revisions(self) -> list[str]:
        """The Alembic revisions the schema is at."""
        return await _migrate.current_revisions(self.engine)

    async def close(self) -> None:
        await self.engine.dispose()


def rowcount(result: Any) -> int:
    """How many rows an INSERT/UPDATE/DELETE touched. ``AsyncSession.execute`` is typed as returning a
    plain ``Result``, which has no ``rowcount``; the cursor result it really returns does."""
    return int(getattr(result, "rowcount", 0) or 0)
