"""Storage failures a person has to act on, each carrying a one-line message.

``StoreError`` is the base; the server prints ``message`` and exits instead of dumping a traceback::

    StoreError
    ├── BadDatabaseUrl        REMOTECLAW_DATABASE_URL cannot be used as given
    ├── DatabaseUnavailable   the database cannot be reached or opened (server down, wrong name/password)
    ├── DiskFull              the disk under the database (or the state dir) has no space left
    └── MigrationFailed       a migration raised; its transaction was rolled back

``storage_failure`` recognises the first two in whatever a running request raised, so a client is told
"the database is unavailable" or "the disk is full" instead of "internal error" (see ``gateway.dispatch.dispatcher``).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from types import TracebackType

__all__ = ["BadDatabaseUrl", "DatabaseUnavailable", "DiskFull", "MigrationFailed", "StoreError", "one_line",
           "storage_failure"]


class StoreError(Exception):
    """Base of the storage errors; ``message`` is safe to show (no passwords)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadDatabaseUrl(StoreError):
    pass


class DatabaseUnavailable(StoreError):
    pass


class DiskFull(StoreError):
    pass


class MigrationFailed(StoreError):
    pass


_DB_MODULES = ("sqlalchemy", "asyncpg", "aiosqlite", "sqlite3")
_DISK_FULL = ("database or disk is full", "no space left on device", "disk full")
_CONNECTION_LOST = ("connection was closed", "connection is closed", "connection refused", "connect call failed",
                    "the database system is", "terminating connection", "server closed the connection",
                    "connection does not exist", "connection reset", "cannot connect", "underlying connection")


_UNREACHABLE = (errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN)
"""A database host that the network cannot reach right now (its container gone, a route down)."""


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, the driver error SQLAlchemy wraps, and the causes behind them (each once)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen or len(seen) > 20:
            continue
        seen.add(id(e))
        yield e
        todo.extend(x for x in (getattr(e, "orig", None), e.__cause__, e.__context__) if isinstance(x, BaseException))


def _raised_in_database_code(e: BaseException) -> bool:
    if type(e).__module__.split(".")[0] in _DB_MODULES:
        return True
    tb: TracebackType | None = e.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).split(".")[0] in _DB_MODULES:
            return True
        tb = tb.tb_next
    return False


def storage_failure(exc: BaseException) -> StoreError | None:
    """``DiskFull`` or ``DatabaseUnavailable`` when ``exc`` comes from a full disk or a database that went away;
    None for anything else (a bug stays an internal error)."""
    chain = list(_chain(exc))
    for e in chain:
        text = str(e).lower()
        if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or any(m in text for m in _DISK_FULL):
            return DiskFull(f"the disk is full (no space left for the database or the state dir): {one_line(e)}")
    if not any(_raised_in_database_code(e) for e in chain):
        return None
    for e in chain:
        text = str(e).lower()
        # socket.gaierror: the database's host name stopped resolving, as a compose service's does while its
        # container is stopped (Docker's DNS forgets it): the database is away, not a bug in the turn.
        if (getattr(e, "connection_invalidated", False)
                or isinstance(e, ConnectionError | TimeoutError | socket.gaierror)
                or (isinstance(e, OSError) and e.errno in _UNREACHABLE)
                or type(e).__name__ in ("ConnectionDoesNotExistError", "CannotConnectNowError",
                                        "ConnectionFailureError", "AdminShutdownError", "CrashShutdownError")
                or any(m in text for m in _CONNECTION_LOST)):
            return DatabaseUnavailable(f"the database is unavailable: {one_line(e)}")
    return None


def one_line(exc: BaseException) -> str:
    """A short, single-line reason for ``exc``, unwrapping SQLAlchemy's and asyncpg's wrappers."""
    orig = getattr(exc, "orig", None)  # sqlalchemy.exc.DBAPIError -> the driver's exception
    inner = orig if isinstance(orig, BaseException) else exc
    text = str(inner).strip()
    if text.startswith("<class '") and "'>: " in text:  # SQLAlchemy's asyncpg adapter prefixes the class
        text = text.split("'>: ", 1)[1]
    if isinstance(inner, TimeoutError) and not text:
        text = "timed out"
    first = text.splitlines()[0] if text else type(inner).__name__
    return first[:300]
